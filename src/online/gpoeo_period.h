// gpoeo_period.h — GPOEO's online detection of the training-iteration period from sampled telemetry
// (Wang et al., TPDS 2022): FFT candidates, EMO's lag-mismatch choice among them and their multiples
// (the shortest period that explains the signal), and repeated estimates on suffixes that decide
// periodic, aperiodic or flat. The first part of GPOEO; its models and search build on it.
// Spec: ../shared/reference/GPOEO.md §1-2.
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
  // After a clock change (§2 Candidates 3): -1 lowered, +1 raised; only candidates in [0.8, 1.5]·Tp
  // (lowered) or [0.66, 1.25]·Tp (raised) of the previous period Tp stay. 0: no filter.
  int clock_change = 0;
  double previous_period_s = 0;
  // EMO: when keep_max_s > 0, only candidates in [keep_min_s, keep_max_s] stay instead (the
  // periods a probe's clock can produce; gpoeo.cc).
  double keep_min_s = 0, keep_max_s = 0;
  double repeat_min_periods = 2.8;    // suffix estimates while ≥ 2.8·T remains (§2 Stability)
  double stable_periods = 5.3;        // periods recorded before a result is stable
  double stable_spread = 0.15;        // "normal" mode; 0.10 strict, 0.30 relaxed
  double aperiodic_spread = 0.30;     // at a trace of 3·TUpBound
  double aperiodic_trace_bounds = 3;  // that trace, in TUpBounds
  // Flat, no period: over the last 4 windows of 8 s (§2 Stability).
  double flat_window_s = 8;
  int flat_windows = 4;
  double flat_mean_diff = 0.04, flat_std = 0.04, flat_max_dev = 0.20;
  // EMO: a signal that repeats at the estimated period (mean squared difference one period apart
  // under this share of that of unrelated samples) is not flat, however small its ripple.
  double flat_repeat_share = 0.25;
  // EMO's choice among the candidates, in place of upstream's plateau score and short-candidate
  // rule (GPOEO.md §2 Candidates 2, Scoring, Refinement), which take a harmonic or a multiple of
  // the period on NVML's box-averaged 100 ms readings. A candidate is scored by its lag mismatch:
  // the mean squared difference between the signal and itself one candidate later, over twice the
  // variance (0: repeats exactly; about 1: unrelated samples). Every period's multiples match as
  // well as the period itself, so the shortest candidate that matches about as well as the best
  // one is the period; a sub-multiple that only resembles it (a pipeline's micro-batches, two
  // halves of an iteration that differ) matches measurably worse.
  double match_rel = 0.25;    // "about as well": a mismatch at most best·(1 + match_rel) + match_abs
  double match_abs = 0.01;    // (the absolute part covers noise-free signals whose best is ~0)
  double max_mismatch = 0.3;  // a period's mismatch; above it the signal does not repeat: no period
  // A period must be a dip: some lag shorter than it mismatches by this much more than it does.
  // A drifting or random-walk signal matches itself best at the shortest lags and rises from
  // there, without a dip; a periodic one un-matches within the period and matches again at it.
  double min_dip = 0.25;
  // The shortest period, in sample intervals: a period under two samples cannot be told from its
  // aliases (Nyquist). On the A100's 100 ms updates: 0.2 s.
  double min_period_samples = 2;
  // EMO: a signal whose standard deviation is under this share of its mean is flat, whatever it
  // repeats at. Iterations far shorter than the readings' 100 ms average out to such a ripple
  // (offloaded decoding: 17 ms steps, 0.3 %), which then beats with the update interval into an
  // alias period that is no iteration; and a per-period energy measured on so small a ripple could
  // not be told from the level. NVML specifies power to ±5 %, so 1 % is already below its accuracy.
  double min_ripple = 0.01;
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
  // Where period_s is a whole fraction of the period the best-scored estimate took, that period:
  // on readings whose phases fall on a lattice the two fold alike, and a probe at another clock,
  // off the lattice, tells which the iteration is (gpoeo.cc). 0 otherwise.
  double multiple_s = 0;
  double score = 0;   // the best estimate's lag mismatch (0 repeats exactly, ~1 unrelated; lower is better)
  double spread = 0;  // (max − min)/mean of the suffix estimates (lower is better)
  std::vector<double> estimates_s;  // one per suffix, longest trace first
  std::string reason;               // why not periodic, in words
};

// GPOEO's signal (§2): (p ± SMutil ± MEMutil)/3 with p = 100·P/PowerLimit and utilisations in %,
// each sign chosen to maximise the standard deviation. Empty utilisation vectors are left out
// (their term is 0). Vectors of equal length otherwise.
std::vector<double> GpoeoSignal(const std::vector<double>& power_w, double power_limit_w,
                                const std::vector<double>& sm_util_pct, const std::vector<double>& mem_util_pct);

