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
    if (out > 0 && iv.first <= (*v)[out - 1].second)
      (*v)[out - 1].second = std::max((*v)[out - 1].second, iv.second);
    else
      (*v)[out++] = iv;
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
  auto k = v.begin() +
           static_cast<std::ptrdiff_t>(std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size()))));
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

std::string LaneName(const Trace& trace, const Graph& g, uint32_t v) {
  const RankTrace& rt = trace.ranks[static_cast<size_t>(g.rank[v])];
  if (IsGpu(g.kind[v])) return "rank " + std::to_string(rt.rank) + " stream " + std::to_string(g.lane[v]);
  const size_t t = static_cast<size_t>(g.lane[v]);
  return "rank " + std::to_string(rt.rank) + " thread " + std::to_string(g.lane[v]) +
         (t < rt.threads.size() ? " (tid " + std::to_string(rt.threads[t].tid) + ")" : "");
}

// Splits the path `nodes` (first to last), taken from time `lo` on, into what advanced it. Each
// node is charged only the time by which it advances the path, so that node time, edge latency and
// idle time add up to the path's length even where a GPU op overlaps the call that launched it.
void ChargePath(const Trace& trace, const Graph& g, const ReplayResult& replay, const std::vector<uint32_t>& nodes,
                double lo, CriticalPathStats* cp) {
  std::map<std::string, double> lanes;
  double prev_finish = lo;
  for (uint32_t v : nodes) {
    const double finish = replay.finish[v], start = finish - g.duration[v];
    double gap = std::max(0.0, start - prev_finish);
    (replay.crit_pred[v] == kNoPred ? cp->idle_ms : cp->edge_latency_ms) += gap / 1e6;
    double advance = std::max(0.0, finish - std::max(start, prev_finish)) / 1e6;
    prev_finish = std::max(prev_finish, finish);
    cp->by_kind_ms[static_cast<int>(g.kind[v])] += advance;
    if (g.kind[v] == NodeKind::kBarrier) continue;
    lanes[LaneName(trace, g, v)] += advance;
  }
  cp->nodes = static_cast<int64_t>(nodes.size());
  cp->total_ms = nodes.empty() ? 0 : (replay.finish[nodes.back()] - lo) / 1e6;
  for (auto& [name, ms] : lanes) cp->by_lane.push_back({name, ms});
  std::sort(cp->by_lane.begin(), cp->by_lane.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
}

// Per rank and iteration, the last work node; then each iteration's path back to its start.
void IterationPaths(const Trace& trace, const Graph& g, const ReplayResult& replay, Analysis* out) {
  const size_t n = g.nodes();
  const double origin = static_cast<double>(g.origin_ns);
  struct Window {
    double lo, hi;
    int64_t step;
    uint32_t last = kNoPred;
  };
  std::vector<std::vector<Window>> windows(trace.ranks.size());
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    for (const Iteration& it : trace.ranks[r].iterations)
      windows[r].push_back(
          {static_cast<double>(it.start_ns) - origin, static_cast<double>(it.end_ns) - origin, it.step});
    std::sort(windows[r].begin(), windows[r].end(), [](const Window& a, const Window& b) { return a.lo < b.lo; });
    if (windows[r].empty()) windows[r].push_back({-INFINITY, INFINITY, -1});
  }
  // A node's iteration is the one its CPU node (for a GPU op: its launching call) starts in.
  auto window_of = [&](uint32_t v) -> Window* {
    uint32_t cpu = v;
    if (IsGpu(g.kind[v])) {
      cpu = kNoPred;
      for (uint32_t k = g.pred_begin[v]; k < g.pred_begin[v + 1]; ++k)
        if (g.pred_kind[k] == EdgeKind::kLaunch) cpu = g.pred[k];
      if (cpu == kNoPred) return nullptr;
    } else if (!IsCpu(g.kind[v])) {
      return nullptr;
    }
    if (!g.background.empty() && g.background[cpu]) return nullptr;
    auto& w = windows[static_cast<size_t>(g.rank[v])];
    const double t = g.observed_start[cpu];
    auto it = std::upper_bound(w.begin(), w.end(), t, [](double x, const Window& a) { return x < a.lo; });
    if (it == w.begin()) return nullptr;
    --it;
    return t < it->hi ? &*it : nullptr;
  };
  for (uint32_t v = 0; v < n; ++v) {
    Window* w = window_of(v);
    if (w && (w->last == kNoPred || replay.finish[v] > replay.finish[w->last])) w->last = v;
  }
  std::map<std::string, double> steady;
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const auto& w = windows[r];
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i].last == kNoPred) continue;
      IterationPath ip;
      ip.rank = r;
      ip.step = w[i].step;
      const double lo = std::isfinite(w[i].lo) ? w[i].lo : -INFINITY;
      std::vector<uint32_t> nodes;
      for (uint32_t v = w[i].last; v != kNoPred && replay.finish[v] > lo; v = replay.crit_pred[v]) nodes.push_back(v);
      std::reverse(nodes.begin(), nodes.end());
      const double start = std::isfinite(lo) ? lo : replay.finish[nodes.front()] - g.duration[nodes.front()];
      ip.start_ms = start / 1e6;
      ChargePath(trace, g, replay, nodes, start, &ip.path);
      ip.nodes = std::move(nodes);
      if (i > 0 || w.size() == 1) {
        ++out->steady_iterations;
        CriticalPathStats& s = out->steady_path;
        s.total_ms += ip.path.total_ms;
        s.edge_latency_ms += ip.path.edge_latency_ms;
        s.idle_ms += ip.path.idle_ms;
        s.nodes += ip.path.nodes;
        for (int k = 0; k < kNodeKinds; ++k) s.by_kind_ms[k] += ip.path.by_kind_ms[k];
        for (const auto& l : ip.path.by_lane) steady[l.name] += l.ms;
      }
      out->iteration_paths.push_back(std::move(ip));
    }
  }
  CriticalPathStats& s = out->steady_path;
  if (out->steady_iterations == 0) return;
  const double k = static_cast<double>(out->steady_iterations);
  s.total_ms /= k, s.edge_latency_ms /= k, s.idle_ms /= k;
  s.nodes = static_cast<int64_t>(static_cast<double>(s.nodes) / k);
  for (double& x : s.by_kind_ms) x /= k;
  for (auto& [name, ms] : steady) s.by_lane.push_back({name, ms / k});
  std::sort(s.by_lane.begin(), s.by_lane.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
}

}  // namespace

Analysis Analyze(const Trace& trace, const Graph& g) { return Analyze(trace, g, ReplayMeasured(g)); }

Analysis Analyze(const Trace& trace, const Graph& g, const ReplayResult& replay) {
  const size_t n = g.nodes();
  const std::vector<double>& finish = replay.finish;
  const std::vector<double>& latest = replay.latest;
  const std::vector<uint32_t>& crit = replay.crit_pred;

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

  // Critical path: node time by kind and lane, plus what lies on its edges, to the end of the work.
  out.critical_nodes = replay.work_last == kNoPred ? std::vector<uint32_t>{} : CriticalPathTo(replay.work_last, crit);
  ChargePath(trace, g, replay, out.critical_nodes, all.rep_lo, &out.critical_path);
  IterationPaths(trace, g, replay, &out);
  return out;
}

}  // namespace emo
