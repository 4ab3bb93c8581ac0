// sim_adapt_test.cc — EMO's online loop on the simulated device, against a job whose work changes
// mid-run (workloads/tp2-gpt3-1.3b-batch2-then-8-a100.json: micro-batch 2 for 100 iterations, then
// 8): it plans for the first phase, sees the change within a few iterations, plans again for the
// second, and there keeps within its budget while saving energy against the default clocks of the
// same seed. A job without a change is planned once and never sent back.
#include "cli/sim_adapt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apply/measurement.h"
#include "cli/model_pipeline.h"
#include "sim/workload.h"

namespace emo {
namespace {

constexpr int kPhaseStart = 100;  // the spec's first phase length

struct Outcome {
  std::vector<AdaptivePlayer::Plan> plans;
  std::vector<std::string> lines;
  Measurement m;  // from iteration `from` to the end
};

// Runs `program` for `iterations` on seed 3, with the online loop at `budget` (< 0: default
// clocks), measured from iteration `from`.
Outcome Simulate(const sim::Program& program, int iterations, double budget, int from) {
  Outcome out;
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = 3;
  eo.record_trace = budget >= 0;
  sim::Engine engine(program, eo);
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  DeviceProfile profile;
  std::string err;
  EXPECT_TRUE(FindProfile("", program.device, &profile, &err)) << err;
  AdaptiveOptions ao;
  ao.budget = budget;
  SearchOptions so;
  so.budget = budget;
  so.max_candidates = 6;  // half the clocks `emo sim --adapt` searches: the loop is under test, at half the cost
  SimAdaptive adapt(&engine, program, &gpus, profile, ao, so, 5, 11,
                    [&](const std::string& line) { out.lines.push_back(line); });
  if (budget >= 0) adapt.AddTo(&host);
  Meter meter(&gpus, from);
  host.Add(&meter);
  EXPECT_TRUE(engine.Run(&err)) << err;
  adapt.player().Finish();
  EXPECT_EQ(adapt.player().error(), "");
  EXPECT_TRUE(meter.Close(engine.end_ns(), &out.m, &err)) << err;
  out.plans = adapt.player().plans();
  return out;
}

sim::Program Load(const std::string& name) {
  sim::Program p;
  std::string err;
  EXPECT_TRUE(sim::LoadWorkload(std::string(EMO_WORKLOADS_DIR) + "/" + name, &p, &err)) << err;
  return p;
}

TEST(SimAdapt, ReplansAfterAPhaseChangeAndKeepsTheBudgetThere) {
  const sim::Program program = Load("tp2-gpt3-1.3b-batch2-then-8-a100.json");
  ASSERT_EQ(program.phase_starts, (std::vector<int32_t>{kPhaseStart}));
  constexpr int kIterations = 200, kFrom = 160;  // the second plan is made by ~125, checked by ~150
  const double budget = 0.05;
  const Outcome adapted = Simulate(program, kIterations, budget, kFrom);
  const Outcome base = Simulate(program, kIterations, -1, kFrom);
  for (const std::string& line : adapted.lines) std::printf("%s\n", line.c_str());
  ASSERT_EQ(adapted.plans.size(), 2u);
  const AdaptivePlayer::Plan &a = adapted.plans[0], &b = adapted.plans[1];
  EXPECT_TRUE(a.ok) << a.error;
  EXPECT_TRUE(b.ok) << b.error;
  EXPECT_LT(a.window.first + a.window.iterations, kPhaseStart);
  // Seen within a few iterations of the change (the streak of 3, and the iteration that ends the third).
  EXPECT_GE(a.drift_at, kPhaseStart + 1);
  EXPECT_LE(a.drift_at, kPhaseStart + AdaptiveOptions().streak + 1);
  EXPECT_GT(b.window.first, kPhaseStart);
  EXPECT_LT(b.planned_at, kFrom);
  EXPECT_EQ(b.drift_at, -1);
  EXPECT_EQ(b.guard_tripped_at, -1);
  // In the second phase, under the second plan, against the default clocks on the same seed.
  const double slowdown = adapted.m.iteration_ms() / base.m.iteration_ms() - 1;
  const double saving = 1 - adapted.m.iteration_energy_j() / base.m.iteration_energy_j();
  std::printf("second phase: %.2f %% slower, %.2f %% less energy\n", slowdown * 100, saving * 100);
  EXPECT_LE(slowdown, budget + 0.005);
  EXPECT_GT(saving, 0.02);
}

TEST(SimAdapt, AJobThatDoesNotChangeIsPlannedOnce) {
  const sim::Program program = Load("tp2-gpt3-1.3b-batch2-then-8-a100.json");
  sim::Program steady = program;  // the first phase alone
  steady.phase_starts.clear();
  for (sim::RankProgram& r : steady.ranks)
    for (sim::Thread& t : r.threads) t.phase_code.clear();
  const Outcome adapted = Simulate(steady, 150, 0.05, 100);
  ASSERT_EQ(adapted.plans.size(), 1u);
  EXPECT_TRUE(adapted.plans[0].ok) << adapted.plans[0].error;
  EXPECT_EQ(adapted.plans[0].drift_at, -1);
  EXPECT_EQ(adapted.plans[0].guard_tripped_at, -1);
}

}  // namespace
}  // namespace emo
