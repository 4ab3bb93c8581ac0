// sim_gpu_control.h — GpuControl over the simulator's engine (what NVML would say and do), and the
// simulator as a host of online controllers.
#pragma once

#include "apply/controller.h"
#include "apply/gpu_control.h"
#include "sim/engine.h"

namespace emo {

class SimGpuControl : public GpuControl {
 public:
  explicit SimGpuControl(sim::Engine* engine) : e_(engine) {}
  int Count() const override { return e_->gpus(); }
  std::string Name(int gpu) const override { return e_->DeviceName(gpu); }
  std::vector<int> SupportedClocks(int gpu) const override { return e_->SupportedClocks(gpu); }
  bool SetLockedClock(int gpu, int mhz, std::string* err) override {
    if (!Check(gpu, err)) return false;
    e_->SetLockedClock(gpu, mhz);
    return true;
  }
  bool ResetClock(int gpu, std::string* err) override {
    if (!Check(gpu, err)) return false;
    e_->ResetClock(gpu);
    return true;
  }
  bool SetPowerLimit(int gpu, double watts, std::string* err) override {
    if (!Check(gpu, err)) return false;
    e_->SetPowerLimit(gpu, watts);
    return true;
  }
  double PowerLimitW(int gpu) const override { return e_->PowerLimit(gpu); }
  void PowerLimitRange(int gpu, double* min_w, double* max_w) const override { e_->PowerLimitRange(gpu, min_w, max_w); }
  double EnergyJ(int gpu) const override { return e_->EnergyCounterJ(gpu); }
  double PowerW(int gpu) const override { return e_->PowerW(gpu); }
  double Utilization(int gpu) const override { return e_->Utilization(gpu); }
  double MemoryUtilization(int gpu) const override { return e_->MemoryUtilization(gpu); }
  double ClockMhz(int gpu) const override { return e_->ClockMhz(gpu); }

 private:
  bool Check(int gpu, std::string* err) const {
    if (gpu >= 0 && gpu < e_->gpus()) return true;
    *err = "no simulated GPU " + std::to_string(gpu) + " (there are " + std::to_string(e_->gpus()) + ")";
    return false;
  }
  sim::Engine* e_;
};

// Runs a controller on the simulator's clock: its iteration hook and periodic tick come from the
// engine's event queue. Call before Engine::Run(), and Controller::Finish() after it.
inline void AttachController(sim::Engine* engine, Controller* c) {
  engine->OnIterationStart([c](int iteration, double now) { c->OnIterationStart(iteration, now); });
  if (c->PeriodMs() > 0) engine->Every(c->PeriodMs(), [c](double now) { c->Tick(now); });
}

}  // namespace emo
