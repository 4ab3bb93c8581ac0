// gpoeo_period_test.cc — GPOEO's period detection (../shared/reference/GPOEO.md §2) on readings
// as the A100 gives them through NVML: synthetic power waveforms (square waves, multi-phase
// iterations, a strong harmonic, pipeline micro-batches, spikes narrower than a sample) over
// 0.25-3 s periods, turned into the energy counter's 100 ms updates and the power reading's 25 ms
// windows, with noise; aperiodic, flat and short inputs; and the simulator's readings while it runs
// the shipped workloads, against their true iteration times.
#include "online/gpoeo_period.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/workload.h"

namespace emo {
namespace {

constexpr double kSensorS = 0.1;    // the A100's sensor updates every 100 ms (energy counter and power)
constexpr double kWindowS = 0.025;  // its power reading averages the last 25 ms of each period
constexpr double kStepS = 0.001;    // the synthetic waveform's integration step

using Shape = std::function<double(double)>;  // power (W) at a phase in [0, 1) of the iteration

// One GPU's energy counter as NVML gives it: the exact integral of the power, updated every
// 100 ms from a random phase; the waveform repeats every period_s, with Gaussian noise of sd
// `noise` W on each 1 ms step's power. Returns the counter's updates.
GpoeoSeries EnergyCounter(double period_s, double duration_s, double noise, const Shape& shape, unsigned seed,
                          GpoeoSeries* power_reading = nullptr) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, noise);
  std::uniform_real_distribution<double> phase(0, 1);
  const double offset = phase(rng) * period_s, first = phase(rng) * kSensorS;
  GpoeoSeries s;
  double energy = 0, window = 0, next = first;
  for (double t = 0; t < duration_s; t += kStepS) {
    const double p = shape(std::fmod(t + offset, period_s) / period_s) + normal(rng);
    energy += p * kStepS;
    if (t >= next - kWindowS) window += p * kStepS;
    if (t + kStepS >= next) {
      s.t_s.push_back(next);
      s.v.push_back(energy);
      if (power_reading) power_reading->t_s.push_back(next), power_reading->v.push_back(window / kWindowS);
      window = 0;
      next += kSensorS;
    }
  }
  return s;
}

// GPOEO's detection on the counter's mean power per update (GpoeoUniformSignal).
GpoeoPeriod DetectOnCounter(const GpoeoSeries& counter) {
  const GpoeoUniform u = GpoeoUniformSignal({counter}, true);
  EXPECT_NEAR(u.dt_s, kSensorS, 1e-6);
  return GpoeoDetectPeriod(u.x, u.dt_s);
}

double Square(double phase) { return phase < 0.5 ? 300 : 150; }
// A training iteration: forward, backward (the hungriest), optimizer step, data loading.
double Iteration(double phase) { return phase < 0.3 ? 250 : phase < 0.75 ? 330 : phase < 0.85 ? 180 : 110; }
// Data-parallel training: full power but for a gradient all-reduce of 4 % of the iteration, under
// a 100 ms reading for most periods.
double AllReduceDip(double phase) { return phase < 0.96 ? 330 : 150; }
// A pipeline stage: 8 micro-batches (forward, backward) after a bubble, then the optimizer: the
// micro-batches' rhythm dominates the spectrum, the iteration is the period.
double Pipeline(double phase) {
  if (phase < 0.15) return 120;  // the bubble
  if (phase > 0.92) return 200;  // the optimizer step
  const double mb = std::fmod((phase - 0.15) / 0.77 * 8, 1.0);
  return mb < 0.35 ? 260 : 340;
}

const double kPeriods[] = {0.25, 0.31, 0.5, 0.77, 1.0, 1.37, 2.2, 3.0};

// Enough trace for GPOEO's stability rule (5.3 periods, suffix estimates over 2.8 periods) and at
// least 10 s, as the controller's detection would have by then.
double Duration(double period_s) { return std::max(12 * period_s, 10.0); }

