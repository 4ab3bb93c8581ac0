// policy_player.h — plays a frequency policy (device/frequency_policy.h): at each iteration start
// it schedules every GPU's clock changes on its host's timers; at the end it resets the clocks of
// the GPUs it changed.
#pragma once

#include "apply/controller.h"
#include "device/frequency_policy.h"
#include "device/gpu_control.h"

namespace emo {

class PolicyPlayer : public Controller {
 public:
  PolicyPlayer(const FrequencyPolicy& policy, GpuControl* gpus) : policy_(policy), gpus_(gpus) {}
  void OnIterationStart(int iteration, double now_ns) override;
  void Finish() override;

 private:
  FrequencyPolicy policy_;
  GpuControl* gpus_;
};

}  // namespace emo
