// zeus_power_limit_test.cc — Zeus's power-limit optimizer: its step schedule, measurements and
// selectors against hand-computed values on a scripted GPU, and in simulation against an offline
// sweep of the same limits.
#include "online/zeus_power_limit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apply/measurement.h"
#include "fake_gpus.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/workload.h"

namespace emo {
namespace {

// Per GPU per step: limit → (energy J, time s).
const std::map<double, std::pair<double, double>> kSteps = {
    {200, {190, 1.00}}, {175, {170, 1.02}}, {150, {150, 1.08}}, {125, {135, 1.20}}, {100, {125, 1.45}}};

// Drives `steps` training steps, calling the optimizer at each step's beginning as Zeus's
// on_step_begin is called.
// The GPUs' energy per step and step time depend only on the power limit in force.
void Train(ZeusPowerLimitOptimizer* z, FakeGpus* gpus, int steps) {
  double now_ns = 0;
  for (int i = 1; i <= steps; ++i) {
    gpus->step = i;
    z->OnIterationStart(i - 1, now_ns);
    const auto& [joules, seconds] = kSteps.at(gpus->limit[0]);
    for (double& e : gpus->energy) e += joules;
    now_ns += seconds * 1e9;
  }
}

FakeGpus Gpus(int n, double min_w, double max_w) { return FakeGpus(n, "A100-SXM4-80GB", {1410}, min_w, max_w); }

// The limits sent to GPU 0, as (step, watts).
std::vector<std::pair<int, double>> Limits(const FakeGpus& gpus) {
  std::vector<std::pair<int, double>> out;
  for (const auto& c : gpus.Sent(FakeGpus::Command::kLimit, 0)) out.emplace_back(c.step, c.value);
  return out;
}

TEST(ZeusPowerLimit, ScheduleMeasurementsAndZeusCost) {
  FakeGpus gpus = Gpus(2, 100, 200);
  ZeusPowerLimitOptimizer z(&gpus, ZeusPowerLimitOptions{});
  EXPECT_EQ(z.candidates_w(), (std::vector<double>{200, 175, 150, 125, 100}));
  Train(&z, &gpus, 400);
  ASSERT_EQ(z.state(), ZeusPowerLimitOptimizer::State::kDone);
  // Step 0 is construction (the maximum); step 2 would set 200 W again, which Zeus skips. Each
  // limit then holds 50 steps (10 warm-up + 40 profiled): the next is set at steps 52, 102, ...
  EXPECT_EQ(Limits(gpus),
            (std::vector<std::pair<int, double>>{{0, 200}, {52, 175}, {102, 150}, {152, 125}, {202, 100}, {252, 150}}));
  // Each window: 40 steps, energy summed over both GPUs.
  ASSERT_EQ(z.measurements().size(), 5u);
  for (const auto& m : z.measurements()) {
    EXPECT_DOUBLE_EQ(m.energy_j, 40 * 2 * kSteps.at(m.limit_w).first) << m.limit_w;
    EXPECT_NEAR(m.time_s, 40 * kSteps.at(m.limit_w).second, 1e-9) << m.limit_w;
  }
  // ZeusCost(0.5) per step with P_max = 200 W × 2 GPUs: 0.5·E + 0.5·400·T =
  // 390, 374, 366, 375, 415 for 200..100 W: 150 W.
  EXPECT_EQ(z.optimum_w(), 150);
  z.Finish();
  EXPECT_EQ(Limits(gpus).back().second, 200);
  EXPECT_EQ(gpus.limit, (std::vector<double>{200, 200}));
  EXPECT_TRUE(z.error().empty());
}

double SelectWith(const std::string& spec) {
  ZeusPowerLimitOptions o;
  MethodOptions m;
  std::string err;
  EXPECT_TRUE(SplitMethodSpec(spec, &m, &err) && ParseZeusPowerLimitOptions(m, &o, &err)) << err;
  FakeGpus gpus = Gpus(2, 100, 200);
  ZeusPowerLimitOptimizer z(&gpus, o);
  Train(&z, &gpus, 5 * (o.warmup_steps + o.profile_steps) + o.wait_steps + 2);
  EXPECT_EQ(z.state(), ZeusPowerLimitOptimizer::State::kDone) << spec;
  return z.optimum_w();
}

TEST(ZeusPowerLimit, Selectors) {
  EXPECT_EQ(SelectWith("zeus-power-limit:selector=energy"), 100);  // 125 J is the least per GPU-step
  EXPECT_EQ(SelectWith("zeus-power-limit:selector=time"), 200);
  EXPECT_EQ(SelectWith("zeus-power-limit:max-slowdown=1.1"), 150);   // 1.08 ≤ 1.1 < 1.20
  EXPECT_EQ(SelectWith("zeus-power-limit:max-slowdown=1.25"), 125);  // 1.20 ≤ 1.25 < 1.45
  // η = 1 is pure energy, η = 0 pure time.
  EXPECT_EQ(SelectWith("zeus-power-limit:eta=1,warmup=1,profile=2"), 100);
  EXPECT_EQ(SelectWith("zeus-power-limit:eta=0,warmup=0,profile=1,wait=0"), 200);
}

TEST(ZeusPowerLimit, CandidatesStopAtTheMinimum) {
  FakeGpus gpus = Gpus(1, 110, 200);
  ZeusPowerLimitOptimizer z(&gpus, ZeusPowerLimitOptions{});
  EXPECT_EQ(z.candidates_w(), (std::vector<double>{200, 175, 150, 125}));
}

TEST(ZeusPowerLimit, RefusedCommandsAreReported) {
  FakeGpus gpus = Gpus(1, 100, 200);
  gpus.refuse = true;
  ZeusPowerLimitOptimizer z(&gpus, ZeusPowerLimitOptions{});
  EXPECT_EQ(z.error(), "no permission to change GPU 0");
}

bool Parse(const std::string& spec, std::string* err) {
  MethodOptions m;
  ZeusPowerLimitOptions o;
  return SplitMethodSpec(spec, &m, err) && ParseZeusPowerLimitOptions(m, &o, err);
}

TEST(ZeusPowerLimit, ParseErrorsNameThePart) {
  std::string err;
  EXPECT_TRUE(Parse("zeus-power-limit", &err));
  EXPECT_TRUE(Parse("zeus-power-limit:eta=0.25,warmup=0,profile=5,step-w=50,selector=energy", &err)) << err;
  EXPECT_FALSE(Parse("zeus-power-limit:eta=2", &err));
  EXPECT_EQ(err, "zeus-power-limit: eta=2: expected a number in [0, 1]");
  EXPECT_FALSE(Parse("zeus-power-limit:profile=0", &err));
  EXPECT_FALSE(Parse("zeus-power-limit:warmup=1.5", &err));
  EXPECT_EQ(err, "zeus-power-limit: warmup=1.5: expected a whole number in [0, 1e+06]");
  EXPECT_FALSE(Parse("zeus-power-limit:colour=red", &err));
  EXPECT_NE(err.find("unknown option 'colour'"), std::string::npos) << err;
  EXPECT_FALSE(Parse("zeus-power-limit:selector=fast", &err));
  EXPECT_FALSE(Parse("zeus-power-limit:eta=", &err));
  EXPECT_FALSE(Parse("zeus-power-limit:eta", &err));
  EXPECT_EQ(err, "zeus-power-limit: 'eta' is not key=value");
}

// In simulation, online profiling (noisy, counters updated every ~25 ms) must pick the limit an
// offline sweep of fixed limits finds best, or one whose offline cost is within 1 % of it.
TEST(ZeusPowerLimit, SimulatedChoiceMatchesAnOfflineSweep) {
  sim::Program program;
  std::string err;
  ASSERT_TRUE(sim::LoadWorkload(std::string(std::getenv("EMO_WORKLOADS")) + "/tp2-gpt3-6.7b-a100.json", &program, &err))
      << err;
  ZeusPowerLimitOptions o;
  o.warmup_steps = 2;
  o.profile_steps = 4;
  o.pl_step_w = 50;
  const int per_limit = o.warmup_steps + o.profile_steps;

  // Offline: every candidate limit held for a whole run; ZeusCost from the energy counters.
  std::map<double, double> offline;  // limit → cost per step
  double p_max = 0;
  for (double limit = 500; limit >= 100; limit -= o.pl_step_w) {
    sim::EngineOptions eo;
    eo.iterations = 6;
    eo.record_trace = false;
    sim::Engine e(program, eo);
    sim::SimGpuControl gpus(&e);
    sim::SimHost host(&e);
    for (int g = 0; g < gpus.Count(); ++g) ASSERT_TRUE(gpus.SetPowerLimit(g, limit, &err));
    Meter meter(&gpus, 1);
    host.Add(&meter);
    ASSERT_TRUE(e.Run(&err)) << err;
    Measurement m;
    ASSERT_TRUE(meter.Close(e.end_ns(), &m, &err)) << err;
    if (p_max == 0) p_max = limit * gpus.Count();
    offline[limit] = (0.5 * m.energy_j + 0.5 * p_max * m.window_s) / m.iterations;
  }
  double best = 500;
  for (const auto& [limit, cost] : offline)
    if (cost < offline[best]) best = limit;

  sim::EngineOptions eo;
  eo.iterations = 9 * per_limit + 4;
  eo.record_trace = false;
  sim::Engine e(program, eo);
  sim::SimGpuControl gpus(&e);
  sim::SimHost host(&e);
  ZeusPowerLimitOptimizer z(&gpus, o);
  host.Add(&z);
  ASSERT_TRUE(e.Run(&err)) << err;
  ASSERT_EQ(z.state(), ZeusPowerLimitOptimizer::State::kDone);
  EXPECT_TRUE(z.error().empty()) << z.error();
  EXPECT_EQ(gpus.PowerLimitW(0), std::optional<double>(z.optimum_w()));
  EXPECT_LE(offline[z.optimum_w()], 1.01 * offline[best])
      << "online " << z.optimum_w() << " W, offline " << best << " W";
  // The A100's GEMMs draw more than the lowest limits allow: those limits cost time, and the
  // optimum is neither the lowest limit nor, for η = 0.5, far from the offline one.
  EXPECT_GT(z.optimum_w(), 100);
}

}  // namespace
}  // namespace emo
