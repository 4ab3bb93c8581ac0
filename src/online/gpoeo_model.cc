// gpoeo_model.cc — GPOEO's features (telemetry, activity, counters) and the energy/time model pair.
#include "online/gpoeo_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace emo {

void GpoeoSamples::clear() {
  power_w.clear();
  util.clear();
  mem_util.clear();
  clock_mhz.clear();
  activity.clear();
  counters.clear();
}

void GpoeoSamples::push(double p, double u, double m, double c, const Activity* a, const PackMetrics* k) {
  power_w.push_back(p);
  util.push_back(u);
  mem_util.push_back(m);
  clock_mhz.push_back(c);
  if (a) activity.push_back(*a);
  if (k) counters.push_back(*k);
}

GpoeoSamples GpoeoSamples::Slice(size_t begin, size_t end) const {
  GpoeoSamples out;
  end = std::min(end, size());
  const bool with_activity = activity.size() == size(), with_counters = counters.size() == size();
  for (size_t i = begin; i < end; ++i)
    out.push(power_w[i], util[i], mem_util[i], clock_mhz[i], with_activity ? &activity[i] : nullptr,
             with_counters ? &counters[i] : nullptr);
  return out;
}

void AddActivity(Activity* sum, const Activity& a, double w) {
  sum->sm_util += w * a.sm_util;
  sum->sm_occupancy += w * a.sm_occupancy;
  sum->integer_util += w * a.integer_util;
  sum->fp32_util += w * a.fp32_util;
  sum->fp64_util += w * a.fp64_util;
  sum->tensor_util += w * a.tensor_util;
  sum->dram_bw_util += w * a.dram_bw_util;
}

const char* GpoeoFeatureSetName(GpoeoFeatureSet set) {
  switch (set) {
    case GpoeoFeatureSet::kTelemetry:
      return "telemetry";
    case GpoeoFeatureSet::kActivity:
      return "activity";
    case GpoeoFeatureSet::kCounters:
      return "counters";
  }
  return "?";
}

Reading GpoeoFeatureReading(GpoeoFeatureSet set) {
  return set == GpoeoFeatureSet::kActivity   ? Reading::kActivity
         : set == GpoeoFeatureSet::kCounters ? Reading::kCounters
                                             : Reading::kEnergy;
}

GpoeoWindows::GpoeoWindows(GpuControl* gpus, GpoeoFeatureSet set, double dt_s)
    : gpus_(gpus),
      set_(set),
      every_(set == GpoeoFeatureSet::kActivity
                 ? static_cast<int>(std::floor(kActivityMinWindowS / dt_s * (1 + 1e-9))) + 1
                 : 1) {}

bool GpoeoWindows::Start(std::string* err) {
  if (set_ == GpoeoFeatureSet::kTelemetry) return true;
  for (int g = 0; g < gpus_->Count(); ++g)
    if (!(set_ == GpoeoFeatureSet::kActivity ? gpus_->StartActivity(g) : gpus_->StartCounters(g))) {
      *err = "GPU " + std::to_string(g) + ": cannot open " +
             (set_ == GpoeoFeatureSet::kActivity ? "an activity" : "a counter") + " window: " + gpus_->error();
      return false;
    }
  return true;
}

bool GpoeoWindows::Tick(std::string* err) {
  if (set_ == GpoeoFeatureSet::kTelemetry || ++ticks_ % every_ != 0) return true;
  Activity mean;
  PackMetrics sum;
  const double n = gpus_->Count();
  for (int g = 0; g < gpus_->Count(); ++g) {
    if (set_ == GpoeoFeatureSet::kActivity) {
      const std::optional<Activity> a = gpus_->ReadActivity(g);
      if (!a) {
        *err = "GPU " + std::to_string(g) + ": activity read failed: " + gpus_->error();
        return false;
      }
      AddActivity(&mean, *a, 1 / n);
    } else {
      const std::optional<PackMetrics> k = gpus_->ReadCounters(g);
      if (!k) {
        *err = "GPU " + std::to_string(g) + ": counter read failed: " + gpus_->error();
        return false;
      }
      sum.Add(*k);
    }
  }
  activity_ = mean;
  counters_ = sum;
  return true;
}

