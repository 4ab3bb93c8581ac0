// gpoeo_period_test.cc — GPOEO's period detection (../shared/reference/GPOEO.md §2) on synthetic
// traces: square waves and multi-phase iterations with noise over 50 ms-5 s periods sampled every
// 10-50 ms, a strong harmonic that is not the period, and aperiodic, flat and short inputs; and on
// the simulator's power and utilisation while it runs shipped training workloads.
#include "online/gpoeo_period.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/workload.h"

namespace emo {
namespace {

// Samples `shape(phase in [0, 1))` every dt_s for duration_s, with Gaussian noise of sd `noise`.
std::vector<double> Sample(double period_s, double dt_s, double duration_s, double noise,
                           const std::function<double(double)>& shape, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, noise);
  std::vector<double> x;
  for (size_t i = 0; static_cast<double>(i) * dt_s < duration_s; ++i) {
    const double t = static_cast<double>(i) * dt_s + 0.37 * period_s;  // not in phase with the samples
    x.push_back(shape(std::fmod(t, period_s) / period_s) + normal(rng));
  }
  return x;
}

double Square(double phase) { return phase < 0.5 ? 300 : 150; }
// A training iteration: forward, backward (the hungriest), optimizer step, data loading.
double Iteration(double phase) { return phase < 0.3 ? 250 : phase < 0.75 ? 330 : phase < 0.85 ? 180 : 110; }

struct Case {
  double period_s, dt_s;
};
const Case kCases[] = {{0.05, 0.01}, {0.08, 0.01}, {0.123, 0.01}, {0.2, 0.02}, {0.37, 0.02}, {0.5, 0.02},
                       {0.9, 0.05},  {1.37, 0.05}, {2.2, 0.05},   {3.5, 0.05}, {5.0, 0.05}};

// Enough trace for GPOEO's stability rule: repeat estimates need 2.8·T left, and 5.3 periods in all.
double Duration(const Case& c) { return std::max(12 * c.period_s, 200 * c.dt_s); }

void ExpectPeriod(const std::vector<double>& x, const Case& c, const char* what) {
  const GpoeoPeriod p = GpoeoDetectPeriod(x, c.dt_s);
  EXPECT_TRUE(p.periodic()) << what << " T=" << c.period_s << ": " << GpoeoVerdictName(p.verdict) << ", " << p.reason;
  EXPECT_NEAR(p.period_s / c.period_s, 1, 0.02)
      << what << " T=" << c.period_s << " dt=" << c.dt_s << " found " << p.period_s;
  EXPECT_LT(p.spread, 0.15) << what << " T=" << c.period_s;
}

TEST(GpoeoPeriod, SquareWaves) {
  for (const Case& c : kCases) ExpectPeriod(Sample(c.period_s, c.dt_s, Duration(c), 6, Square), c, "square");
}

TEST(GpoeoPeriod, MultiPhaseIterations) {
  for (const Case& c : kCases) ExpectPeriod(Sample(c.period_s, c.dt_s, Duration(c), 8, Iteration, 2), c, "iteration");
}

// GPOEO's signal from power and utilisation: utilisation dips in the optimizer step and data loading.
TEST(GpoeoPeriod, PowerAndUtilisationSignal) {
  const Case c = {0.74, 0.02};
  const std::vector<double> power = Sample(c.period_s, c.dt_s, Duration(c), 6, Iteration, 3);
  const std::vector<double> util = Sample(
      c.period_s, c.dt_s, Duration(c), 3, [](double ph) { return ph < 0.75 ? 98 : 40; }, 4);
  const std::vector<double> mem = Sample(
      c.period_s, c.dt_s, Duration(c), 3, [](double ph) { return ph < 0.3    ? 30
                                                                 : ph < 0.75 ? 55
                                                                             : 10; }, 5);
  const std::vector<double> s = GpoeoSignal(power, 400, util, mem);
  ASSERT_EQ(s.size(), power.size());
  ExpectPeriod(s, c, "signal");
}

// Two half-iterations that differ only in their second halves (say, two micro-batches, the second
// followed by the optimizer): the spectrum's strongest peak is at 2/T, yet T/2 is not the period;
// the score tells them apart as long as the fundamental passes GPOEO's 0.6 peak ratio (§2).
std::vector<double> TwoHalves(double period_s, double dt_s, double second_low) {
  auto shape = [second_low](double ph) {
    const double half = ph < 0.5 ? ph * 2 : ph * 2 - 1;
    if (half < 0.45) return 350.0;
    return ph < 0.5 ? 150.0 : second_low;
  };
  return Sample(period_s, dt_s, 12 * period_s, 5, shape);
}

double Dft(const std::vector<double>& x, double dt_s, double f) {
  std::complex<double> s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * std::polar(1.0, -2 * M_PI * f * static_cast<double>(i) * dt_s);
  return std::abs(s);
}

TEST(GpoeoPeriod, StrongHarmonicIsNotThePeriod) {
  const Case c = {1.2, 0.02};
  const std::vector<double> x = TwoHalves(c.period_s, c.dt_s, 280);
  const double ratio = Dft(x, c.dt_s, 1 / c.period_s) / Dft(x, c.dt_s, 2 / c.period_s);
  ASSERT_GT(ratio, 0.6);  // the premise: the harmonic at 2/T is the strongest peak, the fundamental
  ASSERT_LT(ratio, 0.8);  // a candidate still
  ExpectPeriod(x, c, "harmonic");
}

// GPOEO's limit, kept: a fundamental under 0.6 of the strongest peak is no candidate, and the
// harmonic's period, which does repeat to within the plateau tolerance, is taken.
TEST(GpoeoPeriod, WeakFundamentalYieldsTheHarmonic) {
  const std::vector<double> x = TwoHalves(1.2, 0.02, 200);
  ASSERT_LT(Dft(x, 0.02, 1 / 1.2) / Dft(x, 0.02, 2 / 1.2), 0.3);
  const GpoeoPeriod p = GpoeoDetectPeriod(x, 0.02);
  EXPECT_NEAR(p.period_s, 0.6, 0.012);
}

// Harmonics of a square wave (3/T, 5/T) and the FFT's coarse bins at long periods: still T.
TEST(GpoeoPeriod, LongPeriodNeedsRefinement) {
  const Case c = {4.3, 0.1};  // GPOEO's own 100 ms sampling
  ExpectPeriod(Sample(c.period_s, c.dt_s, 60, 4, Iteration), c, "long");
}

std::vector<double> Noise(double duration_s, double dt_s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(250, 30);
  std::vector<double> x;
  for (double t = 0; t < duration_s; t += dt_s) x.push_back(normal(rng));
  return x;
}

TEST(GpoeoPeriod, AperiodicInputs) {
  const double dt = 0.05, duration = 50;  // ≥ 3·TUpBound (15 s): long enough to decide
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
    EXPECT_FALSE(p.periodic()) << "noise " << seed << ": " << p.period_s << " spread " << p.spread;
    EXPECT_EQ(p.verdict, GpoeoVerdict::kAperiodic) << "noise " << seed << ": " << p.reason;
  }
  for (const auto* x : {&ramp, &step, &walk}) {
    const GpoeoPeriod p = GpoeoDetectPeriod(*x, dt);
    EXPECT_FALSE(p.periodic()) << GpoeoVerdictName(p.verdict) << " " << p.period_s << " spread " << p.spread;
    EXPECT_TRUE(p.verdict == GpoeoVerdict::kAperiodic || p.verdict == GpoeoVerdict::kFlat) << p.reason;
  }
}

