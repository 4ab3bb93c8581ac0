// zeus_power_limit.h — Zeus's GlobalPowerLimitOptimizer (ml-energy/zeus, optimizer/power_limit.py)
// as an online controller and baseline: during training it holds each candidate power limit for
// warm-up + profiling steps, measures energy (NVML counters, summed over GPUs) and time over the
// profiling window, then keeps the limit its selector picks for the rest of the run.
// Spec: ../shared/reference/BASELINES.md §1. All monitored GPUs share one limit.
#pragma once

#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/method_options.h"
#include "online/online_method.h"

namespace emo {

struct ZeusPowerLimitOptions {
  enum class Selector { kZeusCost, kEnergy, kTime, kMaxSlowdown };
  int wait_steps = 1;
  int warmup_steps = 10;
  int profile_steps = 40;
  double pl_step_w = 25;
  Selector selector = Selector::kZeusCost;
  double eta = 0.5;           // ZeusCost: weight of energy against time
  double max_slowdown = 1.1;  // MaxSlowdownConstraint: time factor over the highest limit's time
};

// Options from the command line's keys eta, max-slowdown, selector (zeus-cost|energy|time|
// max-slowdown), wait, warmup, profile, step-w. A given max-slowdown selects the max-slowdown
// selector. False with *err naming the bad part.
bool ParseZeusPowerLimitOptions(const MethodOptions& m, ZeusPowerLimitOptions* out, std::string* err);

class ZeusPowerLimitOptimizer : public OnlineMethod {
 public:
  struct Measurement {
    double limit_w = 0, energy_j = 0, time_s = 0;  // over the profiling window
  };
  enum class State { kReady, kWarmup, kProfiling, kDone };

  // Sets every GPU to the highest limit, as Zeus does at construction. All GPUs must share one
  // power-limit range.
  ZeusPowerLimitOptimizer(GpuControl* gpus, const ZeusPowerLimitOptions& options);
  void OnIterationStart(int iteration, double now_ns) override;
  void Finish() override;  // back to the highest limit
  void Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const override;

  const std::vector<double>& candidates_w() const { return limits_; }  // highest first
  const std::vector<Measurement>& measurements() const { return measurements_; }
  State state() const { return state_; }
  double optimum_w() const { return optimum_w_; }  // valid in kDone

 private:
  void SetLimit(double watts);
  double Select() const;
  double EnergyJ();  // summed over GPUs; Fail()s when a counter is unreadable

  GpuControl* gpus_;
  ZeusPowerLimitOptions o_;
  std::vector<double> limits_;
  std::vector<Measurement> measurements_;
  State state_ = State::kReady;
  size_t current_ = 0;  // index into limits_ of the limit being warmed up or profiled
  int steps_ = 0;       // countdown of the current state
  double window_e0_ = 0, window_t0_ = 0;
  double set_w_ = -1;  // the limit last set
  double optimum_w_ = 0;
};

}  // namespace emo
