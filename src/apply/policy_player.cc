// policy_player.cc — playing a frequency policy at every iteration start, under its guard.
#include "apply/policy_player.h"

namespace emo {

void PolicyPlayer::Guard(const PerformanceGuard& guard, std::function<void(const std::string&)> say) {
  guard_ = std::make_unique<PerformanceGuard>(guard);
  say_ = std::move(say);
}

void PolicyPlayer::OnIterationStart(int /*iteration*/, double now_ns) {
  if (stopped_) return;
  if (guard_) {
    const PerformanceGuard::State before = guard_->state();
    guard_->OnIterationStart(now_ns);
    if (guard_->state() != before && say_) say_(guard_->Describe());
    if (guard_->state() == PerformanceGuard::State::kTripped) {
      stopped_ = true;
      reset_ = ResetClocks();
      return;
    }
    if (!guard_->playing()) return;
  }
  for (const auto& g : policy_.gpus) {
    for (const ClockChange& c : g.changes) {
      int gpu = g.gpu, mhz = c.mhz;
      host()->At(now_ns + c.t_ms * 1e6, [this, gpu, mhz](double) {
        if (stopped_) return;  // scheduled before the guard tripped
        std::string err;
        if (!gpus_->SetLockedClock(gpu, mhz, &err)) Fail(err);
      });
    }
  }
}

bool ResetPolicyClocks(const FrequencyPolicy& policy, GpuControl* gpus, std::string* err) {
  bool ok = true;
  for (const auto& g : policy.gpus) {
    std::string e;
    if (!g.changes.empty() && !gpus->ResetClock(g.gpu, &e) && ok) {
      *err = e;
      ok = false;
    }
  }
  return ok;
}

bool PolicyPlayer::ResetClocks() {
  std::string err;
  if (ResetPolicyClocks(policy_, gpus_, &err)) return true;
  Fail(err);
  return false;
}

void PolicyPlayer::Finish() {
  stopped_ = true;
  if (!reset_) ResetClocks();
}

}  // namespace emo
