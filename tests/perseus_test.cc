// perseus_test.cc — the Perseus planner on hand-computed cases: options and the Pareto filter, the
// exponential fit, the 1F1B DAG, one Phillips–Dessouky iteration, and the whole trade-off curve
// against brute-force enumeration of every duration choice under the same cost model.
#include "search/perseus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>

namespace emo::perseus {
namespace {

TEST(PerseusOptions, ParetoDedupSort) {
  // unit 1 ms, p2p 70 W: cost = energy − 0.07·q.
  std::vector<ProfileRow> rows = {
      {0, false, 1410, 0.0204, 6.0},  // q 20, cost 4.6
      {0, false, 1395, 0.0206, 6.2},  // q 20, cost 4.8: dominated by 1410
      {0, false, 1305, 0.0208, 5.9},  // q 20, cost 4.5: not dominated, but 1410 is costlier at q 20
      {0, false, 1200, 0.0225, 5.0},  // q 22, cost 3.46
      {0, false, 1000, 0.0265, 4.5},  // q 26, cost 2.68
      {0, false, 800, 0.0334, 4.4},   // q 33, cost 2.09
      {0, false, 600, 0.0440, 5.5},   // q 44, cost 2.42: dominated by 800
  };
  const std::vector<Option> o = CandidateOptions(rows, PerseusOptions());
  ASSERT_EQ(o.size(), 4u);
  const int mhz[] = {800, 1000, 1200, 1410};
  const int64_t q[] = {33, 26, 22, 20};
  const double cost[] = {2.09, 2.68, 3.46, 4.6};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(o[i].mhz, mhz[i]);
    EXPECT_EQ(o[i].q, q[i]);
    EXPECT_NEAR(o[i].cost, cost[i], 1e-9);
  }
}

TEST(PerseusOptions, RerunWithNoiseFactorWhenFewSurvive) {
  PerseusOptions opt;
  opt.p2p_power_w = 0;
  // At nf = 1, D (slower and costlier than C) goes and 3 remain; at nf = 0.95 nothing beats D by 5 %.
  std::vector<ProfileRow> rows = {{0, true, 1410, 0.0205, 3},
                                  {0, true, 1200, 0.0255, 2},
                                  {0, true, 1000, 0.0305, 1.5},
                                  {0, true, 900, 0.0315, 1.52}};
  const std::vector<Option> o = CandidateOptions(rows, opt);
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[0].mhz, 900);
  EXPECT_EQ(o[3].mhz, 1410);
}

TEST(PerseusFit, RecoversExactExponential) {
  std::vector<double> q, c;
  for (int i = 20; i <= 40; i += 2) {
    q.push_back(i);
    c.push_back(50 * std::exp(-0.05 * i) + 20);
  }
  const CostFit f = FitExponential(q, c, 1e-3);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.a, 50, 1e-4);
  EXPECT_NEAR(f.b, -0.05, 1e-7);
  EXPECT_NEAR(f.c, 20, 1e-4);
  EXPECT_LT(f.mse, 1e-12);
  // Three points: no degrees of freedom left, the covariance is undefined and upstream drops it.
  EXPECT_FALSE(FitExponential({20, 30, 40}, {c[0], c[5], c[10]}, 1e-3).ok);
}

