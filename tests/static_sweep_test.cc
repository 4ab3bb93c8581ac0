// static_sweep_test.cc — static-clock sweeps over seeds: the default point first and paired per
// seed, slowdown growing as the clock falls, spreads from the run-to-run variation, the best clock
// within each budget, and the clock lists and errors.
#include "sim/static_sweep.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/workload.h"

namespace emo::sim {
namespace {

// A small compute-bound TP-2 step, run long enough (5 s) that the energy counter's 100 ms steps
// cost under 1 % of each window's energy.
Program SmallTp() {
  nlohmann::json s;
  s["kind"] = "tp";
  s["name"] = "sweep-tp";
  s["device"] = "a100";
  s["model"] = {{"layers", 2}, {"hidden", 4096}, {"heads", 32}, {"seq", 1024}, {"batch", 2}, {"vocab", 32000}};
  s["parallel"] = {{"tp", 2}};
  Program p;
  std::string err;
  EXPECT_TRUE(BuildWorkload(s, &p, &err)) << err;
  return p;
}

TEST(StaticSweep, PointsSlowdownsAndBestClocks) {
  const Program p = SmallTp();
  std::vector<StaticPoint> points;
  std::string err;
  // How many iterations make a 5 s window.
  ASSERT_TRUE(SweepStaticClocks(p, {}, {1}, 3, 1, &points, &err)) << err;
  const int iterations = 1 + static_cast<int>(5000 / points[0].iteration_ms.mean) + 1;
  ASSERT_TRUE(SweepStaticClocks(p, {1410, 1200, 1005, 810}, {1, 2, 3}, iterations, 1, &points, &err)) << err;
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(points[0].mhz, 0);
  EXPECT_EQ(points[0].slowdown.mean, 0);  // paired with itself, seed by seed
  EXPECT_EQ(points[0].saving.max, 0);
  EXPECT_LT(points[0].counter_error, 0.01);
  EXPECT_GT(points[0].iteration_ms.stdev, 0);  // runs differ
  EXPECT_EQ(points[1].mhz, 1410);
  EXPECT_NEAR(points[1].slowdown.mean, 0, 0.01);  // the default governor runs at 1410 MHz
  for (size_t i = 2; i < points.size(); ++i) {
    EXPECT_GT(points[i].slowdown.mean, points[i - 1].slowdown.mean) << points[i].mhz;
    EXPECT_GE(points[i].slowdown.min, 0) << points[i].mhz;
  }
  EXPECT_GT(points.back().saving.mean, 0.05);  // compute-bound: lower clocks save energy
  const StaticPoint* b0 = BestStaticClock(points, 0.0);
  const StaticPoint* b5 = BestStaticClock(points, 0.05);
  const StaticPoint* b100 = BestStaticClock(points, 1.0);
  ASSERT_TRUE(b0 && b5 && b100);
  EXPECT_LE(b0->slowdown.mean, 0.0);
  EXPECT_LE(b5->slowdown.mean, 0.05);
  EXPECT_GE(b5->saving.mean, b0->saving.mean);
  EXPECT_GE(b100->saving.mean, b5->saving.mean);
  EXPECT_EQ(BestStaticClock({}, 0.05), nullptr);
}

TEST(StaticSweep, BadArguments) {
  const Program p = SmallTp();
  std::vector<StaticPoint> points;
  std::string err;
  EXPECT_FALSE(SweepStaticClocks(p, {1411}, {1}, 3, 1, &points, &err));
  EXPECT_NE(err.find("1411 MHz"), std::string::npos) << err;
  EXPECT_FALSE(SweepStaticClocks(p, {1410}, {}, 3, 1, &points, &err));
  EXPECT_FALSE(SweepStaticClocks(p, {1410}, {1}, 3, 3, &points, &err));
}

TEST(StaticSweep, ClockLists) {
  std::vector<int> mhz;
  std::string err;
  ASSERT_TRUE(SweepClockList("A100-SXM4-80GB", "all", &mhz, &err)) << err;
  EXPECT_EQ(mhz.size(), 81u);
  ASSERT_TRUE(SweepClockList("a100", "", &mhz, &err)) << err;
  ASSERT_GE(mhz.size(), 2u);
  EXPECT_EQ(mhz.front(), 1410);
  EXPECT_EQ(mhz[1], 1320);
  EXPECT_EQ(mhz.back(), 210);
  ASSERT_TRUE(SweepClockList("RTX3080Ti", "all", &mhz, &err)) << err;
  EXPECT_EQ(mhz.back(), 1950);  // nothing above the boost ceiling
  ASSERT_TRUE(SweepClockList("a100", "1410,1005", &mhz, &err)) << err;
  EXPECT_EQ(mhz, (std::vector<int>{1410, 1005}));
  EXPECT_FALSE(SweepClockList("a100", "1410,fast", &mhz, &err));
  EXPECT_NE(err.find("'fast'"), std::string::npos) << err;
  EXPECT_FALSE(SweepClockList("a100", "1500", &mhz, &err));
  EXPECT_FALSE(SweepClockList("v100", "all", &mhz, &err));
}

}  // namespace
}  // namespace emo::sim
