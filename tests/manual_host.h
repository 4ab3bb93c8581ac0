// manual_host.h — a ControllerHost for controller tests whose time the test moves.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "apply/controller.h"

namespace emo {

inline constexpr double kMs = 1e6;  // ns in a millisecond: the host's time is in ns

// A host whose time the test moves: timers run when the clock passes them, before the iteration
// start that comes at that time.
class ManualHost : public ControllerHost {
 public:
  explicit ManualHost(Controller* c) : c_(c) { c->Attach(this); }
  double NowNs() const override { return now_; }
  void At(double t_ns, std::function<void(double)> fn) override { timers_.push_back({t_ns, seq_++, std::move(fn)}); }
  void AdvanceTo(double t_ns) {
    for (;;) {
      auto next = std::min_element(timers_.begin(), timers_.end(), [](const Timer& a, const Timer& b) {
        return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.seq < b.seq;
      });
      if (next == timers_.end() || next->t_ns > t_ns) break;
      Timer t = std::move(*next);
      timers_.erase(next);
      now_ = std::max(now_, t.t_ns);
      t.fn(now_);
    }
    now_ = t_ns;
  }
  // An iteration that began at t_ns; one that began while the controller held the host (a plan on
  // hardware, which the controller's code moved the clock past) is delivered late, with its time.
  void Iteration(double t_ns) {
    AdvanceTo(std::max(now_, t_ns));
    c_->OnIterationStart(iteration_++, t_ns);
  }

 private:
  struct Timer {
    double t_ns;
    int seq;
    std::function<void(double)> fn;
  };
  Controller* c_;
  double now_ = 0;
  int seq_ = 0;
  int iteration_ = 0;
  std::vector<Timer> timers_;
};

}  // namespace emo
