// builder.cc — execution-graph construction from a Trace (see builder.h for the rules).
#include "graph/builder.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace emo {

const char* NodeKindName(NodeKind k) {
  static constexpr const char* kNames[kNodeKinds] = {"cpu_call", "cpu_gap", "kernel", "comm",
                                                     "memcpy",   "memset",  "barrier"};
  return kNames[static_cast<int>(k)];
}

const char* EdgeKindName(EdgeKind k) {
  static constexpr const char* kNames[kEdgeKinds] = {"thread", "launch",        "stream",     "event_wait",
                                                     "sync",   "blocking_copy", "collective", "cross_thread"};
  return kNames[static_cast<int>(k)];
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr int64_t kClockTolerance = 1000;  // ns: timestamp rounding between the CPU and GPU records

struct EdgeRec {
  uint32_t from, to;
  float latency;
  EdgeKind kind;
};

double Median(std::vector<double>& v, double fallback) {
  if (v.empty()) return fallback;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// A graph under construction: nodes in creation order, edges in a flat list.
class Draft {
 public:
  Graph g;
  std::vector<EdgeRec> edges;
  std::vector<uint32_t> thread_next;  // next node on the same CPU thread, or kNone

  uint32_t AddNode(NodeKind k, int32_t rank, int64_t lane, uint32_t name, int32_t source, double dur, double anchor,
                   double obs_start, double obs_end) {
    g.kind.push_back(k);
    g.rank.push_back(rank);
    g.lane.push_back(lane);
    g.name.push_back(name);
    g.source.push_back(source);
    g.duration.push_back(dur);
    g.anchor.push_back(anchor);
    g.observed_start.push_back(obs_start);
    g.observed_end.push_back(obs_end);
    g.background.push_back(0);
    thread_next.push_back(kNone);
    return static_cast<uint32_t>(g.kind.size() - 1);
  }
  void AddEdge(uint32_t from, uint32_t to, EdgeKind k, double latency = 0) {
    edges.push_back({from, to, static_cast<float>(latency), k});
  }
  // A cross-thread edge and the gap it turned into a wait, so that both can be undone.
  struct Handoff {
    size_t edge;
    uint32_t gap;
    double gap_duration;
    int32_t rank;
  };
  std::vector<Handoff> handoffs;
};

// Everything about one rank that the cross-rank (collective) step needs.
struct RankIndex {
  std::vector<uint32_t> op_node;  // GpuOp index -> node id
};

class RankBuilder {
 public:
  RankBuilder(const Trace& t, int32_t r, int64_t origin, Draft* d, RankBuildReport* rep)
      : rt_(t.ranks[r]), names_(t.names), r_(r), origin_(origin), d_(d), rep_(rep) {}

  bool Build(RankIndex* index, std::string* err);

 private:
  double Rel(int64_t t) const { return static_cast<double>(t - origin_); }
  int64_t LastOpBefore(int64_t stream, int64_t corr) const;
  int64_t FirstOpAfter(int64_t stream, int64_t corr) const;
  const SyncRecord* FindSync(int64_t corr, SyncKind kind) const;
  bool BuildThreads(std::string* err);
  void BuildWaits();
  int64_t InferAwaited(const CpuCall& c) const;
  void AddSync(uint32_t call_index, const std::vector<int64_t>& awaited);
  void BuildCrossThread();

  const RankTrace& rt_;
  const StringTable& names_;
  int32_t r_;
  int64_t origin_;
  Draft* d_;
  RankBuildReport* rep_;

  std::vector<uint32_t> op_node_;
  std::vector<uint32_t> call_node_;
  std::vector<uint32_t> ops_by_corr_;  // op indices sorted by correlation
  std::vector<std::pair<int64_t, uint32_t>> calls_by_corr_;
  std::vector<std::pair<uint32_t, uint32_t>> call_ops_;  // per call: its ops, a range in ops_by_corr_
  std::vector<uint32_t> launch_call_;                    // per op: the call that launched it, or kNone
  // Per stream, its ops (indices into RankTrace::ops) in execution order, which is also launch
  // order: correlation ids grow with launch order within a process.
  std::unordered_map<int64_t, std::vector<uint32_t>> streams_;
  std::vector<std::pair<int64_t, uint32_t>> syncs_by_corr_;
  std::vector<int64_t> last_launch_stream_;  // per call: stream of the thread's latest launch before it
  std::vector<int64_t> next_launch_stream_;  // per call: stream of the thread's next launch after it
  std::vector<bool> op_awaits_event_;
  std::unordered_set<uint64_t> event_edges_;  // (src op << 32 | dst op) already joined by a wait
  std::vector<double> return_samples_;
  std::vector<size_t> sync_edges_;  // indices into d_->edges whose latency is the sync return
  struct Gap {
    uint32_t gap, next;  // gap node and the call node after it
    int64_t start, end;  // ns
    uint32_t thread;
  };
  std::vector<Gap> gaps_;
};

int64_t RankBuilder::LastOpBefore(int64_t stream, int64_t corr) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return -1;
  const auto& v = it->second;
  auto pos =
      std::lower_bound(v.begin(), v.end(), corr, [&](uint32_t i, int64_t c) { return rt_.ops[i].correlation < c; });
  if (pos == v.begin()) return -1;
  return *(pos - 1);
}

int64_t RankBuilder::FirstOpAfter(int64_t stream, int64_t corr) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return -1;
  const auto& v = it->second;
  auto pos =
      std::upper_bound(v.begin(), v.end(), corr, [&](int64_t c, uint32_t i) { return c < rt_.ops[i].correlation; });
  if (pos == v.end()) return -1;
  return *pos;
}

