// gpoeo_model.h — GPOEO's models (GPOEO.md §3-4): the features a workload shows at the default
// clock, aggregated over whole iteration periods, and the two gradient-boosted regressors that
// predict from them, for any SM clock, the energy and the time per period relative to the default
// clock. `emo gpoeo train` writes them; the gpoeo controller reads them.
//
// Features. Online methods see only what GpuControl offers, so the features are one of three sets,
// each the telemetry (power, SM utilisation, memory utilisation and SM clock: kGpoeoFeatureNames)
// and perhaps more, sampled every tick and reduced over the whole periods of a window:
// - telemetry alone, what every NVML back end has;
// - with activity: NVML's GPM on Hopper and later (SM activity and occupancy, integer, FP32, FP64
//   and tensor pipe utilisation, DRAM bandwidth: kGpoeoActivityFeatureNames), read from outside;
// - with counters: DESIGN.md's metrics table over each period, as GPOEO itself profiles CUPTI
//   counters inside the job (IPC, cache traffic, pipe utilisations), turned into ratios that do
//   not need the device's peak rates (kGpoeoCounterFeatureNames). Offered by the simulator; on
//   hardware it needs a profiler in the job, which `emo run` does not run yet (Reading::kCounters).
// The clock being asked about is one more feature, as a fraction of the highest supported clock
// (GPOEO's f/1800 MHz).
//
// Model directory (MODEL_DIR):
//   meta.json    {"device": name the models were trained on, "features": the set's names in order
//                 (GpoeoFeatureNames), "sample_ms": telemetry interval, "command": the command that
//                 made them, and free-form training figures}
//   energy.json  XGBoost model: energy per period at the clock / energy at the default clock
//   time.json    XGBoost model: period at the clock / period at the default clock
//   energy_memory.json, time_memory.json (where the device lists several memory clocks, GDDR): the
//                same at an SM clock and a memory clock, relative to the default clocks of both; the
//                memory clock is one more feature after the SM clock's, as a fraction of the highest
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/gbt_model.h"

namespace emo {

// Telemetry of all the GPUs that GPOEO controls together, one entry per sample.
struct GpoeoSamples {
  std::vector<double> power_w;        // summed over the GPUs
  std::vector<double> util;           // SM utilisation, mean over the GPUs, fraction
  std::vector<double> mem_util;       // memory utilisation, mean over the GPUs, fraction
  std::vector<double> clock_mhz;      // SM clock, mean over the GPUs
  std::vector<Activity> activity;     // the last activity window's (GpoeoWindows); empty when not read
  std::vector<PackMetrics> counters;  // since the previous sample, summed over the GPUs; empty when not read
  size_t size() const { return power_w.size(); }
  void clear();
  // `a`, `k`: the activity and the counters with the sample, or null where they are not read.
  void push(double p, double u, double m, double c, const Activity* a = nullptr, const PackMetrics* k = nullptr);
  // The samples in [begin, end).
  GpoeoSamples Slice(size_t begin, size_t end) const;
};

inline constexpr const char* kGpoeoFeatureNames[] = {
    "power_frac",      // mean power / power limit
    "power_sd_frac",   // standard deviation of power over the samples / power limit
    "util",            // mean SM utilisation
    "util_low_frac",   // share of samples with SM utilisation under 50 %
    "mem_util",        // mean memory utilisation
    "mem_per_util",    // mean memory utilisation / mean SM utilisation
    "power_per_util",  // power_frac / mean SM utilisation
    "clock_frac",      // mean SM clock / highest supported clock
};
inline constexpr size_t kGpoeoFeatures = std::size(kGpoeoFeatureNames);
inline constexpr const char* kGpoeoActivityFeatureNames[] = {
    // Means of the Activity fields of the same name.
    "sm_util", "sm_occupancy", "integer_util", "fp32_util", "fp64_util", "tensor_util", "dram_bw_util",
};

inline constexpr const char* kGpoeoCounterFeatureNames[] = {
    "inst_per_cycle",        // warp instructions (the five pipes) per active SM cycle
    "warps_per_cycle_frac",  // warps resident per active cycle / 64
    "l1_bytes_per_inst",     // L1 and shared memory traffic per warp instruction (GPOEO's L1 misses per instruction)
    "l2_bytes_per_inst",     // L2 traffic per instruction
    "dram_bytes_per_inst",   // DRAM traffic per instruction
    "l2_per_l1",             // L2 bytes / L1 bytes (GPOEO's L1 miss ratio)
    "dram_per_l2",           // DRAM bytes / L2 bytes (its L2 miss ratio)
    "alu_share",             // each pipe's share of the instructions (its pipe utilisations)
    "fma_share",
    "fp64_share",
    "lsu_share",
    "tensor_share",
};

enum class GpoeoFeatureSet { kTelemetry, kActivity, kCounters };
const char* GpoeoFeatureSetName(GpoeoFeatureSet set);  // "telemetry", "activity", "counters"
// The reading a set needs beyond the telemetry; kEnergy (which every back end has) for telemetry.
Reading GpoeoFeatureReading(GpoeoFeatureSet set);

// *sum += w · a, field by field (means over GPUs or samples).
void AddActivity(Activity* sum, const Activity& a, double w);

// The windows a feature set reads besides the telemetry, as GPOEO samples them every tick of
// dt_s. Activity: a window is read on every GPU each `every` ticks (the fewest that span over
// kActivityMinWindowS), and each tick carries the mean over the GPUs of the last window that ended
// (zeros before the first). Counters: every tick, the counters since the last, summed over the
// GPUs, so that the samples of a period sum to the period's.
class GpoeoWindows {
 public:
  GpoeoWindows(GpuControl* gpus, GpoeoFeatureSet set, double dt_s);
  bool Start(std::string* err);  // opens a window on every GPU (nothing for telemetry)
  bool Tick(std::string* err);   // once per tick; false when a read failed
  // What the tick read, for GpoeoSamples::push: null where the set does not read it.
  const Activity* activity() const { return set_ == GpoeoFeatureSet::kActivity ? &activity_ : nullptr; }
  const PackMetrics* counters() const { return set_ == GpoeoFeatureSet::kCounters ? &counters_ : nullptr; }

