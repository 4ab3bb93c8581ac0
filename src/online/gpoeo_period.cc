// gpoeo_period.cc — GPOEO's period detection (GPOEO.md §2; upstream EPOpt/SpectrumAnalysis.py):
// candidates from the FFT magnitude spectrum, the plateau-matching score, the grid refinement, and
// the suffix estimates that decide whether the trace is periodic.
#include "online/gpoeo_period.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace emo {

namespace {

constexpr double kInvalid = 1e4;  // upstream MAPEMax: the score of a period the trace cannot test
// A sample more than this share of the window's range from its plateau's mean starts a new plateau.
// Upstream clusters around the densest quantile with 3-4 % mean tolerances (GrpClustering); this
// simpler split gives the same plateaus on piecewise-level signals.
constexpr double kPlateauBand = 0.15;

double Mean(const double* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return n ? s / static_cast<double>(n) : 0;
}

double Std(const double* x, size_t n) {
  const double m = Mean(x, n);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += (x[i] - m) * (x[i] - m);
  return n ? std::sqrt(s / static_cast<double>(n)) : 0;
}

// Plateau bounds of w[0, n): 0 = b0 < b1 < ... < bk = n.
std::vector<size_t> Plateaus(const double* w, size_t n) {
  const auto [lo, hi] = std::minmax_element(w, w + n);
  const double band = kPlateauBand * (*hi - *lo);
  std::vector<size_t> b = {0};
  double sum = w[0];
  double count = 1;
  for (size_t i = 1; i < n; ++i) {
    if (std::abs(w[i] - sum / count) > band) {
      b.push_back(i);
      sum = 0;
      count = 0;
    }
    sum += w[i];
    count += 1;
  }
  b.push_back(n);
  return b;
}

// Magnitudes |X_k|, k < nfft/2, of x zero-padded to nfft points; no window, no detrending (§2 Candidates 1).
std::vector<double> Spectrum(const std::vector<double>& x, size_t nfft) {
  std::vector<double> in(nfft, 0.0);
  std::copy(x.begin(), x.end(), in.begin());
  fftw_complex* out = fftw_alloc_complex(nfft / 2 + 1);
  fftw_plan plan = fftw_plan_dft_r2c_1d(static_cast<int>(nfft), in.data(), out, FFTW_ESTIMATE);
  fftw_execute(plan);
  std::vector<double> mag(nfft / 2);
  for (size_t k = 0; k < mag.size(); ++k) mag[k] = std::hypot(out[k][0], out[k][1]);
  fftw_destroy_plan(plan);
  fftw_free(out);
  return mag;
}

// Approximate common multiples, at least about `min_lcm`, of the short candidates (upstream
// ApproximateLCM): steps of 0.2·max(factors), each kept when it is within lcm_tolerance of a whole
// number of every factor; a few alternatives, none near twice the first.
std::vector<double> ApproximateLcm(const std::vector<double>& factors, double min_lcm, double tolerance) {
  const double fmax = *std::max_element(factors.begin(), factors.end());
  double lcm = std::round(min_lcm / fmax) < min_lcm / fmax ? fmax * std::round(min_lcm / fmax) : min_lcm;
  std::vector<double> out;
  for (int step = 0; step < 100000; ++step, lcm += 0.2 * fmax) {
    double worst = 0;
    for (double f : factors) {
      const double whole = std::max(1.0, std::round(lcm / f));
      worst = std::max(worst, std::abs(lcm / f - whole) / whole);
    }
    if (worst >= tolerance) continue;
    if (!out.empty() && (lcm / out[0] > 1.3 || out.size() >= factors.size() || out.back() - out[0] > 0.6 * fmax)) break;
    out.push_back(lcm);
  }
  return out;
}

}  // namespace

const char* GpoeoVerdictName(GpoeoVerdict v) {
  switch (v) {
    case GpoeoVerdict::kPeriodic:
      return "periodic";
    case GpoeoVerdict::kAperiodic:
      return "aperiodic";
    case GpoeoVerdict::kFlat:
      return "flat";
    case GpoeoVerdict::kUnstable:
      return "unstable";
  }
  return "?";
}

std::vector<double> GpoeoSignal(const std::vector<double>& power_w, double power_limit_w,
                                const std::vector<double>& sm_util_pct, const std::vector<double>& mem_util_pct) {
  const size_t n = power_w.size();
  std::vector<double> best;
  double best_std = -1;
  for (int sm_sign : {1, -1}) {
    for (int mem_sign : {1, -1}) {
      std::vector<double> s(n);
      for (size_t i = 0; i < n; ++i) {
        const double sm = sm_util_pct.empty() ? 0 : sm_util_pct[i];
        const double mem = mem_util_pct.empty() ? 0 : mem_util_pct[i];
        s[i] = (100 * power_w[i] / power_limit_w + sm_sign * sm + mem_sign * mem) / 3;
      }
      const double sd = Std(s.data(), n);
      if (sd > best_std) {
        best_std = sd;
        best = std::move(s);
      }
    }
  }
  return best;
}

