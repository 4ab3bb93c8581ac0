// packed_graph.h — small hand-built packed graphs for the prediction and search tests: a CPU call
// that launches kernels on streams, each kernel a pack of its own.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "graph/graph.h"
#include "graph/replay.h"
#include "pack/packer.h"

namespace emo {

struct PackedGraph {
  Graph g;
  Packing p;
};

// Node 0 is a CPU call of duration dur[0] anchored at 0 (rank 0); nodes 1.. are kernels of duration
// dur[i] on stream[i] of GPU rank[i] (empty: all rank 0), each with the edges `edges` (from, to)
// besides the launch edge from 0. Every kernel is a pack; observed times are the replay's.
inline PackedGraph Packed(const std::vector<double>& dur, const std::vector<int64_t>& stream,
                          std::vector<std::pair<uint32_t, uint32_t>> edges, std::vector<int32_t> rank = {}) {
  PackedGraph pg;
  Graph& g = pg.g;
  const size_t n = dur.size();
  g.kind.assign(n, NodeKind::kKernel);
  g.kind[0] = NodeKind::kCpuCall;
  if (rank.empty()) rank.assign(n, 0);
  g.rank = rank;
  g.lane = stream;
  g.name.assign(n, 0);
  g.source.assign(n, -1);
  g.duration = dur;
  g.anchor.assign(n, kNoAnchor);
  g.anchor[0] = 0;
  for (uint32_t v = 1; v < n; ++v) edges.emplace_back(0, v);
  std::sort(edges.begin(), edges.end(),
            [](auto& a, auto& b) { return std::tie(a.second, a.first) < std::tie(b.second, b.first); });
  g.pred_begin.assign(n + 1, 0);
  for (auto& [from, to] : edges) {
    ++g.pred_begin[to + 1];
    g.pred.push_back(from);
    g.pred_latency.push_back(0);
    g.pred_kind.push_back(from == 0 ? EdgeKind::kLaunch : EdgeKind::kStream);
  }
  for (size_t i = 0; i < n; ++i) g.pred_begin[i + 1] += g.pred_begin[i];
  std::vector<double> fin(n);
  Replay(g, g.duration, fin);
  for (size_t v = 0; v < n; ++v) {
    g.observed_end.push_back(fin[v]);
    g.observed_start.push_back(fin[v] - dur[v]);
  }
  Packing& p = pg.p;
  p.pack_of.assign(n, kNoPack);
  p.member_begin.push_back(0);
  for (uint32_t v = 1; v < n; ++v) {
    p.pack_of[v] = static_cast<uint32_t>(p.rank.size());
    p.members.push_back(v);
    p.member_begin.push_back(static_cast<uint32_t>(p.members.size()));
    p.rank.push_back(rank[v]);
    p.stream.push_back(stream[v]);
    p.start_ns.push_back(g.observed_start[v]);
    p.end_ns.push_back(g.observed_end[v]);
    p.busy_ns.push_back(dur[v]);
    p.hash.push_back(v);
    p.unique.push_back(v - 1);
  }
  return pg;
}

// A chain: kernels 1.. one after another on stream 1.
inline PackedGraph Chain(const std::vector<double>& dur) {
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t v = 2; v < dur.size(); ++v) e.emplace_back(v - 1, v);
  return Packed(dur, std::vector<int64_t>(dur.size(), 1), e);
}

}  // namespace emo
