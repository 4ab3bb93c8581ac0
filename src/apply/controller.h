// controller.h — an online method: code that runs beside the workload, hears every iteration start
// and a periodic tick, reads telemetry and sets clocks or power limits through a GpuControl.
// A host calls it: the simulator's event queue (AttachController in sim_gpu_control.h) or, on
// hardware, RealtimeHost's thread fed by the training loop's step hook; the same controller code
// runs on both. Zeus's power-limit
// optimizer, GEEPAFS, GPOEO and EMO's policy player are controllers.
#pragma once

#include <string>

namespace emo {

class Controller {
 public:
  virtual ~Controller() = default;
  // Period of Tick(), ms; 0 when the method needs no periodic tick.
  virtual double PeriodMs() const { return 0; }
  // Iteration `iteration` (0-based) of the training loop begins at now_ns.
  virtual void OnIterationStart(int /*iteration*/, double /*now_ns*/) {}
  virtual void Tick(double /*now_ns*/) {}
  // The run is over: undo what the method changed (clocks, power limits).
  virtual void Finish() {}
  // The first command the back end refused, or "".
  const std::string& error() const { return error_; }

 protected:
  void Fail(const std::string& e) {
    if (error_.empty()) error_ = e;
  }

 private:
  std::string error_;
};

}  // namespace emo
