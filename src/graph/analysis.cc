// analysis.cc — replay-based statistics for `emo analyze`.
#include "graph/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "graph/replay.h"

namespace emo {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

void Merge(Intervals* v) {
  std::sort(v->begin(), v->end());
  size_t out = 0;
  for (const auto& iv : *v) {
    if (iv.second <= iv.first) continue;
    if (out > 0 && iv.first <= (*v)[out - 1].second) (*v)[out - 1].second = std::max((*v)[out - 1].second, iv.second);
    else (*v)[out++] = iv;
  }
  v->resize(out);
}

double Length(const Intervals& v) {
  double s = 0;
  for (const auto& iv : v) s += iv.second - iv.first;
  return s;
}

double IntersectLength(const Intervals& a, const Intervals& b) {
  double s = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) s += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return s;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  auto k = v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size()))));
  std::nth_element(v.begin(), k, v.end());
  return *k;
}

struct Accum {
  double obs_lo = INFINITY, obs_hi = -INFINITY, rep_lo = INFINITY, rep_hi = -INFINITY;
  std::vector<double> start_err;
  Intervals compute, comm, cpu;
};

void Fill(const Accum& a, SpanStats* s) {
  s->observed_ms = a.obs_hi > a.obs_lo ? (a.obs_hi - a.obs_lo) / 1e6 : 0;
  s->replayed_ms = a.rep_hi > a.rep_lo ? (a.rep_hi - a.rep_lo) / 1e6 : 0;
  s->replay_error = s->observed_ms > 0 ? (s->replayed_ms - s->observed_ms) / s->observed_ms : 0;
  std::vector<double> e = a.start_err;
  s->start_error_p50_us = Percentile(e, 0.5) / 1e3;
  s->start_error_p95_us = Percentile(e, 0.95) / 1e3;
}

}  // namespace

Analysis Analyze(const Trace& trace, const Graph& g) { return Analyze(trace, g, ReplayMeasured(g)); }

