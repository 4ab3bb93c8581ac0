// search_bench.cc — speed of the prediction pass (goal: at least 50 M nodes/s) and of the search at
// a 5 % budget (goal: under 10 s for a 100 000-node graph), on the packed graph of a simulated
// TP-4 GPT-3 6.7B run (4 iterations, about 160 000 nodes) with made-up pack tables (speed does not
// depend on the numbers), with passes whole or from the change on and on one or two threads.
// Run: build/search_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "graph/builder.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "sim/engine.h"
#include "sim/workload.h"

namespace emo {
namespace {

struct Fixture {
  std::unique_ptr<sim::Engine> engine;
  Graph g;
  Packing pk;
  Predictor pred;
  Fixture() {
    sim::Program prog;
    std::string err;
    if (!sim::LoadWorkload(std::string(EMO_WORKLOADS) + "/tp4-gpt3-6.7b-a100.json", &prog, &err)) std::abort();
    sim::EngineOptions eo;
    eo.iterations = 4;
    eo.record_trace = true;
    engine = std::make_unique<sim::Engine>(prog, eo);
    if (!engine->Run(&err)) std::abort();
    BuildReport rep;
    if (!BuildGraph(engine->trace(), &g, &rep, &err)) std::abort();
    pk = PackKernels(g, engine->trace().names);
    PredictorInput in;
    in.graph = &g;
    in.packing = &pk;
    in.split_at_landings = true;  // as emo optimize
    for (int f = 210; f <= 1410; f += 15) in.clocks_mhz.push_back(f);
    in.default_clock = static_cast<int>(in.clocks_mhz.size()) - 1;
    for (size_t p = 0; p < pk.packs(); ++p)
      for (int f : in.clocks_mhz) {
        const double r = f / 1410.0, t = (pk.busy_ns[p] + 1) * 1e-9 * (0.3 + 0.7 / r);
        in.pack_time_s.push_back(t);
        in.pack_energy_j.push_back(t * (60 + 340 * r * r));
      }
    for (int f : in.clocks_mhz) in.idle_power_w.push_back(60 + 10 * f / 1410.0);
    in.measured_energy_j.assign(4, 1000);
    for (const Iteration& it : engine->trace().ranks[0].iterations)
      in.iteration_start_ns.push_back(static_cast<double>(it.start_ns - g.origin_ns));
    if (!pred.Init(in, &err)) std::abort();
  }
};

Fixture& F() {
  static Fixture f;
  return f;
}

void BM_PredictionPass(benchmark::State& state) {
  Fixture& f = F();
  const Schedule s(f.pred.gpus(), {{5e6, 40}, {100e6, 80}, {300e6, 60}});
  for (auto _ : state) benchmark::DoNotOptimize(f.pred.Run(s).end_ns);
  state.counters["nodes"] = static_cast<double>(f.g.nodes());
  state.counters["nodes_per_s"] = benchmark::Counter(
      static_cast<double>(f.g.nodes()) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PredictionPass)->Unit(benchmark::kMillisecond);

// Arguments: whether passes start from the change (SearchOptions::incremental), the threads, and
// whether states are filed by each GPU's most delayed work (SearchOptions::gpu_delays_by_work).
void BM_Search5Percent(benchmark::State& state) {
  Fixture& f = F();
  SearchOptions o;
  o.budget = 0.05;
  o.group = ReplicaGroups(f.g, f.pred.gpus());
  o.incremental = state.range(0) != 0;
  o.threads = static_cast<int>(state.range(1));
  o.gpu_delays_by_work = state.range(2) != 0;
  SearchResult r;
  for (auto _ : state) {
    std::string err;
    if (!Search(f.pred, o, &r, &err)) state.SkipWithError(err.c_str());
  }
  state.counters["nodes"] = static_cast<double>(f.g.nodes());
  state.counters["predictions"] = static_cast<double>(r.evaluations);
  state.counters["nodes_per_prediction"] = static_cast<double>(r.nodes_computed) / static_cast<double>(r.evaluations);
  state.counters["energy_j"] = r.predicted.energy_j;  // the same answer whatever the arguments
}
BENCHMARK(BM_Search5Percent)
    ->ArgNames({"incremental", "threads", "by_work"})
    ->Args({0, 1, 0})
    ->Args({1, 1, 0})
    ->Args({1, 2, 0})
    ->Args({1, 1, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace emo

BENCHMARK_MAIN();