TEST(GpoeoPeriod, FlatAndShortTraces) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0, 2);
  std::vector<double> flat;
  for (double t = 0; t < 40; t += 0.1) flat.push_back(300 + normal(rng));
  EXPECT_EQ(GpoeoDetectPeriod(flat, 0.1).verdict, GpoeoVerdict::kFlat);
  // Noise over less than 3·TUpBound: GPOEO would measure on.
  EXPECT_EQ(GpoeoDetectPeriod(Noise(20, 0.05, 4), 0.05).verdict, GpoeoVerdict::kUnstable);
  // Three periods: not yet the 5.3 GPOEO wants.
  const GpoeoPeriod p = GpoeoDetectPeriod(Sample(2, 0.05, 6, 5, Square), 0.05);
  EXPECT_FALSE(p.periodic());
  EXPECT_EQ(GpoeoDetectPeriod(std::vector<double>(5, 1.0), 0.1).verdict, GpoeoVerdict::kUnstable);
}

TEST(GpoeoPeriod, ClockChangeKeepsCandidatesNearThePreviousPeriod) {
  const Case c = {0.6, 0.02};
  const std::vector<double> x = Sample(c.period_s, c.dt_s, Duration(c), 5, Iteration);
  GpoeoPeriodOptions o;
  o.clock_change = -1;  // lowered: [0.8, 1.5]·Tp
  o.previous_period_s = 0.55;
  double score = 0;
  EXPECT_NEAR(GpoeoEstimate(x, c.dt_s, o, &score) / c.period_s, 1, 0.02);
  EXPECT_GE(score, 0);
}

