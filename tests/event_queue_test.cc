// event_queue_test.cc — the engine's event queue (sim/event_queue.h): events come out in time
// order, events at the same time in the order they were pushed, and a long random interleaving
// of pushes and pops agrees with a sorted reference.
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace emo::sim {
namespace {

// Pops every event: (t, seq, arg, a, type) in the order they come out.
std::vector<std::tuple<double, uint64_t, uint64_t, int32_t, uint8_t>> Drain(EventQueue* q) {
  std::vector<std::tuple<double, uint64_t, uint64_t, int32_t, uint8_t>> out;
  while (!q->empty()) {
    const Ev& e = q->top();
    out.emplace_back(e.t, e.seq, e.arg, e.a, e.type);
    q->pop();
  }
  return out;
}

TEST(EventQueue, PopsInTimeOrder) {
  EventQueue q;
  EXPECT_TRUE(q.empty());
  const double times[] = {50, 10, 40, 30, 20, 0, 60};
  uint64_t seq = 0;
  for (double t : times) q.push(t, seq++, static_cast<uint64_t>(t) * 7, static_cast<int32_t>(t) / 10, 3);
  EXPECT_EQ(q.size(), 7u);
  const auto out = Drain(&q);
  ASSERT_EQ(out.size(), 7u);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(std::get<0>(out[i]), 10.0 * static_cast<double>(i));
    EXPECT_EQ(std::get<2>(out[i]), 70 * i) << "the payload travels with its time";
    EXPECT_EQ(std::get<3>(out[i]), static_cast<int32_t>(i));
    EXPECT_EQ(std::get<4>(out[i]), 3);
  }
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, TiesPopInPushOrder) {
  EventQueue q;
  uint64_t seq = 0;
  // Three events at t=5 pushed between earlier and later ones: they keep their push order.
  q.push(5, seq++, 0, 100, 0);
  q.push(9, seq++, 0, 900, 0);
  q.push(5, seq++, 0, 101, 0);
  q.push(1, seq++, 0, 10, 0);
  q.push(5, seq++, 0, 102, 0);
  const auto out = Drain(&q);
  std::vector<int32_t> order;
  for (const auto& e : out) order.push_back(std::get<3>(e));
  EXPECT_EQ(order, (std::vector<int32_t>{10, 100, 101, 102, 900}));
}

TEST(EventQueue, ManyEventsMatchASortedReference) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> time(0, 999);  // few distinct times: many ties
  std::uniform_int_distribution<int> coin(0, 2);
  EventQueue q;
  std::vector<std::pair<double, uint64_t>> pending;  // reference: (t, seq)
  std::vector<std::pair<double, uint64_t>> got, want;
  uint64_t seq = 0;
  for (int step = 0; step < 200000; ++step) {
    if (pending.empty() || coin(rng) != 0) {  // push twice as often as pop
      const double t = time(rng);
      q.push(t, seq, seq * 3, static_cast<int32_t>(seq % 1000), static_cast<uint8_t>(seq % 7));
      pending.emplace_back(t, seq++);
    } else {
      auto first = std::min_element(pending.begin(), pending.end());
      want.push_back(*first);
      pending.erase(first);
      ASSERT_FALSE(q.empty());
      EXPECT_EQ(q.top().arg, q.top().seq * 3);
      got.emplace_back(q.top().t, q.top().seq);
      q.pop();
    }
    if (pending.size() > 2000) {  // keep the reference's linear scans cheap
      while (!pending.empty()) {
        auto first = std::min_element(pending.begin(), pending.end());
        want.push_back(*first);
        pending.erase(first);
        got.emplace_back(q.top().t, q.top().seq);
        q.pop();
      }
    }
  }
  std::sort(pending.begin(), pending.end());
  want.insert(want.end(), pending.begin(), pending.end());
  for (const auto& e : Drain(&q)) got.emplace_back(std::get<0>(e), std::get<1>(e));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace emo::sim
