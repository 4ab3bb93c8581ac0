// nccl_records.cc — reading the NCCL profiler plugin's records and tying them to NCCL kernels.
#include "trace/nccl_records.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "util/file.h"

namespace emo {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename T>
bool Number(std::string_view s, T* v, int base = 10) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, base);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

int64_t NcclDatatypeBytes(const std::string& t) {
  static const std::pair<const char*, int64_t> kSizes[] = {
      {"ncclInt8", 1},    {"ncclUint8", 1},   {"ncclChar", 1},     {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
      {"ncclFloat16", 2}, {"ncclHalf", 2},    {"ncclBfloat16", 2}, {"ncclInt32", 4},      {"ncclUint32", 4},
      {"ncclInt", 4},     {"ncclFloat32", 4}, {"ncclFloat", 4},    {"ncclInt64", 8},      {"ncclUint64", 8},
      {"ncclFloat64", 8}, {"ncclDouble", 8},
  };
  for (const auto& [name, bytes] : kSizes)
    if (t == name) return bytes;
  return 0;
}

bool ParseNcclRecords(const std::string& source, const std::string& text, NcclRecords* out, std::string* err) {
  size_t pos = 0;
  int line_no = 0;
  auto fail = [&](const std::string& what) {
    *err = source + ":" + std::to_string(line_no) + ": " + what;
    return false;
  };
  if (text.empty()) {
    *err = source + ": empty file (no \"# emo-nccl-profiler 1\" header)";
    return false;
  }
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) return fail("the last line has no newline: the file was cut short");
    const std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (line_no == 1) {
      if (line != "# emo-nccl-profiler 1")
        return fail("not an EMO NCCL profiler file (expected \"# emo-nccl-profiler 1\")");
      continue;
    }
    const std::vector<std::string_view> f = Fields(line);
    if (f.empty() || f[0][0] == '#') continue;
    if (f[0] == "comm") {
      NcclComm c;
      if (f.size() != 6) return fail("a comm line has 6 fields, this one " + std::to_string(f.size()));
      if (!Number(f[1], &c.comm, 16) || !Number(f[2], &c.rank) || !Number(f[3], &c.nranks) || !Number(f[4], &c.nnodes))
        return fail("bad number in a comm line");
      c.name = f[5];
      out->comms.push_back(c);
      continue;
    }
    NcclRecord r;
    size_t want = 0;
    if (f[0] == "coll")
      r.kind = NcclRecordKind::kColl, want = 16;
    else if (f[0] == "p2p")
      r.kind = NcclRecordKind::kP2p, want = 13;
    else if (f[0] == "launch")
      r.kind = NcclRecordKind::kLaunch, want = 10;
    else
      return fail("unknown record kind \"" + std::string(f[0]) + "\"");
    if (f.size() != want)
      return fail("a " + std::string(f[0]) + " line has " + std::to_string(want) + " fields, this one " +
                  std::to_string(f.size()));
    if (!Number(f[1], &r.id) || !Number(f[2], &r.comm, 16) || !Number(f[3], &r.rank) || !Number(f[4], &r.group) ||
        !Number(f[5], &r.tid) || !Number(f[6], &r.start_ns) || !Number(f[7], &r.end_ns))
      return fail("bad number in the common fields of a " + std::string(f[0]) + " line");
    if (r.kind == NcclRecordKind::kLaunch) {
      if (!Number(f[8], &r.stream, 16) || (f[9] != "0" && f[9] != "1"))
        return fail("bad stream or capture flag in a launch line");
      r.captured = f[9] == "1";
    } else {
      r.func = f[9];
      r.datatype = f[11];
      if (!Number(f[8], &r.seq) || !Number(f[10], &r.count) || !Number(f[12], &r.peer))
        return fail("bad sequence number, count or peer/root in a " + std::string(f[0]) + " line");
    }
    out->records.push_back(std::move(r));
  }
  return true;
}

bool ReadNcclRecords(const std::string& path, NcclRecords* out, std::string* err) {
  std::string text;
  if (!ReadFileMaybeGz(path, &text, err)) return false;
  return ParseNcclRecords(path, text, out, err);
}