// The suffix estimates, for failure messages.
std::string Estimates(const GpoeoPeriod& p) {
  std::string s = "estimates";
  for (double t : p.estimates_s) s += " " + std::to_string(t);
  return s;
}

void ExpectPeriod(const Shape& shape, double noise, const char* what, unsigned seed) {
  for (double period : kPeriods) {
    const GpoeoPeriod p = DetectOnCounter(EnergyCounter(period, Duration(period), noise, shape, seed));
    EXPECT_TRUE(p.periodic()) << what << " T=" << period << ": " << GpoeoVerdictName(p.verdict) << ", " << p.reason
                              << " (found " << p.period_s << "; " << Estimates(p) << ")";
    EXPECT_NEAR(p.period_s / period, 1, 0.02) << what << " T=" << period;
  }
}

TEST(GpoeoPeriod, SquareWavesOnTheEnergyCounter) { ExpectPeriod(Square, 20, "square", 1); }
TEST(GpoeoPeriod, MultiPhaseIterationsOnTheEnergyCounter) { ExpectPeriod(Iteration, 30, "iteration", 2); }
// The dip is 10-120 ms wide: under a sample for most periods, so the period falls between whole
// lags and only folding the samples by phase lines the dips up.
// Where the period is a whole number of readings (0.5, 1, 2.2, 3 s), the readings fall on few
// phases and T/k (k prime to the readings per period) sorts them into the same classes: only how
// steeply the folded 100 ms averages change in time tells T from T/3 (issue 12).
TEST(GpoeoPeriod, DipsNarrowerThanASample) { ExpectPeriod(AllReduceDip, 20, "dip", 3); }

// A 10-12 ms dip in a 0.25-0.31 s iteration: a ripple of 3 % of the level, under upstream's 4 %
// flatness bound, yet it repeats every period over the whole trace, so it is not flat. (Judged on
// 4 periods, 10-12 readings, the repetition was missed and the signal called flat.) Also covered
// by DipsNarrowerThanASample; kept apart since it fails for its own reason.
TEST(GpoeoPeriod, DipsOnShortPeriodsAreNotFlat) {
  for (double period : {0.25, 0.31}) {
    const GpoeoPeriod p = DetectOnCounter(EnergyCounter(period, Duration(period), 20, AllReduceDip, 3));
    EXPECT_TRUE(p.periodic()) << period << ": " << GpoeoVerdictName(p.verdict) << ", " << p.reason;
    EXPECT_NEAR(p.period_s / period, 1, 0.02) << period << ": " << Estimates(p);
  }
}

// The micro-batches' rhythm is the spectrum's strongest peak; the iteration is still the period,
// not a multiple and not the rhythm.
TEST(GpoeoPeriod, PipelineMicroBatchesDoNotHideTheIteration) {
  for (double period : {1.6, 2.47, 3.0}) {
    const GpoeoPeriod p = DetectOnCounter(EnergyCounter(period, Duration(period), 20, Pipeline, 4));
    EXPECT_TRUE(p.periodic()) << period << ": " << p.reason;
    EXPECT_NEAR(p.period_s / period, 1, 0.02) << period << ": " << Estimates(p);
  }
}

// Two halves that differ only in their second halves (two micro-batches, the second followed by the
// optimizer): the harmonic at 2/T is the strongest, yet T/2 is not the period.
// At 0.9 s (9 readings) T/2 shares T's phases, and its fold interleaves the halves' readings half a
// reading apart: they change less from class to class than at T, but over half the time.
TEST(GpoeoPeriod, StrongHarmonicIsNotThePeriod) {
  auto shape = [](double ph) {
    const double half = ph < 0.5 ? ph * 2 : ph * 2 - 1;
    if (half < 0.45) return 350.0;
    return ph < 0.5 ? 150.0 : 230.0;
  };
  for (double period : {0.9, 1.2, 2.5}) {
    const GpoeoPeriod p = DetectOnCounter(EnergyCounter(period, Duration(period), 10, shape, 5));
    EXPECT_TRUE(p.periodic()) << period << ": " << p.reason;
    EXPECT_NEAR(p.period_s / period, 1, 0.02) << period << ": " << Estimates(p);
  }
}