 private:
  GpuControl* gpus_;
  GpoeoFeatureSet set_;
  int every_;
  int ticks_ = 0;
  Activity activity_;
  PackMetrics counters_;
};

// The names of a set's features, in the models' order.
std::vector<std::string> GpoeoFeatureNames(GpoeoFeatureSet set);

// The features of `s` (its last whole periods of period_s, sampled every dt_s; all of it when
// shorter than one period): the telemetry's, then the activity's or the counters' where `s` has
// them. power_limit_w is the sum over the GPUs.
std::vector<double> GpoeoFeatures(const GpoeoSamples& s, double dt_s, double period_s, double power_limit_w,
                                  double max_clock_mhz);

// One model row: the features, then the clock asked about as a fraction of max_clock_mhz, then for
// the memory models the memory clock's fraction of the highest (mem_frac; none when negative).
void GpoeoRow(const std::vector<double>& features, double mhz, double max_clock_mhz, std::vector<float>* row,
              double mem_frac = -1);

struct GpoeoPrediction {
  std::vector<double> energy_ratio, time_ratio;  // per clock asked about
};

class GpoeoModels {
 public:
  bool Load(const std::string& dir, std::string* err);
  bool Save(const std::string& dir, std::string* err) const;
  // Predictions for each clock in `mhz`.
  bool Predict(const std::vector<double>& features, const std::vector<int>& mhz, double max_clock_mhz,
               GpoeoPrediction* out, std::string* err) const;
  // With the memory models: predictions for each pair (mhz[i], mem_mhz[i]).
  bool PredictMemory(const std::vector<double>& features, const std::vector<int>& mhz, const std::vector<int>& mem_mhz,
                     double max_clock_mhz, double max_mem_mhz, GpoeoPrediction* out, std::string* err) const;
  bool has_memory() const { return !energy_memory.empty() && !time_memory.empty(); }

  GbtModel energy, time;
  GbtModel energy_memory, time_memory;                        // empty where the models take no memory clock
  GpoeoFeatureSet feature_set = GpoeoFeatureSet::kTelemetry;  // what the samples must carry
  nlohmann::ordered_json meta;                                // meta.json
  std::string device() const;
};

}  // namespace emo
