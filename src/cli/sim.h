// sim.h — `emo sim`: run a workload on the simulated GPUs, optionally under a frequency policy or
// an online method, and report time and energy measured through the telemetry counters.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct SimOptions {
  std::string workload;    // spec JSON
  std::string device;      // overrides the spec's device when set
  std::string policy;      // frequency policy JSON (policy.h), optional
  std::string controller;  // an online method, e.g. "zeus-power-limit:eta=0.5"; optional
  double adapt_pct = -1;   // EMO's online loop (cli/sim_adapt.h) with this slowdown budget, %; < 0: off
  int iterations = 10;
  int warmup = -1;           // iterations left out of the measurement; -1: 1 when there are several
  uint64_t seed = 1;         // the first run's seed
  int seeds = 1;             // runs, with seeds seed, seed+1, ...: mean and spread are reported
  uint64_t gpu_seed = 0;     // which simulated physical GPUs (their per-GPU variation)
  uint64_t kernel_seed = 0;  // which build of the kernels (their hidden per-name factors)
  std::string trace_out;     // Kineto JSON (one rank) or a directory of rank-R.json files
  std::string measure_out;
  // Static-clock sweep instead of one run: "" (none), "default" (the documented subset), "all" or
  // a comma-separated list of MHz; the best static clock is reported within each budget (%).
  std::string sweep_clocks;
  std::vector<double> budgets = {0, 2, 5};
};

int RunSim(const SimOptions& opt);

}  // namespace emo