// The A100's power reading (25 ms of every 100 ms) also carries the period, less cleanly: the
// back end's fallback when it offers no energy counter.
TEST(GpoeoPeriod, PowerReadingsAsTheFallback) {
  for (double period : {0.5, 0.77, 1.37}) {
    GpoeoSeries power;
    EnergyCounter(period, Duration(period), 10, Iteration, 6, &power);
    const GpoeoUniform u = GpoeoUniformSignal({power}, false);
    const GpoeoPeriod p = GpoeoDetectPeriod(u.x, u.dt_s);
    EXPECT_TRUE(p.periodic()) << period << ": " << p.reason;
    EXPECT_NEAR(p.period_s / period, 1, 0.02) << period << ": " << Estimates(p);
  }
}

// Two GPUs read at their own phases: summed on GPU 0's grid.
TEST(GpoeoPeriod, TwoGpusSummed) {
  const double period = 0.83;
  const GpoeoSeries a = EnergyCounter(period, 15, 20, Iteration, 7), b = EnergyCounter(period, 15, 20, Iteration, 8);
  const GpoeoUniform u = GpoeoUniformSignal({a, b}, true);
  ASSERT_GT(u.x.size(), 140u);
  EXPECT_NEAR(u.x[u.x.size() / 2], 2 * 245, 60);  // about twice one GPU's mean power
  const GpoeoPeriod p = GpoeoDetectPeriod(u.x, u.dt_s);
  EXPECT_TRUE(p.periodic()) << p.reason;
  EXPECT_NEAR(p.period_s / period, 1, 0.02);
}

// Under two updates per period (Nyquist) the period cannot be told from its aliases: a 100 ms
// period reads level on a 100 ms counter, and nothing under 0.2 s is reported.
TEST(GpoeoPeriod, PeriodsUnderTwoUpdatesAreNotReported) {
  const GpoeoPeriod p = DetectOnCounter(EnergyCounter(0.1, 20, 5, Square, 9));
  EXPECT_FALSE(p.periodic()) << p.period_s;
  for (double period : {0.13, 0.17}) {
    const GpoeoPeriod q = DetectOnCounter(EnergyCounter(period, 20, 5, Square, 10));
    EXPECT_TRUE(!q.periodic() || q.period_s >= 2 * kSensorS) << period << ": " << q.period_s;
  }
}

// A utilisation reading as NVML gives it: every update_s (1/6 s on an A100), the share of the last
// update_s that a kernel ran (whole percent), for a job busy but for the last fifth of each
// iteration; seen by a poll every 20 ms, so each update is timed at the first poll after it.
GpoeoSeries Utilisation(double period_s, double update_s, double duration_s, double poll_s) {
  GpoeoSeries s;
  for (double next = 0.0371 + update_s; next < duration_s; next += update_s) {
    double busy = 0;
    for (double t = next - update_s; t < next; t += kStepS)
      busy += std::fmod(t, period_s) < 0.8 * period_s ? kStepS : 0;
    s.t_s.push_back(poll_s > 0 ? std::ceil(next / poll_s) * poll_s : next);
    s.v.push_back(std::round(100 * busy / update_s));
  }
  return s;
}

