// adaptive_player_test.cc — EMO's online loop on synthetic iteration streams, worked out by hand:
// the window it plans from, the policy it plays, the drift that sends it back to the default clocks
// and a new window, a planner that fails, the guard, a window that spans a change, the plan limit,
// and a phase that comes back.
#include "apply/adaptive_player.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "fake_gpus.h"
#include "manual_host.h"

namespace emo {
namespace {

// One GPU drawing 200 W, a planner that records its windows and answers with `answers` in turn
// (an empty policy: "cannot plan"), iterations fed by duration.
struct Job {
  FakeGpus gpus{1, "A100-SXM4-80GB", {1005, 1200, 1410}, 100, 400};
  std::vector<PlanWindow> windows;  // one per planner call (re-searches repeat the window)
  std::vector<double> budgets;
  std::vector<FrequencyPolicy> answers;
  std::vector<std::string> said;
  double plan_ms = 0;             // how long each plan holds the host (seconds on hardware, none in the simulator)
  std::shared_future<void> hold;  // when valid, each plan waits for it (plans in the background)
  AdaptivePlayer player;
  ManualHost host{&player};
  double t_ns = 0;
  int next = 0;

  explicit Job(AdaptiveOptions o)
      : player(
            o, &gpus,
            [this](const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err) {
              if (hold.valid()) hold.wait();
              windows.push_back(w);
              budgets.push_back(budget);
              if (plan_ms > 0) host.AdvanceTo(host.NowNs() + plan_ms * kMs);
              const size_t k = windows.size() - 1;
              if (k >= answers.size() || answers[k].gpus.empty()) {
                *err = "no packs";
                return false;
              }
              *out = answers[k];
              return true;
            },
            [this](const std::string& line) { said.push_back(line); }) {}

