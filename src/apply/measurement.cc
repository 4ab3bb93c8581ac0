// measurement.cc — the measurement window and its JSON.
#include "apply/measurement.h"

#include <algorithm>
#include <cmath>

namespace emo {

bool Meter::ReadEnergy(std::vector<double>* out, std::string* err) const {
  out->clear();
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> e = gpus_->EnergyJ(g);
    if (!e) {
      *err = "GPU " + std::to_string(g) + ": energy counter unreadable: " + gpus_->error();
      return false;
    }
    out->push_back(*e);
  }
  return true;
}

void Meter::Open(double now_ns) {
  open_ = ReadEnergy(&e0_, &error_);
  first_ = seen_;
  t0_ns_ = now_ns;
}

void Meter::OnIterationStart(int iteration, double now_ns) {
  if (iteration == warmup_) Open(now_ns);
  ++seen_;
}

bool Meter::Close(double end_ns, Measurement* out, std::string* err) {
  if (!error_.empty()) {
    *err = error_;
    return false;
  }
  if (!open_) {
    *err = "the measurement window never opened (" + std::to_string(seen_) + " iterations began, " +
           std::to_string(warmup_) + " of them warm-up)";
    return false;
  }
  std::vector<double> e1;
  if (!ReadEnergy(&e1, err)) return false;
  *out = Measurement{};
  out->window_s = (end_ns - t0_ns_) / 1e9;
  out->iterations = seen_ - first_;
  for (int g = 0; g < gpus_->Count(); ++g) {
    const double e = e1[static_cast<size_t>(g)] - e0_[static_cast<size_t>(g)];
    out->gpu_energy_j.push_back(e);
    out->gpu_names.push_back(gpus_->Name(g));
    out->energy_j += e;
  }
  return true;
}

void AddMeasurementJson(const Measurement& m, nlohmann::ordered_json* into) {
  using Json = nlohmann::ordered_json;
  auto per_iteration = [&](double v) { return m.iterations > 0 ? Json(v) : Json(); };
  Json& j = *into;
  j["window_s"] = m.window_s;
  j["iterations"] = m.iterations;
  j["energy_j"] = m.energy_j;
  j["avg_power_w"] = m.avg_power_w();
  j["iteration_ms"] = per_iteration(m.iteration_ms());
  j["iteration_energy_j"] = per_iteration(m.iteration_energy_j());
  Json per_gpu = Json::array();
  for (size_t g = 0; g < m.gpu_energy_j.size(); ++g) {
    const double e = m.gpu_energy_j[g];
    per_gpu.push_back({{"gpu", g},
                       {"name", m.gpu_names[g]},
                       {"energy_j", e},
                       {"iteration_energy_j", per_iteration(m.iterations > 0 ? e / m.iterations : 0)},
                       {"avg_power_w", m.window_s > 0 ? e / m.window_s : 0}});
  }
  j["per_gpu"] = per_gpu;
}

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.stdev = s.n > 1 ? std::sqrt(sq / (s.n - 1)) : 0;
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  return s;
}

nlohmann::ordered_json SpreadJson(const Spread& s) {
  return {{"mean", s.mean}, {"stdev", s.stdev},           {"min", s.min},
          {"max", s.max},   {"rel_stdev", s.rel_stdev()}, {"rel_range", s.rel_range()}};
}

}  // namespace emo
