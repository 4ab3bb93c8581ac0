// policy_player.h — plays a frequency policy (device/frequency_policy.h): at each iteration start
// it schedules every GPU's clock changes on its host's timers; at the end it resets the clocks of
// the GPUs it changed. With a performance guard (apply/performance_guard.h) it plays the policy
// only while the guard allows: not while the guard measures its reference at default clocks, and
// never again once the guard tripped, when it resets the clocks at once and drops the changes
// still pending.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apply/controller.h"
#include "apply/performance_guard.h"
#include "device/frequency_policy.h"
#include "device/gpu_control.h"

namespace emo {

// Unlocks the clock of every GPU `policy` changes. False with *err, the first refusal (the other
// GPUs are still reset).
bool ResetPolicyClocks(const FrequencyPolicy& policy, GpuControl* gpus, std::string* err);

class PolicyPlayer : public Controller {
 public:
  PolicyPlayer(const FrequencyPolicy& policy, GpuControl* gpus) : policy_(policy), gpus_(gpus) {}
  // Before the host starts: guard the policy. say(line) runs on the host's thread when the guard
  // knows its reference and when it trips (a line for the user).
  void Guard(const PerformanceGuard& guard, std::function<void(const std::string&)> say);
  // Null without a guard. Read it after the host stopped.
  const PerformanceGuard* guard() const { return guard_.get(); }

  void OnIterationStart(int iteration, double now_ns) override;
  void Finish() override;

 private:
  bool ResetClocks();  // false when a reset failed (Fail() says why)

  FrequencyPolicy policy_;
  GpuControl* gpus_;
  std::unique_ptr<PerformanceGuard> guard_;
  std::function<void(const std::string&)> say_;
  bool stopped_ = false;  // the guard tripped: changes still pending are dropped
  bool reset_ = false;    // and the clocks were reset then
};

}  // namespace emo
