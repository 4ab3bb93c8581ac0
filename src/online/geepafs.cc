// geepafs.cc — GEEPAFS's sampling loop, zig-zag probe and one- or two-segment performance model.
#include "online/geepafs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace emo {

bool ParseGeepafsOptions(const MethodOptions& m, GeepafsOptions* out, std::string* err) {
  GeepafsOptions o;
  for (const auto& item : m.items) {
    const std::string& key = item.first;
    double v = 0;
    if (key == "p") {
      if (!OptionNumber(m.name, item, 0.5, 1, false, &o.perf_threshold, err)) return false;
    } else if (key == "period-ms") {
      if (!OptionNumber(m.name, item, 10, 1e4, false, &o.period_ms, err)) return false;
    } else if (key == "reprobe-s") {
      if (!OptionNumber(m.name, item, 1, 1e5, false, &o.reprobe_s, err)) return false;
    } else if (key == "min-mhz") {
      if (!OptionNumber(m.name, item, 1, 1e4, true, &v, err)) return false;
      o.min_set_mhz = static_cast<int>(v);
    } else {
      *err = m.name + ": unknown option '" + key + "' (p, period-ms, reprobe-s, min-mhz)";
      return false;
    }
  }
  *out = o;
  return true;
}

namespace {

struct Line {
  double a = 0, b = 0;  // y = a·x + b
  double At(double x) const { return a * x + b; }
  double Solve(double y) const { return (y - b) / a; }
};

// Least squares over (x, y); returns the sum of squared errors.
double FitLine(const std::vector<double>& x, const std::vector<double>& y, Line* l) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double var = n * sxx - sx * sx;
  l->a = var > 0 ? (n * sxy - sx * sy) / var : 0;
  l->b = (sy - l->a * sx) / n;
  double sse = 0;
  for (size_t i = 0; i < x.size(); ++i) sse += (y[i] - l->At(x[i])) * (y[i] - l->At(x[i]));
  return sse;
}

// Continuous two-segment least squares with the knot at k: y = b + a1·min(x,k) + a2·max(x−k,0).
// False when the system is singular.
bool FitKnotted(const std::vector<double>& x, const std::vector<double>& y, double k, Line* low, Line* high,
                double* sse) {
  double m[3][4] = {};
  for (size_t i = 0; i < x.size(); ++i) {
    const double basis[3] = {1, std::min(x[i], k), std::max(x[i] - k, 0.0)};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m[r][c] += basis[r] * basis[c];
      m[r][3] += basis[r] * y[i];
    }
  }
  for (int c = 0; c < 3; ++c) {  // Gauss–Jordan with partial pivoting
    int pivot = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    if (std::abs(m[pivot][c]) < 1e-9) return false;
    std::swap(m[c], m[pivot]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int cc = c; cc < 4; ++cc) m[r][cc] -= f * m[c][cc];
    }
  }
  const double b = m[0][3] / m[0][0], a1 = m[1][3] / m[1][1], a2 = m[2][3] / m[2][2];
  *low = {a1, b};
  *high = {a2, b + a1 * k - a2 * k};
  *sse = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = y[i] - (x[i] <= k ? low->At(x[i]) : high->At(x[i]));
    *sse += e * e;
  }
  return true;
}

}  // namespace

