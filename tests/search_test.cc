// search_test.cc — the dynamic program against exhaustive enumeration of every schedule on small
// instances (the exact optimum under the same model), its budget, and the policy it writes.
#include "search/dp_search.h"

#include <gtest/gtest.h>

#include <cmath>

#include "packed_graph.h"

namespace emo {
namespace {

// Stream 1: kernels 1 (30 ms) then 2 (30 ms); stream 2: kernels 3 (20 ms) then 4 (15 ms), beside
// them. Pack p at clock f: T = t0 (1500 / f)^a_p, P = 40 + 260 (f / 1500)^2 W. Idle 40-50 W.
struct Instance {
  PackedGraph pg = Packed({1e3, 30e6, 30e6, 20e6, 15e6}, {-1, 1, 1, 2, 2}, {{1, 2}, {3, 4}});
  Predictor pred;
  Instance() {
    PredictorInput in;
    in.graph = &pg.g;
    in.packing = &pg.p;
    in.clocks_mhz = {600, 900, 1200, 1500};
    in.default_clock = 3;
    const double a[] = {0.9, 0.6, 0.9, 0.3};
    double e0 = 0;
    for (size_t p = 0; p < 4; ++p)
      for (int f : in.clocks_mhz) {
        const double r = f / 1500.0, t = pg.p.busy_ns[p] * 1e-9 * std::pow(1 / r, a[p]);
        in.pack_time_s.push_back(t);
        in.pack_energy_j.push_back((40 + 260 * r * r) * t);
        if (f == 1500) e0 += (40 + 260 * r * r) * t;
      }
    in.idle_power_w = {40, 42, 45, 50};
    in.measured_energy_j = {e0};
    std::string err;
    EXPECT_TRUE(pred.Init(in, &err)) << err;
  }
};

// Every assignment of the 4 clocks to the change points, landing where the clock changes (no
// latency): the least energy whose end is within the budget.
double Exhaustive(Predictor& pred, double grid_ns, double budget, double* end) {
  std::vector<double> points;
  for (double t = 0; t < pred.period_ns(); t += grid_ns) points.push_back(t);
  const int nc = pred.clocks();
  size_t combos = 1;
  for (size_t i = 0; i < points.size(); ++i) combos *= nc;
  double best = 1e300;
  for (size_t k = 0; k < combos; ++k) {
    std::vector<Landing> l;
    size_t x = k;
    for (double t : points) {
      const int c = static_cast<int>(x % nc);
      x /= nc;
      if (l.empty() || l.back().clock != c) l.push_back({t, c});
    }
    const Predictor::Result r = pred.Run({l});
    if (r.end_ns <= pred.base().end_ns * (1 + budget) && r.energy_j < best) {
      best = r.energy_j;
      *end = r.end_ns;
    }
  }
  return best;
}

TEST(Search, WithinThreePercentOfTheExhaustiveOptimum) {
  for (double budget : {0.0, 0.05, 0.2, 0.5}) {
    SCOPED_TRACE(budget);
    Instance inst;
    double exact_end = 0;
    const double exact = Exhaustive(inst.pred, 10e6, budget, &exact_end);
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
  Instance inst;
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
  Instance inst;
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
  Instance inst;
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
