// simulated_instance.h — a predictor over a simulated workload's traced run of several iterations
// (the graph, its packs and the iteration markers as emo optimize gets them), with made-up pack
// tables: for tests of the pass and the search on a real graph's shape.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "graph/builder.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "sim/engine.h"
#include "sim/workload.h"

namespace emo {

// Clocks 810-1410 MHz in 150 MHz steps (default 1410). Pack p at clock f: T = t0 (0.4 + 0.6 r) / r
// with r = f / 1410 and t0 its measured time, power 60 + (200 + 20 (p % 7)) r² W; idle 60-70 W.
struct SimulatedInstance {
  std::unique_ptr<sim::Engine> engine;
  Graph g;
  Packing pk;
  Predictor pred;
  std::string err;  // what failed, if anything
  SimulatedInstance(const std::string& workload, int iterations) {
    sim::Program prog;
    if (!sim::LoadWorkload(std::string(std::getenv("EMO_WORKLOADS")) + "/" + workload, &prog, &err)) return;
    sim::EngineOptions eo;
    eo.iterations = iterations;
    eo.record_trace = true;
    engine = std::make_unique<sim::Engine>(prog, eo);
    if (!engine->Run(&err)) return;
    BuildReport rep;
    if (!BuildGraph(engine->trace(), &g, &rep, &err)) return;
    pk = PackKernels(g, engine->trace().names);
    PredictorInput in;
    in.graph = &g;
    in.packing = &pk;
    in.clocks_mhz = {810, 960, 1110, 1260, 1410};
    in.default_clock = 4;
    for (size_t p = 0; p < pk.packs(); ++p)
      for (int f : in.clocks_mhz) {
        const double r = f / 1410.0, t = (pk.busy_ns[p] + 1) * 1e-9 * (0.4 + 0.6 * r) / r;
        in.pack_time_s.push_back(t);
        in.pack_energy_j.push_back(t * (60 + (200 + 20 * static_cast<double>(p % 7)) * r * r));
      }
    for (int f : in.clocks_mhz) in.idle_power_w.push_back(60 + 10 * f / 1410.0);
    int gpus = 0;
    for (size_t v = 0; v < g.nodes(); ++v) gpus = std::max(gpus, g.rank[v] + 1);
    in.measured_energy_j.assign(gpus, 0);
    for (size_t p = 0; p < pk.packs(); ++p) in.measured_energy_j[pk.rank[p]] += 1.1 * in.pack_energy_j[p * 5 + 4];
    for (const Iteration& it : engine->trace().ranks[0].iterations)
      in.iteration_start_ns.push_back(static_cast<double>(it.start_ns - g.origin_ns));
    if (!pred.Init(in, &err) && err.empty()) err = "Init failed";
  }
};

}  // namespace emo
