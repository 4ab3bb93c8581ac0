// measure_test.cc — the simulator's measurements run their seeds on several threads: each seed's
// outcome must be the one its run gives alone, with an online method (GPOEO, whose period
// detection plans FFTs, whose planner is not thread-safe) running in every simulation at once:
// without the lock around the planner, 4 of 10 runs of this test crashed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cli/sim_pipeline.h"
#include "sim/workload.h"

namespace emo {
namespace {

TEST(Measure, SeedsOnThreadsGiveEachSeedsOwnRun) {
  sim::Program program;
  std::string err;
  ASSERT_TRUE(
      sim::LoadWorkload(std::string(std::getenv("EMO_WORKLOADS")) + "/tp2-llama2-0.5b-3080ti.json", &program, &err))
      << err;
  const std::vector<uint64_t> seeds = {1000, 1001, 1002, 1003};
  const int iterations = 4, warmup = 150;  // GPOEO detects the period and plans FFTs in the warm-up
  const std::string gpoeo = "gpoeo:slowdown=0.050";
  Defaults all;
  ASSERT_TRUE(MeasureDefaults(program, seeds, iterations, &all, &err)) << err;
  Outcome together;
  ASSERT_TRUE(MeasureOutcome(program, all, nullptr, gpoeo, warmup, &together, &err)) << err;
  ASSERT_EQ(together.slowdown.n, 4);
  // Seed by seed, alone: the same default run, and the same saving and slowdown.
  std::vector<double> slow, save;
  for (size_t i = 0; i < seeds.size(); ++i) {
    Defaults one;
    ASSERT_TRUE(MeasureDefaults(program, {seeds[i]}, iterations, &one, &err)) << err;
    EXPECT_EQ(one.runs[0].energy_j, all.runs[i].energy_j) << "seed " << seeds[i];
    EXPECT_EQ(one.runs[0].window_s, all.runs[i].window_s) << "seed " << seeds[i];
    Outcome o;
    ASSERT_TRUE(MeasureOutcome(program, one, nullptr, gpoeo, warmup, &o, &err)) << err;
    slow.push_back(o.slowdown.mean);
    save.push_back(o.saving.mean);
  }
  const Spread s = SpreadOf(slow), e = SpreadOf(save);
  EXPECT_EQ(s.mean, together.slowdown.mean);
  EXPECT_EQ(s.min, together.slowdown.min);
  EXPECT_EQ(s.max, together.slowdown.max);
  EXPECT_EQ(e.mean, together.saving.mean);
  EXPECT_EQ(e.min, together.saving.min);
  EXPECT_EQ(e.max, together.saving.max);
  // The seeds differ (else the comparison above shows nothing about which run went where).
  EXPECT_LT(s.min, s.max);
}

}  // namespace
}  // namespace emo
