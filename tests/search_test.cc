// search_test.cc — the dynamic program against exhaustive enumeration of every schedule on small
// instances (the exact optimum under the same model), its budget, and the policy it writes.
#include "search/dp_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "search_instances.h"
#include "simulated_instance.h"

namespace emo {
namespace {

TEST(Search, WithinThreePercentOfTheExhaustiveOptimum) {
  for (double budget : {0.0, 0.05, 0.2, 0.5}) {
    SCOPED_TRACE(budget);
    TinyInstance inst;
    ASSERT_EQ(inst.err, "");
    double exact_end = 0;
    const double exact = Exhaustive(inst.pred, 10e6, budget, 0, &exact_end);
    SearchOptions o = ExactOptions(budget, 10, 0);
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

// The same on two GPUs whose kernels switch clocks at landings inside them (emo optimize's
// predictor), where the MIP reference does not reach: every assignment of 4 clocks to 3 points per
// GPU enumerated.
TEST(Search, WithinThreePercentOfTheExhaustiveOptimumWithKernelsSplitAtLandings) {
  for (uint32_t seed : {3u, 4u, 5u}) {
    RandomInstance inst(seed, 7, true);
    ASSERT_EQ(inst.err, "");
    const double grid_ms = std::ceil(inst.pred.period_ns() / 3 * 1e-6);
    for (double budget : {0.0, 0.05, 0.2}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", budget " << budget);
      double exact_end = 0;
      const double exact = Exhaustive(inst.pred, grid_ms * 1e6, budget, 0, &exact_end);
      SearchResult r;
      std::string err;
      ASSERT_TRUE(Search(inst.pred, ExactOptions(budget, grid_ms, 0), &r, &err)) << err;
      EXPECT_LE(r.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-6);
      EXPECT_GE(r.predicted.energy_j, exact - 1e-9);
      EXPECT_LE(r.predicted.energy_j, exact * 1.03);
      EXPECT_NEAR(inst.pred.Run(r.schedule).energy_j, r.predicted.energy_j, 1e-9);
    }
  }
}

// GPU 0 runs A then B (20 ms each), GPU 1 runs C (50 ms) beside them: GPU 0 has 10 ms of slack
// at a zero budget. Every pack follows the clock (T = t0 1500 / f) and draws idle(f) +
// 260 (f / 1500)^2 W; kernels split at landings; a change point every 20 ms. C cannot slow, and
// GPU 0's 40 ms of work at 1200 MHz take the 50 ms exactly, the optimum (dynamic energy per unit
// of work grows with the clock). Deciding points in time order, 900 MHz from 0 (+8 ms) saves most
// at the first point, and is the one state a front over the run's delay keeps (none of them delays
// the run); 1500 MHz must then follow from 20 ms, 1200 from 40 ms. Kept also by GPU 0's delay, 1200
// (+4 ms) survives beside it.
TEST(Search, StatesKeptByEachGpusDelaySpendASlackGpusTimeEvenly) {
  PackedGraph pg = Packed({1e3, 20e6, 20e6, 50e6}, {-1, 1, 1, 2}, {{1, 2}}, {0, 0, 0, 1});
  ASSERT_EQ(pg.p.packs(), 3u);
  Predictor pred;
  std::string err;
  ASSERT_TRUE(pred.Init(TwoGpuInput(pg, {1, 1, 1}, {260, 260, 260}, 1, true), &err)) << err;
  ASSERT_NEAR(pred.base().end_ns, 50e6, 1e3);
  double exact_end = 0;
  const double exact = Exhaustive(pred, 20e6, 0, 0, &exact_end);
  SearchOptions o = ExactOptions(0, 20, 0);
  SearchResult with, without;
  ASSERT_TRUE(Search(pred, o, &with, &err)) << err;
  o.gpu_delays = false;
  ASSERT_TRUE(Search(pred, o, &without, &err)) << err;
  EXPECT_NEAR(with.predicted.energy_j, exact, 1e-9);
  EXPECT_EQ(with.schedule, (Schedule{{{0, 2}}, {}}));  // GPU 0 at 1200 MHz throughout
  EXPECT_LE(with.predicted.end_ns, pred.base().end_ns + 1e-3);
  EXPECT_EQ(without.schedule, (Schedule{{{0, 1}, {20e6, 3}, {40e6, 2}}, {}}));
  EXPECT_GT(without.predicted.energy_j, exact + 1e-6);
}

// For `seeds` of bench/search_gap.cc's random instances (5 points per GPU, kernels split at
// landings): the search within 3 % of the optimum and the budget, and where `ablate` is given,
// the search it changes over 3 %.
void ExpectWithinThreePercent(const std::vector<std::tuple<uint32_t, int, double>>& seeds,
                              const std::function<void(SearchOptions*)>& ablate = nullptr,
                              const std::function<void(SearchOptions*)>& setup = nullptr) {
  for (const auto& [seed, kernels, budget] : seeds) {
    SCOPED_TRACE(testing::Message() << "seed " << seed << ", budget " << budget);
    RandomInstance inst(seed, kernels, true);
    ASSERT_EQ(inst.err, "");
    const double grid_ms = std::ceil(inst.pred.period_ns() / 5 * 1e-6);
    double exact_end = 0;
    const double exact = Exhaustive(inst.pred, grid_ms * 1e6, budget, 0, &exact_end);
    SearchOptions o = ExactOptions(budget, grid_ms, 0);
    if (setup) setup(&o);
    SearchResult dp;
    std::string err;
    ASSERT_TRUE(Search(inst.pred, o, &dp, &err)) << err;
    EXPECT_GE(dp.predicted.energy_j, exact - 1e-9);
    EXPECT_LE(dp.predicted.energy_j, exact * 1.03);
    EXPECT_LE(dp.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-6);
    if (!ablate) continue;
    ablate(&o);
    SearchResult ablated;
    ASSERT_TRUE(Search(inst.pred, o, &ablated, &err)) << err;
    EXPECT_GT(ablated.predicted.energy_j, exact * 1.03);
  }
}

// Three of bench/search_gap.cc's random instances (5 points per GPU, kernels split at landings)
// that the DP leaves over 3 % above the optimum with states kept by the run's delay alone (20 of
// its first 512) come within it with states kept by each GPU's delay too.
TEST(Search, StatesKeptByEachGpusDelayCloseTheRandomInstancesGaps) {
  ExpectWithinThreePercent({{13u, 9, 0.0}, {13u, 9, 0.05}, {78u, 6, 0.02}},
                           [](SearchOptions* o) { o->gpu_delays = false; });
}

// bench/search_gap.cc's seed 47 (5 points per GPU, kernels split at landings) at a zero budget:
// GPU 1 waits for GPU 0 before its last kernels. Filed by each GPU's latest finish, the states
// that spent GPU 1's slack before the wait and those that kept it fall in one bucket, and the
// cheaper, which spent it, is kept: 4.62 % above the optimum. Filed by the most any of each GPU's
// work finishes late (gpu_delays_by_work), the search finds the optimum.
TEST(Search, StatesKeptByEachGpusMostDelayedWorkKeepSlackForAfterAWait) {
  RandomInstance inst(47, 7, true);
  ASSERT_EQ(inst.err, "");
  const double grid_ms = std::ceil(inst.pred.period_ns() / 5 * 1e-6);
  double exact_end = 0;
  const double exact = Exhaustive(inst.pred, grid_ms * 1e6, 0, 0, &exact_end);
  SearchOptions o = ExactOptions(0, grid_ms, 0);
  SearchResult by_end, by_work;
  std::string err;
  ASSERT_TRUE(Search(inst.pred, o, &by_end, &err)) << err;
  o.gpu_delays_by_work = true;
  ASSERT_TRUE(Search(inst.pred, o, &by_work, &err)) << err;
  EXPECT_GT(by_end.predicted.energy_j, exact * 1.03);
  EXPECT_GE(by_work.predicted.energy_j, exact - 1e-9);
  EXPECT_LE(by_work.predicted.energy_j, exact * (1 + 1e-9));
  EXPECT_LE(by_work.predicted.end_ns, inst.pred.base().end_ns + 1e-6);
}

// The defaults' misses among bench/search_gap.cc's first 1 024 instances are of two kinds: a GPU's
// slack spent before a wait (seed 176 at 2 %, which filing states by each GPU's most delayed work
// sees) and too few states kept (186 at 5 %, 243 at 20 %). The thorough settings, 16 states and
// by-work filing (emo optimize --max-states 16 --gpu-delays-by-work), close both; over those
// 1 024 and 512 more, none is over 3 % with them (docs/search.md).
TEST(Search, TheThoroughSettingsCloseTheDefaultsGaps) {
  ExpectWithinThreePercent(
      {{176u, 6, 0.02}, {186u, 12, 0.05}, {243u, 7, 0.2}},
      [](SearchOptions* o) { *o = ExactOptions(o->budget, o->grid_ms, 0); },
      [](SearchOptions* o) {
        o->max_states = 16;
        o->gpu_delays_by_work = true;
      });
}

// At a wide budget (20 %: about 200 steps of the budget's discretisation) the front over the
// run's delay holds far more states than the max_states kept, most of them where the delay is
// small. Thinned evenly over its states, the DP kept few with the delay the optimum's first points
// take, and ended 3.2-4.9 % above the optimum on 4 of bench/search_gap.cc's first 512 instances,
// all at 20 %, these two among them (4.86 and 3.59 %); thinned evenly over the delay range, none
// of those 512 is over 3 % at 20 %.
TEST(Search, StatesSpreadOverTheBudgetReachTheOptimumAtAWideBudget) {
  ExpectWithinThreePercent({{86u, 8, 0.2}, {105u, 11, 0.2}});
}

// The round with the undecided points at the best answer's clocks (SearchOptions::dp_rounds)
// brings two of bench/search_gap.cc's instances within 3 % of the optimum (4 of its first 512 miss
// without it).
TEST(Search, TheRoundFromTheBestAnswerClosesTheRandomInstancesGaps) {
  ExpectWithinThreePercent({{113u, 6, 0.05}, {126u, 11, 0.2}}, [](SearchOptions* o) { o->dp_rounds = 0; });
}

// One GPU: pack A (30 ms, a = 0.1: barely follows the clock) then pack B (30 ms, a = 0.9), T and P
// as in TinyInstance, clocks 600, 900, 1200, 1450 and 1500 MHz (the default); `held_mhz` as given.
struct HeldInstance {
  PackedGraph pg = Packed({1e3, 30e6, 30e6}, {-1, 1, 1}, {{1, 2}});
  Predictor pred;
  std::string err;
  explicit HeldInstance(double held_mhz) {
    PredictorInput in;
    in.graph = &pg.g;
    in.packing = &pg.p;
    in.clocks_mhz = {600, 900, 1200, 1450, 1500};
    in.default_clock = 4;
    in.idle_power_w = {40, 42, 45, 49, 50};
    PowerLawTables(pg.p, {0.1, 0.9}, &in);
    if (held_mhz > 0) in.held_mhz = {held_mhz};
    if (!pred.Init(in, &err) && err.empty()) err = "Init failed";
  }
};

// A GPU that ran below the default clock (held there by its power limit) is kept locked at or
// below the highest clock under the one it ran at. At 5 %, the search without the rule spends the
// budget on A at 600 MHz (+2.9 ms of 60) and leaves B at the default; with the GPU held at
// 1460 MHz, B is locked at 1450 (+0.9 ms) and A can go only to 900 MHz (+1.6 ms).
TEST(Search, AGpuHeldBelowTheDefaultStaysLockedAtOrBelowIt) {
  HeldInstance free_inst(0), held_inst(1460);
  ASSERT_EQ(free_inst.err, "");
  ASSERT_EQ(held_inst.err, "");
  SearchOptions o = ExactOptions(0.05, 10, 0);
  SearchResult free, held;
  std::string err;
  ASSERT_TRUE(Search(free_inst.pred, o, &free, &err)) << err;
  ASSERT_TRUE(Search(held_inst.pred, o, &held, &err)) << err;
  // The clock each pack ran at under the schedule found.
  auto pack_clocks = [](const Predictor& pred, const Schedule& s) {
    Predictor::PassState state;
    pred.Run(s, &state);
    return state.pack_clock;
  };
  EXPECT_EQ(free.held_ceiling, std::vector<int>{-1});
  EXPECT_EQ(pack_clocks(free_inst.pred, free.schedule), (std::vector<int>{0, 4}));
  ASSERT_EQ(held.held_ceiling, std::vector<int>{3});
  EXPECT_EQ(pack_clocks(held_inst.pred, held.schedule), (std::vector<int>{1, 3}));
  ASSERT_FALSE(held.schedule[0].empty());
  EXPECT_EQ(held.schedule[0].front().t_ns, 0);  // locked from the start
  for (const Landing& l : held.schedule[0]) EXPECT_LE(l.clock, 3);
  EXPECT_LE(held.predicted.end_ns, held_inst.pred.base().end_ns * 1.05 + 1e-6);
  // Turned off, the held GPU is searched as any other.
  o.above_held = true;
  SearchResult off;
  ASSERT_TRUE(Search(held_inst.pred, o, &off, &err)) << err;
  EXPECT_EQ(off.predicted.energy_j, free.predicted.energy_j);
  EXPECT_EQ(off.held_ceiling, std::vector<int>{-1});
}

// When no schedule locked at or below the held clock fits the budget, the search takes every
// clock, as without the rule.
TEST(Search, AHeldGpuThatCannotFitTheBudgetLockedIsSearchedUnrestricted) {
  HeldInstance free_inst(0), held_inst(1300);  // B at 1200 MHz: +6.7 ms
  std::string err;
  SearchOptions o = ExactOptions(0.1, 10, 0);
  SearchResult free, held;
  ASSERT_TRUE(Search(free_inst.pred, o, &free, &err)) << err;
  ASSERT_TRUE(Search(held_inst.pred, o, &held, &err)) << err;
  EXPECT_LT(free.predicted.energy_j, free_inst.pred.base().energy_j);
  EXPECT_EQ(held.held_ceiling, std::vector<int>{-1});
  EXPECT_EQ(held.predicted.energy_j, free.predicted.energy_j);
  EXPECT_EQ(held.predicted.end_ns, free.predicted.end_ns);
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

void ExpectSameSearch(const SearchResult& a, const SearchResult& b) {
  EXPECT_EQ(a.predicted.end_ns, b.predicted.end_ns);
  EXPECT_EQ(a.predicted.energy_j, b.predicted.energy_j);
  EXPECT_EQ(a.evaluations, b.evaluations);
  ASSERT_EQ(a.schedule.size(), b.schedule.size());
  for (size_t gpu = 0; gpu < a.schedule.size(); ++gpu) {
    ASSERT_EQ(a.schedule[gpu].size(), b.schedule[gpu].size()) << "GPU " << gpu;
    for (size_t i = 0; i < a.schedule[gpu].size(); ++i) {
      EXPECT_EQ(a.schedule[gpu][i].t_ns, b.schedule[gpu][i].t_ns);
      EXPECT_EQ(a.schedule[gpu][i].clock, b.schedule[gpu][i].clock);
    }
  }
}

// Changes of one GPU's clock land at least min_interval apart, whichever way the DP decided the
// points (the backward DP checks a change against the landings after it), and on some of these
// instances the backward DP's answer is the one kept. (The first landing, at the iteration start,
// restores the iteration's first clock and is not a change: the interval counts from the second.)
TEST(Search, ChangesStayMinIntervalApartBothWays) {
  int backward_kept = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed)
    for (double budget : {0.0, 0.05, 0.2}) {
      SCOPED_TRACE(seed);
      SCOPED_TRACE(budget);
      RandomInstance inst(seed, 10);
      ASSERT_EQ(inst.err, "");
      SearchOptions o = ExactOptions(budget, 5, 0);
      o.min_interval_ms = 12;
      SearchResult both, forward;
      std::string err;
      ASSERT_TRUE(Search(inst.pred, o, &both, &err)) << err;
      for (const std::vector<Landing>& l : both.schedule)
        for (size_t i = 2; i < l.size(); ++i) EXPECT_GE(l[i].t_ns - l[i - 1].t_ns, 12e6 - 1e-3);
      EXPECT_LE(both.predicted.end_ns, inst.pred.base().end_ns * (1 + budget) + 1e-3);
      o.backward = false;
      ASSERT_TRUE(Search(inst.pred, o, &forward, &err)) << err;
      EXPECT_LE(both.predicted.energy_j, forward.predicted.energy_j * (1.01 + 1e-9));
      backward_kept += both.predicted.energy_j < forward.predicted.energy_j * (1 - 1e-9);
    }
  EXPECT_GT(backward_kept, 0);
}

// The answer does not depend on the threads (one, two and five), nor on whether the passes start
// from the change and stop where the budget is spent (the whole pass is the reference), bit for
// bit, with and without the local search.
TEST(Search, ThreadsAndPartialPassesDoNotChangeTheAnswer) {
  for (uint32_t seed : {11u, 12u, 13u}) {
    SCOPED_TRACE(seed);
    RandomInstance inst(seed, 16);
    ASSERT_EQ(inst.err, "");
    for (const auto& [local, by_work] : {std::pair{false, false}, {true, false}, {false, true}}) {
      SearchOptions o;
      o.budget = 0.1;
      o.grid_ms = 10;
      o.min_interval_ms = 10;
      o.local_search = local;
      o.gpu_delays_by_work = by_work;
      o.incremental = false;
      o.threads = 1;
      SearchResult whole;
      std::string err;
      ASSERT_TRUE(Search(inst.pred, o, &whole, &err)) << err;
      EXPECT_LT(whole.predicted.energy_j, inst.pred.base().energy_j);  // it found something
      o.incremental = true;
      for (int threads : {1, 2, 5}) {
        SCOPED_TRACE(threads);
        o.threads = threads;
        SearchResult r;
        ASSERT_TRUE(Search(inst.pred, o, &r, &err)) << err;
        EXPECT_EQ(r.threads, threads);
        ExpectSameSearch(whole, r);
        EXPECT_LT(r.nodes_computed, whole.nodes_computed);
      }
    }
  }
}

// The same on a simulated pipeline traced over three iterations (two policy groups); the schedule
// the search reports predicts what it says.
TEST(Search, ThreadsAndPartialPassesDoNotChangeTheAnswerOnASimulatedPipeline) {
  SimulatedInstance inst("pp2-qwen2-7b-uniform-a100.json", 3);
  ASSERT_EQ(inst.err, "");
  SearchOptions o;
  o.budget = 0.05;
  o.grid_ms = 100;
  o.max_candidates = 4;
  o.max_states = 4;
  o.dvfs_jitter_ms = 0;  // the reported schedule is then the one predicted
  o.group = ReplicaGroups(inst.g, inst.pred.gpus());
  o.incremental = false;
  o.threads = 1;
  SearchResult whole, one, three;
  std::string err;
  ASSERT_TRUE(Search(inst.pred, o, &whole, &err)) << err;
  o.incremental = true;
  ASSERT_TRUE(Search(inst.pred, o, &one, &err)) << err;
  o.threads = 3;
  ASSERT_TRUE(Search(inst.pred, o, &three, &err)) << err;
  ExpectSameSearch(whole, one);
  ExpectSameSearch(whole, three);
  EXPECT_LT(whole.predicted.energy_j, inst.pred.base().energy_j);
  const Predictor::Result again = inst.pred.Run(whole.schedule);
  EXPECT_EQ(again.end_ns, whole.predicted.end_ns);
  EXPECT_EQ(again.energy_j, whole.predicted.energy_j);
}

}  // namespace
}  // namespace emo