std::vector<std::string> GpoeoFeatureNames(GpoeoFeatureSet set) {
  std::vector<std::string> names(std::begin(kGpoeoFeatureNames), std::end(kGpoeoFeatureNames));
  if (set == GpoeoFeatureSet::kActivity)
    names.insert(names.end(), std::begin(kGpoeoActivityFeatureNames), std::end(kGpoeoActivityFeatureNames));
  if (set == GpoeoFeatureSet::kCounters)
    names.insert(names.end(), std::begin(kGpoeoCounterFeatureNames), std::end(kGpoeoCounterFeatureNames));
  return names;
}

std::vector<double> GpoeoFeatures(const GpoeoSamples& s, double dt_s, double period_s, double power_limit_w,
                                  double max_clock_mhz) {
  size_t n = s.size();
  if (period_s > 0 && dt_s > 0) {
    const double periods = std::floor(static_cast<double>(n) * dt_s / period_s);
    if (periods >= 1) n = std::min(n, static_cast<size_t>(std::lround(periods * period_s / dt_s)));
  }
  const size_t begin = s.size() - n;
  double p = 0, p2 = 0, u = 0, low = 0, m = 0, c = 0;
  for (size_t i = begin; i < s.size(); ++i) {
    p += s.power_w[i];
    p2 += s.power_w[i] * s.power_w[i];
    u += s.util[i];
    low += s.util[i] < 0.5 ? 1 : 0;
    m += s.mem_util[i];
    c += s.clock_mhz[i];
  }
  const double k = n ? 1.0 / static_cast<double>(n) : 0;
  const double pm = p * k, sd = std::sqrt(std::max(0.0, p2 * k - pm * pm)), um = u * k, mm = m * k;
  const double limit = power_limit_w > 0 ? power_limit_w : 1;
  const double busy = std::max(um, 0.01);
  std::vector<double> f = {pm / limit,
                           sd / limit,
                           um,
                           low * k,
                           mm,
                           mm / busy,
                           pm / limit / busy,
                           max_clock_mhz > 0 ? c * k / max_clock_mhz : 0};
  if (s.activity.size() == s.size() && n > 0) {
    Activity mean;
    for (size_t i = begin; i < s.size(); ++i) AddActivity(&mean, s.activity[i], k);
    f.insert(f.end(), {mean.sm_util, mean.sm_occupancy, mean.integer_util, mean.fp32_util, mean.fp64_util,
                       mean.tensor_util, mean.dram_bw_util});
  }
  if (s.counters.size() == s.size() && n > 0) {
    PackMetrics sum;
    for (size_t i = begin; i < s.size(); ++i) sum.Add(s.counters[i]);
    const auto& v = sum.v;
    const double inst = v[kInstAlu] + v[kInstFma] + v[kInstFp64] + v[kInstLsu] + v[kInstTensor];
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0; };
    const double dram = v[kDramReadBytes] + v[kDramWriteBytes];
    f.insert(f.end(), {ratio(inst, v[kSmCyclesActive]), v[kWarpsPerActiveCycle] / 64, ratio(v[kL1Bytes], inst),
                       ratio(v[kL2Bytes], inst), ratio(dram, inst), ratio(v[kL2Bytes], v[kL1Bytes]),
                       ratio(dram, v[kL2Bytes]), ratio(v[kInstAlu], inst), ratio(v[kInstFma], inst),
                       ratio(v[kInstFp64], inst), ratio(v[kInstLsu], inst), ratio(v[kInstTensor], inst)});
  }
  return f;
}

void GpoeoRow(const std::vector<double>& features, double mhz, double max_clock_mhz, std::vector<float>* row,
              double mem_frac) {
  for (double f : features) row->push_back(static_cast<float>(f));
  row->push_back(static_cast<float>(mhz / max_clock_mhz));
  if (mem_frac >= 0) row->push_back(static_cast<float>(mem_frac));
}

std::string GpoeoModels::device() const { return meta.value("device", std::string()); }