const SyncRecord* RankBuilder::FindSync(int64_t corr, SyncKind kind) const {
  auto it = std::lower_bound(syncs_by_corr_.begin(), syncs_by_corr_.end(), std::make_pair(corr, 0u));
  for (; it != syncs_by_corr_.end() && it->first == corr; ++it)
    if (rt_.syncs[it->second].kind == kind) return &rt_.syncs[it->second];
  return nullptr;
}

bool RankBuilder::Build(RankIndex* index, std::string* err) {
  // GPU op nodes and per-stream order.
  op_node_.resize(rt_.ops.size());
  for (uint32_t i = 0; i < rt_.ops.size(); ++i) {
    const GpuOp& o = rt_.ops[i];
    NodeKind k = o.kind == GpuOpKind::kMemcpy   ? NodeKind::kMemcpy
                 : o.kind == GpuOpKind::kMemset ? NodeKind::kMemset
                 : o.is_comm                    ? NodeKind::kComm
                                                : NodeKind::kKernel;
    op_node_[i] = d_->AddNode(k, r_, o.stream, o.name, static_cast<int32_t>(i),
                              static_cast<double>(o.end_ns - o.start_ns), kNoAnchor, Rel(o.start_ns), Rel(o.end_ns));
    streams_[o.stream].push_back(i);
  }
  std::vector<size_t> stream_edges;
  for (auto& [stream, s] : streams_)
    for (size_t j = 1; j < s.size(); ++j) {
      stream_edges.push_back(d_->edges.size());
      d_->AddEdge(op_node_[s[j - 1]], op_node_[s[j]], EdgeKind::kStream);
    }
  ops_by_corr_.resize(rt_.ops.size());
  for (uint32_t i = 0; i < ops_by_corr_.size(); ++i) ops_by_corr_[i] = i;
  auto by_corr = [&](uint32_t a, uint32_t b) { return rt_.ops[a].correlation < rt_.ops[b].correlation; };
  if (!std::is_sorted(ops_by_corr_.begin(), ops_by_corr_.end(), by_corr))
    std::stable_sort(ops_by_corr_.begin(), ops_by_corr_.end(), by_corr);
  for (uint32_t i = 0; i < rt_.syncs.size(); ++i) syncs_by_corr_.emplace_back(rt_.syncs[i].correlation, i);
  std::sort(syncs_by_corr_.begin(), syncs_by_corr_.end());

  if (!BuildThreads(err)) return false;

  // Launch edges; ops with no launching call keep their observed start.
  std::vector<size_t> launch_edges;
  for (uint32_t i = 0; i < rt_.ops.size(); ++i) {
    if (launch_call_[i] != kNone) {
      launch_edges.push_back(d_->edges.size());
      d_->AddEdge(call_node_[launch_call_[i]], op_node_[i], EdgeKind::kLaunch);
    } else {
      d_->g.anchor[op_node_[i]] = Rel(rt_.ops[i].start_ns);
      ++rep_->ops_without_launch;
    }
  }

  op_awaits_event_.assign(rt_.ops.size(), false);
  BuildWaits();
  BuildCrossThread();

  // Launch latency: one constant per rank and launch class, measured on launches to an idle
  // stream: kernels, and copies/memsets from pinned or device memory, start a fixed time after
  // their call returns. A copy from pageable memory is staged by its call chunk by chunk, so it
  // ends a fixed time after the call returns (its edge's latency is that constant less the copy's
  // duration). A synchronous copy's call node ends when it submits the copy (latency 0).
  enum Class { kKernelLaunch = 0, kCopyLaunch = 1, kPageableCopy = 2, kSyncCopy = 3 };
  auto class_of = [&](uint32_t i) {
    const GpuOp& o = rt_.ops[i];
    if (rt_.calls[launch_call_[i]].kind == CallKind::kBlockingCopy) return kSyncCopy;
    if (o.kind == GpuOpKind::kKernel) return kKernelLaunch;
    return names_.Get(o.name).find("Pageable") != std::string::npos ? kPageableCopy : kCopyLaunch;
  };
  std::vector<double> samples[3], gaps;
  for (auto& [stream, s] : streams_) {
    for (size_t j = 0; j < s.size(); ++j) {
      uint32_t i = s[j];
      if (launch_call_[i] == kNone || op_awaits_event_[i]) continue;
      const CpuCall& c = rt_.calls[launch_call_[i]];
      Class k = class_of(i);
      if (j > 0 && rt_.ops[s[j - 1]].end_ns > c.start_ns) {
        // Queued behind its predecessor: the GPU's own gap between back-to-back ops.
        if (rt_.ops[s[j - 1]].end_ns > c.end_ns + 50'000)
          gaps.push_back(static_cast<double>(rt_.ops[i].start_ns - rt_.ops[s[j - 1]].end_ns));
        continue;
      }
      if (k == kSyncCopy) continue;
      samples[k].push_back(
          static_cast<double>(k == kPageableCopy ? rt_.ops[i].end_ns - c.end_ns : rt_.ops[i].start_ns - c.end_ns));
    }
  }
  rep_->launch_latency_ns = Median(samples[kKernelLaunch], 0.0);
  rep_->copy_latency_ns = Median(samples[kCopyLaunch], rep_->launch_latency_ns);
  rep_->pageable_copy_latency_ns = Median(samples[kPageableCopy], 0.0);
  rep_->stream_gap_ns = std::max(0.0, Median(gaps, 0.0));
  for (size_t e : launch_edges) {
    EdgeRec& edge = d_->edges[e];
    uint32_t op = static_cast<uint32_t>(d_->g.source[edge.to]);
    Class k = class_of(op);
    double lat = k == kKernelLaunch ? rep_->launch_latency_ns
                 : k == kCopyLaunch ? rep_->copy_latency_ns
                 : k == kSyncCopy   ? 0.0
                                    : rep_->pageable_copy_latency_ns - d_->g.duration[edge.to];
    edge.latency = static_cast<float>(lat);
  }
  for (size_t e : stream_edges) d_->edges[e].latency = static_cast<float>(rep_->stream_gap_ns);
  rep_->sync_return_ns = std::max(0.0, Median(return_samples_, 0.0));
  for (size_t e : sync_edges_) d_->edges[e].latency = static_cast<float>(rep_->sync_return_ns);

  index->op_node = std::move(op_node_);  // the builder is done with it
  return true;
}

bool RankBuilder::BuildThreads(std::string* err) {
  call_node_.assign(rt_.calls.size(), kNone);
  for (uint32_t i = 0; i < rt_.calls.size(); ++i)
    if (rt_.calls[i].correlation >= 0) calls_by_corr_.emplace_back(rt_.calls[i].correlation, i);
  if (!std::is_sorted(calls_by_corr_.begin(), calls_by_corr_.end()))
    std::sort(calls_by_corr_.begin(), calls_by_corr_.end());
  for (size_t i = 1; i < calls_by_corr_.size(); ++i) {
    if (calls_by_corr_[i].first == calls_by_corr_[i - 1].first) {
      const CpuCall& a = rt_.calls[calls_by_corr_[i - 1].second];
      const CpuCall& b = rt_.calls[calls_by_corr_[i].second];
      *err = rt_.source + ": duplicate correlation id " + std::to_string(a.correlation) + ": API calls '" +
             names_.Get(a.name) + "' at " + std::to_string(a.start_ns) + " ns and '" + names_.Get(b.name) + "' at " +
             std::to_string(b.start_ns) + " ns";
      return false;
    }
  }
  // Calls and ops meet by correlation: one merge of the two sorted lists.
  call_ops_.assign(rt_.calls.size(), {0, 0});
  launch_call_.assign(rt_.ops.size(), kNone);
  size_t k = 0;
  for (const auto& [corr, ci] : calls_by_corr_) {
    while (k < ops_by_corr_.size() && rt_.ops[ops_by_corr_[k]].correlation < corr) ++k;
    size_t begin = k;
    for (; k < ops_by_corr_.size() && rt_.ops[ops_by_corr_[k]].correlation == corr; ++k)
      launch_call_[ops_by_corr_[k]] = ci;
    call_ops_[ci] = {static_cast<uint32_t>(begin), static_cast<uint32_t>(k)};
  }
  // Thread chains: call -> gap -> call. A call inside the previous one (a driver call made by a
  // runtime call) merges into it.
  uint32_t prev = kNone;
  int64_t prev_end = 0;
  uint32_t prev_thread = kNone;
  for (uint32_t i = 0; i < rt_.calls.size(); ++i) {
    const CpuCall& c = rt_.calls[i];
    if (c.thread != prev_thread) prev = kNone, prev_thread = c.thread;
    if (prev != kNone && c.end_ns <= prev_end) {
      call_node_[i] = prev;
      ++rep_->calls_nested;
      continue;
    }
    int64_t start = prev != kNone ? std::max(c.start_ns, prev_end) : c.start_ns;
    if (prev != kNone && start > prev_end) {
      uint32_t gap = d_->AddNode(NodeKind::kCpuGap, r_, c.thread, 0, -1, static_cast<double>(start - prev_end),
                                 kNoAnchor, Rel(prev_end), Rel(start));
      d_->AddEdge(prev, gap, EdgeKind::kThread);
      d_->thread_next[prev] = gap;
      prev = gap;
    }
    uint32_t n = d_->AddNode(NodeKind::kCpuCall, r_, c.thread, c.name, static_cast<int32_t>(i),
                             static_cast<double>(c.end_ns - start), prev == kNone ? Rel(start) : kNoAnchor, Rel(start),
                             Rel(c.end_ns));
    if (prev != kNone && d_->g.kind[prev] == NodeKind::kCpuGap) gaps_.push_back({prev, n, prev_end, start, c.thread});
    if (prev != kNone) {
      d_->AddEdge(prev, n, EdgeKind::kThread);
      d_->thread_next[prev] = n;
    }
    call_node_[i] = n;
    prev = n;
    prev_end = c.end_ns;
  }
  // Per call, the stream of the thread's latest launch before it and of its next launch after it.
  last_launch_stream_.assign(rt_.calls.size(), -1);
  next_launch_stream_.assign(rt_.calls.size(), -1);
  auto launch_stream = [&](size_t ci) -> int64_t {
    auto [lo, hi] = call_ops_[ci];
    return lo < hi ? rt_.ops[ops_by_corr_[lo]].stream : -1;
  };
  int64_t last = -1;
  for (size_t i = 0; i < rt_.calls.size(); ++i) {
    if (i > 0 && rt_.calls[i].thread != rt_.calls[i - 1].thread) last = -1;
    last_launch_stream_[i] = last;
    int64_t s = launch_stream(i);
    if (s >= 0) last = s;
  }
  int64_t next = -1;
  for (size_t i = rt_.calls.size(); i-- > 0;) {
    if (i + 1 < rt_.calls.size() && rt_.calls[i].thread != rt_.calls[i + 1].thread) next = -1;
    next_launch_stream_[i] = next;
    int64_t s = launch_stream(i);
    if (s >= 0) next = s;
  }
  return true;
}

// Without a sync record: of the last ops launched before the call on each stream, the one that
// ended last before the call returned is what the call waited for.
int64_t RankBuilder::InferAwaited(const CpuCall& c) const {
  int64_t best = -1;
  for (const auto& [stream, s] : streams_) {
    int64_t op = LastOpBefore(stream, c.correlation);
    if (op < 0 || rt_.ops[op].end_ns > c.end_ns) continue;
    if (best < 0 || rt_.ops[op].end_ns > rt_.ops[best].end_ns) best = op;
  }
  return best;
}

void RankBuilder::AddSync(uint32_t ci, const std::vector<int64_t>& awaited) {
  const CpuCall& c = rt_.calls[ci];
  uint32_t node = call_node_[ci];
  int64_t latest_end = INT64_MIN;
  for (int64_t op : awaited) {
    if (op < 0) continue;
    sync_edges_.push_back(d_->edges.size());
    d_->AddEdge(op_node_[op], node, EdgeKind::kSync);
    latest_end = std::max(latest_end, rt_.ops[op].end_ns);
  }
  // A call that blocked ends when the awaited work ends (plus the return latency): its own
  // measured duration is waiting, not CPU work, and must not be replayed.
  if (latest_end > c.start_ns && node != kNone && d_->g.source[node] == static_cast<int32_t>(ci)) {
    d_->g.duration[node] = 0;
    return_samples_.push_back(static_cast<double>(c.end_ns - latest_end));
  }
}

void RankBuilder::BuildWaits() {
  std::vector<int64_t> awaited;
  int64_t last_record_corr = -1;
  uint32_t thread = kNone;
  for (uint32_t i = 0; i < rt_.calls.size(); ++i) {
    const CpuCall& c = rt_.calls[i];
    if (c.thread != thread) thread = c.thread, last_record_corr = -1;
    awaited.clear();
    switch (c.kind) {
      case CallKind::kEventRecord:
        last_record_corr = c.correlation;
        break;
      case CallKind::kStreamSync:
      case CallKind::kEventSync: {
        const SyncRecord* s =
            FindSync(c.correlation, c.kind == CallKind::kStreamSync ? SyncKind::kStreamSync : SyncKind::kEventSync);
        if (s && c.kind == CallKind::kStreamSync && s->stream >= 0) {
          awaited.push_back(LastOpBefore(s->stream, c.correlation));
          ++rep_->waits_exact;
        } else if (s && c.kind == CallKind::kEventSync && s->wait_on_stream >= 0) {
          awaited.push_back(
              LastOpBefore(s->wait_on_stream, s->record_correlation >= 0 ? s->record_correlation : c.correlation));
          ++rep_->waits_exact;
        } else {
          awaited.push_back(InferAwaited(c));
          ++(awaited.back() >= 0 ? rep_->waits_inferred : rep_->waits_unresolved);
        }
        AddSync(i, awaited);
        break;
      }
      case CallKind::kDeviceSync:
        for (const auto& [stream, s] : streams_) awaited.push_back(LastOpBefore(stream, c.correlation));
        ++rep_->waits_exact;
        AddSync(i, awaited);
        break;
      case CallKind::kBlockingCopy: {
        auto [lo, hi] = call_ops_[i];
        uint32_t next = d_->thread_next[call_node_[i]];
        for (size_t k = lo; k < hi && next != kNone; ++k) {
          sync_edges_.push_back(d_->edges.size());
          d_->AddEdge(op_node_[ops_by_corr_[k]], next, EdgeKind::kBlockingCopy);
        }
        if (lo < hi && call_node_[i] != kNone && d_->g.source[call_node_[i]] == static_cast<int32_t>(i)) {
          // The call's own CPU part ends when its copy is submitted; the thread's next node waits
          // for the copy itself through the blocking-copy edge.
          const GpuOp& o = rt_.ops[ops_by_corr_[lo]];
          double submit = static_cast<double>(o.start_ns - c.start_ns);
          double& dur = d_->g.duration[call_node_[i]];
          dur = std::clamp(submit, 0.0, dur);
          if (o.end_ns > c.start_ns) return_samples_.push_back(static_cast<double>(c.end_ns - o.end_ns));
        }
        break;
      }
      case CallKind::kStreamWaitEvent: {
        const SyncRecord* s = FindSync(c.correlation, SyncKind::kStreamWaitEvent);
        int64_t src = -1, dst = -1;
        if (s && s->stream >= 0 && s->wait_on_stream >= 0) {
          int64_t rec = s->record_correlation >= 0 ? s->record_correlation : c.correlation;
          src = LastOpBefore(s->wait_on_stream, rec);
          dst = FirstOpAfter(s->stream, c.correlation);
          ++rep_->waits_exact;
        } else {
          // The waiting stream is the one this thread launches to next; the recorded stream the one
          // it launched to before its latest cudaEventRecord.
          int64_t waiting = next_launch_stream_[i];
          dst = waiting >= 0 ? FirstOpAfter(waiting, c.correlation) : -1;
          if (dst < 0) {
            ++rep_->waits_unresolved;
            break;
          }
          if (last_record_corr >= 0) {
            // The awaited stream is the one this thread launched to before its latest record.
            auto it =
                std::lower_bound(calls_by_corr_.begin(), calls_by_corr_.end(), std::make_pair(last_record_corr, 0u));
            int64_t rec_stream =
                it != calls_by_corr_.end() && it->first == last_record_corr ? last_launch_stream_[it->second] : -1;
            if (rec_stream == waiting) {  // same stream: already ordered
              ++rep_->waits_inferred;
              break;
            }
            src = rec_stream >= 0 ? LastOpBefore(rec_stream, last_record_corr) : -1;
          } else {
            // The trace filtered out cudaEventRecord: of the other streams' last ops launched
            // before the wait, the awaited one is the latest to end before the waiting op starts.
            for (const auto& [stream, ops] : streams_) {
              if (stream == waiting) continue;
              int64_t op = LastOpBefore(stream, c.correlation);
              if (op >= 0 && rt_.ops[op].end_ns <= rt_.ops[dst].start_ns + kClockTolerance &&
                  (src < 0 || rt_.ops[op].end_ns > rt_.ops[src].end_ns))
                src = op;
            }
          }
          // A guessed dependency that the trace itself violates (the waiting op started before
          // the awaited one ended) is wrong: drop it rather than delay the replay.
          if (src < 0 || rt_.ops[src].end_ns > rt_.ops[dst].start_ns + kClockTolerance) {
            ++rep_->waits_unresolved;
            src = -1;
            break;
          }
          ++rep_->waits_inferred;
        }
        if (src >= 0 && dst >= 0 && rt_.ops[src].stream != rt_.ops[dst].stream &&
            event_edges_.insert(static_cast<uint64_t>(src) << 32 | static_cast<uint64_t>(dst)).second) {
          d_->AddEdge(op_node_[src], op_node_[dst], EdgeKind::kEventWait);
          op_awaits_event_[dst] = true;
        }
        break;
      }
      default:
        break;
    }
  }
}

void RankBuilder::BuildCrossThread() {
  // Background threads: API calls, but none that launches GPU work or waits on it.
  const size_t threads = rt_.threads.size();
  std::vector<int64_t> calls(threads, 0), working(threads, 0);
  std::vector<std::map<uint32_t, int64_t>> call_names(threads);
  for (const CpuCall& c : rt_.calls) {
    ++calls[c.thread];
    if (c.kind != CallKind::kOther) ++working[c.thread];
    ++call_names[c.thread][c.name];
  }
  std::vector<uint8_t> background(threads, 0);
  bool any_working = false;
  for (size_t t = 0; t < threads; ++t) any_working |= working[t] > 0;
  for (size_t t = 0; t < threads && any_working; ++t) {
    if (calls[t] == 0 || working[t] > 0) continue;
    background[t] = 1;
    std::string top;
    int64_t most = 0;
    for (const auto& [name, count] : call_names[t])
      if (count > most) most = count, top = names_.Get(name);
    rep_->background.push_back({rt_.threads[t].tid, calls[t],
                                std::to_string(calls[t]) + " API calls (mostly " + top + " x" + std::to_string(most) +
                                    "), none launching GPU work or waiting on it"});
  }
  for (size_t v = 0; v < d_->g.kind.size(); ++v)
    if (d_->g.rank[v] == r_ && IsCpu(d_->g.kind[v]) && background[static_cast<size_t>(d_->g.lane[v])])
      d_->g.background[v] = 1;

  // The autograd engine's thread: the one that ran the most autograd::engine::evaluate_function ops.
  int64_t autograd = -1, most = 0;
  for (const auto& [id, count] : rt_.autograd_threads)
    if (count > most)
      for (size_t t = 0; t < threads; ++t)
        if (rt_.threads[t] == id) autograd = static_cast<int64_t>(t), most = count;

  // Every call node of a working thread, by end time.
  std::vector<std::pair<int64_t, uint32_t>> ends;  // (end ns, call index)
  for (uint32_t i = 0; i < rt_.calls.size(); ++i)
    if (!background[rt_.calls[i].thread] && call_node_[i] != kNone &&
        d_->g.source[call_node_[i]] == static_cast<int32_t>(i))
      ends.emplace_back(rt_.calls[i].end_ns, i);
  std::sort(ends.begin(), ends.end());
  for (const Gap& gap : gaps_) {
    if (background[gap.thread] || gap.end - gap.start < kBlockedGapNs) continue;
    // The other thread's call that ended last before the resume. Nothing of this thread ends
    // inside its own gap, so the latest end up to the resume belongs to another thread or is the
    // call before the gap (no other thread ended anything while this one waited: no candidate).
    auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(gap.end, UINT32_MAX));
    if (it == ends.begin()) continue;
    --it;
    const CpuCall& waker = rt_.calls[it->second];
    if (waker.thread == gap.thread || waker.end_ns < gap.start) continue;
    const int64_t delay = gap.end - waker.end_ns;
    if (static_cast<double>(delay) > kResumeShare * static_cast<double>(gap.end - gap.start)) {
      ++rep_->handoffs_dropped;  // resumed long after: the thread was working, not waiting
      continue;
    }
    d_->handoffs.push_back({d_->edges.size(), gap.gap, d_->g.duration[gap.gap], r_});
    d_->AddEdge(call_node_[it->second], gap.next, EdgeKind::kCrossThread, static_cast<double>(delay));
    d_->g.duration[gap.gap] = 0;
    ++rep_->handoffs_inferred;
    if (autograd >= 0 && (waker.thread == autograd || gap.thread == autograd)) ++rep_->handoffs_autograd;
  }
}

