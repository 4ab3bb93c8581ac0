// device_profile.h — what the pack model knows of one GPU (DESIGN.md §4): for each of 12
// microbenchmarks, its metric vector (PackMetrics order, measured at the default clock) and its time
// and energy at every driver-visible SM clock, with where the numbers came from. Calibration fills
// profiles (on hardware or the simulator); this file only defines the type, its JSON and its checks.
//
// JSON form:
//   {"device": "A100-SXM4-40GB", "clocks_mhz": [210, ..., 1410], "default_mhz": 1410,
//    "provenance": {"date": "2025-01-31", "command": "emo calibrate ...", "source": "nvml+cupti"},
//    "benchmarks": {"int_alu": {"metrics": {"sm_cycles_active": 1.2e6, ...every MetricName...},
//                               "time_s": [one per clock], "energy_j": [one per clock]}, ...all 12...},
//    "kernel_floor_s": [one per clock, optional], "collective_time_ratio": [one per clock, optional]}
#pragma once

#include <array>
#include <string>
#include <vector>

#include "device/metric_source.h"
#include "device/microbench.h"

namespace emo {

// The microbenchmarks (Microbench, MicrobenchName) are defined in device/microbench.h.

struct DeviceProfile {
  struct Bench {
    std::array<double, kMetrics> metrics{};  // at the default clock
    std::vector<double> time_s;              // per clock of clocks_mhz
    std::vector<double> energy_j;            // per clock of clocks_mhz
    // Per clock of clocks_mhz, the clock the GPU actually ran at when it was locked there and held
    // a lower one (its power limit, or temperature), 0 where it ran as locked; empty: none did. The
    // time and energy stay what the device did at that setting, as a pack there would meet it.
    std::vector<double> throttled_mhz;
    // Sets throttled_mhz, empty when no clock was throttled.
    void SetThrottled(std::vector<double> mhz);
    bool operator==(const Bench&) const = default;
  };
  struct Provenance {
    std::string date, command, source;
    bool operator==(const Provenance&) const = default;
  };

  std::string device;
  std::vector<int> clocks_mhz;  // ascending
  int default_mhz = 0;
  std::array<Bench, kMicrobenches> bench;
  // Per clock of clocks_mhz, the duration of an empty kernel (kBenchEmpty): the launch and drain
  // every kernel pays, which no metric shows. Empty when not measured (a profile made before it),
  // which the pack model takes as no floor.
  std::vector<double> kernel_floor_s;
  // Per clock of clocks_mhz, an all-reduce's time at that clock over its time at the default clock,
  // timed between two GPUs of this kind (NCCL's copy loop runs on the SMs, so a low clock can slow
  // it). Empty when not measured (a profile made before it, or a device that cannot run one), which
  // the model takes as a collective's time not depending on the clock.
  std::vector<double> collective_time_ratio;
  Provenance provenance;

  int clocks() const { return static_cast<int>(clocks_mhz.size()); }
  int ClockIndex(int mhz) const;  // index into clocks_mhz, or -1
  bool operator==(const DeviceProfile&) const = default;
};

// Whether a profile is usable: a device name; clocks positive and strictly ascending; the default
// among them; for every benchmark, metrics finite and non-negative, a time and an energy per
// clock, finite and positive, and throttled clocks (if any) one per clock, each 0 or below its
// clock; the kernel floor, if any, one per clock, finite and non-negative; the collective time ratio,
// if any, one per clock, finite and positive. False with *err naming the field.
bool CheckProfile(const DeviceProfile& p, std::string* err);

// JSON in and out. Errors name the source (a file) and the field. Parsing also runs CheckProfile.
bool ParseProfile(const std::string& source, const std::string& text, DeviceProfile* out, std::string* err);
bool LoadProfile(const std::string& path, DeviceProfile* out, std::string* err);
std::string ProfileJson(const DeviceProfile& p);
bool SaveProfile(const std::string& path, const DeviceProfile& p, std::string* err);

}  // namespace emo