// GPU 0's power, utilisation and memory utilisation read every 20 ms while a shipped workload runs,
// made into GPOEO's signal; the samples of the first iteration (start-up) are left out. The truth
// is the mean iteration time after it, from the engine's ProfilerStep boundaries.
struct SimRun {
  std::vector<double> signal;
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
  // Readings updated every 25 ms from the whole period, as the simulator gave them before it
  // followed NVML per device: these tests are of the detector on a well-sampled signal. Under the
  // A100's NVML semantics (power one 25 ms window per 100 ms, utilisation per 1/6 s) the DP-2
  // detection finds twice the period, and PP-4 finds 0.40 s (issue 8's telemetry change).
  eo.telemetry_period_ms = 25;
  sim::Engine e(program, eo);
  sim::SimGpuControl gpus(&e);
  std::vector<double> t, power, util, mem;
  e.Every(20, [&](double now) {
    t.push_back(now);
    power.push_back(gpus.PowerW(0).value());
    util.push_back(100 * gpus.Utilization(0).value());
    mem.push_back(100 * gpus.MemoryUtilization(0).value());
  });
  ASSERT_TRUE(e.Run(&err)) << err;
  const std::vector<double>& starts = e.iteration_starts();
  ASSERT_GE(starts.size(), 3u);
  size_t first = 0;
  while (first < t.size() && t[first] < starts[1]) ++first;
  auto tail = [first](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + static_cast<long>(first), v.end());
  };
  out->signal = GpoeoSignal(tail(power), gpus.PowerLimitW(0).value(), tail(util), tail(mem));
  out->true_period_s = (e.end_ns() - starts[1]) / static_cast<double>(starts.size() - 1) * 1e-9;
}

void Report(const char* name, const GpoeoPeriod& p, double truth) {
  std::printf("gpoeo period %s: detected %.4f s (%s, score %.2f, spread %.3f, %zu estimates), true %.4f s (%+.2f %%)\n",
              name, p.period_s, GpoeoVerdictName(p.verdict), p.score, p.spread, p.estimates_s.size(), truth,
              100 * (p.period_s / truth - 1));
}

// TP-2 GPT-3 6.7B (0.50 s iterations, 16 of them) and DP-2 GPT-3 1.3B (0.77 s, 14): found within 2 %.
TEST(GpoeoPeriod, FindsTheIterationTimeInSimulation) {
  for (const auto& [name, iterations] :
       {std::pair{"tp2-gpt3-6.7b-a100.json", 16}, std::pair{"dp2-gpt3-1.3b-a100.json", 14}}) {
    SimRun run;
    RunWorkload(name, iterations, &run);
    if (HasFatalFailure()) return;
    const GpoeoPeriod p = GpoeoDetectPeriod(run.signal, 0.020);
    Report(name, p, run.true_period_s);
    EXPECT_TRUE(p.periodic()) << name << ": " << p.reason;
    EXPECT_NEAR(p.period_s / run.true_period_s, 1, 0.02) << name;
  }
}

// GPOEO's limits on the other two shipped workloads, recorded rather than tuned away.
// PP-4 Qwen2 7B (2.5 s iterations of ~0.13 s micro-batches): on stage 0 the micro-batch peak
// dominates the spectrum and the iteration's fundamental is under 0.6 of it, so it is no candidate
// (§2 Candidates 1) and a sub-multiple wins; yet the true period scores best of all.
TEST(GpoeoPeriod, PipelineMicroBatchesHideTheIteration) {
  SimRun run;
  RunWorkload("pp4-qwen2-7b-uniform-a100.json", 12, &run);
  if (HasFatalFailure()) return;
  const GpoeoPeriod p = GpoeoDetectPeriod(run.signal, 0.020);
  Report("pp4-qwen2-7b-uniform-a100.json", p, run.true_period_s);
  EXPECT_LT(p.period_s, 0.5 * run.true_period_s);
  EXPECT_LT(GpoeoScore(run.signal, 0.020, run.true_period_s), GpoeoScore(run.signal, 0.020, p.period_s));
}

// Offloaded DeepSeek-V2-Lite: 17 ms iterations, shorter than the 20 ms sampling interval and the
// ~25 ms over which the device averages power: the samples are level, no period can be seen.
TEST(GpoeoPeriod, IterationsShorterThanTheSamplingIntervalLookFlat) {
  SimRun run;
  RunWorkload("offload-deepseek-v2-lite-a100.json", 300, &run);
  if (HasFatalFailure()) return;
  ASSERT_LT(run.true_period_s, 0.020);
  const GpoeoPeriod p = GpoeoDetectPeriod(run.signal, 0.020);
  Report("offload-deepseek-v2-lite-a100.json", p, run.true_period_s);
  EXPECT_FALSE(p.periodic());
}

}  // namespace
}  // namespace emo
