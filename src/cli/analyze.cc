// analyze.cc — the `emo analyze` command: text and JSON reports of one or more ranks' traces.
#include "cli/analyze.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "graph/analysis.h"
#include "graph/builder.h"
#include "pack/packer.h"
#include "trace/load.h"

namespace emo {
namespace {

using Json = nlohmann::ordered_json;

Json CountsJson(const SpanStats& s) {
  Json nodes = Json::object(), edges = Json::object();
  for (int k = 0; k < kNodeKinds; ++k) nodes[NodeKindName(static_cast<NodeKind>(k))] = s.nodes[k];
  for (int k = 0; k < kEdgeKinds; ++k) edges[EdgeKindName(static_cast<EdgeKind>(k))] = s.edges[k];
  return {{"nodes", nodes}, {"edges", edges}};
}

Json SpanJson(const SpanStats& s) {
  Json j = CountsJson(s);
  j["observed_ms"] = s.observed_ms;
  j["replayed_ms"] = s.replayed_ms;
  j["replay_error"] = s.replay_error;
  j["gpu_start_error_p50_us"] = s.start_error_p50_us;
  j["gpu_start_error_p95_us"] = s.start_error_p95_us;
  j["gpu_slack_ms"] = s.gpu_slack_ms;
  j["iterations"] = s.iterations;
  j["iteration_ms"] = s.iteration_ms;
  j["overlap"] = {{"compute_ms", s.overlap.compute_ms},
                  {"with_comm_ms", s.overlap.with_comm_ms},
                  {"with_cpu_ms", s.overlap.with_cpu_ms},
                  {"with_other_gpus_ms", s.overlap.with_other_gpus_ms}};
  return j;
}

// What packing made of the kernels: how many packs, how many distinct ones need profiling, and
// how much kernel time sits in packs of several kernels.
Json PackJson(const Packing& p, double max_ms) {
  std::vector<double> spans;
  double busy = 0, multi = 0;
  for (size_t k = 0; k < p.packs(); ++k) {
    spans.push_back((p.end_ns[k] - p.start_ns[k]) / 1e6);
    busy += p.busy_ns[k];
    if (p.member_begin[k + 1] - p.member_begin[k] > 1) multi += p.busy_ns[k];
  }
  std::sort(spans.begin(), spans.end());
  return {{"max_ms", max_ms},
          {"kernels", p.members.size()},
          {"packs", p.packs()},
          {"unique", p.unique_packs()},
          {"median_span_ms", spans.empty() ? 0 : spans[spans.size() / 2]},
          {"multi_kernel_time_share", busy > 0 ? multi / busy : 0}};
}

int64_t Sum(const auto& a) {
  int64_t s = 0;
  for (auto x : a) s += x;
  return s;
}

void PrintSpan(const char* title, const SpanStats& s) {
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
  fmt::print("  GPU kernel slack {:.3f} ms\n", s.gpu_slack_ms);
  const Overlap& o = s.overlap;
  fmt::print("  compute {:.3f} ms, overlapping: communication {:.3f} ms, CPU work {:.3f} ms, other GPUs {:.3f} ms\n",
             o.compute_ms, o.with_comm_ms, o.with_cpu_ms, o.with_other_gpus_ms);
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
      if (bytes == 0) fmt::print(stderr, "emo: loading [{}/{}] {}\n", i + 1, n, path);
      else fmt::print(stderr, "emo: loading [{}/{}] {}: {} MiB read\n", i + 1, n, path, bytes >> 20);
    };
  if (!ExpandTracePaths(opt.inputs, &files, &err) || !LoadTraces(files, &trace, &err, progress)) {
    fmt::print(stderr, "emo analyze: {}\n", err);
    return 1;
  }
  if (opt.progress) fmt::print(stderr, "emo: building the execution graph\n");
  Graph g;
  BuildReport report;
  if (!BuildGraph(trace, &g, &report, &err)) {
    fmt::print(stderr, "emo analyze: {}\n", err);
    return 1;
  }
  const ReplayResult replay = ReplayMeasured(g);
  Analysis a = Analyze(trace, g, replay);
  const Packing packs = PackKernels(g, trace.names, replay, PackOptions{opt.pack_ms * 1e6});
  const Json pj = PackJson(packs, opt.pack_ms);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (opt.json) {
    Json j;
    Json ranks = Json::array();
    for (size_t r = 0; r < trace.ranks.size(); ++r) {
      const RankTrace& rt = trace.ranks[r];
      const RankBuildReport& br = report.ranks[r];
      Json x = {{"rank", rt.rank}, {"source", rt.source}, {"gpu", rt.gpu_name}, {"events", rt.events_read}};
      x.update(SpanJson(a.ranks[r]));
      x["launch_latency_us"] = br.launch_latency_ns / 1e3;
      x["copy_latency_us"] = br.copy_latency_ns / 1e3;
      x["pageable_copy_latency_us"] = br.pageable_copy_latency_ns / 1e3;
      x["sync_return_us"] = br.sync_return_ns / 1e3;
      x["waits"] = {{"exact", br.waits_exact}, {"inferred", br.waits_inferred}, {"unresolved", br.waits_unresolved}};
      x["collectives"] = {{"matched", br.collectives_matched}, {"unmatched", br.collectives_unmatched}};
      x["ops_without_launch"] = br.ops_without_launch;
      ranks.push_back(x);
    }
    j["ranks"] = ranks;
    Json total = SpanJson(a.total);
    j["nodes"] = g.nodes();
    j["edges"] = g.edges();
    j["nodes_by_kind"] = total["nodes"];
    j["edges_by_kind"] = total["edges"];
    total.erase("nodes");
    total.erase("edges");
    for (auto& [k, v] : total.items()) j[k] = v;
    const CriticalPathStats& cp = a.critical_path;
    Json by_kind = Json::object();
    for (int k = 0; k < kNodeKinds; ++k) by_kind[NodeKindName(static_cast<NodeKind>(k))] = cp.by_kind_ms[k];
    Json by_lane = Json::array();
    for (const auto& l : cp.by_lane) by_lane.push_back({{"lane", l.name}, {"ms", l.ms}});
    j["critical_path"] = {{"ms", cp.total_ms}, {"nodes", cp.nodes}, {"by_kind_ms", by_kind},
                          {"edge_latency_ms", cp.edge_latency_ms}, {"idle_ms", cp.idle_ms}, {"by_lane_ms", by_lane}};
    j["packing"] = pj;
    j["notes"] = report.notes;
    j["seconds"] = seconds;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const RankTrace& rt = trace.ranks[r];
    const RankBuildReport& br = report.ranks[r];
    PrintSpan(fmt::format("rank {} ({}{}{})", rt.rank, rt.source, rt.gpu_name.empty() ? "" : ", ", rt.gpu_name).c_str(),
              a.ranks[r]);
    fmt::print("  launch latency {:.1f} us, sync return {:.1f} us; waits exact {}, inferred {}, unresolved {}; "
               "collectives matched {}, unmatched {}\n",
               br.launch_latency_ns / 1e3, br.sync_return_ns / 1e3, br.waits_exact, br.waits_inferred,
               br.waits_unresolved, br.collectives_matched, br.collectives_unmatched);
  }
  if (trace.ranks.size() > 1) PrintSpan("total", a.total);
  const CriticalPathStats& cp = a.critical_path;
  fmt::print("critical path {:.3f} ms over {} nodes:", cp.total_ms, cp.nodes);
  for (int k = 0; k < kNodeKinds; ++k)
    if (cp.by_kind_ms[k] > 0) fmt::print(" {} {:.3f}", NodeKindName(static_cast<NodeKind>(k)), cp.by_kind_ms[k]);
  fmt::print(", edge latency {:.3f}, idle {:.3f} (ms)\n", cp.edge_latency_ms, cp.idle_ms);
  for (size_t i = 0; i < cp.by_lane.size() && i < 8; ++i)
    fmt::print("  {:<24} {:10.3f} ms\n", cp.by_lane[i].name, cp.by_lane[i].ms);
  fmt::print("packing (at most {} ms): {} kernels in {} packs, {} unique; median span {:.3f} ms; {:.1f} % of kernel "
             "time in packs of several kernels\n",
             opt.pack_ms, pj["kernels"].get<size_t>(), pj["packs"].get<size_t>(), pj["unique"].get<size_t>(),
             pj["median_span_ms"].get<double>(), 100 * pj["multi_kernel_time_share"].get<double>());
  for (const std::string& n : report.notes) fmt::print("note: {}\n", n);
  fmt::print("analyzed in {:.3f} s\n", seconds);
  return 0;
}

}  // namespace emo
