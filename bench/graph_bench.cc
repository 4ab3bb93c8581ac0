// graph_bench.cc — speed of trace import + graph build (events/s) and of the what-if pass
// (nodes/s). Run: build/emo_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/replay.h"
#include "trace/kineto_json.h"
#include "trace/kineto_writer.h"
#include "trace/load.h"
#include "util/file.h"

namespace emo {
namespace {

const std::string kLargestReal =
    std::string(EMO_TRACES) + "/HolisticTraceAnalysis/df_index_resolver/df_index_resolver.json.gz";

// A Kineto trace of `steps` training-like steps on one rank: per kernel a launch call, a gap and
// the kernel; two compute streams joined by record/wait pairs; an NCCL kernel per 50 kernels.
std::string SyntheticTrace(int64_t kernels) {
  std::string s;
  s.reserve(static_cast<size_t>(kernels) * 520);
  s += R"({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
  int64_t ts = 1'700'000'000'000'000, gpu_free[2] = {0, 0};
  for (int64_t i = 0; i < kernels; ++i) {
    int64_t corr = 2 * i + 1;
    int stream = i % 7 == 0 ? 20 : 7;
    bool nccl = i % 50 == 49;
    if (i % 13 == 0) {
      s += fmt::format(
          R"({{"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":{},"dur":2,"args":{{"correlation":{}}}}},)",
          ts, corr + 1);
      ts += 3;
    }
    s += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{},"dur":6,"args":{{"External id":{}}}}},)",
        ts, i);
    s += fmt::format(
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":4,"args":{{"correlation":{},"cbid":211}}}},)",
        ts + 1, corr);
    s += fmt::format(R"({{"ph":"s","id":{},"pid":1,"tid":1,"ts":{},"cat":"ac2g","name":"ac2g"}},)", corr, ts + 1);
    int64_t& free = gpu_free[stream == 7 ? 0 : 1];
    int64_t start = std::max(free, ts + 6), dur = 3 + (i * 7919) % 40;
    s += fmt::format(
        R"({{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":{},"ts":{},"dur":{},"args":{{"device":0,"stream":{},"correlation":{},"grid":[8,1,1],"block":[128,1,1]}}}},)",
        nccl ? "ncclKernel_AllReduce_RING_LL_Sum_float" : "ampere_sgemm_128x64_nn", stream, start, dur, stream, corr);
    free = start + dur;
    ts += 8;
  }
  s += R"({"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":)" + std::to_string(ts) +
       R"(,"dur":1,"args":{"correlation":0}}]})";
  return s;
}

int64_t ImportAndBuild(const std::string& name, const std::string& buf) {
  Trace t;
  std::string err;
  if (!ParseKinetoJson(name, buf.data(), buf.size(), &t, &err)) throw std::runtime_error(err);
  Graph g;
  BuildReport rep;
  if (!BuildGraph(t, &g, &rep, &err)) throw std::runtime_error(err);
  benchmark::DoNotOptimize(g.pred.data());
  return t.ranks[0].events_read;
}

// Parse + build of the largest real trace, already decompressed in memory.
void BM_ImportRealTrace(benchmark::State& state) {
  std::string buf, err;
  if (!ReadFileMaybeGz(kLargestReal, &buf, &err)) {
    state.SkipWithError(err.c_str());
    return;
  }
  int64_t events = 0;
  for (auto _ : state) events += ImportAndBuild(kLargestReal, buf);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(buf.size()) * state.iterations());
}
BENCHMARK(BM_ImportRealTrace)->Unit(benchmark::kMillisecond);