// A poll sees an update up to a poll late, and none of one whose value did not change: the grid
// comes back from the polled times.
TEST(GpoeoPeriod, UpdatesBackOnTheirGrid) {
  const GpoeoSeries polled = Utilisation(0.1938, 1.0 / 6, 25, 0.02);
  GpoeoSeries seen;  // every 7th update unchanged, so unseen
  for (size_t i = 0; i < polled.t_s.size(); ++i)
    if (i % 7 != 3) seen.t_s.push_back(polled.t_s[i]), seen.v.push_back(polled.v[i]);
  double step = 0;
  const GpoeoSeries grid = GpoeoOnGrid(seen, &step);
  EXPECT_NEAR(step, 1.0 / 6, 1e-4);
  for (size_t i = 1; i < grid.t_s.size(); ++i) {
    const double steps = (grid.t_s[i] - grid.t_s[0]) / (1.0 / 6);
    EXPECT_NEAR(steps, std::round(steps), 0.01) << i;
  }
  EXPECT_EQ(GpoeoOnGrid(GpoeoSeries{{1.0, 2.0}, {3.0, 4.0}}, &step).t_s, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(step, 0);
}

// On the energy counter's 100 ms grid an iteration under two updates and its alias over two give
// mirror-image readings, which match alike at whole periods. The utilisation, updated every 1/6 s,
// matches at the iteration and not at the alias, even timed by 20 ms polls (put back on their
// grid); and for an iteration over two updates, at it and not at its partner under two.
TEST(GpoeoPeriod, UtilisationOnItsOwnGridTellsAnIterationFromItsAlias) {
  auto alias = [](double t) { return 1 / (1 / kSensorS - 1 / t); };
  auto mismatch = [](const GpoeoSeries& s, double t) { return GpoeoPairMismatch({s}, t, 0.005, 10); };
  const double under = 0.1938, over = 0.227;  // alias(under) = 0.2066 s, alias(over) = 0.1786 s
  const GpoeoSeries same_grid = Utilisation(under, kSensorS, 25, 0);
  EXPECT_LT(mismatch(same_grid, under), 0.3);
  EXPECT_LT(mismatch(same_grid, alias(under)), 0.3);
  const GpoeoSeries own_grid = GpoeoOnGrid(Utilisation(under, 1.0 / 6, 25, 0.02));
  EXPECT_LT(mismatch(own_grid, under), 0.3);
  EXPECT_GT(mismatch(own_grid, alias(under)), 2 * mismatch(own_grid, under));
  const GpoeoSeries direct = GpoeoOnGrid(Utilisation(over, 1.0 / 6, 25, 0.02));
  EXPECT_LT(mismatch(direct, over), 0.3);
  EXPECT_GT(mismatch(direct, alias(over)), 2 * mismatch(direct, over));
  // A series too short, or level, says nothing.
  EXPECT_EQ(mismatch(Utilisation(under, 1.0 / 6, 1, 0.02), under), 1);
  EXPECT_EQ(mismatch(GpoeoSeries{std::vector<double>(40, 0.0), std::vector<double>(40, 100.0)}, under), 1);
}

// The vote on two GPUs' utilisation (1/6 s): for the iteration under two updates behind its alias,
// and none for an iteration the readings show directly.
TEST(GpoeoPeriod, UtilisationVotesForTheIterationBehindAnAlias) {
  auto alias = [](double t) { return 1 / (1 / kSensorS - 1 / t); };
  auto two_gpus = [](double t) {
    return std::vector<GpoeoSeries>{Utilisation(t, 1.0 / 6, 25, 0.02), Utilisation(t, 1.0 / 6, 25.05, 0.02)};
  };
  const GpoeoVote under = GpoeoUtilisationVote(two_gpus(0.1938), alias(0.1938), kSensorS);
  EXPECT_TRUE(under.voted);
  EXPECT_NEAR(under.iteration_s, 0.1938, 1e-9);
  EXPECT_LT(under.mismatch, 0.7 * under.readings_mismatch);
  EXPECT_FALSE(GpoeoUtilisationVote(two_gpus(0.227), 0.227, kSensorS).voted);
  EXPECT_FALSE(GpoeoUtilisationVote(two_gpus(0.5), 0.5, kSensorS).voted);
  EXPECT_FALSE(GpoeoUtilisationVote(two_gpus(0.19), 0.19, kSensorS).voted);  // under two updates: no partner
}

// A 1 s grid meets a 2.502 s iteration every 5 s (two iterations) and 10 s, multiples of 5/42 s
// too, which then fits as well: no period shorter than the grid's step is weighed (the RTX 3080
// Ti's utilisation grid; a version that weighed fractions of the readings' period read a held-out
// pipeline of its shipped models as 0.119 s), and an alias's partner under it gets no vote.
TEST(GpoeoPeriod, ACoarseGridFitsPeriodsShorterThanItsStepByCoincidence) {
  const GpoeoSeries coarse = GpoeoOnGrid(Utilisation(2.502, 1.0, 60, 0.02));
  EXPECT_LT(GpoeoPairMismatch({coarse}, 2.502, 0.005, 10), 0.2);
  EXPECT_LT(GpoeoPairMismatch({coarse}, 5.0 / 42, 0.005, 10), 0.2);
  EXPECT_GT(GpoeoPairMismatch({coarse}, 2.3, 0.005, 10), 0.5);  // a period it does not fit
  EXPECT_FALSE(GpoeoUtilisationVote({Utilisation(0.1938, 1.0, 60, 0.02)}, 0.2066, kSensorS).voted);
}

// Just over two readings a period t and its alias 1/(1/dt − 1/t), just under two, give the same
// readings (of the waveform and of its mirror image), so the suffixes' estimates fall on either
// side; read as the member above two readings they agree. Before, 0.205-0.215 s came out as the
// alias (61 of 90 draws periodic at a wrong period) and 0.22 s as no period (0 of 30 found). Now
// none is wrong and 20-30 of 30 are found per period; the rest stay undecided (a multiple of the
// period on some suffixes), which the controller waits out. Three shapes, ten draws each.
TEST(GpoeoPeriod, PeriodsJustOverTwoUpdates) {
  for (double period : {0.2, 0.205, 0.21, 0.215, 0.22, 0.225}) {
    int found = 0;
    for (unsigned seed = 1; seed <= 10; ++seed)
      for (unsigned shape = 0; shape < 3; ++shape) {
        const Shape sh = shape == 0 ? Shape(Square) : shape == 1 ? Shape(Iteration) : Shape(AllReduceDip);
        const GpoeoPeriod p = DetectOnCounter(EnergyCounter(period, Duration(period), 20, sh, seed * 7 + shape));
        if (!p.periodic()) continue;
        ++found;
        EXPECT_NEAR(p.period_s / period, 1, 0.02) << "T=" << period << " shape " << shape << " seed " << seed;
      }
    EXPECT_GE(found, 20) << "T=" << period;
  }
}

std::vector<double> Noise(double duration_s, double dt_s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(250, 30);
  std::vector<double> x;
  for (double t = 0; t < duration_s; t += dt_s) x.push_back(normal(rng));
  return x;
}

TEST(GpoeoPeriod, AperiodicInputs) {
  const double dt = kSensorS, duration = 50;  // ≥ 3·TUpBound (15 s): long enough to decide
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0, 5);
  std::vector<double> ramp, step, walk;
  double w = 250;
  for (double t = 0; t < duration; t += dt) {
    ramp.push_back(150 + 4 * t + normal(rng));
    step.push_back((t < 0.4 * duration ? 180 : 320) + normal(rng));
    w += 4 * normal(rng);
    walk.push_back(w);
  }
  for (unsigned seed : {1u, 2u, 3u}) {
    const GpoeoPeriod p = GpoeoDetectPeriod(Noise(duration, dt, seed), dt);
    EXPECT_EQ(p.verdict, GpoeoVerdict::kAperiodic) << "noise " << seed << ": " << p.reason << " " << p.period_s;
  }
  for (const auto* x : {&ramp, &step, &walk}) {
    const GpoeoPeriod p = GpoeoDetectPeriod(*x, dt);
    EXPECT_FALSE(p.periodic()) << GpoeoVerdictName(p.verdict) << " " << p.period_s << " spread " << p.spread;
  }
  // Bursts at random intervals (requests served as they come) on the energy counter.
  std::mt19937 r2(11);
  std::exponential_distribution<double> gap(1 / 0.4);
  std::vector<double> bursts;
  for (double t = 0, next = 0; t < duration; t += kStepS) {
    if (t >= next) next = t + gap(r2);
    bursts.push_back(next - t < 0.15 ? 300 : 120);
  }
  std::vector<double> boxed;
  for (size_t i = 0; i + 100 <= bursts.size(); i += 100) {
    double s = 0;
    for (size_t j = i; j < i + 100; ++j) s += bursts[j];
    boxed.push_back(s / 100);
  }
  const GpoeoPeriod b = GpoeoDetectPeriod(boxed, dt);
  EXPECT_FALSE(b.periodic()) << b.period_s << " spread " << b.spread;
}