  // Iteration `next` begins now; it lasts `ms`. n of them.
  void Run(int n, double ms) {
    for (int k = 0; k < n; ++k) {
      gpus.step = next;
      gpus.energy[0] = t_ns / 1e9 * 200;
      host.Iteration(t_ns);
      ++next;
      t_ns += ms * kMs;
    }
  }
  int Locks() const { return static_cast<int>(gpus.Sent(FakeGpus::Command::kLock, 0).size()); }
  int Resets() const { return static_cast<int>(gpus.Sent(FakeGpus::Command::kReset, 0).size()); }
};

AdaptiveOptions Options() {
  AdaptiveOptions o;
  o.budget = 0.05;
  o.settle = 1;
  o.window = 4;
  o.window_s = 0.3;
  o.reference = 3;
  o.drift = 0.1;
  o.streak = 3;
  return o;
}

FrequencyPolicy At1200() {
  FrequencyPolicy p;
  p.gpus.push_back({0, {{0, 1200}}});
  return p;
}

TEST(AdaptivePlayer, PlansFromAWindowPlaysAndReplansAfterDrift) {
  Job job(Options());
  job.answers = {At1200(), At1200()};
  // Iteration 0 settles; iterations 1-4 (100 ms each, 400 ms >= 300 ms) are the window, closed at
  // iteration 5's start; the plan comes at iteration 6's.
  job.Run(6, 100);
  EXPECT_TRUE(job.windows.empty());
  // Under the policy: 104.8 ms. Iteration 6 began at default clocks; 7-9 give the reference, known
  // at iteration 10's start: 4.8 % slower than the window, within the 5 % budget and using more
  // than 90 % of it, so that no other search is needed.
  job.Run(5, 104.8);  // iterations 6-10
  ASSERT_EQ(job.windows.size(), 1u);
  const PlanWindow& w = job.windows[0];
  EXPECT_EQ(w.first, 1);
  EXPECT_EQ(w.iterations, 4);
  EXPECT_DOUBLE_EQ(w.start_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(w.end_ns, 500 * kMs);
  ASSERT_EQ(w.energy_j.size(), 1u);
  EXPECT_NEAR(w.energy_j[0], 80, 1e-9);  // 200 W over 400 ms
  EXPECT_EQ(w.iteration_ms, (std::vector<double>{100, 100, 100, 100}));
  EXPECT_EQ(job.player.plans()[0].planned_at, 6);
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_DOUBLE_EQ(job.player.plans()[0].reference_ms, 104.8);
  EXPECT_EQ(job.budgets, (std::vector<double>{0.05}));
  // The work doubles from iteration 11: the starts of 12, 13 and 14 each end a 200 ms iteration,
  // the third in a row: at 14's start the clocks are reset and iteration 14 settles; 15-18 are the
  // next window, planned at 20's start.
  job.Run(10, 200);  // iterations 11-20
  EXPECT_EQ(job.player.plans()[0].drift_at, 14);
  EXPECT_EQ(job.player.plans()[0].guard_tripped_at, -1);
  EXPECT_EQ(job.Resets(), 1);
  EXPECT_EQ(job.gpus.Sent(FakeGpus::Command::kReset, 0)[0].step, 14);
  // One lock per iteration start played (6-13), each sent as the test moves time past it.
  EXPECT_EQ(job.Locks(), 8);
  ASSERT_EQ(job.windows.size(), 2u);
  EXPECT_EQ(job.windows[1].first, 15);
  EXPECT_EQ(job.windows[1].iterations, 4);
  EXPECT_EQ(job.windows[1].iteration_ms, (std::vector<double>{200, 200, 200, 200}));
  EXPECT_EQ(job.player.plans()[1].planned_at, 20);
  job.Run(1, 200);
  EXPECT_EQ(job.Locks(), 9);  // the second plan plays
  job.player.Finish();
  EXPECT_EQ(job.Resets(), 2);
  EXPECT_EQ(job.said.size(), 3u);  // plan, drift, plan
}

TEST(AdaptivePlayer, WithoutAPlanTheDefaultClocksStayUntilTheWorkChanges) {
  Job job(Options());
  job.answers = {FrequencyPolicy(), At1200()};
  job.Run(12, 100);
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_FALSE(job.player.plans()[0].ok);
  EXPECT_EQ(job.player.plans()[0].error, "no packs");
  EXPECT_EQ(job.said[0], "emo: iteration 6: no plan from iterations 1..4: no packs; default clocks");
  EXPECT_EQ(job.Locks(), 0);
  // 150 ms from iteration 12: drift from the window's 100 ms at the start of 15; 16-19 the window.
  job.Run(10, 150);  // iterations 12-21
  EXPECT_EQ(job.player.plans()[0].drift_at, 15);
  ASSERT_EQ(job.windows.size(), 2u);
  EXPECT_EQ(job.windows[1].first, 16);
  EXPECT_TRUE(job.player.plans()[1].ok);
  EXPECT_EQ(job.Resets(), 0);  // nothing was locked
}

// A policy checked within its budget (104.8 ms) whose iterations then slow to 108 ms (3 %: no
// drift): the guard's limit is 100 * (1 + 0.05 + 0.02) = 107 ms, five slow iterations in a row
// trip it.
TEST(AdaptivePlayer, TheGuardStopsAPolicyOverItsBudget) {
  Job job(Options());
  job.answers = {At1200()};
  job.Run(6, 100);
  job.Run(5, 104.8);  // iterations 6-10, checked at 10's start
  job.Run(6, 108);    // iterations 11-16: the starts of 12-16 end five slow iterations
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_EQ(job.player.plans()[0].guard_tripped_at, 16);
  EXPECT_EQ(job.player.plans()[0].drift_at, -1);
  EXPECT_EQ(job.Resets(), 1);
  const int locks = job.Locks();
  job.Run(10, 100);  // back at default clocks: one 108 ms iteration is no drift, nothing is sent
  EXPECT_EQ(job.Locks(), locks);
  EXPECT_EQ(job.windows.size(), 1u);
  EXPECT_NE(job.said.back().find("5 iterations in a row slower than 107.0 ms"), std::string::npos) << job.said.back();
}

// A window that sees the change starts again after it: a plan is made for one phase only.
TEST(AdaptivePlayer, AWindowSpanningAChangeStartsAgain) {
  Job job(Options());
  job.answers = {At1200()};
  job.Run(3, 100);  // 0 settles, the window starts at 1
  job.Run(8, 300);  // iteration 3 takes 300 ms: at 4's start the window restarts from 4
  ASSERT_EQ(job.windows.size(), 1u);
  EXPECT_EQ(job.windows[0].first, 4);
  EXPECT_EQ(job.windows[0].iteration_ms, (std::vector<double>{300, 300, 300, 300}));
}

TEST(AdaptivePlayer, AtMostMaxPlans) {
  AdaptiveOptions o = Options();
  o.max_plans = 1;
  Job job(o);
  job.answers = {At1200(), At1200()};
  job.Run(10, 100);
  job.Run(20, 200);  // drift, a window, but no second plan
  EXPECT_EQ(job.player.plans().size(), 1u);
  EXPECT_NE(job.said.back().find("1 plans made, the most allowed"), std::string::npos) << job.said.back();
  const size_t calls = job.windows.size();
  job.Run(10, 400);  // never again
  EXPECT_EQ(job.windows.size(), calls);
  EXPECT_EQ(job.player.plans().size(), 1u);
}

FrequencyPolicy At1005() {
  FrequencyPolicy p;
  p.gpus.push_back({0, {{0, 1005}}});
  return p;
}

// The checks (NextSearchBudget): a policy that leaves most of the budget unused is searched again
// higher, by the measured ratio damped: 0.05 * min(1.5, 1 + 0.7 (0.05 / 0.02 - 1)) = 0.075; the
// second, at 4.8 %, is kept.
TEST(AdaptivePlayer, APolicyUnderItsBudgetIsSearchedAgainHigher) {
  Job job(Options());
  job.answers = {At1200(), At1005()};
  job.Run(6, 100);
  job.Run(4, 102);    // iterations 6-9 under the first policy, checked at 10's start
  job.Run(5, 104.8);  // iterations 10-14 under the second: 11-13 its reference, checked at 14's start
  ASSERT_EQ(job.budgets.size(), 2u);
  EXPECT_NEAR(job.budgets[1], 0.075, 1e-12);
  const AdaptivePlayer::Plan& p = job.player.plans()[0];
  ASSERT_EQ(p.measured.size(), 2u);
  EXPECT_NEAR(p.measured[0], 0.02, 1e-12);
  EXPECT_NEAR(p.measured[1], 0.048, 1e-12);
  EXPECT_DOUBLE_EQ(p.reference_ms, 104.8);
  job.Run(1, 104.8);
  EXPECT_EQ(job.gpus.commands.back().value, 1005);  // the second plays
}

// One over the budget (8 %) is searched again lower, 0.05 * 0.05 / 0.08 * 0.9 = 0.028125; that one
// ran within (3 %), so the third search bisects the bracket: (0.028125 + 0.05) / 2. When it fails,
// the slowest policy within the budget is kept, here the second.
TEST(AdaptivePlayer, APolicyOverItsBudgetIsSearchedAgainLowerAndTheBestKept) {
  Job job(Options());
  job.answers = {At1200(), At1005()};
  job.Run(6, 100);
  job.Run(4, 108);  // iterations 6-9, checked at 10's start (no guard under checks)
  job.Run(5, 103);  // iterations 10-14, checked at 14's start: 3 % leaves a tenth of the budget unused
  ASSERT_EQ(job.budgets.size(), 3u);
  EXPECT_NEAR(job.budgets[1], 0.028125, 1e-12);
  EXPECT_NEAR(job.budgets[2], (0.028125 + 0.05) / 2, 1e-12);
  const AdaptivePlayer::Plan& p = job.player.plans()[0];
  EXPECT_EQ(p.searched.size(), 2u);  // the third search failed
  EXPECT_EQ(p.guard_tripped_at, -1);
  EXPECT_DOUBLE_EQ(p.reference_ms, 103);
  job.Run(1, 103);
  EXPECT_EQ(job.gpus.commands.back().value, 1005);
  // Every policy over the budget: the default clocks.
  Job over(Options());
  over.answers = {At1200(), At1005()};
  over.Run(6, 100);
  over.Run(4, 108);
  over.Run(5, 110);
  EXPECT_EQ(over.said.back(),
            "emo: iteration 14: no policy ran within the budget (2 searched): default clocks until "
            "the work changes");
  EXPECT_EQ(over.gpus.commands.back().what, FakeGpus::Command::kReset);
}

// A back end that refuses the clock commands: the loop stops sending after the first refusal.
TEST(AdaptivePlayer, ARefusedCommandEndsTheLoop) {
  Job job(Options());
  job.answers = {At1200()};
  job.gpus.refuse = true;
  job.Run(20, 100);
  EXPECT_EQ(job.player.error(), "no permission to change GPU 0");
  EXPECT_TRUE(job.gpus.commands.empty());
}

// The work comes back to a phase already planned for (training after an evaluation): once
// `streak` iterations of a new window match the first plan's window, its kept policy plays again,
// without a new plan or checks.
TEST(AdaptivePlayer, ResumesThePlanOfAPhaseThatComesBack) {
  Job job(Options());
  job.answers = {At1200()};
  job.Run(6, 100);    // 0 settles, 1-4 the window, planned at 6's start
  job.Run(5, 104.8);  // 6-10: the reference (+4.8 %), kept at 10's start
  ASSERT_DOUBLE_EQ(job.player.plans()[0].reference_ms, 104.8);
  // An evaluation: 50 ms iterations from 11; drift at 14's start (the ends of 11, 12 and 13), 14
  // settles, 15 opens a window of 50 ms iterations, which matches no plan.
  job.Run(6, 50);  // 11-16
  EXPECT_EQ(job.player.plans()[0].drift_at, 14);
  EXPECT_EQ(job.Locks(), 8);  // 6-13
  // Training again from 17: its 100 ms, known at 18's start, restart the window there; 18, 19 and
  // 20 match the plan's window (100 ms): at 21's start its policy plays again.
  job.Run(4, 100);                    // 17-20
  job.Run(3, 104.8);                  // 21-23
  EXPECT_EQ(job.windows.size(), 1u);  // the planner was not called again
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_EQ(job.player.plans()[0].resumed_at, (std::vector<int>{21}));
  EXPECT_EQ(job.Locks(), 10);  // 21 and 22 (23's is sent as time moves past it)
  // And a phase that matches no plan is planned as before.
  job.answers.push_back(At1200());
  job.Run(10, 200);  // 24-33: drift at 27's start, 27 settles, window 28-31, planned at 33's start
  EXPECT_EQ(job.windows.size(), 2u);
  EXPECT_EQ(job.player.plans().size(), 2u);
  EXPECT_EQ(job.player.plans()[0].drift_at, 27);
}

// On hardware a plan holds the host for a while (here 1 s, ten iterations): the iterations that
// began meanwhile arrive late and ran at default clocks, so they are not the policy's reference,
// and each plays only the clock in force by the time it arrives.
TEST(AdaptivePlayer, IterationsThatBeganWhileAPlanHeldTheHostAreNotThePolicys) {
  Job job(Options());
  job.plan_ms = 1000;
  FrequencyPolicy policy;  // 1200 MHz for the first 50 ms of each iteration, then 1005
  policy.gpus.push_back({0, {{0, 1200}, {50, 1005}}});
  job.answers = {policy};
  job.Run(7, 100);  // the plan at iteration 6's start (600 ms) holds the host until 1600 ms
  ASSERT_EQ(job.windows.size(), 1u);
  job.Run(9, 100);  // iterations 7-15, delivered late, ran at default clocks
  job.Run(5, 105);  // 16-20 under the policy: 5 % slower, from iteration 16 on
  const AdaptivePlayer::Plan& p = job.player.plans()[0];
  ASSERT_EQ(p.measured.size(), 1u);
  EXPECT_NEAR(p.measured[0], 0.05, 1e-9);  // 16-18 against the window's 100 ms, not 7-9's
  EXPECT_DOUBLE_EQ(p.reference_ms, 105);
  // Late starts (6-15) lock the clock in force when they arrive, 1005 MHz, and nothing else; 16 plays
  // the policy from its start. (Each lock is sent as the next iteration moves the test's time on.)
  std::vector<double> late, at16;
  for (const FakeGpus::Command& c : job.gpus.Sent(FakeGpus::Command::kLock, 0)) {
    if (c.step <= 16) late.push_back(c.value);
    if (c.step == 17) at16.push_back(c.value);
  }
  EXPECT_EQ(late, std::vector<double>(10, 1005));
  EXPECT_EQ(at16, (std::vector<double>{1200, 1005}));
}

// With plans in the background (as on hardware) nothing holds the host: the iterations that start
// while a plan runs arrive on time at default clocks, and the answer plays from the first start
// after it is back; a check's re-search runs the same way, at default clocks meanwhile.
TEST(AdaptivePlayer, PlansInTheBackgroundLeaveTheHostFree) {
  AdaptiveOptions o = Options();
  o.background = true;
  Job job(o);
  std::promise<void> release;
  job.hold = release.get_future().share();
  FrequencyPolicy at1005;
  at1005.gpus.push_back({0, {{0, 1005}}});
  job.answers = {At1200(), at1005};
  job.Run(10, 100);  // the plan is asked at iteration 6's start and held there; 6-9 run at default clocks
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_EQ(job.player.plans()[0].planned_at, 6);
  EXPECT_TRUE(job.gpus.Sent(FakeGpus::Command::kLock, 0).empty());
  release.set_value();
  job.player.WaitForSearch();
  ASSERT_EQ(job.windows.size(), 1u);
  EXPECT_EQ(job.windows[0].first, 1);
  EXPECT_EQ(job.windows[0].iterations, 4);
  // Iteration 10's start takes the answer and plays it; 11-13 are the reference (102 ms: +2 %, less
  // than 90 % of the 5 % budget), known at 14's start, which asks for a re-search.
  job.Run(5, 102);  // 10-14
  job.player.WaitForSearch();
  ASSERT_EQ(job.budgets.size(), 2u);
  EXPECT_GT(job.budgets[1], 0.05);
  ASSERT_EQ(job.player.plans()[0].measured.size(), 1u);
  EXPECT_NEAR(job.player.plans()[0].measured[0], 0.02, 1e-9);
  job.Run(2, 102);  // 15 takes the re-search's answer: 1005 MHz
  std::vector<std::pair<int, double>> locks;
  for (const FakeGpus::Command& c : job.gpus.Sent(FakeGpus::Command::kLock, 0)) locks.emplace_back(c.step, c.value);
  // Each lock is sent as the next iteration moves the test's time on: 10-13 at 1200 MHz (14 asked
  // for the re-search instead of playing), 15 at 1005.
  EXPECT_EQ(locks, (std::vector<std::pair<int, double>>{{11, 1200}, {12, 1200}, {13, 1200}, {14, 1200}, {16, 1005}}));
  const std::vector<FakeGpus::Command> resets = job.gpus.Sent(FakeGpus::Command::kReset, 0);
  ASSERT_FALSE(resets.empty());
  EXPECT_EQ(resets.front().step, 14);  // the policy under check left while the re-search ran
  job.player.Finish();
}

// A job that ends before its plan is back never plays it, and the report says so.
TEST(AdaptivePlayer, APlanBackAfterTheJobEndedIsReportedNotPlayed) {
  AdaptiveOptions o = Options();
  o.background = true;
  Job job(o);
  std::promise<void> release;
  job.hold = release.get_future().share();
  job.answers = {At1200()};
  job.Run(8, 100);  // asked at iteration 6's start; the job's last iteration is 7
  release.set_value();
  job.player.Finish();
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_FALSE(job.player.plans()[0].ok);
  EXPECT_EQ(job.player.plans()[0].error, "the job ended before its plan was back");
  EXPECT_EQ(job.said.back(), "emo: no plan from iterations 1..4: the job ended before its plan was back");
  EXPECT_TRUE(job.gpus.Sent(FakeGpus::Command::kLock, 0).empty());
}

}  // namespace
}  // namespace emo
