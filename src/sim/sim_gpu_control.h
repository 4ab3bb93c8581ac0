// sim_gpu_control.h — the simulator as a device: GpuControl over the engine (what NVML would say
// and do, every reading offered), and SimHost, which runs online controllers on the engine's event
// queue. Only code that hosts the simulator (emo sim, tests, benchmarks) includes this.
#pragma once

#include "apply/controller.h"
#include "device/gpu_control.h"
#include "sim/engine.h"
#include "sim/sim_metric_source.h"

namespace emo::sim {

class SimGpuControl : public GpuControl {
 public:
  explicit SimGpuControl(Engine* engine) : e_(engine), window_start_ns_(static_cast<size_t>(engine->gpus()), -1) {}
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
  std::vector<int> SupportedMemoryClocks(int gpu) const override {
    return Valid(gpu) ? e_->SupportedMemoryClocks(gpu) : std::vector<int>{};
  }
  bool SetMemoryLockedClock(int gpu, int mhz, std::string* err) override {
    if (!Check(gpu, err)) return false;
    e_->SetMemoryClock(gpu, mhz);
    return true;
  }
  bool ResetMemoryClock(int gpu, std::string* err) override {
    if (!Check(gpu, err)) return false;
    e_->ResetMemoryClock(gpu);
    return true;
  }
  std::optional<double> MemoryClockMhz(int gpu) const override {
    return Valid(gpu) ? e_->MemoryClockMhz(gpu) : Nothing();
  }
  // Every reading; activity (GPM) on the products that have it. Activity and counter windows
  // share the engine's one counter window per GPU, so a controller reads one kind or the other.
  bool Offers(Reading r) const override { return r != Reading::kActivity || e_->Spec(0).gpm; }
  std::optional<double> EnergyJ(int gpu) const override { return Valid(gpu) ? e_->EnergyCounterJ(gpu) : Nothing(); }
  std::optional<double> PowerW(int gpu) const override { return Valid(gpu) ? e_->PowerW(gpu) : Nothing(); }
  std::optional<double> Utilization(int gpu) const override { return Valid(gpu) ? e_->Utilization(gpu) : Nothing(); }
  std::optional<double> MemoryUtilization(int gpu) const override {
    return Valid(gpu) ? e_->MemoryUtilization(gpu) : Nothing();
  }
  std::optional<double> ClockMhz(int gpu) const override { return Valid(gpu) ? e_->ClockMhz(gpu) : Nothing(); }
  std::optional<double> PowerLimitW(int gpu) const override { return Valid(gpu) ? e_->PowerLimit(gpu) : Nothing(); }
  bool PowerLimitRange(int gpu, double* min_w, double* max_w) const override {
    if (!Valid(gpu)) return false;
    e_->PowerLimitRange(gpu, min_w, max_w);
    return true;
  }
  bool StartActivity(int gpu) override {
    if (!Valid(gpu) || !Offers(Reading::kActivity)) return false;
    e_->StartCounters(gpu);
    window_start_ns_[static_cast<size_t>(gpu)] = e_->now_ns();
    return true;
  }
  std::optional<Activity> ReadActivity(int gpu) override {
    if (!Valid(gpu) || window_start_ns_[static_cast<size_t>(gpu)] < 0) return std::nullopt;
    if (e_->now_ns() - window_start_ns_[static_cast<size_t>(gpu)] < kActivityMinWindowS * 1e9) return std::nullopt;
    const CounterValues window = e_->StopCounters(gpu);
    StartActivity(gpu);
    return ActivityOf(e_->Spec(gpu), window);
  }
  bool StartCounters(int gpu) override {
    if (!Valid(gpu)) return false;
    e_->StartCounters(gpu);
    window_start_ns_[static_cast<size_t>(gpu)] = e_->now_ns();
    return true;
  }
  std::optional<PackMetrics> ReadCounters(int gpu) override {
    if (!Valid(gpu) || window_start_ns_[static_cast<size_t>(gpu)] < 0) return std::nullopt;
    const CounterValues window = e_->StopCounters(gpu);
    StartCounters(gpu);
    return ToPackMetrics(window, e_->ClockMhz(gpu));
  }

 private:
  static std::optional<double> Nothing() { return std::nullopt; }
  bool Valid(int gpu) const { return gpu >= 0 && gpu < e_->gpus(); }
  bool Check(int gpu, std::string* err) const {
    if (Valid(gpu)) return true;
    *err = "no simulated GPU " + std::to_string(gpu) + " (there are " + std::to_string(e_->gpus()) + ")";
    return false;
  }
  Engine* e_;
  std::vector<double> window_start_ns_;  // per GPU: when its activity window opened; -1: none
};

// Runs controllers on the simulator's clock: their iteration hook, periodic tick and timers come
// from the engine's event queue. Add every controller before Engine::Run(), and call each one's
// Finish() after it.
class SimHost : public ControllerHost {
 public:
  explicit SimHost(Engine* engine) : e_(engine) {}
  void Add(Controller* c) {
    c->Attach(this);
    e_->OnIterationStart([c](int iteration, double now) { c->OnIterationStart(iteration, now); });
    if (c->PeriodMs() > 0) e_->Every(c->PeriodMs(), [c](double now) { c->Tick(now); });
    if (c->WantsRanges())
      e_->OnRange([c](int rank, const std::string& name, bool push, double now) { c->OnRange(rank, name, push, now); });
  }
  double NowNs() const override { return e_->now_ns(); }
  void At(double t_ns, std::function<void(double now_ns)> fn) override { e_->At(t_ns, std::move(fn)); }

 private:
  Engine* e_;
};

}  // namespace emo::sim