GeepafsDecision GeepafsDecide(const std::vector<GeepafsSample>& samples, const std::vector<int>& probes_mhz,
                              double max_mhz, double min_set_mhz, double p, double reg_err_threshold) {
  GeepafsDecision d;
  for (const GeepafsSample& s : samples) {
    const double f = s.measured_mhz, u = std::max(1.0, s.gpu_util_pct);
    d.cap = std::max(d.cap, f / ((1 - p) * (f / max_mhz + 100 / u - 1) + f / max_mhz));
  }
  const size_t n_probes = probes_mhz.size();
  std::vector<double> x, y;
  double y_sum = 0;
  for (const GeepafsSample& s : samples) {
    x.push_back(probes_mhz[static_cast<size_t>(s.probe)]);
    y.push_back(s.mem_util_pct);
    y_sum += s.mem_util_pct;
  }
  d.bound = max_mhz;
  d.eff = min_set_mhz;
  const double f0 = probes_mhz[0];
  if (y_sum > 0) {
    Line line, low, high;
    double best = FitLine(x, y, &line);
    bool two = false;
    double cross = 0;
    for (size_t t = 2; t + 2 <= n_probes; ++t) {
      std::vector<double> xl, yl, xh, yh;
      for (size_t i = 0; i < x.size(); ++i) {
        const bool is_low = static_cast<size_t>(samples[i].probe) < t;
        (is_low ? xl : xh).push_back(x[i]);
        (is_low ? yl : yh).push_back(y[i]);
      }
      Line l1, l2;
      double err = FitLine(xl, yl, &l1) + FitLine(xh, yh, &l2);
      double c = l1.a != l2.a ? (l2.b - l1.b) / (l1.a - l2.a) : -1;
      if (c < probes_mhz[t - 1] || c > probes_mhz[t]) {
        c = probes_mhz[t - 1];
        if (!FitKnotted(x, y, c, &l1, &l2, &err)) continue;
      }
      if (l1.a <= l2.a || err >= best) continue;
      best = err;
      two = true;
      low = l1;
      high = l2;
      cross = c;
    }
    if (best <= static_cast<double>(samples.size()) * reg_err_threshold) {
      // Predicted performance at each probe.
      auto predict = [&](double f) {
        if (!two) return line.a > 0 ? line.At(f) : line.At(f0);
        if (low.a <= 0) return low.At(f0);
        if (high.a <= 0) return f <= cross ? low.At(f) : low.At(cross);
        return f <= cross ? low.At(f) : high.At(f);
      };
      double best_ratio = -1;
      for (size_t j = 0; j < n_probes; ++j) {
        double power = 0, count = 0;
        for (const GeepafsSample& s : samples)
          if (static_cast<size_t>(s.probe) == j) power += s.power_w, count += 1;
        if (count == 0 || power <= 0) continue;
        const double ratio = predict(probes_mhz[j]) / (power / count);
        if (ratio > best_ratio) best_ratio = ratio, d.eff = probes_mhz[j];
      }
      if (!two) {
        d.bound = line.a > 0 ? line.Solve(p * line.At(max_mhz)) : f0;
      } else if (low.a <= 0) {
        d.bound = f0;
      } else if (high.a > 0) {
        d.bound = high.Solve(p * high.At(max_mhz));
        if (d.bound <= cross) d.bound = low.Solve(p * high.At(max_mhz));
      } else {
        d.bound = low.Solve(p * low.At(cross));
      }
    }
  }
  d.chosen = std::max(std::min(d.bound, d.cap), d.eff);
  return d;
}

namespace {

// The lowest supported clock at or above mhz (the highest when none is).
int RoundUp(const std::vector<int>& supported, double mhz) {
  for (int c : supported)
    if (c >= mhz - 1e-9) return c;
  return supported.back();
}

constexpr int kZigZag[] = {0, 1, 2, 3, 3, 2, 1, 0};
constexpr int kProbeTicks = 8;  // periods with a probe clock set; a 9th holds the first while fitting

}  // namespace

Geepafs::Geepafs(GpuControl* gpus, const GeepafsOptions& options) : gpus_(gpus), o_(options) {
  for (int g = 0; g < gpus_->Count(); ++g) {
    GpuState s;
    s.supported = gpus_->SupportedClocks(g);
    std::sort(s.supported.begin(), s.supported.end());
    s.max = s.supported.back();
    const std::string name = gpus_->Name(g);
    double min_set = o_.min_set_mhz;
    if (min_set <= 0) {
      if (name.find("A100") != std::string::npos)
        min_set = 1110;
      else if (name.find("V100") != std::string::npos)
        min_set = 952;
      else
        min_set = s.max * 1110.0 / 1410.0;
    }
    s.min_set = RoundUp(s.supported, std::min<double>(min_set, s.max));
    for (int i = 0; i < 4; ++i) s.probes.push_back(RoundUp(s.supported, s.min_set + i * (s.max - s.min_set) / 3.0));
    s.util.assign(static_cast<size_t>(o_.util_window), 0.0);
    gpus_state_.push_back(std::move(s));
    std::string err;
    if (!gpus_->ResetClock(g, &err)) Fail(err);
  }
}