TEST(GpoeoPeriod, FlatAndShortTraces) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0, 2);
  std::vector<double> flat;
  for (double t = 0; t < 40; t += kSensorS) flat.push_back(300 + normal(rng));
  EXPECT_EQ(GpoeoDetectPeriod(flat, kSensorS).verdict, GpoeoVerdict::kFlat);
  // Noise over less than 3·TUpBound: GPOEO would measure on.
  EXPECT_EQ(GpoeoDetectPeriod(Noise(20, kSensorS, 4), kSensorS).verdict, GpoeoVerdict::kUnstable);
  // Three periods: not yet the 5.3 GPOEO wants.
  const GpoeoPeriod p = DetectOnCounter(EnergyCounter(2, 6, 5, Square, 12));
  EXPECT_FALSE(p.periodic());
  EXPECT_EQ(GpoeoDetectPeriod(std::vector<double>(5, 1.0), kSensorS).verdict, GpoeoVerdict::kUnstable);
}

TEST(GpoeoPeriod, ClockChangeKeepsCandidatesNearThePreviousPeriod) {
  const double period = 0.6;
  const GpoeoUniform u = GpoeoUniformSignal({EnergyCounter(period, 10, 10, Iteration, 13)}, true);
  GpoeoPeriodOptions o;
  o.clock_change = -1;  // lowered: [0.8, 1.5]·Tp
  o.previous_period_s = 0.55;
  double score = 0;
  EXPECT_NEAR(GpoeoEstimate(u.x, u.dt_s, o, &score) / period, 1, 0.02);
  EXPECT_GE(score, 0);
}

