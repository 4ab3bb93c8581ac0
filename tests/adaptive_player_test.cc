// adaptive_player_test.cc — EMO's online loop on synthetic iteration streams, worked out by hand:
// the window it plans from, the policy it plays, the drift that sends it back to the default clocks
// and a new window, a planner that fails, the guard, a window that spans a change, the plan limit.
#include "apply/adaptive_player.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_gpus.h"
#include "manual_host.h"

namespace emo {
namespace {

constexpr double kMs = 1e6;  // ns

// One GPU drawing 200 W, a planner that records its windows and answers with `answers` in turn
// (an empty policy: "cannot plan"), iterations fed by duration.
struct Job {
  FakeGpus gpus{1, "A100-SXM4-80GB", {1005, 1200, 1410}, 100, 400};
  std::vector<PlanWindow> windows;
  std::vector<FrequencyPolicy> answers;
  std::vector<std::string> said;
  AdaptivePlayer player;
  ManualHost host{&player};
  double t_ns = 0;
  int next = 0;

  explicit Job(AdaptiveOptions o)
      : player(
            o, &gpus,
            [this](const PlanWindow& w, FrequencyPolicy* out, std::string* err) {
              windows.push_back(w);
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
  // Under the policy: 104 ms. Iteration 6 began at default clocks; 7-9 give the reference, known
  // at iteration 10's start.
  job.Run(5, 104);  // iterations 6-10
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
  EXPECT_DOUBLE_EQ(job.player.plans()[0].reference_ms, 104);
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

// A policy 20 % slower than the window, steadily (no drift from its own reference): the guard's
// limit is 100 * (1 + 0.05 + 0.02) = 107 ms, five slow iterations in a row trip it.
TEST(AdaptivePlayer, TheGuardStopsAPolicyOverItsBudget) {
  Job job(Options());
  job.answers = {At1200()};
  job.Run(6, 100);
  job.Run(6, 120);  // iterations 6-11: the starts of 7-11 end five slow iterations
  ASSERT_EQ(job.player.plans().size(), 1u);
  EXPECT_EQ(job.player.plans()[0].guard_tripped_at, 11);
  EXPECT_EQ(job.player.plans()[0].drift_at, -1);
  EXPECT_EQ(job.Resets(), 1);
  const int locks = job.Locks();
  job.Run(10, 100);  // back at default clocks: one 120 ms iteration is no drift, nothing is sent
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
  EXPECT_EQ(job.windows.size(), 1u);
  EXPECT_NE(job.said.back().find("1 plans made, the most allowed"), std::string::npos) << job.said.back();
  job.Run(10, 400);  // never again
  EXPECT_EQ(job.windows.size(), 1u);
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

}  // namespace
}  // namespace emo
