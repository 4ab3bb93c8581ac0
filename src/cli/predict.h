// predict.h — `emo predict`: the pack model's prediction (Algorithm 1) of a policy's iteration time
// and energy for a workload on a simulated device, beside the default clocks', without running it.
#pragma once

#include <string>

namespace emo {

struct PredictOptions {
  std::string workload, policy, device, profile;
  double dvfs_latency_ms = 10;
  bool json = false;
};

int RunPredict(const PredictOptions& opt);

}  // namespace emo
