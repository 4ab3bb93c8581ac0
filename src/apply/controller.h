// controller.h — an online method and the host that runs it. A controller runs beside the
// workload, hears every iteration start and a periodic tick, reads telemetry and sets clocks or
// power limits through a GpuControl. A host calls it and gives it time and timers: the simulator's
// event queue (sim/sim_gpu_control.h) or, on hardware, RealtimeHost's thread fed by the training
// loop's step hook; the same controller code runs on both. Zeus's power-limit optimizer, GEEPAFS,
// GPOEO and EMO's policy player are controllers.
#pragma once

#include <functional>
#include <string>

namespace emo {

class ControllerHost {
 public:
  virtual ~ControllerHost() = default;
  // Time since the host started, ns (simulated or wall-clock).
  virtual double NowNs() const = 0;
  // Runs fn(now_ns) on the host at t_ns (at once if that is past); controllers' timers.
  virtual void At(double t_ns, std::function<void(double now_ns)> fn) = 0;
};

class Controller {
 public:
  virtual ~Controller() = default;
  // Called by the host that runs this controller before any other call.
  void Attach(ControllerHost* host) { host_ = host; }
  // Period of Tick(), ms; 0 when the method needs no periodic tick.
  virtual double PeriodMs() const { return 0; }
  // Iteration `iteration` (0-based) of the training loop begins at now_ns.
  virtual void OnIterationStart(int /*iteration*/, double /*now_ns*/) {}
  virtual void Tick(double /*now_ns*/) {}
  // Host-side ranges of the training loop (its per-instruction hooks, NVTX ranges): a controller
  // that wants them says so, and hears range `name` open (push) or close on `gpu` at now_ns. The
  // simulator's host delivers them; on hardware they need the training loop's hooks.
  virtual bool WantsRanges() const { return false; }
  virtual void OnRange(int /*gpu*/, const std::string& /*name*/, bool /*push*/, double /*now_ns*/) {}
  // The run is over: undo what the method changed (clocks, power limits).
  virtual void Finish() {}
  // The first command the back end refused, or "".
  const std::string& error() const { return error_; }

 protected:
  ControllerHost* host() const { return host_; }
  void Fail(const std::string& e) {
    if (error_.empty()) error_ = e;
  }

 private:
  ControllerHost* host_ = nullptr;
  std::string error_;
};

}  // namespace emo
