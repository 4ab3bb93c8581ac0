// realtime_host_test.cc — controllers in wall-clock time: ticks at their period, iteration starts
// in order, timers in time order, Finish once on Stop; and the policy player driving a GPU through
// it as it would on hardware. Only orderings and lower bounds are asserted, never how fast a
// loaded machine runs the thread.
#include "apply/realtime_host.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "apply/policy_player.h"
#include "fake_gpus.h"

namespace emo {
namespace {

class Recorder : public Controller {
 public:
  double PeriodMs() const override { return 2; }
  void OnIterationStart(int iteration, double now_ns) override { iterations.push_back({iteration, now_ns}); }
  void Tick(double now_ns) override {
    ticks.push_back(now_ns);
    ++n_ticks;
  }
  void Finish() override { ++finished; }
  std::vector<std::pair<int, double>> iterations;
  std::vector<double> ticks;
  int finished = 0;
  std::atomic<int> n_ticks{0};
};

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Waits (up to 10 s, for a loaded machine) until done() holds.
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 10000 && !done(); ++i) SleepMs(1);
  return done();
}

TEST(RealtimeHost, TicksIterationsTimersAndFinish) {
  Recorder r;
  std::vector<std::pair<int, double>> fired;  // (timer id, time run); read after Stop()
  std::atomic<int> n_fired{0};
  {
    RealtimeHost host;
    host.Add(&r);
    host.Start();
    SleepMs(10);
    for (int i = 0; i < 3; ++i) {
      host.IterationStart();
      SleepMs(3);
    }
    const double t = host.NowNs() + 4e6;
    host.At(t, [&](double now) { fired.push_back({1, now}), ++n_fired; });
    host.At(t - 2e6, [&](double now) { fired.push_back({0, now}), ++n_fired; });
    host.At(t, [&](double now) { fired.push_back({2, now}), ++n_fired; });
    EXPECT_TRUE(WaitFor([&] { return n_fired == 3 && r.n_ticks >= 3; }));
    host.Stop();
    EXPECT_EQ(r.finished, 1);
    host.Stop();  // idempotent; the destructor stops nothing more
  }
  EXPECT_EQ(r.finished, 1);
  ASSERT_GE(r.ticks.size(), 3u);
  for (size_t i = 1; i < r.ticks.size(); ++i) EXPECT_GT(r.ticks[i], r.ticks[i - 1]);
  // The k-th tick never comes before its slot on the 2 ms schedule.
  EXPECT_GE(r.ticks.back(), 2e6 * static_cast<double>(r.ticks.size() - 1));
  ASSERT_EQ(r.iterations.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.iterations[static_cast<size_t>(i)].first, i);
  EXPECT_LT(r.iterations[0].second, r.iterations[1].second);
  ASSERT_EQ(fired.size(), 3u);
  EXPECT_EQ(fired[0].first, 0);  // the earliest first, then equal times in the order given
  EXPECT_EQ(fired[1].first, 1);
  EXPECT_EQ(fired[2].first, 2);
  EXPECT_GE(fired[0].second, r.iterations[2].second + 2e6);  // not before its time
}

TEST(RealtimeHost, PlaysAPolicyAndResetsTheClockOnStop) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1410}, 100, 500);
  FrequencyPolicy policy;
  policy.gpus.push_back({0, {{0, 1410}, {1, 1005}}});
  PolicyPlayer player(policy, &gpus);
  RealtimeHost host;
  host.Add(&player);
  host.Start();
  host.IterationStart();
  // Poll the commands on the host thread (the fake is not thread-safe) until both changes are in.
  std::atomic<bool> both_sent{false};
  std::function<void(double)> check = [&](double now) {
    if (gpus.commands.size() >= 2)
      both_sent = true;
    else
      host.At(now + 1e6, check);
  };
  host.At(2e6, check);
  EXPECT_TRUE(WaitFor([&] { return both_sent.load(); }));
  host.Stop();
  ASSERT_EQ(gpus.commands.size(), 3u);
  EXPECT_EQ(gpus.commands[0].value, 1410);
  EXPECT_EQ(gpus.commands[1].value, 1005);
  EXPECT_EQ(gpus.commands[2].what, FakeGpus::Command::kReset);
}

// A controller that holds the thread (a plan of the online loop takes seconds on hardware): the
// iteration starts reported meanwhile, up to the job's end, still reach every controller before
// Finish, with the times they were reported at.
TEST(RealtimeHost, DeliversEveryIterationReportedBeforeStop) {
  class Slow : public Recorder {
   public:
    double PeriodMs() const override { return -1; }
    void OnIterationStart(int iteration, double now_ns) override {
      Recorder::OnIterationStart(iteration, now_ns);
      if (iteration == 0) SleepMs(200);
    }
  };
  Slow slow;
  RealtimeHost host;
  host.Add(&slow);
  host.Start();
  std::vector<double> reported;
  for (int i = 0; i < 4; ++i) {
    reported.push_back(host.NowNs());
    host.IterationStart();
    SleepMs(5);
  }
  host.Stop();  // while the first iteration's call still sleeps
  ASSERT_EQ(slow.iterations.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(slow.iterations[i].first, i);
    EXPECT_GE(slow.iterations[i].second, reported[i]);
    EXPECT_LT(slow.iterations[i].second, reported[i] + 100e6) << "stamped when reported, not when delivered";
  }
  EXPECT_EQ(slow.finished, 1);
}

}  // namespace
}  // namespace emo