double GpoeoScore(const std::vector<double>& x, double dt_s, double t_s, double t_ref_s) {
  const double duration = static_cast<double>(x.size() - 1) * dt_s;
  if (x.size() < 4 || t_s <= 0 || t_s > 0.5 * duration) return kInvalid;  // candidates over half the trace
  const double per = t_s / dt_s;  // samples per period, fractional: windows start at round(k·per)
  const size_t n = static_cast<size_t>(per);
  if (n < 2) return kInvalid;
  std::vector<size_t> start;
  for (size_t k = 0;; ++k) {
    const size_t s = static_cast<size_t>(std::lround(static_cast<double>(k) * per));
    if (s + n > x.size()) break;
    start.push_back(s);
  }
  if (start.size() < 2) return kInvalid;
  std::vector<double> pair_scores;
  for (size_t k = 0; k + 1 < start.size(); ++k) {
    const double* w0 = x.data() + start[k];
    const double* w1 = x.data() + start[k + 1];
    const double m0 = Mean(w0, n), m1 = Mean(w1, n);
    const std::vector<size_t> b = Plateaus(Std(w0, n) < Std(w1, n) ? w1 : w0, n);  // the higher-variance one
    const double level = std::max(std::abs(0.5 * (m0 + m1)), 1e-12);
    double sum = 0;
    for (size_t g = 0; g + 1 < b.size(); ++g) {
      const size_t len = b[g + 1] - b[g];
      const double o0 = Mean(w0 + b[g], len) - m0;
      const double o1 = Mean(w1 + b[g], len) - m1;
      sum += std::abs(o1 - o0) / level * 100 * static_cast<double>(len);
    }
    pair_scores.push_back(sum / static_cast<double>(n));
  }
  // Upstream DistributionMAPE's TRef: group by ceil(TRef/T) and average the groups' maxima.
  if (t_ref_s > 0 && t_ref_s / t_s >= 1.7) {
    const size_t each = static_cast<size_t>(std::ceil(t_ref_s / t_s));
    std::vector<double> grouped;
    for (size_t i = 0; i < pair_scores.size(); i += each) {
      const size_t end = std::min(i + each, pair_scores.size());
      grouped.push_back(
          *std::max_element(pair_scores.begin() + static_cast<long>(i), pair_scores.begin() + static_cast<long>(end)));
    }
    pair_scores = grouped;
  }
  return Mean(pair_scores.data(), pair_scores.size());
}