// The fold mismatch is ~0 at the period and its multiples, ~1 or more elsewhere.
TEST(GpoeoPeriod, FoldMismatch) {
  const GpoeoUniform u = GpoeoUniformSignal({EnergyCounter(0.77, 20, 5, Iteration, 14)}, true);
  EXPECT_LT(GpoeoMismatch(u.x, u.dt_s, 0.77), 0.05);
  EXPECT_LT(GpoeoMismatch(u.x, u.dt_s, 1.54), 0.1);
  EXPECT_GT(GpoeoMismatch(u.x, u.dt_s, 0.6), 0.5);
  EXPECT_GT(GpoeoMismatch(u.x, u.dt_s, 0.385), 0.5);
}

// Every GPU's energy counter polled every 20 ms, as the controller reads it, with the device's
// NVML semantics (updates every 100 ms at a random phase per GPU), from the second iteration on
// (the first is start-up); the signal is their summed mean power per update (GpoeoUniformSignal).
// The truth is the mean iteration time after the first, from the engine's ProfilerStep boundaries.
struct SimRun {
  GpoeoUniform signal;
  double true_period_s = 0;
};

void RunWorkload(const std::string& name, int iterations, SimRun* out) {
  const char* dir = std::getenv("EMO_WORKLOADS");
  ASSERT_NE(dir, nullptr) << "EMO_WORKLOADS not set";
  sim::Program program;
  std::string err;
  ASSERT_TRUE(sim::LoadWorkload(std::string(dir) + "/" + name, &program, &err)) << err;
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.record_trace = false;
  sim::Engine e(program, eo);
  sim::SimGpuControl gpus(&e);
  std::vector<GpoeoSeries> counters;
  std::vector<double> last;
  e.Every(20, [&](double now) {
    if (e.iteration_starts().size() < 2) return;
    counters.resize(static_cast<size_t>(gpus.Count()));
    last.resize(counters.size(), -1);
    for (size_t g = 0; g < counters.size(); ++g) {
      const double j = gpus.EnergyJ(static_cast<int>(g)).value();
      if (last[g] >= 0 && j != last[g]) counters[g].t_s.push_back(now * 1e-9), counters[g].v.push_back(j);
      last[g] = j;
    }
  });
  ASSERT_TRUE(e.Run(&err)) << err;
  const std::vector<double>& starts = e.iteration_starts();
  ASSERT_GE(starts.size(), 3u);
  out->signal = GpoeoUniformSignal(counters, true);
  out->true_period_s = (e.end_ns() - starts[1]) / static_cast<double>(starts.size() - 1) * 1e-9;
}