// The fold mismatch of x (sampled every dt_s) at period t_s: the samples ordered by their phase
// within the period, the mean squared difference of neighbours in that order, over twice x's
// variance (0: x repeats at that period; about 1: unrelated samples). 1 when x is level.
double GpoeoMismatch(const std::vector<double>& x, double dt_s, double t_s);

// One estimate (GPOEO's TCompute): FFT candidates and EMO's lag-mismatch choice among them, their
// multiples and the lag mismatch's own minima, refined over many periods. Where a candidate puts
// the readings on only L phases (a period of L/k readings), the periods that share those phases
// are told apart by how steeply the folded 100 ms averages change in time. 0 when nothing repeats
// (no candidate with a dip and a mismatch under max_mismatch). *score gets the winner's mismatch.
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

// EMO: a uniformly sampled signal for GpoeoDetectPeriod from the readings' updates, one series
// per GPU, summed over the GPUs: on the grid of the first series' median update interval, aligned
// to its updates. `cumulative` series (the energy counter, J) give the mean power over each grid
// interval: NVML's counter integrates all of the power, so each value is a complete box average,
// where the A100's power reading covers 25 ms of every 100 ms and misses bursts by chance, and a
// trace polled faster than the updates holds each reading and repeats it. Other series (readings)
// give their value linearly interpolated at each grid point. The other GPUs, updated at their own
// phases, are interpolated between their updates. Empty when a series has fewer than 3 updates.
struct GpoeoUniform {
  std::vector<double> x;
  double dt_s = 0;  // the grid's interval
  double t0_s = 0;  // the time of x[0] (for cumulative series, the start of its interval)
};
GpoeoUniform GpoeoUniformSignal(const std::vector<GpoeoSeries>& series, bool cumulative);

// The period within ±rel_range of period_s at which the series best match themselves shifted by
// whole periods: each update against the series linearly interpolated k periods later, for every k
// the series holds, in squared differences over the series' variance, summed over the series that
// vary. Unlike lag matching on the polled trace (GpoeoRefinePeriod), each update counts once at its
// own time, so readings held for 100 ms or more between polls do not blur it, and a period that is
// a multiple of the update interval (the sensor then reads the same phases every iteration) still
// has its minimum at the truth. Returns period_s when no series has 8 updates and some variation.
double GpoeoFoldPeriod(const std::vector<GpoeoSeries>& series, double period_s, double rel_range);

// EMO: how badly readings' updates match each other a whole number of period_s apart: over the
// pairs of one series' updates at most max_lag_s apart whose distance is within tol_s of a
// multiple of period_s, the mean squared difference of their values over twice the series'
// variance (0: the series repeats at that period; about 1: it does not), averaged over the series
// that vary and have 20 such pairs; 1 when none has. A reading updated on a grid of its own
// (utilisation every 1/6 s on an A100, against the energy counter's 100 ms) tells apart periods
// that the other grid shows alike (an iteration under two of its updates and its alias, or
// multiples of either). Periods shorter than the grid's step it cannot judge: a coarse grid meets
// an iteration's multiples at distances that are multiples of many short periods too (a 1 s grid
// meets a 2.5 s iteration every 5 s, a multiple of 5/42 s).
double GpoeoPairMismatch(const std::vector<GpoeoSeries>& series, double period_s, double tol_s, double max_lag_s);

// EMO: a reading's updates with their times put back on the sensor's regular grid. A poll sees an
// update at the first poll after it, up to a poll interval late, and none of an update whose value
// did not change; the grid steps between updates are counted from the polled gaps (each the nearest
// whole number of the median gap) and the times fitted to a line over the steps (least squares).
// What is left is a constant lag, which a comparison of two updates does not see. *step_s (when
// given) gets the fitted update interval. Fewer than 3 updates: as given, *step_s 0.
GpoeoSeries GpoeoOnGrid(const GpoeoSeries& s, double* step_s = nullptr);

// EMO: the utilisation's vote on whether the readings' period period_s (over two updates of
// update_s) is the alias of an iteration under two, 1/(1/update_s − 1/period_s). Each GPU's
// utilisation updates are put back on their grid (GpoeoOnGrid) and matched at whole periods
// (GpoeoPairMismatch), at the readings' period and at its partner; the vote goes to the partner
// where it matches clearly better. Where the partner is no longer than the coarsest grid's step
// there is no vote. (Weighing whole fractions of the readings' period too, where the readings'
// lattice folds as well at a multiple, voted wrong on 7 of 192 held-out jobs: docs/gpoeo.md.)
struct GpoeoVote {
  bool voted = false;
  double readings_s = 0, iteration_s = 0;  // the readings' period, and the partner behind it
  double mismatch = 1, readings_mismatch = 1;
};
GpoeoVote GpoeoUtilisationVote(const std::vector<GpoeoSeries>& util, double period_s, double update_s);

}  // namespace emo