// The same as `emo analyze` reads it: streamed from disk and gunzipped piece by piece.
void BM_LoadRealTraceFromDisk(benchmark::State& state) {
  int64_t events = 0;
  for (auto _ : state) {
    Trace t;
    std::string err;
    Graph g;
    BuildReport rep;
    if (!LoadKinetoJson(kLargestReal, &t, &err) || !BuildGraph(t, &g, &rep, &err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    events += t.ranks[0].events_read;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LoadRealTraceFromDisk)->Unit(benchmark::kMillisecond);

// A multi-rank set read by LoadTraces with Arg threads: eight copies of the largest real trace (as
// eight ranks). The ratio of the 1-thread time to the N-thread time is the speed-up with cores.
void BM_LoadEightRanks(benchmark::State& state) {
  const std::vector<std::string> files(8, kLargestReal);
  int64_t events = 0;
  for (auto _ : state) {
    Trace t;
    std::string err;
    if (!LoadTraces(files, &t, &err, {}, static_cast<int>(state.range(0)))) {
      state.SkipWithError(err.c_str());
      return;
    }
    for (const RankTrace& r : t.ranks) events += r.events_read;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LoadEightRanks)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

// Inflating the largest real trace alone, as ByteStream does (ISA-L's igzip when the build found
// it, else zlib), and the same file through `gzip -dc` for the ratio that holds across machines.
void BM_InflateRealTrace(benchmark::State& state) {
  std::string piece, err;
  int64_t bytes = 0;
  for (auto _ : state) {
    ByteStream in;
    if (!in.Open(kLargestReal, &err)) state.SkipWithError(err.c_str());
    for (bool eof = false; !eof;) {
      piece.clear();
      if (!in.Read(&piece, &eof, &err)) state.SkipWithError(err.c_str());
      bytes += static_cast<int64_t>(piece.size());
    }
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_InflateRealTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GzipDcRealTrace(benchmark::State& state) {
  const std::string cmd = "gzip -dc '" + kLargestReal + "' >/dev/null";
  for (auto _ : state)
    if (std::system(cmd.c_str()) != 0) state.SkipWithError("gzip -dc failed");
}
BENCHMARK(BM_GzipDcRealTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

// Writing the largest real trace back as Kineto JSON (emo sim --trace, round trips).
void BM_WriteKinetoJson(benchmark::State& state) {
  Trace t;
  std::string err, out;
  if (!LoadKinetoJson(kLargestReal, &t, &err)) {
    state.SkipWithError(err.c_str());
    return;
  }
  for (auto _ : state) {
    WriteKinetoJson(t, 0, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(out.size()) * state.iterations());
}
BENCHMARK(BM_WriteKinetoJson)->Unit(benchmark::kMillisecond);

// Parse + build of a generated trace; the argument is the number of kernels (about 4.2 events
// each, so 1.25M kernels make over 5 million events).
void BM_ImportSynthetic(benchmark::State& state) {
  std::string buf = SyntheticTrace(state.range(0));
  int64_t events = 0;
  for (auto _ : state) events += ImportAndBuild("synthetic.json", buf);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(buf.size()) * state.iterations());
}
BENCHMARK(BM_ImportSynthetic)->Arg(1'250'000)->Unit(benchmark::kMillisecond)->Iterations(3);

// What-if pass over a graph of `n` nodes shaped like a trace: a CPU chain launching onto two
// streams with cross-stream waits (about 2 edges per node).
Graph SyntheticGraph(uint32_t n) {
  Graph g;
  g.kind.resize(n);
  g.rank.assign(n, 0);
  g.lane.assign(n, 0);
  g.name.assign(n, 0);
  g.source.assign(n, -1);
  g.duration.resize(n);
  g.anchor.assign(n, kNoAnchor);
  g.observed_start.assign(n, 0);
  g.observed_end.assign(n, 0);
  g.pred_begin.assign(1, 0);
  uint32_t last_cpu = UINT32_MAX, last_gpu[2] = {UINT32_MAX, UINT32_MAX};
  for (uint32_t v = 0; v < n; ++v) {
    auto add = [&](uint32_t from, float lat, EdgeKind k) {
      if (from == UINT32_MAX) return;
      g.pred.push_back(from);
      g.pred_latency.push_back(lat);
      g.pred_kind.push_back(k);
    };
    if (v % 2 == 0) {  // CPU launch call
      g.kind[v] = NodeKind::kCpuCall;
      g.duration[v] = 4000;
      if (last_cpu == UINT32_MAX) g.anchor[v] = 0;
      add(last_cpu, 0, EdgeKind::kThread);
      last_cpu = v;
    } else {  // kernel launched by v-1
      int s = (v / 2) % 5 == 0;
      g.kind[v] = NodeKind::kKernel;
      g.duration[v] = 3000 + (v * 7919) % 40000;
      add(v - 1, 1000, EdgeKind::kLaunch);
      add(last_gpu[s], 0, EdgeKind::kStream);
      if ((v / 2) % 13 == 0) add(last_gpu[1 - s], 0, EdgeKind::kEventWait);
      last_gpu[s] = v;
    }
    g.pred_begin.push_back(static_cast<uint32_t>(g.pred.size()));
  }
  return g;
}

void BM_WhatIf(benchmark::State& state) {
  Graph g = SyntheticGraph(static_cast<uint32_t>(state.range(0)));
  WhatIf w(g, std::vector<double>(g.nodes(), 1.0));
  std::vector<WhatIf::Change> changes;
  for (uint32_t v = 1; v < g.nodes(); v += 20) changes.push_back({v, g.duration[v] * 1.1, 0.9});
  for (auto _ : state) benchmark::DoNotOptimize(w.Evaluate(changes));
  state.counters["nodes/s"] = benchmark::Counter(
      static_cast<double>(g.nodes()) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["edges"] = static_cast<double>(g.edges());
}
BENCHMARK(BM_WhatIf)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace emo

BENCHMARK_MAIN();
