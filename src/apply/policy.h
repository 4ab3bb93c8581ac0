// policy.h — a frequency policy: per GPU, the SM clock to set at given offsets from the start of
// each iteration. The search writes one; the player applies it at every iteration start.
//
// JSON form: {"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 1410}, {"t_ms": 20, "mhz": 1065}]}]}
// Changes are applied in time order; a GPU absent from the policy keeps its clock.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apply/controller.h"
#include "apply/gpu_control.h"

namespace emo {

struct ClockChange {
  double t_ms = 0;  // offset from the iteration start
  int mhz = 0;
};

struct FrequencyPolicy {
  struct Gpu {
    int gpu = 0;
    std::vector<ClockChange> changes;  // sorted by t_ms
  };
  std::vector<Gpu> gpus;
};

// Parses/writes the JSON form. Errors name the file and the field.
bool LoadPolicy(const std::string& path, FrequencyPolicy* out, std::string* err);
bool ParsePolicy(const std::string& source, const std::string& text, FrequencyPolicy* out, std::string* err);
std::string PolicyJson(const FrequencyPolicy& p);

// Plays a policy: at each iteration start, schedules the clock changes of every GPU through
// `at(t_ns, fn)` (the simulator's timers, or a timer thread on hardware); at the end, resets the
// clocks of the GPUs it changed.
class PolicyPlayer : public Controller {
 public:
  using Schedule = std::function<void(double t_ns, std::function<void(double)> fn)>;
  PolicyPlayer(const FrequencyPolicy& policy, GpuControl* gpus, Schedule at)
      : policy_(policy), gpus_(gpus), at_(std::move(at)) {}
  void OnIterationStart(int iteration, double now_ns) override;
  void Finish() override;

 private:
  FrequencyPolicy policy_;
  GpuControl* gpus_;
  Schedule at_;
};

}  // namespace emo
