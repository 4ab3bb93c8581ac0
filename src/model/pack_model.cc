// pack_model.cc — fitting a pack's metrics to the microbenchmarks and predicting its time and
// energy per clock.
#include "model/pack_model.h"

#include <algorithm>
#include <cmath>

namespace emo {

PackModel::PackModel(const DeviceProfile& profile)
    : clocks_mhz_(profile.clocks_mhz), default_mhz_(profile.default_mhz), nnls_(0, kMicrobenches) {
  const int nc = clocks();
  // Rows with some microbenchmark showing them, and their scales.
  for (int m = 0; m < kMetrics; ++m) {
    rows_.push_back(m);
    double norm2 = 0;
    for (int b = 0; b < kMicrobenches; ++b) {
      const double v = RowValue(profile.bench[b].metrics, static_cast<int>(rows_.size()) - 1);
      norm2 += v * v;
    }
    if (norm2 > 0) {
      row_scale_.push_back(1 / std::sqrt(norm2));
    } else {
      rows_.pop_back();
    }
  }
  const int nr = fit_rows();
  b_matrix_.resize(static_cast<size_t>(nr) * kMicrobenches);
  for (int r = 0; r < nr; ++r)
    for (int b = 0; b < kMicrobenches; ++b)
      b_matrix_[static_cast<size_t>(r) * kMicrobenches + b] = RowValue(profile.bench[b].metrics, r) * row_scale_[r];
  time_.resize(static_cast<size_t>(kMicrobenches) * nc);
  energy_.resize(static_cast<size_t>(kMicrobenches) * nc);
  for (int b = 0; b < kMicrobenches; ++b)
    for (int c = 0; c < nc; ++c) {
      time_[static_cast<size_t>(b) * nc + c] = profile.bench[b].time_s[c];
      energy_[static_cast<size_t>(b) * nc + c] = profile.bench[b].energy_j[c];
    }
  for (int b = 0; b < kMicrobenches; ++b) {
    const DeviceProfile::Bench& bench = profile.bench[b];
    std::vector<std::array<double, 3>> held;  // (MHz held, time, energy) per setting
    for (int c = 0; c < nc; ++c) {
      const bool throttled = !bench.throttled_mhz.empty() && bench.throttled_mhz[c] > 0;
      held.push_back({throttled ? bench.throttled_mhz[c] : clocks_mhz_[c], bench.time_s[c], bench.energy_j[c]});
    }
    std::stable_sort(held.begin(), held.end(), [](const auto& a, const auto& z) { return a[0] < z[0]; });
    for (size_t i = 0; i < held.size();) {  // settings that held the same clock: their mean
      size_t j = i;
      double t = 0, e = 0;
      for (; j < held.size() && held[j][0] == held[i][0]; ++j) t += held[j][1], e += held[j][2];
      held_mhz_[b].push_back(held[i][0]);
      held_t_[b].push_back(t / static_cast<double>(j - i));
      held_e_[b].push_back(e / static_cast<double>(j - i));
      i = j;
    }
  }
  idle_power_w_.resize(nc);
  const DeviceProfile::Bench& idle = profile.bench[kBenchIdle];
  for (int c = 0; c < nc; ++c) idle_power_w_[c] = idle.energy_j[c] / idle.time_s[c];
  floor_s_ = profile.kernel_floor_s;
  floor_s_.resize(nc, 0);
  nnls_ = NnlsSolver(nr, kMicrobenches);
  rhs_.resize(nr);
  raw_t_.resize(nc);
  raw_e_.resize(nc);
}

double PackModel::RowValue(const std::array<double, kMetrics>& v, int r) const {
  const int m = rows_[r];
  return m == kWarpsPerActiveCycle ? v[kWarpsPerActiveCycle] * v[kSmCyclesActive] : v[m];
}

double AtClock(const std::vector<int>& clocks_mhz, const double* table, double mhz) {
  const auto above = std::upper_bound(clocks_mhz.begin(), clocks_mhz.end(), mhz,
                                      [](double f, int c) { return f < static_cast<double>(c); });
  if (above == clocks_mhz.begin()) return table[0];
  const size_t c = static_cast<size_t>(above - clocks_mhz.begin()) - 1;  // the highest clock <= mhz
  if (mhz - clocks_mhz[c] < 0.5 || c + 1 == clocks_mhz.size()) return table[c];
  const double w = (mhz - clocks_mhz[c]) / (clocks_mhz[c + 1] - clocks_mhz[c]);
  return table[c] + w * (table[c + 1] - table[c]);
}

namespace {

// A benchmark's held-clock table v over ascending clocks x at f: linear between clocks; below the
// lowest, its value; above the highest (a pack that ran faster than the benchmark could under its
// power limit), the trend of the top tenth of the range continued as a power law.
double AtHeldClock(const std::vector<double>& x, const std::vector<double>& v, double f) {
  const auto above = std::upper_bound(x.begin(), x.end(), f);
  if (above == x.begin()) return v.front();
  if (above == x.end()) {
    size_t i = x.size() - 1;
    while (i > 0 && x[i] > 0.9 * x.back()) --i;
    if (i == x.size() - 1 || !(v[i] > 0) || !(v.back() > 0)) return v.back();
    const double slope = std::log(v.back() / v[i]) / std::log(x.back() / x[i]);
    return v.back() * std::pow(f / x.back(), slope);
  }
  const size_t i = static_cast<size_t>(above - x.begin());
  const double w = (f - x[i - 1]) / (x[i] - x[i - 1]);
  return v[i - 1] + w * (v[i] - v[i - 1]);
}

}  // namespace

bool PackModel::Predict(const PackMetrics& m, const PackObservation& obs, PackFit* fit, double* time_s,
                        double* energy_j, std::string* err) {
  Fit(m, fit);
  return Anchor(m.kernels, obs, fit, time_s, energy_j, err);
}

void PackModel::Fit(const PackMetrics& m, PackFit* fit) {
  const int nr = fit_rows();
  *fit = PackFit();
  double b2 = 0;
  for (int r = 0; r < nr; ++r) {
    rhs_[r] = RowValue(m.v, r) * row_scale_[r];
    b2 += rhs_[r] * rhs_[r];
  }
  const NnlsResult res = nnls_.Solve(b_matrix_.data(), rhs_.data(), fit->x.data());
  fit->residual = res.residual;
  fit->rel_residual = b2 > 0 ? res.residual / std::sqrt(b2) : 0;
  fit->iterations = res.iterations;
  fit->converged = res.converged;
}

bool PackModel::Anchor(int64_t kernels, const PackObservation& obs, PackFit* fit, double* time_s, double* energy_j,
                       std::string* err) {
  const int nc = clocks();
  if (!(obs.time_s > 0) || !std::isfinite(obs.time_s)) {
    *err = "measured time " + std::to_string(obs.time_s) + " s is not positive";
    return false;
  }
  const double f0 = obs.mhz > 0 ? obs.mhz : default_mhz_;
  if (f0 < clocks_mhz_.front() - 0.5 || f0 > clocks_mhz_.back() + 0.5) {
    *err = "clock " + std::to_string(f0) + " MHz is outside the profiled " + std::to_string(clocks_mhz_.front()) + "-" +
           std::to_string(clocks_mhz_.back()) + " MHz";
    return false;
  }
  fit->time_scale = fit->energy_scale = 1;
  fit->anchored = true;
  // The raw mix at every setting, and at f0 by the clocks the benchmarks held.
  double t_f0 = 0, e_f0 = 0;
  for (int c = 0; c < nc; ++c) raw_t_[c] = raw_e_[c] = 0;
  for (int b = 0; b < kMicrobenches; ++b) {
    const double xb = fit->x[b];
    if (xb == 0) continue;
    const double* t = &time_[static_cast<size_t>(b) * nc];
    const double* e = &energy_[static_cast<size_t>(b) * nc];
    for (int c = 0; c < nc; ++c) {
      raw_t_[c] += xb * t[c];
      raw_e_[c] += xb * e[c];
    }
    t_f0 += xb * AtHeldClock(held_mhz_[b], held_t_[b], f0);
    e_f0 += xb * AtHeldClock(held_mhz_[b], held_e_[b], f0);
  }
  // The floor's share of t0, and its time and energy at each clock.
  const double floor_f0 = AtClock(clocks_mhz_, floor_s_.data(), f0);
  fit->floor_share = floor_f0 > 0 ? std::min(1.0, static_cast<double>(kernels) * floor_f0 / obs.time_s) : 0;
  const double floor_t0 = fit->floor_share * obs.time_s, body_t0 = obs.time_s - floor_t0;
  for (int c = 0; c < nc; ++c) {
    time_s[c] = floor_t0 > 0 ? floor_t0 * floor_s_[c] / floor_f0 : 0;
    energy_j[c] = time_s[c] * idle_power_w_[c];
  }
  const double floor_e0 = floor_t0 * AtClock(clocks_mhz_, idle_power_w_.data(), f0);
  const double body_e0 = obs.energy_j > 0 && body_t0 > 0 ? std::max(obs.energy_j - floor_e0, 0.0) : 0;  // 0: unknown

  if (t_f0 > 0) {
    fit->time_scale = body_t0 / t_f0;
    fit->energy_scale = body_e0 > 0 ? body_e0 / e_f0 : fit->time_scale;
    fit->energy_f0 = floor_e0 + fit->energy_scale * e_f0;
    for (int c = 0; c < nc; ++c) {
      time_s[c] += fit->time_scale * raw_t_[c];
      energy_j[c] += fit->energy_scale * raw_e_[c];
    }
  } else {
    fit->anchored = false;
    fit->time_scale = 0;
    fit->energy_scale = body_e0 > 0 ? body_e0 / (AtClock(clocks_mhz_, idle_power_w_.data(), f0) * body_t0) : 1;
    fit->energy_f0 = floor_e0 + fit->energy_scale * AtClock(clocks_mhz_, idle_power_w_.data(), f0) * body_t0;
    for (int c = 0; c < nc; ++c) {
      time_s[c] += body_t0;
      energy_j[c] += fit->energy_scale * idle_power_w_[c] * body_t0;
    }
  }
  return true;
}

bool PredictPacks(PackModel& model, const std::vector<PackMetrics>& packs, const std::vector<PackObservation>& obs,
                  PackTables* out, std::string* err) {
  if (packs.size() != obs.size()) {
    *err = std::to_string(packs.size()) + " packs but " + std::to_string(obs.size()) + " observations";
    return false;
  }
  const int nc = model.clocks();
  out->packs = static_cast<int>(packs.size());
  out->clocks = nc;
  out->time_s.assign(packs.size() * nc, 0);
  out->energy_j.assign(packs.size() * nc, 0);
  out->x.assign(packs.size() * kMicrobenches, 0);
  out->rel_residual.assign(packs.size(), 0);
  out->anchored.assign(packs.size(), 0);
  PackFit fit;
  for (size_t i = 0; i < packs.size(); ++i) {
    std::string why;
    if (!model.Predict(packs[i], obs[i], &fit, &out->time_s[i * nc], &out->energy_j[i * nc], &why)) {
      *err = "pack " + std::to_string(i) + ": " + why;
      return false;
    }
    for (int b = 0; b < kMicrobenches; ++b) out->x[i * kMicrobenches + b] = fit.x[b];
    out->rel_residual[i] = fit.rel_residual;
    out->anchored[i] = fit.anchored;
  }
  return true;
}

}  // namespace emo