// Joins NCCL kernels of the same collective across loaded ranks through a barrier node. When
// every communication kernel of a process group, on every rank, carries a sequence number (the
// NCCL profiler plugin's records: trace/nccl_records.h), a collective is the kernels with equal
// (operation, number) — a point-to-point "p2p S->R" joins just its two ranks — and a kernel whose
// number no other rank has is unmatched. Otherwise the k-th communication kernel of a process
// group (or, without group names, of the k-th communication stream) on every rank is one.
void JoinCollectives(const Trace& t, const std::vector<RankIndex>& idx, Draft* d, BuildReport* rep,
                     std::vector<uint32_t>* redirect) {
  std::map<int64_t, std::vector<std::vector<uint32_t>>> groups;  // key -> per rank -> op indices
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    const RankTrace& rt = t.ranks[r];
    std::vector<int64_t> comm_streams;
    for (const GpuOp& o : rt.ops)
      if (o.is_comm && o.process_group == 0 &&
          std::find(comm_streams.begin(), comm_streams.end(), o.stream) == comm_streams.end())
        comm_streams.push_back(o.stream);
    std::sort(comm_streams.begin(), comm_streams.end());
    for (uint32_t i = 0; i < rt.ops.size(); ++i) {
      const GpuOp& o = rt.ops[i];
      if (!o.is_comm) continue;
      int64_t key = o.process_group != 0
                        ? static_cast<int64_t>(o.process_group)
                        : -1 - (std::find(comm_streams.begin(), comm_streams.end(), o.stream) - comm_streams.begin());
      auto& per_rank = groups[key];
      per_rank.resize(t.ranks.size());
      per_rank[r].push_back(i);
    }
  }
  // The collectives of one group: per collective, per rank, the op index (UINT32_MAX: absent).
  std::vector<std::vector<uint32_t>> sets;
  auto by_order = [&](const std::vector<std::vector<uint32_t>>& per_rank) {
    size_t n = SIZE_MAX, present = 0;
    for (const auto& ops : per_rank)
      if (!ops.empty()) ++present, n = std::min(n, ops.size());
    for (size_t r = 0; r < per_rank.size(); ++r) {
      if (per_rank[r].empty()) continue;
      rep->ranks[r].collectives_unmatched +=
          static_cast<int64_t>(present >= 2 ? per_rank[r].size() - n : per_rank[r].size());
      for (size_t k = 0; present >= 2 && k < n; ++k) {
        if (sets.size() <= k) sets.resize(k + 1, std::vector<uint32_t>(per_rank.size(), UINT32_MAX));
        sets[k][r] = per_rank[r][k];
      }
    }
  };
  auto by_seq = [&](const std::vector<std::vector<uint32_t>>& per_rank) {
    std::map<std::pair<uint32_t, int64_t>, size_t> set_of;  // (operation, number) -> index in sets
    for (size_t r = 0; r < per_rank.size(); ++r)
      for (uint32_t i : per_rank[r]) {
        const GpuOp& o = t.ranks[r].ops[i];
        auto [it, added] = set_of.try_emplace({o.collective, o.collective_seq}, sets.size());
        if (added) sets.emplace_back(per_rank.size(), UINT32_MAX);
        std::vector<uint32_t>& set = sets[it->second];
        if (set[r] == UINT32_MAX)
          set[r] = i;
        else
          ++rep->ranks[r].collectives_unmatched;  // the same number twice on one rank
      }
    std::erase_if(sets, [&](const std::vector<uint32_t>& set) {
      size_t present = 0, last = 0;
      for (size_t r = 0; r < set.size(); ++r)
        if (set[r] != UINT32_MAX) ++present, last = r;
      if (present == 1) ++rep->ranks[last].collectives_unmatched;
      return present < 2;
    });
  };
  int64_t mismatched_names = 0;
  for (auto& [key, per_rank] : groups) {
    bool numbered = true;
    for (size_t r = 0; r < per_rank.size(); ++r)
      for (uint32_t i : per_rank[r]) numbered &= t.ranks[r].ops[i].collective_seq >= 0;
    sets.clear();
    if (numbered)
      by_seq(per_rank), ++rep->groups_matched_by_seq;
    else
      by_order(per_rank);
    for (const std::vector<uint32_t>& set : sets) {
      double arrive = kNoAnchor, anchor = kNoAnchor;
      bool shared_clock = true;
      size_t first_rank = SIZE_MAX;
      for (size_t r = 0; r < set.size(); ++r) {
        if (set[r] == UINT32_MAX) continue;
        if (first_rank == SIZE_MAX) first_rank = r;
        uint32_t node = idx[r].op_node[set[r]];
        arrive = std::max(arrive, d->g.observed_start[node]);
        anchor = std::max(anchor, d->g.anchor[node]);
        shared_clock &= t.ranks[r].clock_id == t.ranks[first_rank].clock_id;
        if (t.ranks[r].ops[set[r]].name != t.ranks[first_rank].ops[set[first_rank]].name) ++mismatched_names;
      }
      uint32_t first = idx[first_rank].op_node[set[first_rank]];
      uint32_t b = d->AddNode(NodeKind::kBarrier, d->g.rank[first], -1, 0, -1, 0, anchor, arrive, arrive);
      redirect->resize(d->g.kind.size(), kNone);
      for (size_t r = 0; r < set.size(); ++r) {
        if (set[r] == UINT32_MAX) continue;
        uint32_t node = idx[r].op_node[set[r]];
        (*redirect)[node] = b;
        d->g.anchor[node] = kNoAnchor;
        d->AddEdge(b, node, EdgeKind::kCollective);
        // The measured kernel time includes waiting for the last peer; the transfer itself runs
        // from the last arrival to this rank's end.
        if (shared_clock) d->g.duration[node] = std::clamp(d->g.observed_end[node] - arrive, 0.0, d->g.duration[node]);
        ++rep->ranks[r].collectives_matched;
      }
    }
  }
  if (mismatched_names > 0)
    rep->notes.push_back(
        std::to_string(mismatched_names) +
        " matched collective kernels differ in name across ranks: check that the ranks' traces cover the same steps");
}