bool GpoeoModels::Load(const std::string& dir, std::string* err) {
  const std::string meta_path = dir + "/meta.json";
  std::ifstream f(meta_path);
  if (!f) {
    *err = meta_path + ": cannot read (train models with `emo gpoeo train`)";
    return false;
  }
  meta = nlohmann::ordered_json::parse(f, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) {
    *err = meta_path + ": not a JSON object";
    return false;
  }
  const nlohmann::ordered_json names = meta.value("features", nlohmann::ordered_json());
  bool known = false;
  for (GpoeoFeatureSet set : {GpoeoFeatureSet::kTelemetry, GpoeoFeatureSet::kActivity, GpoeoFeatureSet::kCounters})
    if (names == nlohmann::ordered_json(GpoeoFeatureNames(set))) {
      feature_set = set;
      known = true;
    }
  if (!known) {
    *err = meta_path + ": features differ from this build's (" + std::to_string(kGpoeoFeatures) +
           " telemetry features, then perhaps " + std::to_string(std::size(kGpoeoActivityFeatureNames)) +
           " activity ones or " + std::to_string(std::size(kGpoeoCounterFeatureNames)) +
           " counter ones): retrain with `emo gpoeo train`";
    return false;
  }
  if (!energy.Load(dir + "/energy.json", err) || !time.Load(dir + "/time.json", err)) return false;
  const size_t cols = GpoeoFeatureNames(feature_set).size() + 1;
  if (energy.cols() != cols || time.cols() != cols) {
    *err = dir + ": the models take " + std::to_string(energy.cols()) + " features, not " + std::to_string(cols);
    return false;
  }
  if (!std::filesystem::exists(dir + "/energy_memory.json")) return true;
  if (!energy_memory.Load(dir + "/energy_memory.json", err) || !time_memory.Load(dir + "/time_memory.json", err))
    return false;
  if (energy_memory.cols() != cols + 1 || time_memory.cols() != cols + 1) {
    *err = dir + ": the memory models take " + std::to_string(energy_memory.cols()) + " features, not " +
           std::to_string(cols + 1);
    return false;
  }
  return true;
}

bool GpoeoModels::Save(const std::string& dir, std::string* err) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *err = dir + ": " + ec.message();
    return false;
  }
  nlohmann::ordered_json m = meta;
  m["features"] = GpoeoFeatureNames(feature_set);
  std::ofstream f(dir + "/meta.json");
  f << m.dump(2) << "\n";
  if (!f) {
    *err = dir + "/meta.json: cannot write";
    return false;
  }
  if (!energy.Save(dir + "/energy.json", err) || !time.Save(dir + "/time.json", err)) return false;
  return !has_memory() ||
         (energy_memory.Save(dir + "/energy_memory.json", err) && time_memory.Save(dir + "/time_memory.json", err));
}

namespace {

// The feature count the models take against the readings'.
bool CheckFeatures(const std::vector<double>& features, GpoeoFeatureSet set, std::string* err) {
  const size_t want = GpoeoFeatureNames(set).size();
  if (features.size() == want) return true;
  *err = "the models take " + std::to_string(want) + " features, the readings gave " + std::to_string(features.size()) +
         (set != GpoeoFeatureSet::kTelemetry ? std::string(" (no ") + GpoeoFeatureSetName(set) + " readings?)"
                                             : std::string());
  return false;
}

bool PredictRows(const GbtModel& energy, const GbtModel& time, const std::vector<float>& x, size_t rows,
                 GpoeoPrediction* out, std::string* err) {
  std::vector<float> e, t;
  if (!energy.Predict(x, rows, &e, err) || !time.Predict(x, rows, &t, err)) return false;
  out->energy_ratio.assign(e.begin(), e.end());
  out->time_ratio.assign(t.begin(), t.end());
  return true;
}

}  // namespace

bool GpoeoModels::Predict(const std::vector<double>& features, const std::vector<int>& mhz, double max_clock_mhz,
                          GpoeoPrediction* out, std::string* err) const {
  if (!CheckFeatures(features, feature_set, err)) return false;
  std::vector<float> x;
  for (int f : mhz) GpoeoRow(features, f, max_clock_mhz, &x);
  return PredictRows(energy, time, x, mhz.size(), out, err);
}

bool GpoeoModels::PredictMemory(const std::vector<double>& features, const std::vector<int>& mhz,
                                const std::vector<int>& mem_mhz, double max_clock_mhz, double max_mem_mhz,
                                GpoeoPrediction* out, std::string* err) const {
  if (!has_memory()) {
    *err = "the models take no memory clock (trained where the GPU lists one)";
    return false;
  }
  if (!CheckFeatures(features, feature_set, err)) return false;
  std::vector<float> x;
  for (size_t i = 0; i < mhz.size(); ++i) GpoeoRow(features, mhz[i], max_clock_mhz, &x, mem_mhz[i] / max_mem_mhz);
  return PredictRows(energy_memory, time_memory, x, mhz.size(), out, err);
}

}  // namespace emo
