// performance_guard.h — the performance guard of `emo run --policy`: it watches the time between
// iteration starts and says when a frequency policy costs more time than its budget allows, so that
// the policy player (apply/policy_player.h) stops playing it and restores the default clocks.
//
// Reference: the iteration time at default clocks. Either given (a policy file's predicted
// default_iteration_ms) or measured here: the median of iterations kGuardReferenceSkip ..
// kGuardReferenceSkip + kGuardReferenceIterations - 1, run at default clocks before the policy starts.
// Limit: reference * (1 + budget + kGuardSlowMargin). An iteration's time is the time from its
// start to the next start. The guard trips when kGuardSlowStreak consecutive iterations played
// under the policy each took longer than the limit; once tripped it stays tripped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace emo {

// The first iteration of a training job carries its start-up costs (allocator growth, cuDNN
// autotuning, compilation, the first data-loader fill): it says nothing about the steady state.
inline constexpr int kGuardReferenceSkip = 1;
// The median of five: one outlier among them (a checkpoint, an evaluation step) cannot move it, and
// five iterations at default clocks cost little in a job of thousands.
inline constexpr int kGuardReferenceIterations = 5;
// Iteration times of a training loop at fixed clocks jitter by 1-2 % (data loading, Python, NCCL);
// two extra points keep a policy that meets its budget on average from tripping on noise.
inline constexpr double kGuardSlowMargin = 0.02;
// A single slow iteration is rarely the clocks (a checkpoint, an evaluation step, a data-loader
// stall); five in a row is a sustained slowdown, and the guard lets at most five pass.
inline constexpr int kGuardSlowStreak = 5;

class PerformanceGuard {
 public:
  enum class State { kMeasuring, kWatching, kTripped };

  // budget: the allowed slowdown, a fraction (0.05 = 5 %), >= 0. reference_ms > 0: the iteration
  // time at default clocks; 0: measure it from the first iterations.
  PerformanceGuard(double budget, double reference_ms);

  // An iteration begins at now_ns (any clock, ns; non-decreasing). Afterwards playing() says
  // whether the policy is to be played in this iteration.
  void OnIterationStart(double now_ns);

  State state() const { return state_; }
  // The policy is played: the reference is known and the guard has not tripped.
  bool playing() const { return state_ == State::kWatching; }
  double budget() const { return budget_; }
  double reference_ms() const { return reference_ms_; }  // 0 while measuring
  bool reference_measured() const { return measured_; }
  double limit_ms() const { return limit_ms_; }  // 0 while measuring
  int iterations() const { return starts_; }     // iteration starts seen
  // The iteration (0-based) whose start tripped the guard; -1 while it has not.
  int tripped_at() const { return tripped_at_; }
  // The iteration times (ms) of the current run of slow iterations; those that tripped it once tripped.
  const std::vector<double>& slow_ms() const { return slow_ms_; }

  // One line for the user: the reference and limit, or why the guard tripped.
  std::string Describe() const;
  // {"budget", "reference_ms", "reference" ("policy" | "measured"), "limit_ms", "state"
  //  ("measuring" | "watching" | "tripped"), "tripped_at_iteration" (null), "slow_iterations_ms"}.
  nlohmann::ordered_json Json() const;

 private:
  double budget_;
  double reference_ms_;
  bool measured_;
  double limit_ms_ = 0;
  State state_;
  int starts_ = 0;
  double prev_start_ns_ = 0;
  bool prev_played_ = false;     // the iteration that began at prev_start_ns_ ran under the policy
  std::vector<double> samples_;  // reference iterations measured so far, ms
  std::vector<double> slow_ms_;
  int tripped_at_ = -1;
};

}  // namespace emo
