// predict.h — `emo predict`: the pack model's prediction (Algorithm 1) of a policy's iteration time
// and energy, beside the default clocks', without running it: for a workload on a simulated device
// (traced and modelled there), or for a real job's traces with their pack metrics, power and clock
// (the inputs of `emo optimize --trace`).
#pragma once

#include <string>
#include <vector>

namespace emo {

struct PredictOptions {
  std::string workload, policy, device, profile;
  // Or a real job's measurements, as emo optimize --trace takes them.
  std::vector<std::string> traces;
  std::string packs;
  std::vector<double> power_w, clock_mhz;
  std::vector<std::string> low_traces;  // as emo optimize's
  int low_mhz = -1;
  std::vector<double> low_power_w;
  double pack_ms = 5;
  double dvfs_latency_ms = 10;
  bool json = false;
};

int RunPredict(const PredictOptions& opt);

}  // namespace emo
