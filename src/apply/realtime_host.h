// realtime_host.h — runs online controllers in wall-clock time, as on hardware: one thread calls
// every controller's Tick at its period, delivers the iteration starts the training loop reports,
// and fires timers (the policy player's clock changes). Every controller call happens on that
// thread, so controllers need no locks. Stop() — also run by the destructor — delivers the iteration
// starts reported before it, ends the thread and calls every controller's Finish(), which resets
// what it changed.
// The simulator's counterpart is sim::SimHost (sim/sim_gpu_control.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "apply/controller.h"

namespace emo {

class RealtimeHost : public ControllerHost {
 public:
  RealtimeHost() = default;
  ~RealtimeHost() override;
  RealtimeHost(const RealtimeHost&) = delete;
  RealtimeHost& operator=(const RealtimeHost&) = delete;

  // Before Start(): the controller runs on this host from then on.
  void Add(Controller* c);
  void Start();
  // Thread-safe: the training loop's step hook.
  void IterationStart();
  // Thread-safe: runs fn(now_ns) on the host thread at t_ns (ns since Start), or at once if past.
  void At(double t_ns, std::function<void(double)> fn) override;
  void Stop();
  double NowNs() const override;  // since Start

 private:
  struct Timer {
    double t_ns;
    uint64_t seq;
    std::function<void(double)> fn;
  };
  void Loop();

  std::vector<Controller*> controllers_;
  std::vector<double> next_tick_ns_;  // per controller; < 0 when it has no period
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  int iterations_reported_ = 0;             // guarded by mu_
  std::vector<double> pending_iterations_;  // their times, guarded by mu_
  std::vector<Timer> timers_;               // guarded by mu_
  uint64_t timer_seq_ = 0;
};

}  // namespace emo
