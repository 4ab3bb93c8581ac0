// frequency_policy.h — a frequency policy: per GPU, the SM clock to set at given offsets from the
// start of each iteration. The search writes one, the model predicts its time and energy, the
// player (apply/policy_player.h) applies it on any GpuControl, and reports draw it.
//
// JSON form: {"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 1410}, {"t_ms": 20, "mhz": 1065}]}]}
// Changes are applied in time order; a GPU absent from the policy keeps its clock. Two optional
// top-level keys record what the policy was searched for, so that `emo run`'s performance guard
// (apply/performance_guard.h) can check it: "budget" (allowed slowdown, a fraction: 0.05 = 5 %) and
// "default_iteration_ms" (the predicted iteration time at default clocks, ms).
#pragma once

#include <string>
#include <vector>

namespace emo {

struct ClockChange {
  double t_ms = 0;  // offset from the iteration start
  int mhz = 0;
  bool operator==(const ClockChange&) const = default;
};

struct FrequencyPolicy {
  struct Gpu {
    int gpu = 0;
    std::vector<ClockChange> changes;  // sorted by t_ms
    bool operator==(const Gpu&) const = default;
  };
  std::vector<Gpu> gpus;
  double budget = -1;               // allowed slowdown it was searched for, fraction; < 0: not recorded
  double default_iteration_ms = 0;  // predicted iteration time at default clocks; 0: not recorded
  bool operator==(const FrequencyPolicy&) const = default;
};

// Parses/writes the JSON form. Errors name the source (a file) and the field.
bool LoadPolicy(const std::string& path, FrequencyPolicy* out, std::string* err);
bool ParsePolicy(const std::string& source, const std::string& text, FrequencyPolicy* out, std::string* err);
std::string PolicyJson(const FrequencyPolicy& p);

}  // namespace emo