namespace {

// TCompute with extra candidates (upstream passes the earlier suffix estimates).
double Estimate(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o,
                const std::vector<double>& extra, double* score) {
  *score = -1;
  const size_t n = x.size();
  const double span = static_cast<double>(n) * dt_s;
  std::vector<double> cands;
  size_t ratio = 1;
  for (int pass = 0; pass < 2; ++pass) {  // §2 Candidates 1
    const size_t nfft = ratio * n;
    const std::vector<double> mag = Spectrum(x, nfft);
    std::vector<size_t> peaks;
    for (size_t k = 1; k + 1 < mag.size(); ++k)
      if (mag[k] > mag[k - 1] && mag[k] >= mag[k + 1]) peaks.push_back(k);
    std::sort(peaks.begin(), peaks.end(), [&](size_t a, size_t b) { return mag[a] > mag[b]; });
    cands.clear();
    double strongest = -1;
    for (size_t k : peaks) {
      const double t = static_cast<double>(nfft) * dt_s / static_cast<double>(k);
      if (t > o.t_up_bound_s) continue;
      if (strongest < 0) strongest = mag[k];
      if (mag[k] <= o.peak_ratio * strongest) continue;
      cands.push_back(t);
      if (static_cast<int>(cands.size()) >= o.max_candidates) break;
    }
    if (cands.empty() || strongest <= 0) return 0;
    const double longest = *std::max_element(cands.begin(), cands.end());
    if (pass == 0 && longest > 2.0 / 3.0 * span) {
      ratio = static_cast<size_t>(std::ceil(1.5 * o.t_up_bound_s / span));
      if (ratio > 1) continue;
    }
    break;
  }
  // §2 Candidates 2: short candidates give way to approximate common multiples; the longest of them stays.
  const double short_bound = o.short_period_samples * dt_s;
  std::vector<double> factors, scaled;
  for (double t : cands) (t < short_bound ? factors : scaled).push_back(t);
  double factor_max = 1e4;
  if (!factors.empty()) {
    factor_max = *std::max_element(factors.begin(), factors.end());
    scaled.push_back(factor_max);
    for (double t : ApproximateLcm(factors, short_bound, o.lcm_tolerance)) scaled.push_back(t);
  }
  for (double t : extra) scaled.push_back(t);
  // §2 Candidates 3: after a clock change only candidates near the previous period stay.
  if (o.clock_change != 0 && o.previous_period_s > 0) {
    const double lo = o.previous_period_s * (o.clock_change < 0 ? 0.8 : 0.66);
    const double hi = o.previous_period_s * (o.clock_change < 0 ? 1.5 : 1.25);
    std::vector<double> kept;
    for (double t : scaled)
      if (t >= lo && t <= hi) kept.push_back(t);
    if (kept.empty())
      for (int i = 0; i < 4; ++i) kept.push_back(lo + (hi - lo) * i / 4);
    scaled = kept;
  }
  const double t_ref = *std::max_element(scaled.begin(), scaled.end());
  std::vector<double> scores(scaled.size());
  int invalid = 0;
  for (size_t i = 0; i < scaled.size(); ++i) {
    scores[i] = GpoeoScore(x, dt_s, scaled[i], t_ref);
    if (scores[i] >= kInvalid) ++invalid;
  }
  // The strongest candidate, or half of them, untestable: the trace is too short (score -1).
  if (scores[0] >= kInvalid || 2 * invalid >= static_cast<int>(scores.size())) return scaled[0];
  size_t best = static_cast<size_t>(std::min_element(scores.begin(), scores.end()) - scores.begin());
  double t = scaled[best];
  double s = scores[best];
  // §2 Refinement: a grid of refine_steps over ±0.7·(fs/2)/N in frequency (at least ±15 % of T),
  // re-centred on its best point until that lies in the grid's inner 20-80 %, at most refine_rounds times.
  const double half_bin = 0.7 * (0.5 / dt_s) / static_cast<double>(n);
  for (int round = 0; round < o.refine_rounds; ++round) {
    const double f0 = 1 / t;
    double lo = 1 / (f0 + half_bin);
    double hi = f0 - half_bin > 0 ? 1 / (f0 - half_bin) : 1.5 * t;
    lo = std::min(lo, (1 - o.refine_min_half_width) * t);
    hi = std::max(hi, (1 + o.refine_min_half_width) * t);
    // Upstream bounds the grid by half the largest short factor, so a common multiple is not overshot.
    lo = std::max(lo, t - 0.5 * factor_max);
    hi = std::min(hi, t + 0.5 * factor_max);
    int best_i = -1;
    for (int i = 0; i <= o.refine_steps; ++i) {
      const double ti = lo + (hi - lo) * i / o.refine_steps;
      const double si = GpoeoScore(x, dt_s, ti, t_ref);
      if (si < s) {
        s = si;
        t = ti;
        best_i = i;
      }
    }
    if (best_i < 0 || (best_i >= 0.2 * o.refine_steps && best_i <= 0.8 * o.refine_steps)) break;
  }
  if (t < short_bound) t *= std::round(short_bound / t);  // a short result is scaled up (upstream TCompute)
  *score = s;
  return t;
}

// Whether x repeats itself at a lag of t_s: the mean squared difference between samples one
// period apart is under `share` of twice the variance (which unrelated samples would give), over
// at least 3 periods. A small ripple that recurs every period is structure, not a level signal:
// NVML-like readings (A100 power one 25 ms window per 100 ms, utilisation over 1/6 s, an NCCL
// kernel that waits counting as busy) flatten a training iteration to a few percent.
bool Repeats(const std::vector<double>& x, double dt_s, double t_s, double share) {
  if (t_s <= 0) return false;
  const size_t lag = static_cast<size_t>(std::lround(t_s / dt_s));
  if (lag < 2 || x.size() < 3 * lag) return false;
  const double var = Std(x.data(), x.size()) * Std(x.data(), x.size());
  if (var <= 0) return false;
  double d = 0;
  for (size_t i = lag; i < x.size(); ++i) d += (x[i] - x[i - lag]) * (x[i] - x[i - lag]);
  return d / static_cast<double>(x.size() - lag) < share * 2 * var;
}

// §2 Stability, flat: over the last windows the means agree, the spread and the largest deviation
// are small, and the signal does not repeat at the estimated period (EMO's addition, see Repeats).
bool Flat(const std::vector<double>& x_all, double dt_s, double t_s, const GpoeoPeriodOptions& o) {
  if (x_all.size() <= 10) return false;
  const std::vector<double> x(x_all.begin() + 5, x_all.end() - 5);  // upstream drops 5 samples each end
  const double duration = static_cast<double>(x.size() - 1) * dt_s;
  double window = o.flat_window_s;
  if (duration < o.flat_windows * window) {
    if (t_s > 0 && t_s < window) window = t_s;
    if (duration < o.flat_windows * window) return false;
  }
  const size_t step = static_cast<size_t>(window / dt_s);
  if (step < 2) return false;
  const size_t span = static_cast<size_t>(o.flat_windows) * step;
  if (Repeats(std::vector<double>(x.end() - static_cast<long>(span), x.end()), dt_s, t_s, o.flat_repeat_share))
    return false;
  std::vector<double> means;
  for (int i = 0; i < o.flat_windows; ++i) {
    const double* w = x.data() + x.size() - static_cast<size_t>(i + 1) * step;
    const double m = Mean(w, step);
    if (std::abs(m) < 1e-12) return false;
    if (Std(w, step) / std::abs(m) > o.flat_std) return false;
    for (size_t j = 0; j < step; ++j)
      if (std::abs(w[j] - m) / std::abs(m) > o.flat_max_dev) return false;
    means.push_back(m);
  }
  for (size_t i = 0; i + 1 < means.size(); ++i)
    if (std::abs(means[i] - means[i + 1]) / std::abs(means[i]) > o.flat_mean_diff) return false;
  return true;
}

}  // namespace

