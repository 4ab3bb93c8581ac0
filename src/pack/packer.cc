// packer.cc — greedy packing of consecutive kernels along their streams.
#include "pack/packer.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "graph/replay.h"

namespace emo {

size_t Packing::unique_packs() const {
  size_t n = 0;
  for (size_t p = 0; p < unique.size(); ++p) n += unique[p] == p;
  return n;
}

PackSummary Summarize(const Packing& p) {
  std::vector<double> spans;
  double busy = 0, multi = 0;
  for (size_t k = 0; k < p.packs(); ++k) {
    spans.push_back((p.end_ns[k] - p.start_ns[k]) / 1e6);
    busy += p.busy_ns[k];
    if (p.member_begin[k + 1] - p.member_begin[k] > 1) multi += p.busy_ns[k];
  }
  std::sort(spans.begin(), spans.end());
  PackSummary s;
  s.kernels = p.members.size();
  s.packs = p.packs();
  s.unique = p.unique_packs();
  s.median_span_ms = spans.empty() ? 0 : spans[spans.size() / 2];
  s.multi_kernel_time_share = busy > 0 ? multi / busy : 0;
  return s;
}

namespace {

// FNV-1a over the names, each followed by a NUL, so that ("ab","c") and ("a","bc") differ.
uint64_t HashNames(const Graph& g, const StringTable& names, std::span<const uint32_t> members) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (uint32_t v : members) {
    for (char c : names.Get(g.name[v])) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    h = (h ^ 0) * 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

Packing PackKernels(const Graph& g, const StringTable& names, const PackOptions& options) {
  return PackKernels(g, names, ReplayMeasured(g), options);
}

Packing PackKernels(const Graph& g, const StringTable& names, const ReplayResult& replay, const PackOptions& options) {
  const size_t n = g.nodes();
  const std::vector<double>& finish = replay.finish;
  const std::vector<uint32_t>& crit = replay.crit_pred;
  auto same_stream = [&](uint32_t a, uint32_t b) {
    return IsGpu(g.kind[a]) && IsGpu(g.kind[b]) && g.rank[a] == g.rank[b] && g.lane[a] == g.lane[b];
  };
  // Rule 2: nodes with a critical successor off their stream.
  std::vector<bool> exports(n, false);
  for (uint32_t v = 0; v < n; ++v)
    if (crit[v] != kNoPred && !same_stream(crit[v], v)) exports[crit[v]] = true;

  Packing out;
  out.pack_of.assign(n, kNoPack);
  std::vector<std::vector<uint32_t>> open_members;  // per pack while building
  // Per (rank, stream): the open pack and the last GPU op seen.
  struct StreamState {
    uint32_t open = kNoPack;
    uint32_t last_op = kNoPack;
  };
  std::map<std::pair<int32_t, int64_t>, StreamState> streams;
  for (uint32_t v = 0; v < n; ++v) {
    if (!IsGpu(g.kind[v])) continue;
    StreamState& s = streams[{g.rank[v], g.lane[v]}];
    const uint32_t prev = s.last_op;
    s.last_op = v;
    if (g.kind[v] != NodeKind::kKernel) {
      s.open = kNoPack;
      continue;
    }
    const double start = finish[v] - g.duration[v];
    if (s.open != kNoPack) {
      const uint32_t p = s.open;
      const uint32_t last = open_members[p].back();
      const bool joins = prev == last && crit[v] != kNoPred && same_stream(crit[v], v) && !exports[last] &&
                         finish[v] - out.start_ns[p] <= options.max_ns;
      if (joins) {
        open_members[p].push_back(v);
        out.end_ns[p] = finish[v];
        out.busy_ns[p] += g.duration[v];
        out.pack_of[v] = p;
        continue;
      }
    }
    const uint32_t p = static_cast<uint32_t>(out.rank.size());
    open_members.push_back({v});
    out.rank.push_back(g.rank[v]);
    out.stream.push_back(g.lane[v]);
    out.start_ns.push_back(start);
    out.end_ns.push_back(finish[v]);
    out.busy_ns.push_back(g.duration[v]);
    out.pack_of[v] = p;
    s.open = p;
  }

  std::unordered_map<uint64_t, uint32_t> first;
  out.member_begin.push_back(0);
  for (uint32_t p = 0; p < open_members.size(); ++p) {
    out.members.insert(out.members.end(), open_members[p].begin(), open_members[p].end());
    out.member_begin.push_back(static_cast<uint32_t>(out.members.size()));
    const uint64_t h = HashNames(g, names, open_members[p]);
    out.hash.push_back(h);
    out.unique.push_back(first.emplace(h, p).first->second);
  }
  return out;
}

}  // namespace emo
