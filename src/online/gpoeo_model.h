// gpoeo_model.h — GPOEO's models (GPOEO.md §3-4): the features a workload shows at the default
// clock, aggregated over whole iteration periods, and the two gradient-boosted regressors that
// predict from them, for any SM clock, the energy and the time per period relative to the default
// clock. `emo gpoeo train` writes them; the gpoeo controller reads them.
//
// Features. GPOEO profiles CUPTI counters (IPC, cache misses, 12 pipe utilisations) at the default
// clock. Online methods see only what GpuControl offers, not a MetricSource, so EMO's GPOEO uses
// the telemetry (power, SM utilisation, memory utilisation and SM clock: kGpoeoFeatureNames) and,
// where the GPUs offer it, their activity counters (NVML's GPM on Hopper and later: SM activity and
// occupancy, integer, FP32, FP64 and tensor pipe utilisation, DRAM bandwidth:
// kGpoeoActivityFeatureNames), sampled every tick and reduced over the whole periods of a window.
// The clock being asked about is one more feature, as a fraction of the highest supported clock
// (GPOEO's f/1800 MHz).
//
// Model directory (MODEL_DIR):
//   meta.json    {"device": name the models were trained on, "features": kGpoeoFeatureNames
//                 (then kGpoeoActivityFeatureNames where trained with activity),
//                 "sample_ms": telemetry interval, "command": the command that made them, and
//                 free-form training figures}
//   energy.json  XGBoost model: energy per period at the clock / energy at the default clock
//   time.json    XGBoost model: period at the clock / period at the default clock
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/gbt_model.h"

namespace emo {

// Telemetry of all the GPUs that GPOEO controls together, one entry per sample.
struct GpoeoSamples {
  std::vector<double> power_w;     // summed over the GPUs
  std::vector<double> util;        // SM utilisation, mean over the GPUs, fraction
  std::vector<double> mem_util;    // memory utilisation, mean over the GPUs, fraction
  std::vector<double> clock_mhz;   // SM clock, mean over the GPUs
  std::vector<Activity> activity;  // the last activity window's (GpoeoActivity); empty when not read
  size_t size() const { return power_w.size(); }
  void clear();
  // `a`: the activity with the sample, or null where it is not read.
  void push(double p, double u, double m, double c, const Activity* a = nullptr);
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

// *sum += w · a, field by field (means over GPUs or samples).
void AddActivity(Activity* sum, const Activity& a, double w);

// The activity readings as GPOEO samples them every tick of dt_s: a window is read on every GPU
// each `every` ticks (the fewest that span over kActivityMinWindowS), and each tick carries the
// mean over the GPUs of the last window that ended (zeros before the first).
class GpoeoActivity {
 public:
  GpoeoActivity(GpuControl* gpus, double dt_s);
  bool Start(std::string* err);  // opens a window on every GPU
  bool Tick(std::string* err);   // once per tick; false when a read failed
  const Activity& last() const { return last_; }

 private:
  GpuControl* gpus_;
  int every_;
  int ticks_ = 0;
  Activity last_;
};

// The names of the features, with or without activity.
std::vector<std::string> GpoeoFeatureNames(bool activity);

// The features of `s` (its last whole periods of period_s, sampled every dt_s; all of it when
// shorter than one period), with the activity ones where `s` has activity. power_limit_w is the
// sum over the GPUs.
std::vector<double> GpoeoFeatures(const GpoeoSamples& s, double dt_s, double period_s, double power_limit_w,
                                  double max_clock_mhz);

// One model row: the features, then the clock asked about as a fraction of max_clock_mhz.
void GpoeoRow(const std::vector<double>& features, double mhz, double max_clock_mhz, std::vector<float>* row);

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

  GbtModel energy, time;
  bool activity = false;        // the features include activity (GpoeoSamples::activity is needed)
  nlohmann::ordered_json meta;  // meta.json
  std::string device() const;
};

}  // namespace emo
