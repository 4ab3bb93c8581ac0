// search_mip_test.cc — the MIP reference (search/mip_reference.h) against exhaustive enumeration and
// a hand-computed optimum, and the dynamic program against it: never below the exact optimum, and
// within 3 % of its energy on small instances.
#include "search/mip_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "search_instances.h"

namespace emo {
namespace {

// The program restates packs at one clock: a predictor that splits kernels at landings is refused.
TEST(SearchMip, RefusesAPredictorThatSplitsKernelsAtLandings) {
  TinyInstance inst;
  ASSERT_EQ(inst.err, "");
  PredictorInput in = inst.pred.input();
  in.split_at_landings = true;
  Predictor pred;
  std::string err;
  ASSERT_TRUE(pred.Init(in, &err)) << err;
  MipResult m;
  EXPECT_FALSE(SolveMip(pred, ExactOptions(0.05, 10, 0), 60, &m, &err));
  EXPECT_NE(err.find("split_at_landings"), std::string::npos) << err;
}

// (a) The tiny instance of search_test.cc, 4 clocks ^ 7 points: the program's optimum is the
// exhaustive one, with and without a DVFS latency (which moves the first landing to 5 ms), and its
// schedule predicts what it says.
TEST(SearchMip, EqualsExhaustiveEnumeration) {
  for (double latency_ms : {0.0, 5.0})
    for (double budget : {0.0, 0.05, 0.2, 0.5}) {
      SCOPED_TRACE(testing::Message() << "budget " << budget << ", latency " << latency_ms << " ms");
      TinyInstance inst;
      ASSERT_EQ(inst.err, "");
      double exact_end = 0;
      const double exact = Exhaustive(inst.pred, 10e6, budget, latency_ms * 1e6, &exact_end);
      MipResult m;
      std::string err;
      ASSERT_TRUE(SolveMip(inst.pred, ExactOptions(budget, 10, latency_ms), 60, &m, &err)) << err;
      EXPECT_TRUE(m.exact);
      EXPECT_EQ(m.points, 7);
      EXPECT_LE(m.energy_j, exact * (1 + 1e-9));  // the solver's arithmetic
      EXPECT_NEAR(m.energy_j, exact, 1e-7 * exact);
      EXPECT_NEAR(m.replayed.energy_j, m.energy_j, 1e-7 * exact);
      EXPECT_LE(m.replayed.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
    }
}

// Two GPUs, each its own group, 3 points each (4 ^ 6 assignments): the per-GPU idle terms, the
// cross-GPU waits and the groups are restated right.
TEST(SearchMip, EqualsExhaustiveEnumerationOnTwoGpus) {
  for (uint32_t seed : {3u, 4u, 5u}) {
    RandomInstance inst(seed, 7);
    ASSERT_EQ(inst.err, "");
    ASSERT_EQ(inst.pred.gpus(), 2);
    const double grid_ms = std::ceil(inst.pred.period_ns() / 3 * 1e-6);
    for (double budget : {0.0, 0.1}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", budget " << budget);
      double exact_end = 0;
      const double exact = Exhaustive(inst.pred, grid_ms * 1e6, budget, 0, &exact_end);
      MipResult m;
      std::string err;
      ASSERT_TRUE(SolveMip(inst.pred, ExactOptions(budget, grid_ms, 0), 60, &m, &err)) << err;
      EXPECT_EQ(m.points, 6);
      EXPECT_LE(m.energy_j, exact * (1 + 1e-9));  // the solver's arithmetic
      EXPECT_NEAR(m.energy_j, exact, 1e-7 * exact);
      EXPECT_NEAR(m.replayed.energy_j, m.energy_j, 1e-7 * exact);
    }
  }
}

// (b) By hand. A 1 ms CPU call launches A then B on one stream. Clocks 1000 and 2000 MHz (default),
// idle 30 and 50 W:
//   A: 20 ms, 2 J at 1000; 10 ms, 3 J at 2000 (compute-bound)
//   B: 12 ms, 0.9 J at 1000; 10 ms, 1.5 J at 2000 (memory-bound)
//   0    1          11         21 ms        default: end 21 ms; measured 4.55 J, so the factor k = 1
//   |CPU|---- A ----|---- B ----|
// Points at 0, 10 and 20 ms (period 21) hold for 10, 10 and 1 ms of it (ω = 10/21, 10/21, 1/21; the
// last also before the first landing, 0 ms). A starts at 1 ms under point 0's clock; B under point
// 1's if A ran fast (starts at 11), point 2's if slow (at 21). Always end − busy = 1 ms (the CPU
// call), so the idle energy is 1 ms × P̄ = Σ_j ω_j P_idle(x_j) / 1000 J.
//   budget 0:    A, B fast; x0 = x1 = 2000, x2 = 1000 (idle only): 4.5 + (500 + 500 + 30) / 21000 J.
//   budget 0.1:  (end ≤ 23.1 ms) A fast, B slow (end 23): x1 = x2 = 1000: 3.9 + (500 + 300 + 30) / 21000.
//   budget 0.6:  (end ≤ 33.6 ms) A slow (ends at 21), then B slow under x2 (end 33), all at 1000:
//                2.9 + 630 / 21000 = 2.93 J (A fast, B slow: 3.9395 J; A slow, B fast: 3.531 J).
TEST(SearchMip, HandComputedOptimum) {
  PackedGraph pg = Chain({1e6, 10e6, 10e6});
  PredictorInput in;
  in.graph = &pg.g;
  in.packing = &pg.p;
  in.clocks_mhz = {1000, 2000};
  in.default_clock = 1;
  in.pack_time_s = {0.020, 0.010, 0.012, 0.010};
  in.pack_energy_j = {2, 3, 0.9, 1.5};
  in.idle_power_w = {30, 50};
  in.measured_energy_j = {4.55};
  Predictor pred;
  std::string err;
  ASSERT_TRUE(pred.Init(in, &err)) << err;
  ASSERT_NEAR(pred.energy_scale()[0], 1, 1e-12);
  ASSERT_NEAR(pred.period_ns(), 21e6, 1e-3);
  const struct {
    double budget, energy_j;
    std::vector<Landing> landings;
  } cases[] = {
      {0, 4.5 + 1030 / 21000.0, {{0, 1}, {20e6, 0}}},
      {0.1, 3.9 + 830 / 21000.0, {{0, 1}, {10e6, 0}}},
      {0.6, 2.93, {{0, 0}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.budget);
    MipResult m;
    ASSERT_TRUE(SolveMip(pred, ExactOptions(c.budget, 10, 0), 60, &m, &err)) << err;
    EXPECT_NEAR(m.energy_j, c.energy_j, 1e-9);
    ASSERT_EQ(m.schedule.size(), 1u);
    ASSERT_EQ(m.schedule[0].size(), c.landings.size());
    for (size_t i = 0; i < c.landings.size(); ++i) {
      EXPECT_NEAR(m.schedule[0][i].t_ns, c.landings[i].t_ns, 1e-3);
      EXPECT_EQ(m.schedule[0][i].clock, c.landings[i].clock);
    }
    EXPECT_NEAR(m.replayed.energy_j, c.energy_j, 1e-9);
  }
}

// (c) Random two-GPU instances, 6-12 packs, 5-6 points per GPU (4 ^ 10 and more assignments): the
// search never beats the exact optimum (it searches the same space under the same model), and its
// predicted energy is within 3 % of the optimum on all 16 (the target; 1.3 % at most when
// this was written), with or without its local search (SearchOptions::local_search), and no
// higher than without its rounds (SearchOptions::dp_rounds; without them, before the states were
// spread over the budget's range, it missed 3 % on four of these, by 3.5 to 5.7 %:
// Search.TheRoundFromTheBestAnswerClosesTheRandomInstancesGaps has two it still misses without
// them). search_gap reports the gap over more instances.
TEST(SearchMip, SearchWithinThreePercentOfTheOptimum) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    RandomInstance inst(seed, 6 + 2 * static_cast<int>(seed - 1));
    ASSERT_EQ(inst.err, "");
    const double grid_ms = std::ceil(inst.pred.period_ns() / 5 * 1e-6);
    for (double budget : {0.0, 0.02, 0.05, 0.2}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", budget " << budget);
      SearchOptions o = ExactOptions(budget, grid_ms, 0);
      MipResult m;
      SearchResult dp, refined, paired, one_round;
      std::string err;
      ASSERT_TRUE(SolveMip(inst.pred, o, 120, &m, &err)) << err;
      ASSERT_TRUE(Search(inst.pred, o, &dp, &err)) << err;
      o.local_search = true;
      ASSERT_TRUE(Search(inst.pred, o, &refined, &err)) << err;
      o.local_search = false;
      o.pairs = true;
      ASSERT_TRUE(Search(inst.pred, o, &paired, &err)) << err;
      o.pairs = false;
      o.dp_rounds = 0;
      ASSERT_TRUE(Search(inst.pred, o, &one_round, &err)) << err;
      EXPECT_NEAR(m.replayed.energy_j, m.energy_j, 1e-7 * m.energy_j);
      EXPECT_LE(m.replayed.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
      EXPECT_GE(dp.predicted.energy_j, m.energy_j * (1 - 1e-9));
      EXPECT_GE(refined.predicted.energy_j, m.energy_j * (1 - 1e-9));
      EXPECT_LE(refined.predicted.energy_j, dp.predicted.energy_j);
      EXPECT_LE(dp.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
      EXPECT_LE(paired.predicted.energy_j, dp.predicted.energy_j);
      EXPECT_GE(paired.predicted.energy_j, m.energy_j * (1 - 1e-9));
      EXPECT_LE(paired.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
      EXPECT_LE(dp.predicted.energy_j, one_round.predicted.energy_j);
      EXPECT_LE(refined.predicted.energy_j, m.energy_j * 1.03);
      EXPECT_LE(dp.predicted.energy_j, m.energy_j * 1.03);
    }
  }
}

// GLPK 5.0's pseudocost branching stops on an internal assertion (glpios09.c, "dx != 0.0") within
// half a second on this instance of bench/search_gap.cc (seed 44, 2 %), and GLPK's answer to that
// is to abort the process. The solver takes it as a failure and goes on with Driebeck-Tomlin
// branching, which proves the optimum in about 35 s here: within the 5 s given, the answer is
// that no optimum was proven in time (or, on a machine that fast, the optimum).
TEST(SearchMip, GoesOnWherePseudocostBranchingStopsOnAnInternalError) {
  RandomInstance inst(44, 8);
  ASSERT_EQ(inst.err, "");
  const SearchOptions o = ExactOptions(0.02, std::ceil(inst.pred.period_ns() / 7 * 1e-6), 0);
  MipResult m;
  std::string err;
  if (SolveMip(inst.pred, o, 5, &m, &err)) {
    SearchResult dp;
    ASSERT_TRUE(Search(inst.pred, o, &dp, &err)) << err;
    EXPECT_NEAR(m.replayed.energy_j, m.energy_j, 1e-7 * m.energy_j);
    EXPECT_GE(dp.predicted.energy_j, m.energy_j * (1 - 1e-9));
  } else {
    EXPECT_NE(err.find("no proven optimum within"), std::string::npos) << err;
  }
}

// Where the DP drops the state that would have been best (a point that spends slack pays only with
// the change of a later one), the pair sweep finds the optimum's neighbourhood: one of the two
// instances of bench/search_gap.cc's first 64 that the forward DP alone leaves more than 3 % above
// the optimum (the other, seed 4, needs pairs beyond the sweep's reach and share of passes).
TEST(SearchMip, PairsCloseTheGapTheDpLeaves) {
  RandomInstance inst(16, 8);
  ASSERT_EQ(inst.err, "");
  SearchOptions o = ExactOptions(0.05, std::ceil(inst.pred.period_ns() / 7 * 1e-6), 0);
  o.backward = false;    // (the backward DP closes this one too, below)
  o.gpu_delays = false;  // (and so do the states kept by each GPU's delay)
  MipResult m;
  SearchResult with_pairs, without;
  std::string err;
  ASSERT_TRUE(SolveMip(inst.pred, o, 120, &m, &err)) << err;
  ASSERT_TRUE(Search(inst.pred, o, &without, &err)) << err;
  o.pairs = true;
  ASSERT_TRUE(Search(inst.pred, o, &with_pairs, &err)) << err;
  EXPECT_GT(without.predicted.energy_j, m.energy_j * 1.03);
  EXPECT_LE(with_pairs.predicted.energy_j, m.energy_j * 1.03);
  EXPECT_GE(with_pairs.predicted.energy_j, m.energy_j * (1 - 1e-9));
  EXPECT_LE(with_pairs.predicted.end_ns, inst.pred.base().end_ns * 1.05 + 1e-3);
  EXPECT_LE(with_pairs.evaluations, without.evaluations * 3 / 2);
}

// The same loss, seen from the other end: deciding the points from the last, each state is judged
// with the earlier points still at one clock, so a point's slack is priced against the work
// before it instead of after. Two of bench/search_gap.cc's instances that the forward DP and its
// extra round leave more than 3 % above the optimum come within it with one backward DP more.
// (Both are within it without the backward DP where states are kept by each GPU's delay too.)
TEST(SearchMip, BackwardDpClosesGapsTheForwardOneLeaves) {
  for (const auto& [seed, kernels, budget] : {std::tuple{16u, 8, 0.05}, std::tuple{18u, 12, 0.0}}) {
    SCOPED_TRACE(seed);
    RandomInstance inst(seed, kernels);
    ASSERT_EQ(inst.err, "");
    SearchOptions o = ExactOptions(budget, std::ceil(inst.pred.period_ns() / 7 * 1e-6), 0);
    o.gpu_delays = false;
    MipResult m;
    SearchResult forward, both;
    std::string err;
    ASSERT_TRUE(SolveMip(inst.pred, o, 120, &m, &err)) << err;
    o.backward = false;
    ASSERT_TRUE(Search(inst.pred, o, &forward, &err)) << err;
    o.backward = true;
    ASSERT_TRUE(Search(inst.pred, o, &both, &err)) << err;
    EXPECT_GT(forward.predicted.energy_j, m.energy_j * 1.03);
    EXPECT_LE(both.predicted.energy_j, m.energy_j * 1.03);
    EXPECT_GE(both.predicted.energy_j, m.energy_j * (1 - 1e-6));  // it finds the optimum (solver's tolerance)
    EXPECT_LE(both.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
    EXPECT_NEAR(inst.pred.Run(both.schedule).energy_j, both.predicted.energy_j, 1e-9);
  }
}

// With changes at least two grid steps apart, the program drops that rule: a lower bound, still
// never above what the DP finds under it.
TEST(SearchMip, MinimumIntervalMakesItABound) {
  RandomInstance inst(7, 8);
  ASSERT_EQ(inst.err, "");
  const double grid_ms = std::ceil(inst.pred.period_ns() / 6 * 1e-6);
  SearchOptions o = ExactOptions(0.1, grid_ms, 0);
  o.min_interval_ms = 2 * grid_ms;
  MipResult m;
  SearchResult r;
  std::string err;
  ASSERT_TRUE(SolveMip(inst.pred, o, 60, &m, &err)) << err;
  ASSERT_TRUE(Search(inst.pred, o, &r, &err)) << err;
  EXPECT_FALSE(m.exact);
  EXPECT_LE(m.energy_j, r.predicted.energy_j + 1e-9);
}

TEST(SearchMip, RefusesJitterAndBadOptions) {
  TinyInstance inst;
  ASSERT_EQ(inst.err, "");
  MipResult m;
  std::string err;
  SearchOptions o = ExactOptions(0.05, 10, 0);
  o.dvfs_jitter_ms = 5;
  EXPECT_FALSE(SolveMip(inst.pred, o, 10, &m, &err));
  EXPECT_NE(err.find("jitter"), std::string::npos) << err;
  o = ExactOptions(-1, 10, 0);
  EXPECT_FALSE(SolveMip(inst.pred, o, 10, &m, &err));
  o = ExactOptions(0.05, 10, 0);
  o.group = {0, 0};
  EXPECT_FALSE(SolveMip(inst.pred, o, 10, &m, &err));
  EXPECT_NE(err.find("groups"), std::string::npos) << err;
}

}  // namespace
}  // namespace emo