TEST(PerseusDag, OneFOneBTwoStagesThreeMicrobatches) {
  const Dag d = OneFOneBDag(2, 3);
  ASSERT_EQ(d.nodes(), 14);  // 2 stages × 3 microbatches × (F, B) + source + sink
  EXPECT_EQ(d.from.size(), 18u);
  // Stage 0: F0 F1 B0 F2 B1 B2 (nodes 1-6); stage 1: F0 B0 F1 B1 F2 B2 (nodes 7-12).
  const std::vector<std::pair<bool, int>> s0 = {{false, 0}, {false, 1}, {true, 0}, {false, 2}, {true, 1}, {true, 2}};
  const std::vector<std::pair<bool, int>> s1 = {{false, 0}, {true, 0}, {false, 1}, {true, 1}, {false, 2}, {true, 2}};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(d.stage[static_cast<size_t>(1 + i)], 0);
    EXPECT_EQ(d.backward[static_cast<size_t>(1 + i)], s0[static_cast<size_t>(i)].first);
    EXPECT_EQ(d.micro[static_cast<size_t>(1 + i)], s0[static_cast<size_t>(i)].second);
    EXPECT_EQ(d.stage[static_cast<size_t>(7 + i)], 1);
    EXPECT_EQ(d.backward[static_cast<size_t>(7 + i)], s1[static_cast<size_t>(i)].first);
    EXPECT_EQ(d.micro[static_cast<size_t>(7 + i)], s1[static_cast<size_t>(i)].second);
    EXPECT_EQ(d.spec[static_cast<size_t>(1 + i)], s0[static_cast<size_t>(i)].first ? 1 : 0);
    EXPECT_EQ(d.spec[static_cast<size_t>(7 + i)], s1[static_cast<size_t>(i)].first ? 3 : 2);
  }
  std::set<std::pair<int, int>> got;
  for (size_t e = 0; e < d.from.size(); ++e) got.insert({d.from[e], d.to[e]});
  const std::set<std::pair<int, int>> want = {{1, 2}, {2, 3},  {3, 4},  {4, 5},   {5, 6},    // stage 0 in order
                                              {7, 8}, {8, 9},  {9, 10}, {10, 11}, {11, 12},  // stage 1 in order
                                              {1, 7}, {2, 9},  {4, 11},                      // F(0,j) → F(1,j)
                                              {8, 3}, {10, 5}, {12, 6},                      // B(1,j) → B(0,j)
                                              {0, 1}, {6, 13}};  // source → F(0,0), B(0,2) → sink
  EXPECT_EQ(got, want);
}

// An op type with durations [lo, hi] (one option per unit) and cost a·e^{−d/2}.
OpSpec Spec(int64_t lo, int64_t hi, double a) {
  OpSpec s;
  for (int64_t q = hi; q >= lo; --q) s.options.push_back({static_cast<int>(100 * q), 0, q, 0});
  s.fit = CostFit{a, -0.5, 0, 0, true};
  return s;
}

//          ┌─ A1 [1,3] a=10 ─ A2 [1,3] a=40 ─┐
//   source ┤                                 ├ sink
//          └────────── B [3,6] a=20 ─────────┘
Dag TwoChains() {
  Dag d;
  d.spec = {-1, 0, 1, 2, -1};
  d.stage = {-1, 0, 0, 1, -1};
  d.micro = {-1, 0, 1, 0, -1};
  d.backward = {false, false, false, false, false};
  d.from = {0, 1, 2, 0, 3};
  d.to = {1, 2, 4, 3, 4};
  d.source = 0;
  d.sink = 4;
  return d;
}

TEST(PerseusSolver, OneIterationCutsTheCheapestArcOfEachChain) {
  const Dag d = TwoChains();
  const std::vector<OpSpec> specs = {Spec(1, 3, 10), Spec(1, 3, 40), Spec(3, 6, 20)};
  std::vector<int64_t> dur = {0, 3, 3, 6, 0};  // both chains 6 long: all critical
  // Every op at its maximum: flow bounds [0, Δ+]. Max flow = min cut = Δ+(A1) + Δ+(B), the cut
  // through A1 (cheaper than A2) and B.
  double change = 0;
  ASSERT_TRUE(PdIteration(d, specs, &dur, &change));
  EXPECT_EQ(dur, (std::vector<int64_t>{0, 2, 3, 5, 0}));
  const double want = 10 * (std::exp(-1.0) - std::exp(-1.5)) + 20 * (std::exp(-2.5) - std::exp(-3.0));
  EXPECT_NEAR(change, want, 1e-9);
  EXPECT_EQ(CriticalPath(d, dur), 5);
}

