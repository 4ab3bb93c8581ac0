// gpoeo_period.h — GPOEO's online detection of the training-iteration period from sampled telemetry
// (Wang et al., TPDS 2022): FFT candidates, a plateau-matching score, a local grid refinement, and
// repeated estimates on suffixes that decide periodic, aperiodic or flat. The first part of GPOEO;
// its models and search build on it. Spec: ../shared/reference/GPOEO.md §1-2.
#pragma once

#include <string>
#include <vector>

namespace emo {

// GPOEO samples power and utilisation every 100 ms (GPOEO.md §1).
constexpr double kGpoeoSampleMs = 100;

struct GpoeoPeriodOptions {
  double t_up_bound_s = 15;  // TUpBound, the longest period considered (§1: initially 15 s)
  double peak_ratio = 0.6;   // keep spectral peaks above this share of the strongest (§2 Candidates 1)
  int max_candidates = 6;    // (§2 Candidates 1)
  // Candidates shorter than this many sample intervals are replaced by approximate common multiples
  // (§2 Candidates 2). GPOEO's bound is 0.4 s at its 100 ms sampling, i.e. 4 samples; kept as a
  // count of samples so that finer sampling resolves shorter periods.
  double short_period_samples = 4;
  double lcm_tolerance = 0.10;  // a multiple fits a short candidate to within 10 % (§2 Candidates 2)
  // After a clock change (§2 Candidates 3): -1 lowered, +1 raised; only candidates in [0.8, 1.5]·Tp
  // (lowered) or [0.66, 1.25]·Tp (raised) of the previous period Tp stay. 0: no filter.
  int clock_change = 0;
  double previous_period_s = 0;
  int refine_rounds = 3;  // (§2 Refinement)
  int refine_steps = 10;
  double refine_half_width_bins = 0.7;  // ±0.7·(fs/2)/N in frequency
  double refine_min_half_width = 0.15;  // at least ±15 % of T
  double repeat_min_periods = 2.8;      // suffix estimates while ≥ 2.8·T remains (§2 Stability)
  double stable_periods = 5.3;          // periods recorded before a result is stable
  double stable_spread = 0.15;          // "normal" mode; 0.10 strict, 0.30 relaxed
  double aperiodic_spread = 0.30;       // at a trace of 3·TUpBound
  double aperiodic_trace_bounds = 3;    // that trace, in TUpBounds
  // Flat, no period: over the last 4 windows of 8 s (§2 Stability).
  double flat_window_s = 8;
  int flat_windows = 4;
  double flat_mean_diff = 0.04, flat_std = 0.04, flat_max_dev = 0.20;
  // EMO: a signal that repeats at the estimated period (mean squared difference one period apart
  // under this share of that of unrelated samples) is not flat, however small its ripple.
  double flat_repeat_share = 0.25;
};

enum class GpoeoVerdict {
  kPeriodic,   // a stable period
  kAperiodic,  // the trace is long enough and the estimates disagree or exceed TUpBound
  kFlat,       // a level signal: nothing to find
  kUnstable,   // not decided yet: GPOEO measures on (period is the best guess so far, or 0)
};
const char* GpoeoVerdictName(GpoeoVerdict v);

struct GpoeoPeriod {
  GpoeoVerdict verdict = GpoeoVerdict::kUnstable;
  bool periodic() const { return verdict == GpoeoVerdict::kPeriodic; }
  double period_s = 0;
  double score = 0;   // GPOEO's plateau mismatch of the best estimate, % of the mean level (lower is better)
  double spread = 0;  // (max − min)/mean of the suffix estimates (lower is better)
  std::vector<double> estimates_s;  // one per suffix, longest trace first
  std::string reason;               // why not periodic, in words
};

// GPOEO's signal (§2): (p ± SMutil ± MEMutil)/3 with p = 100·P/PowerLimit and utilisations in %,
// each sign chosen to maximise the standard deviation. Empty utilisation vectors are left out
// (their term is 0). Vectors of equal length otherwise.
std::vector<double> GpoeoSignal(const std::vector<double>& power_w, double power_limit_w,
                                const std::vector<double>& sm_util_pct, const std::vector<double>& mem_util_pct);

// The plateau-matching score of period t_s on x (sampled every dt_s): cut into T-long windows,
// split the higher-variance window of each adjacent pair into plateaus, compare each plateau's offset
// from its window mean, in % of the mean level, weighted by plateau length. With t_ref_s ≥ 1.7·t_s
// the pair scores are grouped by ceil(t_ref/t) and each group's maximum averaged, so that a short
// candidate cannot win on the flat stretches of a long period. A huge value when T exceeds half the trace.
double GpoeoScore(const std::vector<double>& x, double dt_s, double t_s, double t_ref_s = -1);

// One estimate (GPOEO's TCompute): FFT candidates, scoring, refinement. 0 when the spectrum has no
// candidate. *score gets the winner's score.
double GpoeoEstimate(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o, double* score);

// The period of a trace sampled every dt_s (GPOEO's T_SpectrumAnalysis).
GpoeoPeriod GpoeoDetectPeriod(const std::vector<double>& x, double dt_s, const GpoeoPeriodOptions& o = {});

// A finer period than the spectrum gives, for measuring time ratios: the lag at which x best
// matches itself shifted by k periods, for k doubling from 1 to as many as the trace holds
// with one period of overlap left, each search within half a period of k·T, the last minimum
// interpolated between samples (a parabola through the mean squared differences). The error of a
// single estimate is about a sample interval; over k periods it is about dt/k. Returns period_s
// when the trace holds fewer than 3 periods.
double GpoeoRefinePeriod(const std::vector<double>& x, double dt_s, double period_s);

// One reading's updates: the times (s) at which it changed and its new values. NVML's readings are
// averages over windows that end at the sensor's updates (every 100 ms for power, 1/6 s for
// utilisation on an A100), so a trace polled faster holds each value for a whole update interval;
// the update instants are the signal's true sampling grid.
struct GpoeoSeries {
  std::vector<double> t_s, v;
};

// The period within ±rel_range of period_s at which the series best match themselves shifted by
// whole periods: each update against the series linearly interpolated k periods later, for every k
// the series holds, in squared differences over the series' variance, summed over the series that
// vary. Unlike lag matching on the polled trace (GpoeoRefinePeriod), each update counts once at its
// own time, so readings held for 100 ms or more between polls do not blur it, and a period that is
// a multiple of the update interval (the sensor then reads the same phases every iteration) still
// has its minimum at the truth. Returns period_s when no series has 8 updates and some variation.
double GpoeoFoldPeriod(const std::vector<GpoeoSeries>& series, double period_s, double rel_range);

}  // namespace emo
