// bench.h — `emo bench`: EMO beside the baselines on simulated workloads (the paper's Tables III
// and IV in simulation): for each workload, budget and method, the measured energy saving and
// slowdown against the default clocks with their spread over seeds, EMO's profiling and search
// cost, and the best static clock at the same budget.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct BenchOptions {
  std::vector<std::string> workloads;  // specs; empty: the default set (workloads/, see bench.cc)
  std::vector<std::string> methods;    // emo, static, zeus, geepafs, gpoeo, perseus; empty: all
  std::vector<double> budgets;         // empty: 0.02 and 0.05, and 0 for pipelines and offload
  int seeds = 3;
  int low_mhz = -1;      // EMO's pipeline's second traced run (PipelineOptions::low_mhz)
  std::string json, md;  // outputs ("" none)
  bool progress = false;
};

int RunBench(const BenchOptions& opt);

}  // namespace emo