double GpoeoEstimate(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o, double* score) {
  return Estimate(x, dt_s, o, {}, score);
}

GpoeoPeriod GpoeoDetectPeriod(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o) {
  GpoeoPeriod r;
  if (x.size() < 8) {
    r.reason = "fewer than 8 samples";
    return r;
  }
  const double duration = static_cast<double>(x.size() - 1) * dt_s;
  const bool long_enough = duration >= o.aperiodic_trace_bounds * o.t_up_bound_s;
  double score = -1;
  const double t0 = Estimate(x, dt_s, o, {}, &score);
  if (Flat(x, dt_s, t0, o)) {
    r.verdict = GpoeoVerdict::kFlat;
    r.reason = "the signal is level: no period";
    return r;
  }
  if (t0 <= 0) {
    r.verdict = long_enough ? GpoeoVerdict::kAperiodic : GpoeoVerdict::kUnstable;
    r.reason = "no peak in the spectrum";
    return r;
  }
  r.period_s = t0;
  r.score = score;
  r.estimates_s = {t0};
  if (t0 > 0.5 * duration || score < 0) {
    r.reason = "the trace is shorter than two periods";
    return r;
  }
  // Repeat estimates on suffixes, each dropping max(0.5·T, duration/10) more from the front, while ≥ 2.8·T remains.
  std::vector<double> scores = {score};
  double left = duration;
  for (;;) {
    const double longest = *std::max_element(r.estimates_s.begin(), r.estimates_s.end());
    left -= std::max(0.5 * r.estimates_s.back(), duration / 10);
    if (left < o.repeat_min_periods * longest) break;
    const size_t begin = static_cast<size_t>(std::lround((duration - left) / dt_s));
    const std::vector<double> suffix(x.begin() + static_cast<long>(begin), x.end());
    double s = -1;
    const double t = Estimate(suffix, dt_s, o, r.estimates_s, &s);
    if (t <= 0) break;
    r.estimates_s.push_back(t);
    scores.push_back(s < 0 ? kInvalid : s);
  }
  const auto [lo, hi] = std::minmax_element(r.estimates_s.begin(), r.estimates_s.end());
  r.spread = (*hi - *lo) / Mean(r.estimates_s.data(), r.estimates_s.size());
  // T: the mean of the estimates near the best-scored one.
  const size_t best = static_cast<size_t>(std::min_element(scores.begin(), scores.end()) - scores.begin());
  double sum = 0, count = 0;
  for (double t : r.estimates_s)
    if (std::abs(t - r.estimates_s[best]) <= o.stable_spread * r.estimates_s[best]) {
      sum += t;
      count += 1;
    }
  r.period_s = sum / count;
  r.score = scores[best];
  if (duration >= o.stable_periods * r.period_s && r.spread < o.stable_spread) {
    r.verdict = GpoeoVerdict::kPeriodic;
  } else if (long_enough && (r.period_s > o.t_up_bound_s || r.spread > o.aperiodic_spread)) {
    r.verdict = GpoeoVerdict::kAperiodic;
    r.reason = "the estimates on suffixes disagree";
  } else {
    r.reason = duration < o.stable_periods * r.period_s ? "fewer than 5.3 periods measured"
                                                        : "the estimates on suffixes disagree (not yet decisive)";
  }
  return r;
}

