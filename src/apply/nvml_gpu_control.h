// nvml_gpu_control.h — GpuControl over NVML, the NVIDIA driver's management library, loaded with
// dlopen at run time so that the same binary runs on machines without a driver. It remembers the
// GPUs whose clocks or power limits it changed and restores them when destroyed or asked to.
//
// NVML offers every reading, activity (GPM) where every GPU supports it (Hopper and later); one
// that NVML refuses (a GPU fallen off the bus, say) is std::nullopt and leaves its message in
// error().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apply/watchdog.h"
#include "device/gpu_control.h"

namespace emo {

class NvmlGpuControl : public GpuControl {
 public:
  // Loads `library` ("" = $EMO_NVML_LIBRARY, else libnvidia-ml.so.1), initialises NVML and lists
  // the GPUs. Null with *err naming what is missing (library, function, driver, GPUs).
  static std::unique_ptr<NvmlGpuControl> Open(std::string* err, const std::string& library = "");
  ~NvmlGpuControl() override;  // RestoreAll(), then shuts NVML down
  NvmlGpuControl(const NvmlGpuControl&) = delete;
  NvmlGpuControl& operator=(const NvmlGpuControl&) = delete;

  int Count() const override;
  std::string Name(int gpu) const override;
  std::string Uuid(int gpu) const override;
  std::vector<int> SupportedClocks(int gpu) const override;
  bool SetLockedClock(int gpu, int mhz, std::string* err) override;
  bool ResetClock(int gpu, std::string* err) override;
  bool SetPowerLimit(int gpu, double watts, std::string* err) override;
  // Every memory clock NVML lists (one on HBM parts); empty where the library cannot lock them.
  std::vector<int> SupportedMemoryClocks(int gpu) const override;
  bool SetMemoryLockedClock(int gpu, int mhz, std::string* err) override;
  bool ResetMemoryClock(int gpu, std::string* err) override;
  std::optional<double> MemoryClockMhz(int gpu) const override;
  bool Offers(Reading r) const override;
  std::optional<double> EnergyJ(int gpu) const override;
  std::optional<double> PowerW(int gpu) const override;
  std::optional<double> Utilization(int gpu) const override;
  std::optional<double> MemoryUtilization(int gpu) const override;
  std::optional<double> ClockMhz(int gpu) const override;
  std::optional<double> PowerLimitW(int gpu) const override;
  bool PowerLimitRange(int gpu, double* min_w, double* max_w) const override;
  bool StartActivity(int gpu) override;
  std::optional<Activity> ReadActivity(int gpu) override;

  // Resets every clock this object locked and restores every power limit it changed. False with
  // *err (the first failure) when the driver refused one; the others are still attempted.
  bool RestoreAll(std::string* err);
  // Unlocks the GPU's clocks (SM and memory) and sets its power limit to the default, whoever
  // changed them (the recovery after a process that held them died).
  bool ResetToDefaults(int gpu, std::string* err);
  // Tells `w` of every clock this object locks and every power limit it changes, so that the
  // watchdog can restore them if this process dies first.
  void Watch(Watchdog* w) { watchdog_ = w; }
  // Puts back what another (dead) process changed: unlocks the clocks, SM and memory (`clocks`),
  // or sets the power limit to limit_mw, without remembering it as a change of this object's.
  bool RestoreForOther(int gpu, bool clocks, unsigned int limit_mw, std::string* err);
  // The last telemetry read that failed, or "".
  std::string error() const override { return error_; }

 private:
  struct Api;
  struct Gpu;
  NvmlGpuControl();
  bool Check(int gpu, int rc, const char* call, std::string* err) const;
  std::optional<double> Read(int gpu, int rc, const char* call, double value) const;
  bool ResetMemoryLocks(int gpu, std::string* err) const;

  std::unique_ptr<Api> api_;
  Watchdog* watchdog_ = nullptr;
  std::vector<Gpu> gpus_;
  mutable std::string error_;
};

}  // namespace emo