void Report(const char* name, const GpoeoPeriod& p, double truth) {
  std::printf("gpoeo period %s: detected %.4f s (%s, score %.3f, spread %.3f, %zu estimates), true %.4f s (%+.2f %%)\n",
              name, p.period_s, GpoeoVerdictName(p.verdict), p.score, p.spread, p.estimates_s.size(), truth,
              100 * (p.period_s / truth - 1));
}

// The shipped training workloads with iterations of 0.2-4 s (and iterations for about 25 s): the
// detected period within 2 % of the truth. TP-2 GPT-3 6.7B (0.50 s), DP-2 GPT-3 1.3B (0.76 s,
// an all-reduce dip narrower than a reading), PP-4 and PP-8 Qwen2 7B (2.47 s and 1.61 s, the
// micro-batches' rhythm stronger than the iteration), TP-8 GPT-3 6.7B and the RTX 3080 Ti's
// TP-2 Llama2 0.5B.
TEST(GpoeoPeriod, FindsTheIterationTimeInSimulation) {
  for (const auto& [name, iterations] :
       {std::pair{"tp2-gpt3-6.7b-a100.json", 50}, std::pair{"dp2-gpt3-1.3b-a100.json", 33},
        std::pair{"pp4-qwen2-7b-uniform-a100.json", 11}, std::pair{"pp8-qwen2-7b-uniform-a100.json", 16},
        std::pair{"tp8-gpt3-6.7b-a100.json", 48}, std::pair{"tp2-llama2-0.5b-3080ti.json", 75}}) {
    SimRun run;
    RunWorkload(name, iterations, &run);
    if (HasFatalFailure()) return;
    const GpoeoPeriod p = GpoeoDetectPeriod(run.signal.x, run.signal.dt_s);
    Report(name, p, run.true_period_s);
    EXPECT_GT(p.period_s, 0) << name << ": " << p.reason;
    EXPECT_NEAR(p.period_s / run.true_period_s, 1, 0.02) << name;
  }
}

// Offloaded DeepSeek-V2-Lite: 17 ms decode steps, six to a reading: the counter's mean power is
// level to 0.3 %, and what ripple there is beats with the 100 ms updates into an alias that is no
// iteration. Not periodic, over 10 s and 40 s.
TEST(GpoeoPeriod, OffloadedDecodingIsNotPeriodic) {
  SimRun run;
  RunWorkload("offload-deepseek-v2-lite-a100.json", 2400, &run);
  if (HasFatalFailure()) return;
  ASSERT_LT(run.true_period_s, 0.020);
  for (double seconds : {10.0, 40.0}) {
    const size_t n = std::min(run.signal.x.size(), static_cast<size_t>(seconds / run.signal.dt_s));
    const GpoeoPeriod p = GpoeoDetectPeriod(
        std::vector<double>(run.signal.x.begin(), run.signal.x.begin() + static_cast<long>(n)), run.signal.dt_s);
    Report("offload-deepseek-v2-lite-a100.json", p, run.true_period_s);
    EXPECT_FALSE(p.periodic()) << seconds << " s: " << p.period_s;
  }
}

}  // namespace
}  // namespace emo