void Geepafs::Lock(int gpu, int mhz) {
  std::string err;
  if (!gpus_->SetLockedClock(gpu, mhz, &err)) Fail(err);
}

void Geepafs::Tick(double /*now_ns*/) {
  if (!error().empty()) return;  // the back end failed: the method stops acting
  // Sample every GPU: the moving average of utilisation runs all the time.
  double util_total = 0;
  for (int g = 0; g < gpus_->Count(); ++g) {
    GpuState& s = gpus_state_[static_cast<size_t>(g)];
    const std::optional<double> util = gpus_->Utilization(g), mem = gpus_->MemoryUtilization(g),
                                clock = gpus_->ClockMhz(g), power = gpus_->PowerW(g);
    if (!util || !mem || !clock || !power) {
      Fail("GPU " + std::to_string(g) + ": telemetry read failed: " + gpus_->error());
      return;
    }
    const double u = 100 * *util;
    s.util_sum += u - s.util[s.util_next];
    s.util[s.util_next] = u;
    s.util_next = (s.util_next + 1) % s.util.size();
    util_total += s.util_sum / static_cast<double>(s.util.size());
    if (phase_ >= 1 && phase_ <= kProbeTicks) s.samples.push_back({kZigZag[phase_ - 1], *clock, u, 100 * *mem, *power});
  }
  if (phase_ < 0) {  // at the chosen clock: wait for the re-probe timer
    if (--timer_ > 0) return;
    if (util_total < 1) {
      timer_ = static_cast<int>(std::lround(o_.reprobe_s * 1e3 / o_.period_ms));
      return;
    }
    phase_ = 0;
  }
  if (phase_ < kProbeTicks) {
    for (int g = 0; g < gpus_->Count(); ++g) {
      GpuState& s = gpus_state_[static_cast<size_t>(g)];
      if (phase_ == 0) s.samples.clear();
      Lock(g, s.probes[static_cast<size_t>(kZigZag[phase_])]);
    }
  } else if (phase_ == kProbeTicks + 1) {  // the period after the fit: set the choice once
    for (int g = 0; g < gpus_->Count(); ++g) {
      GpuState& s = gpus_state_[static_cast<size_t>(g)];
      const GeepafsDecision d =
          GeepafsDecide(s.samples, s.probes, s.max, s.min_set, o_.perf_threshold, o_.reg_err_threshold);
      const int mhz = RoundUp(s.supported, std::clamp<double>(d.chosen, s.min_set, s.max));
      s.choices.push_back(mhz);
      Lock(g, mhz);
    }
    phase_ = -1;
    timer_ = static_cast<int>(std::lround(o_.reprobe_s * 1e3 / o_.period_ms)) + 1;
    return;
  }
  ++phase_;
}

void Geepafs::Finish() {
  for (int g = 0; g < gpus_->Count(); ++g) {
    std::string err;
    if (!gpus_->ResetClock(g, &err)) Fail(err);
  }
}

void Geepafs::Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const {
  *findings = nlohmann::ordered_json::array();
  for (size_t g = 0; g < gpus_state_.size(); ++g) {
    const GpuState& s = gpus_state_[g];
    findings->push_back({{"gpu", g}, {"probes_mhz", s.probes}, {"choices_mhz", s.choices}});
    lines->push_back(
        fmt::format("geepafs: GPU {} probed {} and chose {}", g, fmt::join(s.probes, "/"),
                    s.choices.empty() ? std::string("nothing yet") : fmt::format("{}", fmt::join(s.choices, ", "))));
  }
}

}  // namespace emo
