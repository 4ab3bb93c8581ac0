// gpoeo_period.cc — GPOEO's period detection (GPOEO.md §2; upstream EPOpt/SpectrumAnalysis.py):
// candidates from the FFT magnitude spectrum and EMO's lag-mismatch choice among them, and the
// suffix estimates that decide whether the trace is periodic; the uniform signal from NVML's updates.
#include "online/gpoeo_period.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>

namespace emo {

namespace {

constexpr double kInvalid = 1e4;  // the score of an estimate the trace cannot test
// Suffix estimates that are whole multiples or fractions of each other (GpoeoDetectPeriod): at
// most this many times, within this share of the whole ratio (a multiple refined on the readings is
// as close to whole as the period is measured: within 2 % on a suffix's few dozen periods).
constexpr double kMaxMultiple = 4, kMultipleSlack = 0.02;

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

// Magnitudes |X_k|, k < nfft/2, of x zero-padded to nfft points; no window, no detrending (§2 Candidates 1).
std::vector<double> Spectrum(const std::vector<double>& x, size_t nfft) {
  std::vector<double> in(nfft, 0.0);
  std::copy(x.begin(), x.end(), in.begin());
  // FFTW's planner is not thread-safe (its execute is): GPOEO runs on several simulations at once.
  static std::mutex planner;
  fftw_complex* out = fftw_alloc_complex(nfft / 2 + 1);
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(planner);
    plan = fftw_plan_dft_r2c_1d(static_cast<int>(nfft), in.data(), out, FFTW_ESTIMATE);
  }
  fftw_execute(plan);
  std::vector<double> mag(nfft / 2);
  for (size_t k = 0; k < mag.size(); ++k) mag[k] = std::hypot(out[k][0], out[k][1]);
  {
    std::lock_guard<std::mutex> lock(planner);
    fftw_destroy_plan(plan);
  }
  fftw_free(out);
  return mag;
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

namespace {

// The lag mismatch at a whole number of samples (no interpolation), given x's variance.
double WholeLagMismatch(const std::vector<double>& x, double var, size_t lag) {
  if (var <= 0 || lag == 0 || lag + 2 > x.size()) return 1;
  double s = 0;
  const size_t m = x.size() - lag;
  for (size_t i = 0; i < m; ++i) s += (x[i + lag] - x[i]) * (x[i + lag] - x[i]);
  return s / static_cast<double>(m) / (2 * var);
}

// The fold mismatch of x[0, n) at a period of `lag` samples (fractional): the samples ordered by
// their phase within the period, the mean squared difference of neighbours in that order, over
// twice the variance (0: x repeats at that period; about 1: unrelated samples). Unlike comparing
// x with itself shifted by a fractional lag, it interpolates nothing, so a feature narrower than a
// sample (a short dip in a 100 ms average) still lines up: each sample is a box average starting
// at its phase, and at the true period the samples of neighbouring phases from all periods trace
// one curve. At a multiple of the period the phases are spread k times thinner, so the period
// itself matches at least as well as its multiples.
double FoldMismatch(const std::vector<double>& x, double var, double lag, size_t n) {
  n = std::min(n, x.size());
  if (var <= 0 || lag <= 0 || n < 3) return 1;
  // (phase, index): samples of equal phase stay in time order (sorting them by value would make
  // any lag that gathers samples into a few phases, a whole lag of 2 say, match by construction).
  std::vector<std::pair<double, size_t>> folded(n);
  for (size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(i) / lag;
    folded[i] = {p - std::floor(p), i};
  }
  std::sort(folded.begin(), folded.end());
  double s = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const double d = x[folded[i + 1].second] - x[folded[i].second];
    s += d * d;
  }
  return s / static_cast<double>(n - 1) / (2 * var);
}

constexpr double kTieRel = 1e-9;  // mismatches this close (relative) are the same sum of the same pairs

// The period (samples) within ±half of `lag` with the least fold mismatch over the whole trace.
// The fold over n samples resolves the period to a fraction of lag/n samples (an error of δ moves
// the last of its n/lag periods by δ·n/lag samples), too sharp for one grid over ±half on a long
// trace; so the search starts on a prefix of about 4 periods and doubles it, each time searching
// ±lag/(previous prefix) around the previous best, in steps that move the prefix's last sample by
// a tenth of a sample. With n_max, only the first n_max samples.
double RefineFold(const std::vector<double>& x, double var, double lag, double half, size_t n_max = SIZE_MAX) {
  const size_t n_all = std::min(x.size(), n_max);
  size_t n = std::min(n_all, static_cast<size_t>(std::ceil(4 * lag)) + 1);
  for (;;) {
    const double step = 0.1 * lag / static_cast<double>(n);
    const int steps = std::max(1, static_cast<int>(std::ceil(half / step)));
    std::vector<double> ts, ds;
    for (int i = -steps; i <= steps; ++i) {
      const double t = lag + step * i;
      if (t <= 0) continue;
      ts.push_back(t);
      ds.push_back(FoldMismatch(x, var, t, n));
    }
    // The least mismatch; where neighbouring lags tie with it, the middle of that run. A period of
    // a whole or simple fractional number of samples (2.5, 5, 10) folds the trace onto a few
    // phases, and every lag that keeps those phases apart sorts the samples alike and scores
    // exactly the same: the trace cannot tell them apart, and the first of them (the shortest)
    // would bias every estimate low, the more so the shorter the suffix.
    const size_t m = static_cast<size_t>(std::min_element(ds.begin(), ds.end()) - ds.begin());
    const double tie = ds[m] + kTieRel * std::max(ds[m], 1e-12);
    size_t lo = m, hi = m;
    while (lo > 0 && ds[lo - 1] <= tie) --lo;
    while (hi + 1 < ds.size() && ds[hi + 1] <= tie) ++hi;
    lag = 0.5 * (ts[lo] + ts[hi]);
    if (n >= n_all) return lag;
    half = lag / static_cast<double>(n);
    n = std::min(n_all, 2 * n);
  }
}

// The half-width of a refinement around `lag` (samples), kept above min_lag: a lag under two
// samples folds the trace exactly like its alias above two (a frequency f > 1/2 per sample reads
// as 1 − f), so a search reaching below would find the alias of a short period (1.67 for 2.5) and,
// clamped back to min_lag, land on neither.
double AliasFreeHalf(double lag, double half, double min_lag) { return std::max(0.0, std::min(half, lag - min_lag)); }

// A candidate lag c (samples) moved to the least fold mismatch of x within a sample of it (a whole
// lag or a spectral peak is that close to a period of a few samples; a longer period's spectral
// peak is known to about c²/n, hence up to a tenth of c), kept above min_lag.
double RefineCandidate(const std::vector<double>& x, double var, double c, double min_lag) {
  const double half = std::clamp(c * c / static_cast<double>(x.size()), 1.0, std::max(1.0, 0.1 * c));
  return RefineFold(x, var, c, AliasFreeHalf(c, half, min_lag));
}

// The readings' mean power in each of L phase classes (reading i in class i mod L), in the order
// a period of L/k readings places them: class c starts at phase c·k/L of that period, so position
// (c·k) mod L of L equal steps.
std::vector<double> ClassMeansInPhaseOrder(const std::vector<double>& x, size_t L, size_t k) {
  std::vector<double> sum(L, 0.0), count(L, 0.0);
  for (size_t i = 0; i < x.size(); ++i) sum[i % L] += x[i], count[i % L] += 1;
  std::vector<double> y(L);
  for (size_t c = 0; c < L; ++c) y[(c * k) % L] = sum[c] / count[c];
  return y;
}

// The roughness in time of the readings folded at L/k readings: over the L steps between
// phase-neighbouring class means (circularly), the mean of (change)² / (s/dt), s = dt/k the time
// between the starts of their windows, over twice x's variance (the Dirichlet energy of the folded
// curve). Each reading is the mean power over its 100 ms window, so two readings whose windows
// start s apart differ only by the power in the s-long slivers that the windows do not share: at
// the true period the folded readings change from class to class in proportion to how much time
// separates them. A period of L/k readings puts neighbouring classes dt/k apart, k times closer
// than a period of L readings does, so the same change between them is k times steeper.
double LatticeRoughness(const std::vector<double>& x, double var, size_t L, size_t k) {
  const std::vector<double> y = ClassMeansInPhaseOrder(x, L, k);
  double s = 0;
  for (size_t q = 0; q < L; ++q) s += (y[(q + 1) % L] - y[q]) * (y[(q + 1) % L] - y[q]);
  return static_cast<double>(k) * s / static_cast<double>(L) / (2 * var);
}

size_t Gcd(size_t a, size_t b) { return b == 0 ? a : Gcd(b, a % b); }

// EMO: where `lag` puts the readings on a lattice of L phase classes, the period among those that
// put them on the same lattice (L/k' readings for k' prime to L, each at least min_lag): the
// shortest whose folded readings are about as smooth in time as the smoothest's (the same
// match_rel/match_abs as the choice among candidates). Otherwise `lag`.
//
// Why: when the period is a whole number L of readings (or L/k), the readings fall on only L
// phases, and every L/k with k prime to L sorts them into the same classes, only in another order,
// so the fold mismatch scores them alike. Box averages alone do not settle it either: a waveform
// of period L/k whose 100 ms averages are exactly the readings always exists, though it may have
// to swing up and down within a window to cancel. So this is a choice of the plausible waveform,
// the one whose readings change least steeply in time: a dip in one reading of ten is a change
// over 100 ms at 1 s but over 33 ms at 1/3 s; the two halves of a 0.9 s iteration interleaved at
// 0.45 s change less from class to class, but over half the time. A square wave of 2.5 readings
// folds smoothly at 2.5 and jaggedly at 5, so the shorter period still wins where it is smoother.
//
// A lattice: some L = round(k·lag) over which the phases at lag and at L/k drift apart by less
// than one class spacing over the trace, so the two folds sort the readings into the same
// classes; and, as for the suffix estimates, a trace of at least repeat_min_periods of L readings
// (with two or three readings a class, some order of the classes is smooth by chance).
double ResolveLattice(const std::vector<double>& x, double var, double lag, double min_lag, double max_lag,
                      const GpoeoPeriodOptions& o) {
  const double n = static_cast<double>(x.size());
  for (size_t k = 1;; ++k) {
    const double L = std::round(static_cast<double>(k) * lag);
    if (L > max_lag || n < o.repeat_min_periods * L) return lag;
    if (L < 1 || n * std::abs(L - static_cast<double>(k) * lag) / lag >= 1) continue;
    const size_t classes = static_cast<size_t>(L);
    std::vector<std::pair<double, size_t>> rough;  // (roughness, k') for each period L/k'
    double best = std::numeric_limits<double>::infinity();
    for (size_t kk = 1; L / static_cast<double>(kk) >= min_lag; ++kk) {
      if (Gcd(kk, classes) != 1) continue;
      rough.push_back({LatticeRoughness(x, var, classes, kk), kk});
      best = std::min(best, rough.back().first);
    }
    size_t pick = 0;
    for (const auto& [r, kk] : rough)
      if (r <= best * (1 + o.match_rel) + o.match_abs) pick = std::max(pick, kk);
    // The lattice's period as refined (k·lag, not L: the true period need not be a whole number
    // of readings, only close enough to one that the phases do not cross over this trace).
    return pick ? static_cast<double>(k) * lag / static_cast<double>(pick) : lag;
  }
}

// TCompute with extra candidates (upstream passes the earlier suffix estimates). Candidates:
// GPOEO's spectral peaks (§2 Candidates 1) and the local minima of the mismatch at whole lags
// (which include the period's multiples, so a fundamental too weak in the spectrum is not lost),
// the best kMaxCandidates of them, each refined by folding. The shortest that matches about as
// well as the best and is a dip wins (GpoeoPeriodOptions::match_rel, min_dip). A candidate that
// puts the readings on a lattice of few phases is first replaced by the lattice's smoothest
// period (ResolveLattice), which the fold cannot tell from its fellows.
constexpr size_t kMaxCandidates = 12;
constexpr double kScreenPeriods = 8;
double Estimate(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o,
                const std::vector<double>& extra, double* score) {
  *score = -1;
  const size_t n = x.size();
  const double sd = Std(x.data(), n);
  const double var = sd * sd;
  if (n < 8 || var <= 0) return 0;
  const double span = static_cast<double>(n) * dt_s;
  // Lags the trace can test: at least min_period_samples, at most TUpBound and half the trace
  // (candidates over half the trace are invalid, §2 Scoring).
  const double min_lag = o.min_period_samples;
  const double max_lag = std::min(o.t_up_bound_s / dt_s, 0.5 * static_cast<double>(n - 1));
  if (max_lag < min_lag) return 0;
  const size_t max_whole = static_cast<size_t>(max_lag) + 1;
  std::vector<double> whole(max_whole + 1, 1.0);  // whole[L]: the mismatch at lag L
  for (size_t lag = 1; lag <= max_whole; ++lag) whole[lag] = WholeLagMismatch(x, var, lag);
  std::vector<std::pair<double, double>> ranked;  // (mismatch at the nearest whole lag, lag)
  auto add = [&](double lag) {
    if (lag < min_lag || lag > max_lag) return;
    ranked.push_back({whole[static_cast<size_t>(std::lround(lag))], lag});
  };
  for (size_t lag = 2; lag < max_whole; ++lag)
    if (whole[lag] < whole[lag - 1] && whole[lag] <= whole[lag + 1]) add(static_cast<double>(lag));
  // §2 Candidates 1: the spectrum's peaks; when the longest exceeds ⅔ of the trace, zero-pad and redo once.
  size_t ratio = 1;
  for (int pass = 0; pass < 2; ++pass) {
    const size_t nfft = ratio * n;
    const std::vector<double> mag = Spectrum(x, nfft);
    std::vector<size_t> peaks;
    for (size_t k = 1; k + 1 < mag.size(); ++k)
      if (mag[k] > mag[k - 1] && mag[k] >= mag[k + 1]) peaks.push_back(k);
    std::sort(peaks.begin(), peaks.end(), [&](size_t a, size_t b) { return mag[a] > mag[b]; });
    std::vector<double> spectral;
    double strongest = -1;
    for (size_t k : peaks) {
      const double t = static_cast<double>(nfft) * dt_s / static_cast<double>(k);
      if (t > o.t_up_bound_s) continue;
      if (strongest < 0) strongest = mag[k];
      if (mag[k] <= o.peak_ratio * strongest) continue;
      spectral.push_back(t);
      if (static_cast<int>(spectral.size()) >= o.max_candidates) break;
    }
    const double longest = spectral.empty() ? 0 : *std::max_element(spectral.begin(), spectral.end());
    if (pass == 0 && longest > 2.0 / 3.0 * span) {
      ratio = static_cast<size_t>(std::ceil(1.5 * o.t_up_bound_s / span));
      if (ratio > 1) continue;
    }
    for (double t : spectral) add(t / dt_s);
    break;
  }
  // The best kMaxCandidates of them by a first fold over kScreenPeriods periods (cheap: the
  // whole-lag mismatch itself ranks a period badly when it falls between two whole lags and its
  // features are narrower than a sample).
  for (auto& [d, lag] : ranked) {
    const size_t prefix = static_cast<size_t>(std::ceil(kScreenPeriods * lag)) + 1;
    lag = RefineFold(x, var, lag, AliasFreeHalf(lag, 1.0, min_lag), prefix);
    d = FoldMismatch(x, var, lag, prefix);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<double> cands;
  for (const auto& [d, lag] : ranked)
    if (cands.size() < kMaxCandidates) cands.push_back(lag);
  for (double t : extra)
    if (t / dt_s >= min_lag && t / dt_s <= max_lag) cands.push_back(t / dt_s);
  // §2 Candidates 3: after a clock change only candidates near the previous period stay, and
  // their refinement stays there too.
  double lo_lag = min_lag, hi_lag = max_lag;
  if (o.keep_max_s > 0 || (o.clock_change != 0 && o.previous_period_s > 0)) {
    const double lo =
        o.keep_max_s > 0 ? o.keep_min_s / dt_s : o.previous_period_s / dt_s * (o.clock_change < 0 ? 0.8 : 0.66);
    const double hi =
        o.keep_max_s > 0 ? o.keep_max_s / dt_s : o.previous_period_s / dt_s * (o.clock_change < 0 ? 1.5 : 1.25);
    std::vector<double> kept;
    for (double c : cands)
      if (c >= lo && c <= hi) kept.push_back(c);
    if (kept.empty())
      for (int i = 0; i < 4; ++i) kept.push_back(lo + (hi - lo) * i / 4);
    cands = kept;
    lo_lag = std::clamp(lo, min_lag, max_lag);
    hi_lag = std::clamp(hi, lo_lag, max_lag);
  }
  if (cands.empty()) return 0;
  // Each candidate refined (RefineCandidate).
  std::vector<double> lags, ds, dips;
  for (double c : cands) {
    const double refined = std::clamp(RefineCandidate(x, var, c, min_lag), lo_lag, hi_lag);
    // The lattice's smoothest period, unless it leaves the candidates' window (a clock cannot
    // produce it; the lattice's other periods fold the readings alike).
    const double resolved = ResolveLattice(x, var, refined, min_lag, max_lag, o);
    const double lag = resolved >= lo_lag && resolved <= hi_lag ? resolved : refined;
    const double d = FoldMismatch(x, var, lag, n);
    double above = 0;  // the largest mismatch at a shorter whole lag
    for (size_t l = 1; static_cast<double>(l) < lag && l <= max_whole; ++l) above = std::max(above, whole[l]);
    lags.push_back(lag);
    ds.push_back(d);
    dips.push_back(above - d);
  }
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < lags.size(); ++i)
    if (dips[i] >= o.min_dip) best = std::min(best, ds[i]);
  if (!std::isfinite(best)) return 0;  // nothing dips: a drift, a walk or noise
  size_t pick = lags.size();
  for (size_t i = 0; i < lags.size(); ++i)
    if (dips[i] >= o.min_dip && ds[i] <= best * (1 + o.match_rel) + o.match_abs &&
        (pick == lags.size() || lags[i] < lags[pick]))
      pick = i;
  *score = ds[pick];
  if (*score > o.max_mismatch) return 0;  // the best period does not repeat the signal
  return lags[pick] * dt_s;
}

// Whether x repeats itself at a period of t_s: its fold mismatch there is under `share`, over at
// least 3 periods. A small ripple that recurs every period is structure, not a level signal:
// NVML-like readings (A100 power one 25 ms window per 100 ms, utilisation over 1/6 s, an NCCL
// kernel that waits counting as busy) flatten a training iteration to a few percent.
bool Repeats(const std::vector<double>& x, double dt_s, double t_s, double share) {
  if (t_s <= 0 || static_cast<double>(x.size()) * dt_s < 3 * t_s) return false;
  const double sd = Std(x.data(), x.size());
  return sd > 0 && FoldMismatch(x, sd * sd, t_s / dt_s, x.size()) < share;
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
  // The repetition is looked for over the span upstream judges flatness on (the last 4 windows of
  // 8 s, or all of a shorter trace), not over 4 windows shrunk to the period: at a period of a few
  // readings those are 8-12 readings, too few to fold, and a 0.25 s iteration whose ripple is
  // under the 4 % bound (a 10 ms all-reduce dip) was called flat.
  const size_t span = std::min(x.size(), static_cast<size_t>(o.flat_windows * o.flat_window_s / dt_s));
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

double GpoeoMismatch(const std::vector<double>& x, double dt_s, double t_s) {
  if (x.empty() || dt_s <= 0) return 1;
  const double sd = Std(x.data(), x.size());
  return FoldMismatch(x, sd * sd, t_s / dt_s, x.size());
}

GpoeoPeriod GpoeoDetectPeriod(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o) {
  GpoeoPeriod r;
  if (x.size() < 8) {
    r.reason = "fewer than 8 samples";
    return r;
  }
  const double duration = static_cast<double>(x.size() - 1) * dt_s;
  const bool long_enough = duration >= o.aperiodic_trace_bounds * o.t_up_bound_s;
  const double level = std::abs(Mean(x.data(), x.size()));
  if (level > 0 && Std(x.data(), x.size()) < o.min_ripple * level) {
    r.verdict = GpoeoVerdict::kFlat;
    r.reason = "the signal is level: its ripple is under 1 % of its mean";
    return r;
  }
  double score = -1;
  const double t0 = Estimate(x, dt_s, o, {}, &score);
  if (Flat(x, dt_s, t0, o)) {
    r.verdict = GpoeoVerdict::kFlat;
    r.reason = "the signal is level: no period";
    return r;
  }
  if (t0 <= 0) {
    r.verdict = long_enough ? GpoeoVerdict::kAperiodic : GpoeoVerdict::kUnstable;
    r.reason = "nothing repeats";
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
    double t = Estimate(suffix, dt_s, o, r.estimates_s, &s);
    if (t <= 0) break;
    // EMO: the suffix agrees with the whole trace when the whole trace's period, refined on the
    // suffix, folds it about as well as the suffix's own choice does (the same match_rel/match_abs
    // as the choice among candidates). A shorter trace separates a period from its multiples and
    // aliases less sharply (a few phases per period on 100 ms readings), so its own shortest
    // "about as good" candidate can be a multiple or an alias of the period (1/3 of a 1 s period
    // with a dip in one reading of ten) that the suffix does not contradict; only a suffix that
    // the whole trace's period fails to fold is evidence of another period (a phase change).
    const double sd = Std(suffix.data(), suffix.size());
    if (sd > 0 && s >= 0) {
      const double lag = RefineCandidate(suffix, sd * sd, t0 / dt_s, o.min_period_samples);
      const double d = FoldMismatch(suffix, sd * sd, lag, suffix.size());
      if (d <= s * (1 + o.match_rel) + o.match_abs) t = lag * dt_s, s = d;
    }
    r.estimates_s.push_back(t);
    scores.push_back(s < 0 ? kInvalid : s);
  }
  // EMO: samples dt apart of a period t between one and two samples are those of the mirrored
  // waveform at its alias 1/(1/dt − 1/t) above two (and readings that average each interval
  // weigh the two nearly alike near two readings), so there the suffixes can each take either
  // member of the pair. Each estimate is read as the member above two readings, the one reported;
  // the controller's probes tell which the iteration is (gpoeo.cc).
  for (double& t : r.estimates_s)
    if (t > dt_s && t < 2 * dt_s) t = 1 / (1 / dt_s - 1 / t);
  // EMO: each estimate at the best-scored one's scale. An estimate a whole number of times that
  // one, or a whole fraction of it (up to kMaxMultiple times, within kMultipleSlack), is the same
  // periodic signal: every multiple of a period folds the readings too, and on readings whose
  // phases fall on a lattice (a period of L/k readings) the suffixes can each take another of its
  // periods (an A100 pipeline of 0.475 s, 19 readings per 4 iterations: the whole trace took
  // 0.95 s, its shorter suffixes 0.475 s, and the disagreement read as no period). The spread is
  // that of the estimates so scaled.
  const size_t best = static_cast<size_t>(std::min_element(scores.begin(), scores.end()) - scores.begin());
  const double at = r.estimates_s[best];
  std::vector<double> scaled;
  double fraction = 1;  // the shortest estimate's, as a whole fraction of the best-scored one
  for (double t : r.estimates_s) {
    const double ratio = t > at ? t / at : at / t, m = std::round(ratio);
    const bool whole = m >= 2 && m <= kMaxMultiple && std::abs(ratio - m) <= kMultipleSlack * m;
    scaled.push_back(!whole ? t : t > at ? t / m : t * m);
    if (whole && t < at) fraction = std::max(fraction, m);
  }
  const auto [lo, hi] = std::minmax_element(scaled.begin(), scaled.end());
  r.spread = (*hi - *lo) / Mean(scaled.data(), scaled.size());
  // T: the mean of the estimates near the best-scored one; or that over the shortest estimate's
  // fraction, where the whole trace folds about as well there (the same match_rel/match_abs as
  // the choice among candidates): the period folds the readings at least as well as its
  // multiples (FoldMismatch). A fraction that only resembles it can pass too: a 0.90 s A100
  // pipeline's last suffix read a quarter of it, which folded the whole trace about as well, and
  // its period was reported at that quarter's alias (docs/gpoeo.md; the clock held was the same).
  double sum = 0, count = 0;
  for (double t : scaled)
    if (std::abs(t - at) <= o.stable_spread * at) {
      sum += t;
      count += 1;
    }
  r.period_s = sum / count;
  if (fraction > 1) {
    const double sd = Std(x.data(), x.size()), var = sd * sd;
    const double whole_lag = r.period_s / dt_s, lag = whole_lag / fraction;
    auto fold = [&](double c) {
      return FoldMismatch(x, var, RefineCandidate(x, var, c, o.min_period_samples), x.size());
    };
    if (fold(lag) <= fold(whole_lag) * (1 + o.match_rel) + o.match_abs) {
      r.multiple_s = r.period_s;
      r.period_s /= fraction;
    }
  }
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

namespace {

// A series' value at t, linearly interpolated between its updates (t within them).
double ValueAt(const GpoeoSeries& s, double t) {
  const size_t j = static_cast<size_t>(std::upper_bound(s.t_s.begin(), s.t_s.end(), t) - s.t_s.begin());
  if (j == 0) return s.v.front();
  if (j >= s.t_s.size()) return s.v.back();
  const double w = (t - s.t_s[j - 1]) / (s.t_s[j] - s.t_s[j - 1]);
  return s.v[j - 1] + w * (s.v[j] - s.v[j - 1]);
}

}  // namespace

GpoeoUniform GpoeoUniformSignal(const std::vector<GpoeoSeries>& series, bool cumulative) {
  GpoeoUniform u;
  if (series.empty()) return u;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (const GpoeoSeries& s : series) {
    if (s.t_s.size() < 3) return u;
    lo = std::max(lo, s.t_s.front());
    hi = std::min(hi, s.t_s.back());
  }
  const std::vector<double>& t0 = series[0].t_s;
  std::vector<double> gaps;
  for (size_t i = 0; i + 1 < t0.size(); ++i) gaps.push_back(t0[i + 1] - t0[i]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  const double dt = gaps[gaps.size() / 2];
  if (dt <= 0) return u;
  const double start = *std::lower_bound(t0.begin(), t0.end(), lo - 1e-12);  // series 0's first update in range
  const int ends = cumulative ? 1 : 0;                                       // a cumulative value spans [t_k, t_k+1]
  for (int k = 0; start + (k + ends) * dt <= hi + 1e-9 * dt; ++k) {
    double sum = 0;
    for (const GpoeoSeries& s : series)
      sum += cumulative ? (ValueAt(s, start + (k + 1) * dt) - ValueAt(s, start + k * dt)) / dt
                        : ValueAt(s, start + k * dt);
    u.x.push_back(sum);
  }
  u.dt_s = dt;
  u.t0_s = start;
  return u;
}

double GpoeoPairMismatch(const std::vector<GpoeoSeries>& series, double period_s, double tol_s, double max_lag_s) {
  double total = 0;
  int counted = 0;
  for (const GpoeoSeries& s : series) {
    const size_t n = s.v.size();
    if (n < 8 || period_s <= 0) continue;
    const double sd = Std(s.v.data(), n);
    if (sd <= 1e-9 * std::max(1.0, std::abs(Mean(s.v.data(), n)))) continue;
    double d = 0;
    int pairs = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n && s.t_s[j] - s.t_s[i] <= max_lag_s; ++j) {
        const double lag = s.t_s[j] - s.t_s[i];
        if (lag < period_s - tol_s || std::abs(lag - period_s * std::round(lag / period_s)) > tol_s) continue;
        d += (s.v[j] - s.v[i]) * (s.v[j] - s.v[i]);
        ++pairs;
      }
    if (pairs < 20) continue;
    total += d / pairs / (2 * sd * sd);
    ++counted;
  }
  return counted > 0 ? total / counted : 1;
}

GpoeoSeries GpoeoOnGrid(const GpoeoSeries& s, double* step_s) {
  if (step_s) *step_s = 0;
  const size_t n = s.t_s.size();
  if (n < 3) return s;
  std::vector<double> gaps;
  for (size_t i = 0; i + 1 < n; ++i) gaps.push_back(s.t_s[i + 1] - s.t_s[i]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  const double median = gaps[gaps.size() / 2];
  if (median <= 0) return s;
  std::vector<double> k(n, 0);  // grid steps since the first update
  for (size_t i = 1; i < n; ++i) k[i] = k[i - 1] + std::max(1.0, std::round((s.t_s[i] - s.t_s[i - 1]) / median));
  const double mk = Mean(k.data(), n), mt = Mean(s.t_s.data(), n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) sxy += (k[i] - mk) * (s.t_s[i] - mt), sxx += (k[i] - mk) * (k[i] - mk);
  const double step = sxy / sxx;
  GpoeoSeries out = s;
  for (size_t i = 0; i < n; ++i) out.t_s[i] = mt + step * (k[i] - mk);
  if (step_s) *step_s = step;
  return out;
}

namespace {

// The vote goes to the alias's iteration where the utilisation matches there with a mismatch under
// this, and under this share of the readings' period's (docs/gpoeo.md: on the shipped
// models' held-out jobs, the ones read directly matched 1.25 times worse or more at the partner).
constexpr double kVote = 0.7;
constexpr double kVoteMaxLagS = 10;  // the longest distance between two updates compared
constexpr double kVoteTolS = 0.005;  // how far from a multiple of a period two updates compared may be

}  // namespace

GpoeoVote GpoeoUtilisationVote(const std::vector<GpoeoSeries>& util, double period_s, double update_s) {
  GpoeoVote vote;
  if (update_s <= 0 || period_s <= 2 * update_s) return vote;
  std::vector<GpoeoSeries> on_grid;
  double grid_s = 0;  // the coarsest grid's step
  for (const GpoeoSeries& s : util) {
    double step = 0;
    on_grid.push_back(GpoeoOnGrid(s, &step));
    grid_s = std::max(grid_s, step);
  }
  vote.readings_s = period_s;
  vote.iteration_s = 1 / (1 / update_s - 1 / period_s);
  // A reading that averages over more than an iteration mostly averages it away, and a grid
  // coarser than a period fits it by coincidences (GpoeoPairMismatch).
  if (grid_s <= 0 || vote.iteration_s <= grid_s) return vote;
  vote.mismatch = GpoeoPairMismatch(on_grid, vote.iteration_s, kVoteTolS, kVoteMaxLagS);
  vote.readings_mismatch = GpoeoPairMismatch(on_grid, period_s, kVoteTolS, kVoteMaxLagS);
  vote.voted = vote.mismatch < kVote && vote.mismatch < kVote * vote.readings_mismatch;
  return vote;
}

}  // namespace emo