// Orders nodes topologically (Kahn) and writes the CSR graph. Fails on a cycle, naming it.
bool Finalize(const Trace& t, Draft* d, const std::vector<uint32_t>& redirect, Graph* out, std::string* err) {
  const size_t n = d->g.kind.size();
  std::vector<EdgeRec>& edges = d->edges;
  for (EdgeRec& e : edges)
    if (e.kind != EdgeKind::kCollective && e.to < redirect.size() && redirect[e.to] != kNone) e.to = redirect[e.to];
  std::vector<uint32_t> indeg(n, 0), out_begin(n + 1, 0);
  for (const EdgeRec& e : edges) ++indeg[e.to], ++out_begin[e.from + 1];
  for (size_t i = 0; i < n; ++i) out_begin[i + 1] += out_begin[i];
  std::vector<uint32_t> out_edges(edges.size());
  {
    std::vector<uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (uint32_t i = 0; i < edges.size(); ++i) out_edges[fill[edges[i].from]++] = i;
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  for (uint32_t v = 0; v < n; ++v)
    if (indeg[v] == 0) order.push_back(v);
  for (size_t head = 0; head < order.size(); ++head) {
    uint32_t v = order[head];
    for (uint32_t k = out_begin[v]; k < out_begin[v + 1]; ++k)
      if (--indeg[edges[out_edges[k]].to] == 0) order.push_back(edges[out_edges[k]].to);
  }
  if (order.size() != n) {
    // Walk predecessors inside the unresolved set until a node repeats: that is the cycle.
    std::vector<uint32_t> pred_of(n, kNone);
    for (const EdgeRec& e : edges)
      if (indeg[e.to] > 0 && indeg[e.from] > 0) pred_of[e.to] = e.from;
    uint32_t v = 0;
    while (indeg[v] == 0) ++v;
    std::vector<int> seen(n, -1);
    std::vector<uint32_t> path;
    while (v != kNone && seen[v] < 0) seen[v] = static_cast<int>(path.size()), path.push_back(v), v = pred_of[v];
    std::string msg = "dependency cycle: ";
    size_t from = v == kNone ? 0 : static_cast<size_t>(seen[v]);
    for (size_t i = path.size(); i-- > from;) {
      uint32_t x = path[i];
      const RankTrace& rt = t.ranks[d->g.rank[x]];
      msg += std::string(NodeKindName(d->g.kind[x])) + " '" + t.names.Get(d->g.name[x]) + "' (" + rt.source + ", " +
             (IsGpu(d->g.kind[x]) ? "stream " : "thread ") + std::to_string(d->g.lane[x]) +
             ", t=" + std::to_string(static_cast<int64_t>(d->g.observed_start[x]) + d->g.origin_ns) + " ns)";
      msg += i > from ? " -> " : "";
    }
    *err = msg;
    return false;
  }
  std::vector<uint32_t> new_id(n);
  for (uint32_t i = 0; i < n; ++i) new_id[order[i]] = i;
  // Renumber: each array is rewritten in topological order and its old copy freed at once,
  // so that at most one extra array is alive at a time.
  Graph& g = d->g;
  auto permute = [&](auto& v) {
    std::remove_reference_t<decltype(v)> out_v(n);
    for (uint32_t i = 0; i < n; ++i) out_v[i] = v[order[i]];
    v.swap(out_v);
  };
  permute(g.kind);
  permute(g.rank);
  permute(g.lane);
  permute(g.name);
  permute(g.source);
  permute(g.duration);
  permute(g.anchor);
  permute(g.observed_start);
  permute(g.observed_end);
  permute(g.background);
  g.pred_begin.assign(n + 1, 0);
  for (const EdgeRec& e : edges) ++g.pred_begin[new_id[e.to] + 1];
  for (size_t i = 0; i < n; ++i) g.pred_begin[i + 1] += g.pred_begin[i];
  g.pred.resize(edges.size());
  g.pred_latency.resize(edges.size());
  g.pred_kind.resize(edges.size());
  std::vector<uint32_t> fill(g.pred_begin.begin(), g.pred_begin.end() - 1);
  for (const EdgeRec& e : edges) {
    uint32_t slot = fill[new_id[e.to]]++;
    g.pred[slot] = new_id[e.from];
    g.pred_latency[slot] = e.latency;
    g.pred_kind[slot] = e.kind;
  }
  *out = std::move(g);
  return true;
}

}  // namespace

