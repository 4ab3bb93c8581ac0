// performance_guard_test.cc — the performance guard of `emo run --policy` on synthetic step
// streams: the reference it measures, the iteration that trips it, and the policy player under it
// (a job that slows down under the policy gets its clocks reset and the policy stopped; a job within
// its budget keeps the policy to the end).
#include "apply/performance_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "apply/policy_player.h"
#include "fake_gpus.h"
#include "manual_host.h"

namespace emo {
namespace {

// Feeds iteration starts `ms` apart (the first at 0); returns the start times.
std::vector<double> Feed(PerformanceGuard* g, const std::vector<double>& ms, double t0 = 0) {
  std::vector<double> starts{t0};
  g->OnIterationStart(t0);
  for (double d : ms) {
    starts.push_back(starts.back() + d * kMs);
    g->OnIterationStart(starts.back());
  }
  return starts;
}

TEST(PerformanceGuard, MeasuresTheReferenceAsTheMedianAfterTheFirstIteration) {
  PerformanceGuard g(0.05, 0);
  EXPECT_EQ(g.state(), PerformanceGuard::State::kMeasuring);
  // Iteration 0 (start-up, 900 ms) is left out; of 1..5 the median is 101 (one 400 ms outlier).
  Feed(&g, {900, 100, 98, 400, 102, 101});
  EXPECT_EQ(g.iterations(), 7);
  ASSERT_EQ(g.state(), PerformanceGuard::State::kWatching);
  EXPECT_TRUE(g.reference_measured());
  EXPECT_DOUBLE_EQ(g.reference_ms(), 101);
  EXPECT_DOUBLE_EQ(g.limit_ms(), 101 * (1 + 0.05 + kGuardSlowMargin));
  EXPECT_NE(g.Describe().find("median of iterations 1-5"), std::string::npos) << g.Describe();
}

TEST(PerformanceGuard, PlaysFromTheStartThatEndsTheReference) {
  PerformanceGuard g(0.05, 0);
  g.OnIterationStart(0);
  for (int i = 1; i <= kGuardReferenceSkip + kGuardReferenceIterations; ++i) {
    EXPECT_FALSE(g.playing()) << "iteration " << i - 1;
    g.OnIterationStart(i * 100 * kMs);
  }
  EXPECT_TRUE(g.playing());  // iteration 6 is the first under the policy
}

TEST(PerformanceGuard, TripsOnTheFifthSlowIterationInARow) {
  PerformanceGuard g(0.05, 100);  // given: watching from the first iteration; limit 107 ms
  EXPECT_TRUE(g.playing());
  EXPECT_DOUBLE_EQ(g.limit_ms(), 107);
  Feed(&g, {106, 120, 130, 125, 140});  // four slow after one within the limit
  EXPECT_TRUE(g.playing());
  EXPECT_EQ(g.slow_ms().size(), 4u);
  g.OnIterationStart((106 + 120 + 130 + 125 + 140 + 108) * kMs);  // the fifth slow one ends: trips
  EXPECT_EQ(g.state(), PerformanceGuard::State::kTripped);
  EXPECT_FALSE(g.playing());
  EXPECT_EQ(g.tripped_at(), 6);
  EXPECT_EQ(g.slow_ms(), (std::vector<double>{120, 130, 125, 140, 108}));
  g.OnIterationStart(1e12);  // and stays tripped
  EXPECT_EQ(g.state(), PerformanceGuard::State::kTripped);
  const nlohmann::ordered_json j = g.Json();
  EXPECT_EQ(j["state"], "tripped");
  EXPECT_EQ(j["reference"], "policy");
  EXPECT_EQ(j["tripped_at_iteration"], 6);
  EXPECT_NE(g.Describe().find("5 iterations in a row over the limit"), std::string::npos) << g.Describe();
}

TEST(PerformanceGuard, AFastIterationBreaksTheStreak) {
  PerformanceGuard g(0.05, 100);
  Feed(&g, {150, 150, 150, 150, 100, 150, 150, 150, 150, 106.9});  // 106.9 is within the 107 ms limit
  EXPECT_TRUE(g.playing());
  EXPECT_TRUE(g.slow_ms().empty());
}

TEST(PerformanceGuard, IterationsAtDefaultClocksNeverCount) {
  // Iterations 4 and 5 are slow while the reference is measured (its median stays 100 ms); had
  // they counted, the three slow ones under the policy would make five in a row.
  PerformanceGuard g(0, 0);
  const std::vector<double> starts = Feed(&g, {100, 100, 100, 100, 300, 300, 103, 103, 103});
  ASSERT_TRUE(g.playing());
  EXPECT_DOUBLE_EQ(g.reference_ms(), 100);
  EXPECT_EQ(g.slow_ms().size(), 3u);  // limit 102 ms
  g.OnIterationStart(starts.back() + 103 * kMs);
  EXPECT_TRUE(g.playing());
  g.OnIterationStart(starts.back() + 206 * kMs);
  EXPECT_EQ(g.state(), PerformanceGuard::State::kTripped);
}

// GPU 0: 1005 MHz at the start of each iteration, 1200 MHz 150 ms into it (in the next iteration
// when iterations are shorter: pending when the guard trips).
FrequencyPolicy TwoChangePolicy() {
  FrequencyPolicy p;
  p.gpus.push_back({0, {{0, 1005}, {150, 1200}}});
  return p;
}

TEST(PolicyPlayerGuard, AJobThatSlowsDownUnderThePolicyGetsItsClocksReset) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1200, 1410}, 100, 400);
  PolicyPlayer player(TwoChangePolicy(), &gpus);
  std::vector<std::string> said;
  player.Guard(PerformanceGuard(0.05, 0), [&](const std::string& line) { said.push_back(line); });
  ManualHost host(&player);
  // Seven starts 100 ms apart at default clocks: nothing is sent; the reference is 100 ms, and
  // iteration 6 (from 600 ms) is the first under the policy.
  for (int i = 0; i <= 6; ++i) host.Iteration(i * 100 * kMs);
  EXPECT_TRUE(gpus.commands.empty());
  ASSERT_EQ(said.size(), 1u);
  // Under the policy the job takes 130 ms per iteration (limit 107 ms): the guard trips at the
  // start that ends the fifth, iteration 11's, and resets GPU 0 at once.
  double t = 600 * kMs;
  for (int i = 7; i <= 11; ++i) host.Iteration(t += 130 * kMs);
  ASSERT_NE(player.guard(), nullptr);
  EXPECT_EQ(player.guard()->state(), PerformanceGuard::State::kTripped);
  EXPECT_EQ(player.guard()->tripped_at(), 11);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[1].find("policy stopped and default clocks restored at iteration 11"), std::string::npos) << said[1];
  const auto locks = gpus.Sent(FakeGpus::Command::kLock, 0);
  const auto resets = gpus.Sent(FakeGpus::Command::kReset, 0);
  EXPECT_EQ(std::count_if(locks.begin(), locks.end(), [](const auto& c) { return c.value == 1005; }), 5);
  EXPECT_EQ(std::count_if(locks.begin(), locks.end(), [](const auto& c) { return c.value == 1200; }), 4);
  ASSERT_EQ(resets.size(), 1u);
  EXPECT_EQ(gpus.commands.back().what, FakeGpus::Command::kReset);
  // Iteration 10's 1200 MHz change was pending at the trip: dropped. Nothing more is sent, not in
  // later iterations and not at the end (the clocks are already reset).
  const size_t sent = gpus.commands.size();
  for (int i = 12; i < 20; ++i) host.Iteration(t += 100 * kMs);
  host.AdvanceTo(t + 1000 * kMs);
  player.Finish();
  EXPECT_EQ(gpus.commands.size(), sent);
  EXPECT_TRUE(player.error().empty());
}

