// realtime_host.cc — the controller thread: wait for the earliest tick, timer or reported
// iteration, run it, repeat.
#include "apply/realtime_host.h"

#include <algorithm>
#include <cmath>

namespace emo {

void RealtimeHost::Add(Controller* c) {
  c->Attach(this);
  controllers_.push_back(c);
}

RealtimeHost::~RealtimeHost() { Stop(); }

double RealtimeHost::NowNs() const {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start_).count();
}

void RealtimeHost::Start() {
  start_ = std::chrono::steady_clock::now();
  next_tick_ns_.clear();
  for (Controller* c : controllers_) next_tick_ns_.push_back(c->PeriodMs() > 0 ? 0 : -1);
  thread_ = std::thread([this] { Loop(); });
}

void RealtimeHost::IterationStart() {
  const double now = NowNs();
  std::lock_guard<std::mutex> lock(mu_);
  pending_iterations_.push_back(now);
  wake_.notify_one();
}

void RealtimeHost::At(double t_ns, std::function<void(double)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  timers_.push_back({t_ns, timer_seq_++, std::move(fn)});
  wake_.notify_one();
}

void RealtimeHost::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    wake_.notify_one();
  }
  thread_.join();
  for (Controller* c : controllers_) c->Finish();
}

void RealtimeHost::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  // Iterations reported before Stop are delivered first, however long a controller held the thread.
  while (!stop_ || !pending_iterations_.empty()) {
    // The earliest due thing: a reported iteration (at once), a timer or a tick.
    double due = -1;
    for (double t : next_tick_ns_)
      if (t >= 0 && (due < 0 || t < due)) due = t;
    for (const Timer& t : timers_)
      if (due < 0 || t.t_ns < due) due = t.t_ns;
    if (pending_iterations_.empty()) {
      if (due < 0) {
        wake_.wait(lock);
      } else if (NowNs() < due) {
        wake_.wait_until(lock, start_ + std::chrono::nanoseconds(static_cast<int64_t>(due)));
      }
      if (stop_ && pending_iterations_.empty()) break;
    }
    // Take what is due now and run it without the lock, so that the training loop never waits on
    // a controller.
    const double now = NowNs();
    std::vector<double> iterations;
    iterations.swap(pending_iterations_);
    std::vector<Timer> fire;
    for (size_t i = 0; i < timers_.size();) {
      if (timers_[i].t_ns <= now) {
        fire.push_back(std::move(timers_[i]));
        timers_[i] = std::move(timers_.back());
        timers_.pop_back();
      } else {
        ++i;
      }
    }
    std::sort(fire.begin(), fire.end(),
              [](const Timer& a, const Timer& b) { return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.seq < b.seq; });
    const int first_iteration = iterations_reported_;
    iterations_reported_ += static_cast<int>(iterations.size());
    lock.unlock();
    for (size_t k = 0; k < iterations.size(); ++k)
      for (Controller* c : controllers_) c->OnIterationStart(first_iteration + static_cast<int>(k), iterations[k]);
    for (Timer& t : fire) t.fn(now);
    for (size_t i = 0; i < controllers_.size(); ++i) {
      if (next_tick_ns_[i] < 0 || next_tick_ns_[i] > now) continue;
      controllers_[i]->Tick(now);
      // The next period from the schedule, skipping periods missed while busy.
      const double period = controllers_[i]->PeriodMs() * 1e6;
      next_tick_ns_[i] += period * std::max(1.0, std::floor((now - next_tick_ns_[i]) / period) + 1);
    }
    lock.lock();
  }
}

}  // namespace emo
