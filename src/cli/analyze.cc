// analyze.cc — the `emo analyze` command: text and JSON reports of one or more ranks' traces.
#include "cli/analyze.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/analysis.h"
#include "graph/builder.h"
#include "pack/packer.h"
#include "trace/counter_tracks.h"
#include "trace/load.h"

namespace emo {
namespace {

using Json = nlohmann::ordered_json;

// A counter track of the trace (each GPU's SM clock, power and energy counter, as EMO's traces
// carry them): its range and its mean over the track's span, each value held until the next
// sample; for a cumulative counter in J (the energy counter), its mean rise per second instead (W).
struct CounterSummary {
  int32_t device = 0;
  std::string name, unit;
  size_t samples = 0;
  double min = 0, max = 0, mean = 0;
  bool cumulative = false;
  double rate = 0, rate_s = 0;  // cumulative: the rise per second, over this many seconds
};

CounterSummary SummarizeCounter(const CounterTrack& c) {
  CounterSummary s{c.device, c.name, c.unit, c.value.size(), 0, 0, 0, c.unit == "J", 0, 0};
  if (c.value.empty()) return s;
  const auto [lo, hi] = std::minmax_element(c.t_ns.begin(), c.t_ns.end());
  s.min = *std::min_element(c.value.begin(), c.value.end());
  s.max = *std::max_element(c.value.begin(), c.value.end());
  CounterMean(c, *lo, *hi, &s.mean);
  if (s.cumulative) CounterRate(c, *lo, *hi, &s.rate, &s.rate_s);
  return s;
}

// Everything `emo analyze` reports, computed once; the text and the JSON only render it, so both
// show the same numbers.
struct AnalyzeResult {
  struct Rank {
    int32_t rank = 0;
    std::string source, gpu;
    int64_t events = 0;
    std::vector<CounterSummary> counters;
  };
  std::vector<Rank> ranks;  // parallel to build.ranks and analysis.ranks
  size_t nodes = 0, edges = 0;
  BuildReport build;
  Analysis analysis;
  double pack_ms = 0;  // --pack-ms
  PackSummary packing;
  double seconds = 0;  // load to report
};

Json CountsJson(const SpanStats& s) {
  Json nodes = Json::object(), edges = Json::object();
  for (int k = 0; k < kNodeKinds; ++k) nodes[NodeKindName(static_cast<NodeKind>(k))] = s.nodes[k];
  for (int k = 0; k < kEdgeKinds; ++k) edges[EdgeKindName(static_cast<EdgeKind>(k))] = s.edges[k];
  return {{"nodes", nodes}, {"edges", edges}};
}

Json SlackJson(const SlackStats& s) {
  return {{"kernel_ms", s.kernel_ms},
          {"off_critical_share", s.Share(s.off_critical_ms)},
          {"slack_ge_1ms_share", s.Share(s.slack_ge_1ms_ms)},
          {"slack_ge_5ms_share", s.Share(s.slack_ge_5ms_ms)}};
}

// The span's figures after its node and edge counts.
Json SpanJson(const SpanStats& s) {
  Json j;
  j["observed_ms"] = s.observed_ms;
  j["replayed_ms"] = s.replayed_ms;
  j["replay_error"] = s.replay_error;
  j["gpu_start_error_p50_us"] = s.start_error_p50_us;
  j["gpu_start_error_p95_us"] = s.start_error_p95_us;
  j["slack"] = SlackJson(s.slack);
  j["iterations"] = s.iterations;
  j["iteration_ms"] = s.iteration_ms;
  j["overlap"] = {{"compute_ms", s.overlap.compute_ms},
                  {"with_comm_ms", s.overlap.with_comm_ms},
                  {"with_cpu_ms", s.overlap.with_cpu_ms},
                  {"with_other_gpus_ms", s.overlap.with_other_gpus_ms}};
  return j;
}

Json PackJson(const PackSummary& p, double max_ms) {
  return {{"max_ms", max_ms},
          {"kernels", p.kernels},
          {"packs", p.packs},
          {"unique", p.unique},
          {"median_span_ms", p.median_span_ms},
          {"multi_kernel_time_share", p.multi_kernel_time_share}};
}

// Lanes of a path with their ms and share of the path's length.
Json LaneShares(const CriticalPathStats& cp) {
  Json out = Json::array();
  for (const auto& l : cp.by_lane)
    out.push_back({{"lane", l.name}, {"ms", l.ms}, {"share", cp.total_ms > 0 ? l.ms / cp.total_ms : 0.0}});
  return out;
}

Json ToJson(const AnalyzeResult& res) {
  Json j;
  Json ranks = Json::array();
  for (size_t r = 0; r < res.ranks.size(); ++r) {
    const AnalyzeResult::Rank& rk = res.ranks[r];
    const RankBuildReport& br = res.build.ranks[r];
    Json x = {{"rank", rk.rank}, {"source", rk.source}, {"gpu", rk.gpu}, {"events", rk.events}};
    x.update(CountsJson(res.analysis.ranks[r]));
    x.update(SpanJson(res.analysis.ranks[r]));
    x["launch_latency_us"] = br.launch_latency_ns / 1e3;
    x["copy_latency_us"] = br.copy_latency_ns / 1e3;
    x["pageable_copy_latency_us"] = br.pageable_copy_latency_ns / 1e3;
    x["sync_return_us"] = br.sync_return_ns / 1e3;
    x["waits"] = {{"exact", br.waits_exact}, {"inferred", br.waits_inferred}, {"unresolved", br.waits_unresolved}};
    x["collectives"] = {{"matched", br.collectives_matched}, {"unmatched", br.collectives_unmatched}};
    x["ops_without_launch"] = br.ops_without_launch;
    x["cross_thread"] = {
        {"inferred", br.handoffs_inferred}, {"autograd", br.handoffs_autograd}, {"dropped", br.handoffs_dropped}};
    Json bg = Json::array();
    for (const auto& b : br.background) bg.push_back({{"tid", b.tid}, {"calls", b.calls}, {"reason", b.reason}});
    x["background_threads"] = bg;
    Json counters = Json::array();
    for (const CounterSummary& c : rk.counters) {
      Json y = {{"device", c.device}, {"name", c.name}, {"unit", c.unit}, {"samples", c.samples},
                {"min", c.min},       {"max", c.max},   {"mean", c.mean}};
      if (c.cumulative) {
        y["rise_per_s"] = c.rate;
        y["rise_seconds"] = c.rate_s;
      }
      counters.push_back(y);
    }
    x["counters"] = counters;
    ranks.push_back(x);
  }
  j["ranks"] = ranks;
  const Json counts = CountsJson(res.analysis.total);
  j["nodes"] = res.nodes;
  j["edges"] = res.edges;
  j["nodes_by_kind"] = counts["nodes"];
  j["edges_by_kind"] = counts["edges"];
  j.update(SpanJson(res.analysis.total));
  const CriticalPathStats& cp = res.analysis.critical_path;
  Json by_kind = Json::object();
  for (int k = 0; k < kNodeKinds; ++k) by_kind[NodeKindName(static_cast<NodeKind>(k))] = cp.by_kind_ms[k];
  Json by_lane = Json::array();
  for (const auto& l : cp.by_lane) by_lane.push_back({{"lane", l.name}, {"ms", l.ms}});
  j["critical_path"] = {{"ms", cp.total_ms},     {"nodes", cp.nodes},
                        {"by_kind_ms", by_kind}, {"edge_latency_ms", cp.edge_latency_ms},
                        {"idle_ms", cp.idle_ms}, {"by_lane_ms", by_lane}};
  const Analysis& a = res.analysis;
  Json its = Json::array();
  for (const IterationPath& ip : a.iteration_paths)
    its.push_back({{"rank", res.ranks[ip.rank].rank},
                   {"step", ip.step},
                   {"start_ms", ip.start_ms},
                   {"ms", ip.path.total_ms},
                   {"by_lane", LaneShares(ip.path)}});
  j["critical_path_per_iteration"] = {{"steady_iterations", a.steady_iterations},
                                      {"mean_ms", a.steady_path.total_ms},
                                      {"edge_latency_ms", a.steady_path.edge_latency_ms},
                                      {"idle_ms", a.steady_path.idle_ms},
                                      {"by_lane", LaneShares(a.steady_path)},
                                      {"iterations", its}};
  j["packing"] = PackJson(res.packing, res.pack_ms);
  j["notes"] = res.build.notes;
  j["seconds"] = res.seconds;
  return j;
}

int64_t Sum(const auto& a) {
  int64_t s = 0;
  for (auto x : a) s += x;
  return s;
}

void PrintSpan(const std::string& title, const SpanStats& s) {
  fmt::print("{}\n", title);
  fmt::print("  nodes {:>9}:", Sum(s.nodes));
  for (int k = 0; k < kNodeKinds; ++k)
    if (s.nodes[k]) fmt::print(" {} {}", NodeKindName(static_cast<NodeKind>(k)), s.nodes[k]);
  fmt::print("\n  edges {:>9}:", Sum(s.edges));
  for (int k = 0; k < kEdgeKinds; ++k)
    if (s.edges[k]) fmt::print(" {} {}", EdgeKindName(static_cast<EdgeKind>(k)), s.edges[k]);
  fmt::print("\n  observed {:.3f} ms, replayed {:.3f} ms, replay error {:+.2f} %\n", s.observed_ms, s.replayed_ms,
             100 * s.replay_error);
  fmt::print("  GPU op start error: median {:.1f} us, p95 {:.1f} us\n", s.start_error_p50_us, s.start_error_p95_us);
  fmt::print("  iterations {}, mean observed {:.3f} ms\n", s.iterations, s.iteration_ms);
  const SlackStats& sl = s.slack;
  fmt::print(
      "  GPU kernel time {:.3f} ms: {:.1f} % off the critical path, {:.1f} % with slack >= 1 ms, {:.1f} % "
      "with slack >= 5 ms\n",
      sl.kernel_ms, 100 * sl.Share(sl.off_critical_ms), 100 * sl.Share(sl.slack_ge_1ms_ms),
      100 * sl.Share(sl.slack_ge_5ms_ms));
  const Overlap& o = s.overlap;
  fmt::print("  compute {:.3f} ms, overlapping: communication {:.3f} ms, CPU work {:.3f} ms, other GPUs {:.3f} ms\n",
             o.compute_ms, o.with_comm_ms, o.with_cpu_ms, o.with_other_gpus_ms);
}

void PrintText(const AnalyzeResult& res) {
  for (size_t r = 0; r < res.ranks.size(); ++r) {
    const AnalyzeResult::Rank& rk = res.ranks[r];
    const RankBuildReport& br = res.build.ranks[r];
    PrintSpan(fmt::format("rank {} ({}{}{})", rk.rank, rk.source, rk.gpu.empty() ? "" : ", ", rk.gpu),
              res.analysis.ranks[r]);
    fmt::print(
        "  launch latency {:.1f} us, sync return {:.1f} us; waits exact {}, inferred {}, unresolved {}; "
        "collectives matched {}, unmatched {}\n",
        br.launch_latency_ns / 1e3, br.sync_return_ns / 1e3, br.waits_exact, br.waits_inferred, br.waits_unresolved,
        br.collectives_matched, br.collectives_unmatched);
    fmt::print(
        "  cross-thread hand-offs inferred {} ({} with the autograd thread), dropped {}; "
        "background threads {}\n",
        br.handoffs_inferred, br.handoffs_autograd, br.handoffs_dropped, br.background.size());
    for (const CounterSummary& c : rk.counters)
      if (c.cumulative)
        fmt::print("  GPU {} {}: {:.5g}-{:.5g} {}, rising {:.5g} {}/s (W) over {:.3g} s, {} samples\n", c.device,
                   c.name, c.min, c.max, c.unit, c.rate, c.unit, c.rate_s, c.samples);
      else
        fmt::print(
            "  GPU {} {}: {:.5g}-{:.5g} {}, mean {:.5g} {} over the trace, {} samples (each held until the next)\n",
            c.device, c.name, c.min, c.max, c.unit, c.mean, c.unit, c.samples);
  }
  if (res.ranks.size() > 1) PrintSpan("total", res.analysis.total);
  const CriticalPathStats& cp = res.analysis.critical_path;
  fmt::print("critical path {:.3f} ms over {} nodes:", cp.total_ms, cp.nodes);
  for (int k = 0; k < kNodeKinds; ++k)
    if (cp.by_kind_ms[k] > 0) fmt::print(" {} {:.3f}", NodeKindName(static_cast<NodeKind>(k)), cp.by_kind_ms[k]);
  fmt::print(", edge latency {:.3f}, idle {:.3f} (ms)\n", cp.edge_latency_ms, cp.idle_ms);
  for (size_t i = 0; i < cp.by_lane.size() && i < 8; ++i)
    fmt::print("  {:<32} {:10.3f} ms\n", cp.by_lane[i].name, cp.by_lane[i].ms);
  const Analysis& a = res.analysis;
  const CriticalPathStats& sp = a.steady_path;
  fmt::print(
      "critical path per steady-state iteration ({} iterations): mean {:.3f} ms, edge latency {:.3f}, idle "
      "{:.3f} (ms)\n",
      a.steady_iterations, sp.total_ms, sp.edge_latency_ms, sp.idle_ms);
  for (size_t i = 0; i < sp.by_lane.size() && i < 8; ++i)
    fmt::print("  {:<32} {:10.3f} ms {:5.1f} %\n", sp.by_lane[i].name, sp.by_lane[i].ms,
               sp.total_ms > 0 ? 100 * sp.by_lane[i].ms / sp.total_ms : 0.0);
  const PackSummary& p = res.packing;
  fmt::print(
      "packing (at most {} ms): {} kernels in {} packs, {} unique; median span {:.3f} ms; {:.1f} % of kernel "
      "time in packs of several kernels\n",
      res.pack_ms, p.kernels, p.packs, p.unique, p.median_span_ms, 100 * p.multi_kernel_time_share);
  for (const std::string& n : res.build.notes) fmt::print("note: {}\n", n);
  fmt::print("analyzed in {:.3f} s\n", res.seconds);
}

}  // namespace

int RunAnalyze(const AnalyzeOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  std::string err;
  std::vector<std::string> files;
  Trace trace;
  std::function<void(size_t, size_t, const std::string&, uint64_t)> progress;
  if (opt.progress)
    progress = [](size_t i, size_t n, const std::string& path, uint64_t bytes) {
      if (bytes == 0)
        fmt::print(stderr, "emo: loading [{}/{}] {}\n", i + 1, n, path);
      else
        fmt::print(stderr, "emo: loading [{}/{}] {}: {} MiB read\n", i + 1, n, path, bytes >> 20);
    };
  if (!ExpandTracePaths(opt.inputs, &files, &err) || !LoadTraces(files, &trace, &err, progress)) {
    fmt::print(stderr, "emo analyze: {}\n", err);
    return 1;
  }
  if (opt.progress) fmt::print(stderr, "emo: building the execution graph\n");
  Graph g;
  AnalyzeResult res;
  if (!BuildGraph(trace, &g, &res.build, &err)) {
    fmt::print(stderr, "emo analyze: {}\n", err);
    return 1;
  }
  for (const RankTrace& rt : trace.ranks) {
    res.ranks.push_back({rt.rank, rt.source, rt.gpu_name, rt.events_read, {}});
    for (const CounterTrack& c : rt.counters) res.ranks.back().counters.push_back(SummarizeCounter(c));
  }
  for (size_t r = 0; r < trace.ranks.size(); ++r)
    if (!res.build.ranks[r].no_gpu.empty())
      fmt::print(stderr, "emo analyze: {}: {}\n", trace.ranks[r].source, res.build.ranks[r].no_gpu);
  res.nodes = g.nodes();
  res.edges = g.edges();
  // One replay serves both the analysis and the packing.
  const ReplayResult replay = ReplayMeasured(g);
  res.analysis = Analyze(trace, g, replay);
  res.pack_ms = opt.pack_ms;
  res.packing = Summarize(PackKernels(g, trace.names, replay, PackOptions{opt.pack_ms * 1e6}));
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (opt.json)
    fmt::print("{}\n", ToJson(res).dump(2));
  else
    PrintText(res);
  return 0;
}

}  // namespace emo
