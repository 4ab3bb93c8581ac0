// static_frontier_test.cc — the static frontier that `emo bench` sets beside each method's saving:
// hand-computed shares of two static clocks on a small sweep.
#include <gtest/gtest.h>

#include "cli/sim_pipeline.h"

namespace emo {
namespace {

StaticPoint Point(int mhz, double slowdown, double saving) {
  StaticPoint p;
  p.mhz = mhz;
  p.measured.slowdown.mean = slowdown;
  p.measured.saving.mean = saving;
  return p;
}

TEST(StaticFrontier, SharesOfTwoClocksAtTheSlowdownGiven) {
  // B saves the most; C lies under the chord from A to B; D is slower than B and saves less.
  const std::vector<StaticPoint> sweep = {Point(1305, 0.01, 0.03), Point(1245, 0.05, 0.10), Point(1275, 0.03, 0.04),
                                          Point(1200, 0.08, 0.09)};
  // At 3 %: half the iterations at A, half at B: 0.03 + (0.10 - 0.03) / 2, above C's own 0.04.
  EXPECT_NEAR(*StaticFrontier(sweep, 0.03), 0.065, 1e-12);
  // Below A: a share of the default clocks (0, 0) and A.
  EXPECT_NEAR(*StaticFrontier(sweep, 0.005), 0.015, 1e-12);
  // Past B no share gains: D, slower, saves less.
  EXPECT_NEAR(*StaticFrontier(sweep, 0.06), 0.10, 1e-12);
  EXPECT_NEAR(*StaticFrontier(sweep, 0.2), 0.10, 1e-12);
  EXPECT_NEAR(*StaticFrontier(sweep, 0), 0, 1e-12);  // the default clocks
  EXPECT_FALSE(StaticFrontier(sweep, -0.001).has_value());
  EXPECT_FALSE(StaticFrontier({}, -0.001).has_value());
  EXPECT_NEAR(*StaticFrontier({}, 0.05), 0, 1e-12);
  // A clock measured faster than the default (run-to-run noise) counts at its own slowdown.
  EXPECT_NEAR(*StaticFrontier({Point(1395, -0.002, 0.01)}, -0.001), 0.01, 1e-12);
}

}  // namespace
}  // namespace emo
