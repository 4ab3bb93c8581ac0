// sim_bench.cc — speed of the simulator: simulated GPU-op executions per second on the shipped
// workloads (trace recording off, as when a search evaluates policies, and on).
#include <benchmark/benchmark.h>

#include <string>

#include "sim/engine.h"
#include "sim/workload.h"

namespace emo::sim {
namespace {

void RunWorkload(benchmark::State& state, const std::string& spec, int iterations, bool trace) {
  Program p;
  std::string err;
  if (!LoadWorkload(std::string(EMO_WORKLOADS) + "/" + spec, &p, &err)) {
    state.SkipWithError(err.c_str());
    return;
  }
  int64_t ops = 0;
  for (auto _ : state) {
    EngineOptions o;
    o.iterations = iterations;
    o.record_trace = trace;
    Engine e(p, o);
    if (!e.Run(&err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    ops += e.gpu_ops_executed();
  }
  state.counters["gpu_ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  state.counters["gpu_ops"] = static_cast<double>(ops) / static_cast<double>(state.iterations());
}

void BM_Pp8_100Iterations(benchmark::State& state) { RunWorkload(state, "pp8-qwen2-7b-uniform-a100.json", 100, false); }
BENCHMARK(BM_Pp8_100Iterations)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Tp8_10Iterations(benchmark::State& state) { RunWorkload(state, "tp8-gpt3-6.7b-a100.json", 10, false); }
BENCHMARK(BM_Tp8_10Iterations)->Unit(benchmark::kMillisecond);

void BM_Tp8_10IterationsTraced(benchmark::State& state) { RunWorkload(state, "tp8-gpt3-6.7b-a100.json", 10, true); }
BENCHMARK(BM_Tp8_10IterationsTraced)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace emo::sim

BENCHMARK_MAIN();
