// replay_test.cc — the forward/backward passes and what-if on hand-built graphs.
#include "graph/replay.h"

#include <gtest/gtest.h>

namespace emo {
namespace {

// Builds a Graph from an edge list; node ids must already be topological.
Graph MakeGraph(std::vector<double> dur, std::vector<double> anchor,
                std::vector<std::tuple<uint32_t, uint32_t, float>> edges) {
  Graph g;
  size_t n = dur.size();
  g.kind.assign(n, NodeKind::kKernel);
  g.rank.assign(n, 0);
  g.lane.assign(n, 0);
  g.name.assign(n, 0);
  g.source.assign(n, -1);
  g.duration = dur;
  g.anchor = anchor;
  g.observed_start.assign(n, 0);
  g.observed_end.assign(n, 0);
  g.pred_begin.assign(n + 1, 0);
  std::sort(edges.begin(), edges.end(), [](auto& a, auto& b) { return std::get<1>(a) < std::get<1>(b); });
  for (auto& [from, to, lat] : edges) {
    ++g.pred_begin[to + 1];
    g.pred.push_back(from);
    g.pred_latency.push_back(lat);
    g.pred_kind.push_back(EdgeKind::kStream);
  }
  for (size_t i = 0; i < n; ++i) g.pred_begin[i + 1] += g.pred_begin[i];
  return g;
}

//      0 (10) ──► 1 (5) ──► 3 (2)
//        └──+1──► 2 (20) ───┘
// C0 = 10, C1 = 15, C2 = 10 + 1 + 20 = 31, C3 = 31 + 2 = 33. Critical path 0 -> 2 -> 3.
// Latest finishes with end 33: L3 = 33, L2 = 31, L1 = 31, L0 = min(31-5, 31-20-1) = 10.
TEST(Replay, DiamondCompletionCriticalPathAndSlack) {
  Graph g =
      MakeGraph({10, 5, 20, 2}, {0, kNoAnchor, kNoAnchor, kNoAnchor}, {{0, 1, 0}, {0, 2, 1}, {1, 3, 0}, {2, 3, 0}});
  std::vector<double> c(4), l(4);
  std::vector<uint32_t> crit(4);
  double end = Replay(g, g.duration, c, crit);
  EXPECT_DOUBLE_EQ(end, 33);
  EXPECT_EQ(c, (std::vector<double>{10, 15, 31, 33}));
  EXPECT_EQ(CriticalPath(c, crit), (std::vector<uint32_t>{0, 2, 3}));
  LatestFinish(g, g.duration, end, l);
  EXPECT_EQ(l, (std::vector<double>{10, 31, 31, 33}));
  EXPECT_DOUBLE_EQ(l[1] - c[1], 16);  // node 1 has 16 ns of slack
}

// An anchored node starts no earlier than its anchor even with an early predecessor.
TEST(Replay, AnchorDelaysStart) {
  Graph g = MakeGraph({1, 1}, {0, 50}, {{0, 1, 0}});
  std::vector<double> c(2);
  std::vector<uint32_t> crit(2);
  EXPECT_DOUBLE_EQ(Replay(g, g.duration, c, crit), 51);
  EXPECT_EQ(crit[1], kNoPred);
}

// What-if: slowing the off-critical node 1 within its slack leaves the end time; slowing it
// beyond moves the end; energies are summed with the overrides.
TEST(Replay, WhatIfSubsetChanges) {
  Graph g =
      MakeGraph({10, 5, 20, 2}, {0, kNoAnchor, kNoAnchor, kNoAnchor}, {{0, 1, 0}, {0, 2, 1}, {1, 3, 0}, {2, 3, 0}});
  WhatIf w(g, {1.0, 2.0, 3.0, 4.0});
  auto base = w.Evaluate({});
  EXPECT_DOUBLE_EQ(base.end, 33);
  EXPECT_DOUBLE_EQ(base.energy, 10);
  WhatIf::Change within{1, 21, 1.5};
  auto r1 = w.Evaluate(std::span(&within, 1));
  EXPECT_DOUBLE_EQ(r1.end, 33);
  EXPECT_DOUBLE_EQ(r1.energy, 9.5);
  WhatIf::Change beyond{1, 30, 1.0};
  auto r2 = w.Evaluate(std::span(&beyond, 1));
  EXPECT_DOUBLE_EQ(r2.end, 10 + 30 + 2);
  EXPECT_DOUBLE_EQ(r2.energy, 9.0);
  // Changes do not stick between evaluations.
  EXPECT_DOUBLE_EQ(w.Evaluate({}).end, 33);
}

}  // namespace
}  // namespace emo
