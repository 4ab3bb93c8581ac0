// gpu_control.h — the one interface through which EMO commands a machine's GPUs (SM clocks, power
// limits) and reads their telemetry. Implemented by NVML (apply/nvml_gpu_control.h), by the Zeus
// daemon, and by the simulator (sim/sim_gpu_control.h), so that EMO's policy player and the online
// methods (Zeus, GEEPAFS, GPOEO) run unchanged on hardware and in simulation.
//
// Clock control and telemetry are one interface, not two: every back end that can set a clock can
// also read at least the energy counter of the same GPU, and every user of the one needs the other
// on the same GPU. What differs between back ends is which readings they have (the Zeus daemon
// offers the energy counter and power but neither utilisation nor the clock in effect), so each
// says so through Offers(), and a reading it lacks, or a read that failed at run time, is
// std::nullopt: never a silent NaN.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/metric_source.h"

namespace emo {

enum class Reading { kEnergy, kPower, kUtilization, kMemoryUtilization, kClock, kPowerLimit, kActivity, kCounters };

inline const char* ReadingName(Reading r) {
  switch (r) {
    case Reading::kEnergy:
      return "energy counter";
    case Reading::kPower:
      return "power";
    case Reading::kUtilization:
      return "utilisation";
    case Reading::kMemoryUtilization:
      return "memory utilisation";
    case Reading::kClock:
      return "SM clock";
    case Reading::kPowerLimit:
      return "power limit";
    case Reading::kActivity:
      return "SM activity (GPM)";
    case Reading::kCounters:
      return "performance counter";
  }
  return "?";
}

// What the SMs and DRAM did over a window, as NVML's GPU performance monitoring (GPM, Hopper and
// later; nvmlGpmMetricsGet between two samples) reports it: fractions of the window's elapsed
// time, or of its peak throughput over that time. The names are the NVML_GPM_METRIC_* they read.
struct Activity {
  double sm_util = 0;       // SM_UTIL: SM cycles with a warp resident / elapsed SM cycles
  double sm_occupancy = 0;  // SM_OCCUPANCY: warps resident / the SMs' maximum, over elapsed cycles
  double integer_util = 0;  // INTEGER_UTIL: integer pipe issue / its peak
  double fp32_util = 0;     // FP32_UTIL
  double fp64_util = 0;     // FP64_UTIL (non-tensor)
  double tensor_util = 0;   // ANY_TENSOR_UTIL
  double dram_bw_util = 0;  // DRAM_BW_UTIL: DRAM bytes / peak bandwidth × elapsed time
};

// NVML: "the interval between these two nvmlGpmSampleGet() calls should be greater than 100ms due
// to the internal sample refresh rate of the device".
inline constexpr double kActivityMinWindowS = 0.1;

class GpuControl {
 public:
  virtual ~GpuControl() = default;
  virtual int Count() const = 0;
  virtual std::string Name(int gpu) const = 0;  // e.g. "A100-SXM4-80GB"
  // The GPU's UUID as CUDA_VISIBLE_DEVICES names it ("GPU-8932f937-..."); "" when the back end
  // does not know it (the Zeus daemon, the simulator).
  virtual std::string Uuid(int /*gpu*/) const { return ""; }
  virtual std::vector<int> SupportedClocks(int gpu) const = 0;  // SM clocks, MHz, ascending

  // Commands. False with *err when the back end refused.
  virtual bool SetLockedClock(int gpu, int mhz, std::string* err) = 0;
  virtual bool ResetClock(int gpu, std::string* err) = 0;
  virtual bool SetPowerLimit(int gpu, double watts, std::string* err) = 0;
  // Memory clocks, MHz, ascending, where a lock may choose among several (GDDR parts; an HBM part
  // lists one); empty where the back end cannot set them. A reset of a GPU whose memory clock is
  // not locked succeeds and does nothing.
  virtual std::vector<int> SupportedMemoryClocks(int /*gpu*/) const { return {}; }
  virtual bool SetMemoryLockedClock(int /*gpu*/, int /*mhz*/, std::string* err) {
    *err = "this GPU back end cannot set memory clocks";
    return false;
  }
  virtual bool ResetMemoryClock(int /*gpu*/, std::string* /*err*/) { return true; }
  virtual std::optional<double> MemoryClockMhz(int /*gpu*/) const { return std::nullopt; }

  // Telemetry as the driver reports it; std::nullopt when the back end does not offer the reading
  // or the read failed (then error() says why).
  virtual bool Offers(Reading r) const = 0;
  virtual std::optional<double> EnergyJ(int gpu) const = 0;            // cumulative, updated every few tens of ms
  virtual std::optional<double> PowerW(int gpu) const = 0;             // as the device samples it
  virtual std::optional<double> Utilization(int gpu) const = 0;        // fraction of the sample period a kernel ran
  virtual std::optional<double> MemoryUtilization(int gpu) const = 0;  // fraction device memory was busy
  virtual std::optional<double> ClockMhz(int gpu) const = 0;           // SM clock in effect now
  virtual std::optional<double> PowerLimitW(int gpu) const = 0;
  // False when the range is unknown.
  virtual bool PowerLimitRange(int gpu, double* min_w, double* max_w) const = 0;
  // Activity windows (where Offers(Reading::kActivity)): StartActivity opens one on `gpu`, and
  // each ReadActivity returns what happened since the window opened and opens the next one; a
  // window shorter than kActivityMinWindowS is refused (nullopt) and stays open.
  virtual bool StartActivity(int /*gpu*/) { return false; }
  virtual std::optional<Activity> ReadActivity(int /*gpu*/) { return std::nullopt; }
  // Performance counter windows (where Offers(Reading::kCounters)): DESIGN.md's metrics table
  // (PackMetrics) summed over the kernels that ran on `gpu` since the window opened, as a profiler
  // inside the job reads them (CUPTI's range profiler over a user range; GPOEO's original profiles
  // that way, GPOEO.md §3). StartCounters opens one; each ReadCounters returns the window's and
  // opens the next. A back end that watches the job from outside (NVML, the Zeus daemon) has none.
  virtual bool StartCounters(int /*gpu*/) { return false; }
  virtual std::optional<PackMetrics> ReadCounters(int /*gpu*/) { return std::nullopt; }
  // The last read that failed, or "".
  virtual std::string error() const { return ""; }
};

// True when `gpus` offers every reading in `needed`; otherwise false with *err naming the first
// missing one (a method that needs utilisation cannot run on the Zeus daemon, say).
inline bool CheckOffers(const GpuControl& gpus, const std::vector<Reading>& needed, std::string* err) {
  for (Reading r : needed)
    if (!gpus.Offers(r)) {
      *err = std::string("the GPU back end offers no ") + ReadingName(r) + " reading";
      return false;
    }
  return true;
}

}  // namespace emo