bool BuildGraph(const Trace& trace, Graph* graph, BuildReport* report, std::string* err) {
  Draft d;
  int64_t origin = INT64_MAX;
  for (const RankTrace& rt : trace.ranks) {
    for (const CpuCall& c : rt.calls) origin = std::min(origin, c.start_ns);
    for (const GpuOp& o : rt.ops) origin = std::min(origin, o.start_ns);
  }
  if (origin == INT64_MAX) origin = 0;
  d.g.origin_ns = origin;
  size_t nodes = 0, edges = 0;
  for (const RankTrace& rt : trace.ranks)
    nodes += 2 * rt.calls.size() + rt.ops.size(), edges += 2 * rt.calls.size() + 3 * rt.ops.size();
  for (auto* v : {&d.g.duration, &d.g.anchor, &d.g.observed_start, &d.g.observed_end}) v->reserve(nodes);
  d.g.kind.reserve(nodes), d.g.rank.reserve(nodes), d.g.lane.reserve(nodes), d.g.name.reserve(nodes);
  d.g.source.reserve(nodes), d.thread_next.reserve(nodes), d.edges.reserve(edges);
  report->ranks.assign(trace.ranks.size(), {});
  report->notes = trace.notes;
  report->groups_matched_by_seq = 0;
  std::vector<RankIndex> index(trace.ranks.size());
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    RankBuilder b(trace, static_cast<int32_t>(r), origin, &d, &report->ranks[r]);
    if (!b.Build(&index[r], err)) return false;
  }
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const RankTrace& rt = trace.ranks[r];
    if (!rt.ops.empty()) continue;
    int64_t launches = 0;
    for (const CpuCall& c : rt.calls) launches += c.kind == CallKind::kLaunch || c.kind == CallKind::kBlockingCopy;
    std::string& what = report->ranks[r].no_gpu;
    if (rt.calls.empty())
      what = "no GPU activity and no CUDA API calls: a CPU-only trace (or one recorded without CUDA activities)";
    else if (launches == 0)
      what = "no GPU activity: " + std::to_string(rt.calls.size()) +
             " CUDA API calls but none launching GPU work (a rank that launched nothing on a GPU)";
    else
      what = "no GPU activity although " + std::to_string(launches) +
             " API calls launch GPU work: the GPU side was not recorded as kernels/copies (CUPTI profiler "
             "ranges, or CUDA activities turned off)";
    report->notes.push_back(rt.source + ": " + what);
  }
  std::vector<uint32_t> redirect;
  JoinCollectives(trace, index, &d, report, &redirect);
  // One note per kind of missing information, summed over the ranks that lack it.
  struct Lack {
    int64_t RankBuildReport::*count;
    const char* what;
  };
  const Lack lacks[] = {
      {&RankBuildReport::waits_inferred,
       "synchronisations/stream waits inferred from call order and timing (no cuda_sync records): profile with "
       "cuda_sync events enabled for exact waits"},
      {&RankBuildReport::waits_unresolved, "synchronisations/stream waits could not be resolved and add no edge"},
      {&RankBuildReport::collectives_unmatched,
       "NCCL kernels have no peer among the loaded ranks: their measured time includes waiting for peers; load all "
       "ranks together to separate it"},
      {&RankBuildReport::ops_without_launch,
       "GPU ops have no launching call in the trace and keep their observed start"},
  };
  for (const Lack& l : lacks) {
    int64_t total = 0;
    std::string who;
    size_t ranks = 0;
    for (size_t r = 0; r < trace.ranks.size(); ++r) {
      int64_t n = report->ranks[r].*l.count;
      if (n == 0) continue;
      total += n;
      who = ++ranks == 1 ? trace.ranks[r].source : std::to_string(ranks) + " ranks";
    }
    if (total > 0) report->notes.push_back(who + ": " + std::to_string(total) + " " + l.what);
  }
  bool ok = Finalize(trace, &d, redirect, graph, err);
  if (!ok && !d.handoffs.empty()) {
    // The inferred hand-offs closed a cycle with what the trace says for sure: drop them all.
    std::vector<uint8_t> drop(d.edges.size(), 0);
    for (const Draft::Handoff& h : d.handoffs) {
      drop[h.edge] = 1;
      d.g.duration[h.gap] = h.gap_duration;
      RankBuildReport& rr = report->ranks[static_cast<size_t>(h.rank)];
      ++rr.handoffs_dropped;
      rr.handoffs_inferred = rr.handoffs_autograd = 0;
    }
    size_t out = 0;
    for (size_t i = 0; i < d.edges.size(); ++i)
      if (!drop[i]) d.edges[out++] = d.edges[i];
    d.edges.resize(out);
    report->notes.push_back("cross-thread hand-offs dropped: they closed a cycle (" + *err + ")");
    err->clear();
    ok = Finalize(trace, &d, redirect, graph, err);
  }
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const RankBuildReport& rr = report->ranks[r];
    if (rr.handoffs_inferred + rr.handoffs_dropped > 0)
      report->notes.push_back(trace.ranks[r].source + ": " + std::to_string(rr.handoffs_inferred) +
                              " cross-thread hand-offs inferred (" + std::to_string(rr.handoffs_autograd) +
                              " with the autograd engine's thread), " + std::to_string(rr.handoffs_dropped) +
                              " candidates dropped as the trace's times contradict them");
    for (const RankBuildReport::Background& b : rr.background)
      report->notes.push_back(trace.ranks[r].source + ": thread " + std::to_string(b.tid) +
                              " is background (it does not define the iteration's end): " + b.reason);
  }
  return ok;
}

}  // namespace emo