int64_t AnnotateNcclKernels(const NcclRecords& recs, Trace* trace, size_t rank, std::string* note) {
  RankTrace& rt = trace->ranks[rank];
  // Per (group, communicator): its launches, collectives and p2p, each in start (ID) order.
  struct Pair {
    std::vector<const NcclRecord*> launches, colls, p2ps;
  };
  std::map<std::pair<uint64_t, uint64_t>, Pair> pairs;
  std::map<int64_t, std::vector<const NcclRecord*>> launches_by_tid;
  std::vector<const NcclRecord*> sorted;
  for (const NcclRecord& r : recs.records) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const NcclRecord* a, const NcclRecord* b) { return a->id < b->id; });
  for (const NcclRecord* r : sorted) {
    Pair& p = pairs[{r->group, r->comm}];
    if (r->kind == NcclRecordKind::kLaunch) {
      p.launches.push_back(r);
      if (!r->captured) launches_by_tid[r->tid].push_back(r);
    } else {
      (r->kind == NcclRecordKind::kColl ? p.colls : p.p2ps).push_back(r);
    }
  }
  // What each launch names: its pair's j-th collective, else the pair's only p2p.
  std::unordered_map<const NcclRecord*, const NcclRecord*> names;
  for (const auto& [key, p] : pairs)
    for (size_t j = 0; j < p.launches.size(); ++j) {
      if (j < p.colls.size())
        names[p.launches[j]] = p.colls[j];
      else if (p.colls.empty() && p.p2ps.size() == 1 && p.launches.size() == 1)
        names[p.launches[j]] = p.p2ps[0];
    }

  // The trace's NCCL kernels launched by a kernel-launch call (not a graph launch), per thread.
  std::unordered_map<int64_t, size_t> call_of;  // correlation -> call index
  for (size_t i = 0; i < rt.calls.size(); ++i)
    if (rt.calls[i].correlation >= 0) call_of[rt.calls[i].correlation] = i;
  std::map<int64_t, std::vector<std::pair<int64_t, size_t>>> kernels_by_tid;  // tid -> (call start, op)
  for (size_t i = 0; i < rt.ops.size(); ++i) {
    const GpuOp& o = rt.ops[i];
    if (!o.is_comm || o.kind != GpuOpKind::kKernel) continue;
    auto it = call_of.find(o.correlation);
    if (it == call_of.end()) continue;
    const CpuCall& c = rt.calls[it->second];
    if (c.kind != CallKind::kLaunch || trace->names.Get(c.name).find("Graph") != std::string::npos) continue;
    kernels_by_tid[rt.threads[c.thread].tid].push_back({c.start_ns, i});
  }

  int64_t annotated = 0, name_mismatch = 0;
  std::string skipped;
  for (auto& [tid, kernels] : kernels_by_tid) {
    std::sort(kernels.begin(), kernels.end());
    auto it = launches_by_tid.find(tid);
    const size_t n = it == launches_by_tid.end() ? 0 : it->second.size();
    if (n != kernels.size()) {
      skipped += (skipped.empty() ? "" : "; ") + ("thread " + std::to_string(tid)) + ": " +
                 std::to_string(kernels.size()) + " NCCL kernel launches in the trace, " + std::to_string(n) +
                 " in the plugin's records";
      continue;
    }
    for (size_t k = 0; k < n; ++k) {
      auto named = names.find(it->second[k]);
      if (named == names.end()) continue;
      const NcclRecord& r = *named->second;
      GpuOp& o = rt.ops[kernels[k].second];
      char comm[24];
      std::snprintf(comm, sizeof comm, "nccl:%016llx", static_cast<unsigned long long>(r.comm));
      o.process_group = trace->names.Intern(comm);
      std::string what = r.func;
      if (r.kind == NcclRecordKind::kP2p) {
        const bool send = r.func == "Send";
        what = "p2p " + std::to_string(send ? r.rank : r.peer) + "->" + std::to_string(send ? r.peer : r.rank);
      } else if (trace->names.Get(o.name).find(r.func) == std::string::npos) {
        ++name_mismatch;
      }
      o.collective = trace->names.Intern(what);
      o.collective_seq = r.seq;
      if (o.bytes < 0 && NcclDatatypeBytes(r.datatype) > 0) o.bytes = r.count * NcclDatatypeBytes(r.datatype);
      ++annotated;
    }
  }
  note->clear();
  if (!skipped.empty()) *note = "NCCL kernels not tied to the plugin's records (" + skipped + ")";
  if (name_mismatch > 0)
    *note += (note->empty() ? "" : "; ") + std::to_string(name_mismatch) +
             " NCCL kernels were tied to a collective their name does not mention";
  return annotated;
}

}  // namespace emo
