// gpu_control.h — the one interface for SM-clock control and telemetry of a machine's GPUs.
// Implemented by the simulator (sim_gpu_control.h) and, later, by NVML and the Zeus daemon, so
// that EMO's policy player and the online methods (Zeus, GEEPAFS, GPOEO) run unchanged on
// hardware and in simulation.
#pragma once

#include <string>
#include <vector>

namespace emo {

class GpuControl {
 public:
  virtual ~GpuControl() = default;
  virtual int Count() const = 0;
  virtual std::string Name(int gpu) const = 0;                  // e.g. "A100-SXM4-80GB"
  virtual std::vector<int> SupportedClocks(int gpu) const = 0;  // SM clocks, MHz, ascending
  // Clock and power-limit commands. False with *err when the back end refused.
  virtual bool SetLockedClock(int gpu, int mhz, std::string* err) = 0;
  virtual bool ResetClock(int gpu, std::string* err) = 0;
  virtual bool SetPowerLimit(int gpu, double watts, std::string* err) = 0;
  virtual double PowerLimitW(int gpu) const = 0;
  virtual void PowerLimitRange(int gpu, double* min_w, double* max_w) const = 0;
  // Telemetry as the driver reports it.
  virtual double EnergyJ(int gpu) const = 0;      // cumulative counter (updated every few tens of ms)
  virtual double PowerW(int gpu) const = 0;       // sampled
  virtual double Utilization(int gpu) const = 0;  // fraction of time busy over the last sample
  virtual double MemoryUtilization(int gpu) const = 0;  // fraction of it device memory was read or written
  virtual double ClockMhz(int gpu) const = 0;     // current SM clock
};

}  // namespace emo
