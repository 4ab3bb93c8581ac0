// search_test.cc — the dynamic program against exhaustive enumeration of every schedule on small
// instances (the exact optimum under the same model), its budget, and the policy it writes.
#include "search/dp_search.h"

#include <gtest/gtest.h>

#include <cmath>

#include "search_instances.h"

namespace emo {
namespace {

TEST(Search, WithinThreePercentOfTheExhaustiveOptimum) {
  for (double budget : {0.0, 0.05, 0.2, 0.5}) {
    SCOPED_TRACE(budget);
    TinyInstance inst;
    ASSERT_EQ(inst.err, "");
    double exact_end = 0;
    const double exact = Exhaustive(inst.pred, 10e6, budget, 0, &exact_end);
    SearchOptions o;
    o.budget = budget;
    o.grid_ms = 10;
    o.min_interval_ms = 0;
    o.dvfs_latency_ms = 0;
    o.dvfs_jitter_ms = 0;
    o.step_ms = 0.1;
    SearchResult r;
    std::string err;
    ASSERT_TRUE(Search(inst.pred, o, &r, &err)) << err;
    EXPECT_LE(r.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-6);
    EXPECT_GE(r.predicted.energy_j, exact - 1e-9);  // nothing beats the exact optimum
    EXPECT_LE(r.predicted.energy_j, exact * 1.03);
    // The schedule it returns predicts what it reports.
    const Predictor::Result again = inst.pred.Run(r.schedule);
    EXPECT_NEAR(again.energy_j, r.predicted.energy_j, 1e-9);
    if (budget >= 0.2) {
      EXPECT_LT(r.predicted.energy_j, inst.pred.base().energy_j * 0.95);
    }
  }
}

// With a budget of 0 the clock can drop only where it delays nothing.
TEST(Search, ZeroBudgetNeverSlowsThePrediction) {
  TinyInstance inst;
  SearchOptions o;
  o.budget = 0;
  o.grid_ms = 5;
  SearchResult r;
  std::string err;
  ASSERT_TRUE(Search(inst.pred, o, &r, &err)) << err;
  EXPECT_LE(r.predicted.end_ns, inst.pred.base().end_ns);
  EXPECT_LE(r.predicted.energy_j, inst.pred.base().energy_j);
}

// The latency's spread is taken at its worse end: a schedule searched with jitter, replayed with
// its landings moved that way, stays within the budget.
TEST(Search, JitterIsTakenAtItsWorseEnd) {
  TinyInstance inst;
  SearchOptions o;
  o.budget = 0.1;
  o.grid_ms = 10;
  o.dvfs_latency_ms = 5;
  o.dvfs_jitter_ms = 3;
  SearchResult r;
  std::string err;
  ASSERT_TRUE(Search(inst.pred, o, &r, &err)) << err;
  ASSERT_FALSE(r.schedule[0].empty());
  Schedule worse = r.schedule;
  for (size_t i = 0; i < worse[0].size(); ++i) {
    const int before = i > 0 ? worse[0][i - 1].clock : worse[0].back().clock;
    worse[0][i].t_ns += worse[0][i].clock < before ? -3e6 : 3e6;
  }
  EXPECT_LE(inst.pred.Run(worse).end_ns, inst.pred.base().end_ns * 1.1 + 1e-6);
}

TEST(Search, RefusesBadOptions) {
  TinyInstance inst;
  SearchResult r;
  std::string err;
  SearchOptions o;
  o.budget = -0.1;
  EXPECT_FALSE(Search(inst.pred, o, &r, &err));
  o = SearchOptions();
  o.group = {0, 0};
  EXPECT_FALSE(Search(inst.pred, o, &r, &err));
  EXPECT_NE(err.find("groups"), std::string::npos) << err;
  o = SearchOptions();
  o.candidates = {7};
  EXPECT_FALSE(Search(inst.pred, o, &r, &err));
}

TEST(Search, PolicyCommandsLeadTheirLandingsByTheLatency) {
  const Schedule s = {{{10e6, 3}, {25e6, 0}}, {}, {{4e6, 1}}};
  const FrequencyPolicy p = PolicyFromSchedule(s, {600, 900, 1200, 1500}, 10);
  ASSERT_EQ(p.gpus.size(), 2u);  // GPU 1 keeps its clock
  EXPECT_EQ(p.gpus[0].gpu, 0);
  EXPECT_EQ(p.gpus[0].changes, (std::vector<ClockChange>{{0, 1500}, {15, 600}}));
  EXPECT_EQ(p.gpus[1].gpu, 2);
  EXPECT_EQ(p.gpus[1].changes, (std::vector<ClockChange>{{0, 900}}));  // never before the iteration start
}

// A policy file read back lands where the schedule it was written from said (latency 10 ms, with
// landings at least that late), and an unknown clock or GPU is refused.
TEST(Search, PolicyReadsBackIntoItsSchedule) {
  const Schedule s = {{{10e6, 3}, {25e6, 0}}, {}, {{14e6, 1}}};
  const std::vector<int> clocks = {600, 900, 1200, 1500};
  Schedule back;
  std::string err;
  ASSERT_TRUE(ScheduleFromPolicy(PolicyFromSchedule(s, clocks, 10), clocks, 3, 10, &back, &err)) << err;
  ASSERT_EQ(back.size(), 3u);
  for (size_t g = 0; g < 3; ++g) {
    ASSERT_EQ(back[g].size(), s[g].size());
    for (size_t i = 0; i < s[g].size(); ++i) {
      EXPECT_NEAR(back[g][i].t_ns, s[g][i].t_ns, 1e-3);
      EXPECT_EQ(back[g][i].clock, s[g][i].clock);
    }
  }
  EXPECT_FALSE(ScheduleFromPolicy({{{0, {{0, 1000}}}}}, clocks, 3, 10, &back, &err));
  EXPECT_NE(err.find("1000 MHz"), std::string::npos) << err;
  EXPECT_FALSE(ScheduleFromPolicy({{{3, {{0, 900}}}}}, clocks, 3, 10, &back, &err));
}

TEST(Search, ReplicasShareAGroup) {
  // Compute kernels by rank: 0 runs {5}, 1 runs {5, 6}, 2 runs {5} (its 6 is a CPU call).
  Graph g;
  g.kind = {NodeKind::kKernel, NodeKind::kKernel, NodeKind::kKernel, NodeKind::kKernel, NodeKind::kCpuCall};
  g.rank = {0, 1, 2, 1, 2};
  g.name = {5, 5, 5, 6, 6};
  EXPECT_EQ(ReplicaGroups(g, 3), (std::vector<int>{0, 1, 0}));
}

}  // namespace
}  // namespace emo