Analysis Analyze(const Trace& trace, const Graph& g, const ReplayResult& replay) {
  const size_t n = g.nodes();
  const std::vector<double>& finish = replay.finish;
  const std::vector<double>& latest = replay.latest;
  const std::vector<uint32_t>& crit = replay.crit_pred;
  const double end = replay.end;

  Analysis out;
  const size_t ranks = trace.ranks.size();
  out.ranks.resize(ranks);
  std::vector<Accum> acc(ranks);
  Accum all;
  for (size_t v = 0; v < n; ++v) {
    NodeKind k = g.kind[v];
    size_t r = static_cast<size_t>(g.rank[v]);
    ++out.ranks[r].nodes[static_cast<int>(k)];
    ++out.total.nodes[static_cast<int>(k)];
    for (uint32_t e = g.pred_begin[v]; e < g.pred_begin[v + 1]; ++e) {
      ++out.ranks[r].edges[static_cast<int>(g.pred_kind[e])];
      ++out.total.edges[static_cast<int>(g.pred_kind[e])];
    }
    if (k == NodeKind::kBarrier) continue;
    double start = finish[v] - g.duration[v];
    for (Accum* a : {&acc[r], &all}) {
      a->obs_lo = std::min(a->obs_lo, g.observed_start[v]);
      a->obs_hi = std::max(a->obs_hi, g.observed_end[v]);
      a->rep_lo = std::min(a->rep_lo, start);
      a->rep_hi = std::max(a->rep_hi, finish[v]);
      // A collective's observed start includes waiting for its peers, which the graph models
      // at the barrier: compare where the transfer itself began.
      if (IsGpu(k))
        a->start_err.push_back(std::fabs(start - std::max(g.observed_start[v], g.observed_end[v] - g.duration[v])));
    }
    if (k == NodeKind::kKernel) {
      acc[r].compute.emplace_back(start, finish[v]);
      // Latest minus earliest completion equals latest minus earliest start: the duration is fixed.
      const double slack_ns = latest[v] - finish[v], ms = g.duration[v] / 1e6;
      for (SlackStats* sl : {&out.ranks[r].slack, &out.total.slack}) {
        sl->kernel_ms += ms;
        if (slack_ns > 0) sl->off_critical_ms += ms;
        if (slack_ns >= 1e6) sl->slack_ge_1ms_ms += ms;
        if (slack_ns >= 5e6) sl->slack_ge_5ms_ms += ms;
      }
    } else if (k == NodeKind::kComm) {
      acc[r].comm.emplace_back(start, finish[v]);
    } else if (IsCpu(k)) {
      acc[r].cpu.emplace_back(start, finish[v]);
    }
  }
  for (Accum& a : acc) Merge(&a.compute), Merge(&a.comm), Merge(&a.cpu);
  for (size_t r = 0; r < ranks; ++r) {
    SpanStats& s = out.ranks[r];
    Fill(acc[r], &s);
    Overlap& o = s.overlap;
    o.compute_ms = Length(acc[r].compute) / 1e6;
    o.with_comm_ms = IntersectLength(acc[r].compute, acc[r].comm) / 1e6;
    o.with_cpu_ms = IntersectLength(acc[r].compute, acc[r].cpu) / 1e6;
    if (ranks > 1) {
      Intervals others;
      for (size_t q = 0; q < ranks; ++q)
        if (q != r) others.insert(others.end(), acc[q].compute.begin(), acc[q].compute.end());
      Merge(&others);
      o.with_other_gpus_ms = IntersectLength(acc[r].compute, others) / 1e6;
    }
    Overlap& t = out.total.overlap;
    t.compute_ms += o.compute_ms, t.with_comm_ms += o.with_comm_ms;
    t.with_cpu_ms += o.with_cpu_ms, t.with_other_gpus_ms += o.with_other_gpus_ms;
    const auto& its = trace.ranks[r].iterations;
    // Without ProfilerStep/NVTX markers the whole trace is one iteration.
    s.iterations = std::max<int64_t>(1, static_cast<int64_t>(its.size()));
    for (const Iteration& it : its) s.iteration_ms += static_cast<double>(it.end_ns - it.start_ns) / 1e6;
    s.iteration_ms = its.empty() ? s.observed_ms : s.iteration_ms / static_cast<double>(its.size());
    out.total.iterations = std::max(out.total.iterations, s.iterations);
    out.total.iteration_ms = std::max(out.total.iteration_ms, s.iteration_ms);
  }
  Fill(all, &out.total);

  // Critical path: node time by kind and lane, plus what lies on its edges.
  out.critical_nodes = CriticalPath(finish, crit);
  CriticalPathStats& cp = out.critical_path;
  std::map<std::string, double> lanes;
  // Each node is charged only the time by which it advances the path, so that node time, edge
  // latency and idle time add up to the path's length even where a GPU op overlaps the call that
  // launched it.
  double prev_finish = all.rep_lo;
  for (uint32_t v : out.critical_nodes) {
    double start = finish[v] - g.duration[v];
    double gap = std::max(0.0, start - prev_finish);
    (crit[v] == kNoPred ? cp.idle_ms : cp.edge_latency_ms) += gap / 1e6;
    double advance = std::max(0.0, finish[v] - std::max(start, prev_finish)) / 1e6;
    prev_finish = std::max(prev_finish, finish[v]);
    cp.by_kind_ms[static_cast<int>(g.kind[v])] += advance;
    if (g.kind[v] == NodeKind::kBarrier) continue;
    std::string lane = "rank " + std::to_string(trace.ranks[g.rank[v]].rank) +
                       (IsGpu(g.kind[v]) ? " stream " : " thread ") + std::to_string(g.lane[v]);
    lanes[lane] += advance;
  }
  cp.nodes = static_cast<int64_t>(out.critical_nodes.size());
  cp.total_ms = out.critical_nodes.empty() ? 0 : (end - all.rep_lo) / 1e6;
  for (auto& [name, ms] : lanes) cp.by_lane.push_back({name, ms});
  std::sort(cp.by_lane.begin(), cp.by_lane.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace emo