namespace {

// Mean squared difference between x[i] and x[i + lag] over their overlap.
double LagMismatch(const std::vector<double>& x, size_t lag) {
  double s = 0;
  const size_t n = x.size() - lag;
  for (size_t i = 0; i < n; ++i) s += (x[i] - x[i + lag]) * (x[i] - x[i + lag]);
  return n ? s / static_cast<double>(n) : std::numeric_limits<double>::infinity();
}

}  // namespace

double GpoeoRefinePeriod(const std::vector<double>& x, double dt_s, double period_s) {
  const double samples = period_s / dt_s;  // period in samples
  const double n = static_cast<double>(x.size());
  if (period_s <= 0 || n < 3 * samples || samples < 2) return period_s;
  double t = samples;
  const int k_max = static_cast<int>(std::floor(n / samples)) - 1;  // one period of overlap
  for (int k = 1;; k = std::min(2 * k, k_max)) {
    const double centre = k * t, half = std::max(1.0, 0.5 * t);
    const long lo = std::max(1L, static_cast<long>(std::floor(centre - half)));
    const long hi = std::min(static_cast<long>(x.size()) - 2, static_cast<long>(std::ceil(centre + half)));
    if (hi <= lo) break;
    long best = lo;
    double best_d = std::numeric_limits<double>::infinity();
    for (long lag = lo; lag <= hi; ++lag) {
      const double d = LagMismatch(x, static_cast<size_t>(lag));
      if (d < best_d) best_d = d, best = lag;
    }
    double lag = static_cast<double>(best);
    if (best > lo && best < hi) {  // a parabola through the minimum and its neighbours
      const double a = LagMismatch(x, static_cast<size_t>(best - 1)), c = LagMismatch(x, static_cast<size_t>(best + 1));
      const double denom = a - 2 * best_d + c;
      if (denom > 0) lag += std::clamp(0.5 * (a - c) / denom, -0.5, 0.5);
    }
    t = lag / k;
    if (k >= k_max) break;
  }
  return t * dt_s;
}

namespace {

// How badly the series match themselves shifted by whole periods of period_s: each update against
// the series linearly interpolated k periods later, for every k that fits, in squared differences
// over the series' variance, summed over the series that vary (lower: better). Continuous in the
// period, so a grid finds its minimum; at the true period an update k periods on falls where the
// same phase was read, whether the sensor drifts through the iteration's phases or not.
double LagMismatch(const std::vector<GpoeoSeries>& series, double period_s) {
  double total = 0;
  for (const GpoeoSeries& s : series) {
    const size_t n = s.v.size();
    if (n < 8) continue;
    const double m = Mean(s.v.data(), n);
    double var = 0;
    for (double x : s.v) var += (x - m) * (x - m);
    var /= static_cast<double>(n);
    if (var <= 1e-12 * std::max(1.0, m * m)) continue;
    double d = 0, pairs = 0;
    for (size_t i = 0; i < n; ++i) {
      size_t j = i;
      for (double t = s.t_s[i] + period_s; t <= s.t_s.back(); t += period_s) {
        while (s.t_s[j + 1] < t) ++j;  // s.t_s[j] < t <= s.t_s[j + 1]
        const double w = (t - s.t_s[j]) / (s.t_s[j + 1] - s.t_s[j]);
        const double x = s.v[j] + w * (s.v[j + 1] - s.v[j]) - s.v[i];
        d += x * x;
        pairs += 1;
      }
    }
    if (pairs > 0) total += d / pairs / var;
  }
  return total;
}

}  // namespace

double GpoeoFoldPeriod(const std::vector<GpoeoSeries>& series, double period_s, double rel_range) {
  if (period_s <= 0 || LagMismatch(series, period_s) <= 0) return period_s;
  // A grid of 0.02 % steps, then the minimum's neighbours at 0.002 %.
  double best = period_s, best_d = std::numeric_limits<double>::infinity();
  for (const auto& [step, half] : {std::pair{2e-4, rel_range}, std::pair{2e-5, 2e-4}}) {
    const double centre = best;
    const int k = static_cast<int>(std::lround(half / step));
    for (int i = -k; i <= k; ++i) {
      const double t = centre * (1 + step * i);
      const double d = LagMismatch(series, t);
      if (d < best_d) best_d = d, best = t;
    }
  }
  return best;
}

}  // namespace emo