TEST(PolicyPlayerGuard, AJobWithinItsBudgetKeepsThePolicy) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1200, 1410}, 100, 400);
  PolicyPlayer player(TwoChangePolicy(), &gpus);
  player.Guard(PerformanceGuard(0.05, 100), nullptr);  // the policy's own reference: plays at once
  ManualHost host(&player);
  // 104 ms per iteration (4 % slower), with a 300 ms iteration every seventh (a checkpoint).
  double t = 0;
  for (int i = 0; i < 40; ++i) {
    host.Iteration(t);
    t += (i % 7 == 6 ? 300 : 104) * kMs;
  }
  host.AdvanceTo(t + 1000 * kMs);
  EXPECT_TRUE(player.guard()->playing());
  EXPECT_EQ(gpus.Sent(FakeGpus::Command::kLock, 0).size(), 80u);  // both changes of all 40 iterations
  EXPECT_TRUE(gpus.Sent(FakeGpus::Command::kReset, 0).empty());
  player.Finish();
  EXPECT_EQ(gpus.commands.back().what, FakeGpus::Command::kReset);
}

TEST(PolicyPlayerGuard, AResetThatFailsAtTheTripIsRetriedAtTheEnd) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1200, 1410}, 100, 400);
  PolicyPlayer player(TwoChangePolicy(), &gpus);
  player.Guard(PerformanceGuard(0, 100), nullptr);
  ManualHost host(&player);
  double t = 0;
  for (int i = 0; i < 5; ++i, t += 200 * kMs) host.Iteration(t);
  host.AdvanceTo(t);
  gpus.refuse = true;
  host.Iteration(t);  // trips; the reset is refused
  EXPECT_EQ(player.guard()->state(), PerformanceGuard::State::kTripped);
  EXPECT_EQ(player.error(), "no permission to change GPU 0");
  gpus.refuse = false;
  player.Finish();
  EXPECT_EQ(gpus.commands.back().what, FakeGpus::Command::kReset);
}

}  // namespace
}  // namespace emo
