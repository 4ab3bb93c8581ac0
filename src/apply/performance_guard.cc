// performance_guard.cc — measuring the reference iteration time and counting slow iterations.
#include "apply/performance_guard.h"

#include <fmt/core.h>

#include <algorithm>

namespace emo {

PerformanceGuard::PerformanceGuard(double budget, double reference_ms)
    : budget_(budget),
      reference_ms_(reference_ms > 0 ? reference_ms : 0),
      measured_(!(reference_ms > 0)),
      state_(reference_ms > 0 ? State::kWatching : State::kMeasuring) {
  if (state_ == State::kWatching) limit_ms_ = reference_ms_ * (1 + budget_ + kGuardSlowMargin);
}

void PerformanceGuard::OnIterationStart(double now_ns) {
  const int i = starts_++;
  if (i > 0) {
    const int ended = i - 1;  // the iteration that just ended
    const double ms = (now_ns - prev_start_ns_) / 1e6;
    if (state_ == State::kMeasuring) {
      if (ended >= kGuardReferenceSkip) samples_.push_back(ms);
      if (static_cast<int>(samples_.size()) == kGuardReferenceIterations) {
        std::vector<double> s = samples_;
        std::nth_element(s.begin(), s.begin() + kGuardReferenceIterations / 2, s.end());
        reference_ms_ = s[kGuardReferenceIterations / 2];  // an odd count: the middle one
        limit_ms_ = reference_ms_ * (1 + budget_ + kGuardSlowMargin);
        state_ = State::kWatching;
      }
    } else if (state_ == State::kWatching && prev_played_) {
      if (ms > limit_ms_) {
        slow_ms_.push_back(ms);
      } else {
        slow_ms_.clear();
      }
      if (static_cast<int>(slow_ms_.size()) >= kGuardSlowStreak) {
        state_ = State::kTripped;
        tripped_at_ = i;
      }
    }
  }
  prev_start_ns_ = now_ns;
  prev_played_ = state_ == State::kWatching;
}

std::string PerformanceGuard::Describe() const {
  const std::string reference =
      state_ == State::kMeasuring
          ? fmt::format("measuring the reference at default clocks ({} of {} iterations)",
                        static_cast<int>(samples_.size()), kGuardReferenceIterations)
          : fmt::format("reference {:.3f} ms {}, limit {:.3f} ms (budget {:.1f} % + {:.1f} % margin)", reference_ms_,
                        measured_ ? fmt::format("(median of iterations {}-{} at default clocks)", kGuardReferenceSkip,
                                                kGuardReferenceSkip + kGuardReferenceIterations - 1)
                                  : "(the policy's predicted default)",
                        limit_ms_, budget_ * 100, kGuardSlowMargin * 100);
  if (state_ != State::kTripped) return reference;
  std::string times;
  for (double ms : slow_ms_) times += fmt::format("{}{:.3f}", times.empty() ? "" : ", ", ms);
  return fmt::format(
      "{} iterations in a row over the limit ({} ms): policy stopped and default clocks restored at "
      "iteration {}; {}",
      slow_ms_.size(), times, tripped_at_, reference);
}

nlohmann::ordered_json PerformanceGuard::Json() const {
  using Json = nlohmann::ordered_json;
  const char* state = state_ == State::kMeasuring ? "measuring" : state_ == State::kWatching ? "watching" : "tripped";
  const bool known = state_ != State::kMeasuring;
  return {{"budget", budget_},
          {"reference_ms", known ? Json(reference_ms_) : Json()},
          {"reference", measured_ ? "measured" : "policy"},
          {"limit_ms", known ? Json(limit_ms_) : Json()},
          {"state", state},
          {"tripped_at_iteration", tripped_at_ >= 0 ? Json(tripped_at_) : Json()},
          {"slow_iterations_ms", slow_ms_}};
}

}  // namespace emo