TEST(PerseusSolver, CurveMatchesBruteForce) {
  const Dag d = TwoChains();
  const std::vector<OpSpec> specs = {Spec(1, 3, 10), Spec(1, 3, 40), Spec(3, 6, 20)};
  std::vector<PlanPoint> pts;
  int64_t t_min = 0;
  std::string err;
  ASSERT_TRUE(SolveTradeoff(d, specs, PerseusOptions(), &pts, &t_min, &err)) << err;
  EXPECT_EQ(t_min, 3);
  ASSERT_EQ(pts.size(), 3u);  // 6 → 5 → 4 → 3, the start not emitted
  for (size_t i = 0; i < pts.size(); ++i) {
    const int64_t T = pts[i].quant_time;
    EXPECT_EQ(T, 5 - static_cast<int64_t>(i));
    double best = 1e300;
    for (int64_t a1 = 1; a1 <= 3; ++a1)
      for (int64_t a2 = 1; a2 <= 3; ++a2)
        for (int64_t b = 3; b <= 6; ++b)
          if (std::max(a1 + a2, b) <= T)
            best = std::min(best, specs[0].Cost(a1) + specs[1].Cost(a2) + specs[2].Cost(b));
    EXPECT_NEAR(pts[i].cost, best, 1e-9) << "T=" << T;
    EXPECT_NEAR(pts[i].energy_j, pts[i].cost + 2 * pts[i].real_time_s * 70, 1e-9);
  }
  EXPECT_EQ(pts.back().mhz[3], 300);  // B at 3 units: the option of q 3
  EXPECT_EQ(PickPlan(pts, t_min, 1e-3, 0), 2);
  EXPECT_EQ(PickPlan(pts, t_min, 1e-3, 0.4), 1);  // real time <= 4.2 ms: the 4-unit point
}

// The 1F1B DAG of 2 stages × 2 microbatches (8 computations, 3 durations each): every point of the
// curve against the cheapest of all 3⁸ duration choices within its time.
TEST(PerseusSolver, OneFOneBCurveMatchesBruteForce) {
  const Dag d = OneFOneBDag(2, 2);
  const std::vector<OpSpec> specs = {Spec(2, 4, 30), Spec(4, 6, 50), Spec(3, 5, 20), Spec(5, 7, 80)};
  std::vector<PlanPoint> pts;
  int64_t t_min = 0;
  std::string err;
  ASSERT_TRUE(SolveTradeoff(d, specs, PerseusOptions(), &pts, &t_min, &err)) << err;
  ASSERT_FALSE(pts.empty());
  std::vector<int> ops;
  for (int v = 0; v < d.nodes(); ++v)
    if (d.spec[static_cast<size_t>(v)] >= 0) ops.push_back(v);
  std::vector<double> best(64, 1e300);  // by critical path
  std::vector<int64_t> dur(static_cast<size_t>(d.nodes()), 0);
  for (int code = 0; code < 6561; ++code) {
    double cost = 0;
    for (size_t i = 0, c = static_cast<size_t>(code); i < ops.size(); ++i, c /= 3) {
      const OpSpec& s = specs[static_cast<size_t>(d.spec[static_cast<size_t>(ops[i])])];
      dur[static_cast<size_t>(ops[i])] = s.min_q() + static_cast<int64_t>(c % 3);
      cost += s.Cost(dur[static_cast<size_t>(ops[i])]);
    }
    const int64_t t = CriticalPath(d, dur);
    for (int64_t u = t; u < 64; ++u) best[static_cast<size_t>(u)] = std::min(best[static_cast<size_t>(u)], cost);
  }
  EXPECT_EQ(pts.back().quant_time, t_min);
  for (const PlanPoint& p : pts) EXPECT_NEAR(p.cost, best[static_cast<size_t>(p.quant_time)], 1e-9) << p.quant_time;
}

}  // namespace
}  // namespace emo::perseus
