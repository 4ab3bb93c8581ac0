// iteration_window_test.cc — KeepIterationWindow on a hand-made rank: which calls, GPU ops, syncs
// iterations and counter samples stay (worked out by hand below), and the error when the run is too
// short.
#include "trace/iteration_window.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace emo {
namespace {

// Four steps of 100 ns: step i spans [100 i, 100 i + 90]. In step i a launch (correlation 10 i + 1)
// at 100 i + 10 issues a kernel that runs [100 i + 50, 100 i + 120], past its step's end, and a
// stream sync (correlation 10 i + 2) at 100 i + 60. One copy with no known call starts at 205.
RankTrace FourSteps() {
  RankTrace r;
  for (int64_t i = 0; i < 4; ++i) {
    r.iterations.push_back({100 * i, 100 * i + 90, i});
    r.calls.push_back({100 * i + 10, 100 * i + 15, 10 * i + 1, 0});
    r.calls.push_back({100 * i + 60, 100 * i + 95, 10 * i + 2, 0});
    GpuOp k;
    k.start_ns = 100 * i + 50;
    k.end_ns = 100 * i + 120;
    k.correlation = 10 * i + 1;
    r.ops.push_back(k);
    SyncRecord s;
    s.correlation = 10 * i + 2;
    r.syncs.push_back(s);
  }
  GpuOp copy;
  copy.start_ns = 205;
  copy.end_ns = 210;
  copy.kind = GpuOpKind::kMemcpy;
  r.ops.push_back(copy);
  r.Finish();
  return r;
}

TEST(IterationWindow, KeepsTheStepsAndTheWorkTheyIssued) {
  RankTrace r = FourSteps();
  std::string err;
  ASSERT_TRUE(KeepIterationWindow(&r, 1, 2, &err)) << err;  // steps 1 and 2: [100, 290]
  ASSERT_EQ(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations[0].step, 1);
  EXPECT_EQ(r.iterations[1].step, 2);
  std::vector<int64_t> calls, ops, syncs;
  for (const CpuCall& c : r.calls) calls.push_back(c.correlation);
  for (const GpuOp& o : r.ops) ops.push_back(o.correlation);
  for (const SyncRecord& s : r.syncs) syncs.push_back(s.correlation);
  EXPECT_EQ(calls, (std::vector<int64_t>{11, 12, 21, 22}));
  // Step 0's kernel runs into step 1 [50, 120] but was issued before: gone. Step 2's runs past the
  // window's end [250, 320]: kept. The call-less copy at 205 is inside: kept.
  EXPECT_EQ(ops, (std::vector<int64_t>{11, -1, 21}));
  EXPECT_EQ(syncs, (std::vector<int64_t>{12, 22}));
  // Of the kernels cut, step 0's was launched before the window and step 3's after it.
  EXPECT_TRUE(r.windowed);
  EXPECT_EQ(r.kernels_before, 1);
}

// A clock read every 40 ns from 0: the window's work spans [100, 320] (step 2's kernel ends at
// 320), so the samples at 120-320 stay, with the one at 80 in force as the window begins.
TEST(IterationWindow, CounterTracksKeepTheWindowsSpanAndTheValueInForceAtItsStart) {
  RankTrace r = FourSteps();
  CounterTrack clock{0, "sm_clock", "MHz", {}, {}};
  for (int64_t t = 400; t >= 0; t -= 40) {  // in reverse, as a file may order them
    clock.t_ns.push_back(t);
    clock.value.push_back(static_cast<double>(1000 + t));
  }
  r.counters = {clock, CounterTrack{0, "power", "W", {350}, {250}}};
  std::string err;
  ASSERT_TRUE(KeepIterationWindow(&r, 1, 2, &err)) << err;
  EXPECT_EQ(r.counters[0].t_ns, (std::vector<int64_t>{80, 120, 160, 200, 240, 280, 320}));
  EXPECT_EQ(r.counters[0].value, (std::vector<double>{1080, 1120, 1160, 1200, 1240, 1280, 1320}));
  EXPECT_TRUE(r.counters[1].t_ns.empty());  // its one sample came after the window
}

TEST(IterationWindow, TooFewStepsLeaveTheRankAsItWas) {
  RankTrace r = FourSteps();
  std::string err;
  EXPECT_FALSE(KeepIterationWindow(&r, 3, 2, &err));
  EXPECT_EQ(err, "the trace has 4 iterations; 3 warm-up + 2 need 5");
  EXPECT_EQ(r.iterations.size(), 4u);
  EXPECT_EQ(r.calls.size(), 8u);
  EXPECT_EQ(r.ops.size(), 5u);
  EXPECT_FALSE(r.windowed);
}

}  // namespace
}  // namespace emo
