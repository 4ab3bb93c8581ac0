// sim_gpu_control.h — GpuControl over the simulator's engine: what NVML would say and do.
#pragma once

#include "apply/gpu_control.h"
#include "sim/engine.h"

namespace emo {

class SimGpuControl : public GpuControl {
 public:
  explicit SimGpuControl(sim::Engine* engine) : e_(engine) {}
  int Count() const override { return e_->gpus(); }
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
  double EnergyJ(int gpu) const override { return e_->EnergyCounterJ(gpu); }
  double PowerW(int gpu) const override { return e_->PowerW(gpu); }
  double Utilization(int gpu) const override { return e_->Utilization(gpu); }
  double ClockMhz(int gpu) const override { return e_->ClockMhz(gpu); }

 private:
  bool Check(int gpu, std::string* err) const {
    if (gpu >= 0 && gpu < e_->gpus()) return true;
    *err = "no simulated GPU " + std::to_string(gpu) + " (there are " + std::to_string(e_->gpus()) + ")";
    return false;
  }
  sim::Engine* e_;
};

}  // namespace emo
