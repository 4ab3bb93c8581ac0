// predict_test.cc — the prediction pass on hand-built packed graphs (times and energies worked by
// hand), and on a simulated trace against the unpacked graph's what-if.
#include "model/predict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <random>

#include "cli/model_pipeline.h"
#include "graph/builder.h"
#include "graph/replay.h"
#include "packed_graph.h"
#include "search_instances.h"
#include "sim/engine.h"
#include "sim/workload.h"
#include "simulated_instance.h"

namespace emo {
namespace {

// CPU call 0 (1 µs, anchored at 0) launches kernel 1 (10 ms), then kernel 2 (10 ms) follows on the
// stream; each kernel is a pack. Clocks {1000, 2000} MHz, default 2000: a pack takes 10 ms and 3 J
// at 2000 MHz, 20 ms and 2 J at 1000 MHz. Idle power 100 W at 2000 MHz, 50 W at 1000 MHz.
PredictorInput TwoPacks(const PackedGraph& pg, double measured_j) {
  PredictorInput in;
  in.graph = &pg.g;
  in.packing = &pg.p;
  in.clocks_mhz = {1000, 2000};
  in.default_clock = 1;
  in.pack_time_s = {0.02, 0.01, 0.02, 0.01};
  in.pack_energy_j = {2, 3, 2, 3};
  in.idle_power_w = {50, 100};
  in.iteration_start_ns = {0};
  in.measured_energy_j = {measured_j};
  return in;
}

TEST(Predict, DefaultScheduleReproducesTheMeasuredRun) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});
  // Base: end 20.001 ms; packs 6 J, of which 2 J idle power (100 W for 2 x 10 ms) and 4 J dynamic;
  // outside packs 1 µs at 100 W = 1e-4 J. Measured 6.6001 J: the dynamic energy is scaled by
  // (6.6001 - 1e-4 - 2) / 4 = 1.15.
  Predictor p;
  std::string err;
  ASSERT_TRUE(p.Init(TwoPacks(pg, 6.6001), &err)) << err;
  EXPECT_NEAR(p.base().end_ns, 20.001e6, 1e-3);
  EXPECT_NEAR(p.base().energy_j, 6.6001, 1e-9);
  EXPECT_NEAR(p.energy_scale()[0], 1.15, 1e-9);
  EXPECT_FALSE(p.energy_scale_clamped()[0]);
}

TEST(Predict, ALandingChangesThePacksThatStartAfterIt) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});
  Predictor p;
  std::string err;
  ASSERT_TRUE(p.Init(TwoPacks(pg, 6.0001), &err)) << err;  // scale 1
  // 1000 MHz lands at 5 ms: pack 0 started at 1 µs (default clock, 10 ms), pack 1 starts at
  // 10.001 ms at 1000 MHz (20 ms). End 30.001 ms. Energy: packs 3 + 2 J; outside packs the union
  // at default (20 ms) scaled by the packs' time (30/20) leaves 1 µs, at the schedule's mean idle
  // power over the 20.001 ms period: the landing's clock is carried from 0 to 5 ms too, so 50 W.
  const Predictor::Result r = p.Run({{{5e6, 0}}});
  EXPECT_NEAR(r.end_ns, 30.001e6, 1e-3);
  EXPECT_NEAR(r.energy_j, 5 + 50 * 1e-6, 1e-9);
  // Landing after the second pack started changes nothing.
  EXPECT_NEAR(p.Run({{{10.5e6, 0}}}).end_ns, 20.001e6, 1e-3);
  // Both packs at 1000 MHz: a landing at 0.
  EXPECT_NEAR(p.Run({{{0, 0}}}).end_ns, 40.001e6, 1e-3);
}

// With split_at_landings the same landing at 5 ms falls inside pack 0 (1 µs to 10.001 ms): its
// first 4.999 ms are 0.4999 of its work at the default clock, the other 0.5001 take 10.002 ms at
// 1000 MHz; it ends at 15.002 ms, and pack 1 takes 20 ms to 35.002 ms. Energy: pack 0 0.4999 × 3 J
// + 0.5001 × 2 J = 2.4999 J, pack 1 2 J; the packs' time is 35.001 ms, which leaves 1 µs outside
// them, at 50 W as above. A landing at 10.5 ms slows pack 1 from there: 0.0499 of it done, the
// rest 19.002 ms, to 29.502 ms. Without the split it changed nothing.
TEST(Predict, SplitAtLandingsALandingInsideAKernelSlowsTheRestOfIt) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});
  Predictor p;
  std::string err;
  PredictorInput in = TwoPacks(pg, 6.0001);
  in.split_at_landings = true;
  ASSERT_TRUE(p.Init(in, &err)) << err;
  const Predictor::Result r = p.Run({{{5e6, 0}}});
  EXPECT_NEAR(r.end_ns, 35.002e6, 1e-3);
  EXPECT_NEAR(r.energy_j, 2.4999 + 2 + 50 * 1e-6, 1e-9);
  EXPECT_NEAR(p.Run({{{10.5e6, 0}}}).end_ns, 29.502e6, 1e-3);
  // Both at 1000 MHz from 0 and back to the default at 30 ms, 9.999 ms into pack 1 (20.001 ms to
  // 40.001 ms at 1000 MHz): 0.49995 of it done, the rest 5.0005 ms at the default, to 35.0005 ms.
  EXPECT_NEAR(p.Run({{{0, 0}, {30e6, 1}}}).end_ns, 35.0005e6, 1e-3);
  // Landings before, between or after the kernels: as without the split.
  EXPECT_NEAR(p.Run({{{0, 0}}}).end_ns, 40.001e6, 1e-3);
  EXPECT_NEAR(p.Run({{{30e6, 0}}}).end_ns, 20.001e6, 1e-3);
  EXPECT_NEAR(p.base().energy_j, 6.0001, 1e-9);
}

// The iteration began 1 s before the graph's origin (host work before the first CUDA call): the
// GPU idles from then on. Unlocked (an empty schedule), its gaps draw the idle power the traced
// run showed (30 W: the driver had lowered the idle clock); locked at any clock, that clock's.
// A collective follows the clock in force when it starts, by the profile's ratio: CPU call 0 (1 µs)
// launches kernel 1 (10 ms, a pack as in TwoPacks), then NCCL kernel 2 (10 ms, no pack) follows on
// the stream; a collective takes 1.5 times as long at 1000 MHz as at the default. 1000 MHz landing
// at 5 ms: kernel 1 started at the default clock and ends at 10.001 ms, the collective starts at
// 1000 MHz and takes 15 ms, to 25.001 ms (without the ratio 20.001 ms). Landing at 15 ms, after
// it started: 20.001 ms. With kernels split at landings, kernel 1 is slowed from 5 ms as in
// SplitAtLandingsALandingInsideAKernelSlowsTheRestOfIt (to 15.002 ms), the collective then 15 ms.
TEST(Predict, ACollectiveTakesItsClocksTimeRatio) {
  PackedGraph pg = Chain({1e3, 10e6, 10e6});
  pg.g.kind[2] = NodeKind::kComm;
  Packing& pk = pg.p;
  pk.pack_of[2] = kNoPack;
  pk.members.pop_back();
  pk.member_begin.pop_back();
  for (auto* a : {&pk.start_ns, &pk.end_ns, &pk.busy_ns}) a->pop_back();
  pk.rank.pop_back();
  pk.stream.pop_back();
  pk.hash.pop_back();
  pk.unique.pop_back();
  PredictorInput in = TwoPacks(pg, 3.0001);
  in.pack_time_s.resize(2);
  in.pack_energy_j.resize(2);
  std::string err;
  Predictor plain;
  ASSERT_TRUE(plain.Init(in, &err)) << err;
  EXPECT_NEAR(plain.Run({{{5e6, 0}}}).end_ns, 20.001e6, 1e-3);
  in.comm_time_ratio = {1.5, 1};
  for (bool split : {false, true}) {
    SCOPED_TRACE(split);
    in.split_at_landings = split;
    Predictor p;
    ASSERT_TRUE(p.Init(in, &err)) << err;
    EXPECT_NEAR(p.base().end_ns, 20.001e6, 1e-3);
    EXPECT_NEAR(p.Run({{{5e6, 0}}}).end_ns, (split ? 15.002e6 : 10.001e6) + 15e6, 1e-3);
    EXPECT_NEAR(p.Run({{{15e6, 0}}}).end_ns, 20.001e6, 1e-3);
  }
  in.comm_time_ratio = {1.5};
  Predictor p;
  EXPECT_FALSE(p.Init(in, &err));
  EXPECT_NE(err.find("collective"), std::string::npos) << err;
}

// The profile's curve as the pass takes it: never falling as the clock drops, the noise pooled
// (1.05 at 1500 MHz and 0.99 at 1000 MHz become their mean), at least 1, and 1 above the default.
TEST(Predict, CollectiveRatioNeverFallsAsTheClockDrops) {
  DeviceProfile profile;
  profile.clocks_mhz = {500, 1000, 1500, 2000, 2100};
  profile.default_mhz = 2000;
  EXPECT_TRUE(CollectiveRatio(profile).empty());
  profile.collective_time_ratio = {1.3, 0.99, 1.05, 1.0, 1.2};
  const std::vector<double> r = CollectiveRatio(profile), want{1.3, 1.02, 1.02, 1.0, 1.0};
  ASSERT_EQ(r.size(), want.size());
  for (size_t c = 0; c < r.size(); ++c) EXPECT_NEAR(r[c], want[c], 1e-12) << c;
  profile.collective_time_ratio = {1.1, 0.97, 0.99, 1.0, 1.0};
  EXPECT_EQ(CollectiveRatio(profile), (std::vector<double>{1.1, 1, 1, 1, 1}));
}

TEST(Predict, UnlockedGapsDrawTheObservedIdlePower) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});
  // Outside packs: 1 s before the origin plus 1 µs. Packs 6 J at the default clock.
  PredictorInput in = TwoPacks(pg, 6 + 30 * 1.000001);
  in.iteration_start_ns = {-1e9};
  in.default_idle_power_w = {30};
  Predictor p;
  std::string err;
  ASSERT_TRUE(p.Init(in, &err)) << err;
  EXPECT_NEAR(p.energy_scale()[0], 1, 1e-9);
  EXPECT_NEAR(p.base().energy_j, 6 + 30 * 1.000001, 1e-9);
  EXPECT_NEAR(p.Run({{{0, 1}}}).energy_j, 6 + 100 * 1.000001, 1e-9);  // locked at the default clock
  EXPECT_NEAR(p.Run({{{0, 0}}}).energy_j, 4 + 50 * 1.000001, 1e-9);   // locked at 1000 MHz: 40 ms of packs
  // Without an observation, the unlocked gaps draw the default clock's idle power.
  in.default_idle_power_w.clear();
  in.measured_energy_j = {6 + 100 * 1.000001};
  ASSERT_TRUE(p.Init(in, &err)) << err;
  EXPECT_NEAR(p.base().energy_j, 6 + 100 * 1.000001, 1e-9);
}

// The clock samples of the traced run while no pack ran, each standing until the next, weighted
// by time, at the profile's idle power interpolated between its clocks.
TEST(Predict, DefaultIdlePowerFromTheGapSamples) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});  // packs at [0.001, 10.001] and [10.001, 20.001] ms
  const std::vector<std::vector<std::pair<double, double>>> samples = {
      {{-1e9, 1000}, {5e6, 2000}, {15e6, 2000}, {20.5e6, 1500}, {21e6, 1500}}};
  const std::vector<double> w = DefaultIdlePower(pg.p, samples, {1000, 2000}, {50, 100});
  ASSERT_EQ(w.size(), 1u);
  // Gaps: 1.005 s at 1000 MHz (50 W) before the first sample in a pack, 0.5 ms at 1500 MHz (75 W).
  EXPECT_NEAR(w[0], (1.005e9 * 50 + 0.5e6 * 75) / (1.005e9 + 0.5e6), 1e-9);
  // No sample outside a pack: no observation.
  EXPECT_EQ(DefaultIdlePower(pg.p, {{{5e6, 2000}, {6e6, 2000}}}, {1000, 2000}, {50, 100})[0], 0);
}

// The clock a GPU was held at: its packs' clocks weighted by their busy time, where below the
// default; 0 where not (a GPU without packs too).
TEST(Predict, HeldClocksWeighPacksByTheirBusyTime) {
  // Rank 0: 10 ms at 1300 MHz and 30 ms at 1400; rank 1: 20 ms at the default; rank 2: none.
  const PackedGraph pg = Packed({1e3, 10e6, 30e6, 20e6}, {-1, 1, 1, 2}, {}, {0, 0, 0, 1});
  const std::vector<double> held = HeldClocks(pg.p, {1300, 1400, 1410}, 3, 1410);
  ASSERT_EQ(held.size(), 3u);
  EXPECT_NEAR(held[0], (10 * 1300 + 30 * 1400) / 40.0, 1e-9);
  EXPECT_EQ(held[1], 0);
  EXPECT_EQ(held[2], 0);
}

// On a simulated run's packed graph, any one clock everywhere predicts the same end as the
// unpacked graph's what-if with every kernel scaled by its pack's time ratio.
TEST(Predict, UniformClockMatchesTheUnpackedWhatIf) {
  sim::Program prog;
  std::string err;
  ASSERT_TRUE(sim::LoadWorkload(std::string(std::getenv("EMO_WORKLOADS")) + "/tp2-gpt3-6.7b-a100.json", &prog, &err))
      << err;
  sim::EngineOptions eo;
  eo.iterations = 2;
  eo.record_trace = true;
  sim::Engine e(prog, eo);
  ASSERT_TRUE(e.Run(&err)) << err;
  Graph g;
  BuildReport rep;
  ASSERT_TRUE(BuildGraph(e.trace(), &g, &rep, &err)) << err;
  const Packing pk = PackKernels(g, e.trace().names);
  ASSERT_GT(pk.packs(), 10u);
  // Made-up tables: pack p takes (1 + (p % 5) / 10) times longer at the low clock.
  PredictorInput in;
  in.graph = &g;
  in.packing = &pk;
  in.clocks_mhz = {700, 1410};
  in.default_clock = 1;
  for (size_t p = 0; p < pk.packs(); ++p) {
    const double t = pk.busy_ns[p] * 1e-9 + 1e-9;
    in.pack_time_s.insert(in.pack_time_s.end(), {t * (1 + (p % 5) / 10.0), t});
    in.pack_energy_j.insert(in.pack_energy_j.end(), {t * 200, t * 300});
  }
  in.idle_power_w = {60, 70};
  in.measured_energy_j = {100, 100};
  Predictor pred;
  ASSERT_TRUE(pred.Init(in, &err)) << err;
  const Predictor::Result r = pred.Run({{{-1e18, 0}}, {{-1e18, 0}}});

  WhatIf w(g, std::vector<double>(g.nodes(), 0));
  std::vector<WhatIf::Change> ch;
  for (size_t p = 0; p < pk.packs(); ++p)
    for (uint32_t m = pk.member_begin[p]; m < pk.member_begin[p + 1]; ++m)
      ch.push_back({pk.members[m], g.duration[pk.members[m]] * (1 + (p % 5) / 10.0), 0});
  EXPECT_NEAR(r.end_ns, w.Evaluate(ch).end, 1e-6 * r.end_ns);
  EXPECT_GT(r.end_ns, pred.base().end_ns * 1.01);
}

// A thread: call 0 (1 µs, anchored at 0), gap 1 (4 ms), call 2 launches kernel 3 (10 ms, 5 µs
// launch latency), gap 4 (1 ms) that a wait holds until 20 ms (anchored), call 5 launches kernel 6
// (10 ms) after kernel 3 on the stream. Kernels 3 and 6 are packs, twice as long at the low clock.
// The pass folds gap 1 into call 2's edge and computes the rest; gap 4's anchor still holds call 5
// back. Default: kernel 6 starts at 21.001 + 0.005 ms and ends at 31.006 ms; at the low clock
// kernel 3 ends at 4.007 + 20 ms and kernel 6 ends at 44.007 ms.
TEST(Predict, FoldedCpuGapsKeepTheTimesAndAnchorsHold) {
  PackedGraph pg;
  Graph& g = pg.g;
  g.kind = {NodeKind::kCpuCall, NodeKind::kCpuGap,  NodeKind::kCpuCall, NodeKind::kKernel,
            NodeKind::kCpuGap,  NodeKind::kCpuCall, NodeKind::kKernel};
  g.duration = {1e3, 4e6, 1e3, 10e6, 1e6, 1e3, 10e6};
  g.anchor = {0, kNoAnchor, kNoAnchor, kNoAnchor, 20e6, kNoAnchor, kNoAnchor};
  g.observed_start = {0, 1e3, 4.001e6, 4.007e6, 20e6, 21e6, 21.006e6};
  const size_t n = g.kind.size();
  for (size_t v = 0; v < n; ++v) g.observed_end.push_back(g.observed_start[v] + g.duration[v]);
  g.rank.assign(n, 0);
  g.lane = {0, 0, 0, 1, 0, 0, 1};
  g.name.assign(n, 0);
  g.source.assign(n, -1);
  // Edges into each node: (from, latency).
  const std::vector<std::vector<std::pair<uint32_t, float>>> preds = {{},       {{0, 0}}, {{1, 0}},          {{2, 5e3}},
                                                                      {{2, 0}}, {{4, 0}}, {{3, 0}, {5, 5e3}}};
  g.pred_begin.push_back(0);
  for (const auto& in : preds) {
    for (const auto& [u, latency] : in) {
      g.pred.push_back(u);
      g.pred_latency.push_back(latency);
      g.pred_kind.push_back(EdgeKind::kThread);
    }
    g.pred_begin.push_back(static_cast<uint32_t>(g.pred.size()));
  }
  Packing& pk = pg.p;
  pk.pack_of.assign(n, kNoPack);
  pk.pack_of[3] = 0;
  pk.pack_of[6] = 1;
  pk.member_begin = {0, 1, 2};
  pk.members = {3, 6};
  pk.rank = {0, 0};
  pk.stream = {1, 1};
  pk.start_ns = {4.007e6, 21.006e6};
  pk.end_ns = {14.007e6, 31.006e6};
  pk.busy_ns = {10e6, 10e6};
  pk.hash = {1, 1};
  pk.unique = {0, 0};
  Predictor p;
  std::string err;
  ASSERT_TRUE(p.Init(TwoPacks(pg, 6), &err)) << err;
  EXPECT_NEAR(p.base().end_ns, 31.006e6, 1e-3);
  EXPECT_EQ(p.nodes_per_pass(), n - 1);
  Predictor::PassState st;
  EXPECT_NEAR(p.Run({{{0, 0}}}, &st).end_ns, 44.007e6, 1e-3);
  EXPECT_EQ(st.nodes_computed, static_cast<int64_t>(n - 1));
}

TEST(Predict, RefusesInconsistentInput) {
  const PackedGraph pg = Chain({1e3, 10e6, 10e6});
  PredictorInput in = TwoPacks(pg, 6);
  in.pack_time_s.pop_back();
  Predictor p;
  std::string err;
  EXPECT_FALSE(p.Init(in, &err));
  EXPECT_NE(err.find("pack tables"), std::string::npos) << err;
  in = TwoPacks(pg, 6);
  in.pack_time_s[2] = 0;
  EXPECT_FALSE(p.Init(in, &err));
  EXPECT_NE(err.find("pack 1"), std::string::npos) << err;
  in = TwoPacks(pg, 6);
  in.measured_energy_j = {1, 2};
  EXPECT_FALSE(p.Init(in, &err));
}

// RunFrom keeps the nodes before the first pack whose clock changes. Tiny instance: stream 1 runs
// kernels 1 (0-30 ms) and 2 (30-60 ms), stream 2 kernels 3 (0-20 ms) and 4 (20-35 ms), in node
// order 0..4. A landing moved from 40 ms to 25 ms changes the clock of kernel 2 only (kernel 4
// started at 20 ms): nodes 2, 3 and 4 are computed again, 0 and 1 kept.
TEST(PredictFrom, KeepsTheNodesBeforeTheFirstChangedPack) {
  TinyInstance inst;
  ASSERT_EQ(inst.err, "");
  Predictor::PassState a, b;
  const Schedule before{{{40e6, 0}}}, after{{{25e6, 0}}};
  inst.pred.Run(before, &a);
  EXPECT_EQ(a.nodes_computed, 5);
  const Predictor::Result r = inst.pred.RunFrom(after, before, a, &b);
  EXPECT_EQ(b.nodes_computed, 3);
  EXPECT_EQ(r.end_ns, inst.pred.Run(after).end_ns);
  // A landing after every pack started changes nothing but the idle power's mean.
  const Schedule late{{{40e6, 0}, {70e6, 1}}};
  const Predictor::Result l = inst.pred.RunFrom(late, before, a, &b);
  EXPECT_EQ(b.nodes_computed, 0);
  EXPECT_EQ(l.end_ns, inst.pred.Run(before).end_ns);
  EXPECT_EQ(l.energy_j, inst.pred.Run(late).energy_j);
  EXPECT_NE(l.energy_j, inst.pred.Run(before).energy_j);
}

// Random schedules: per GPU none, or up to 6 landings anywhere around the iteration (now and then
// out of time order), at random clocks.
Schedule RandomSchedule(std::mt19937& rng, int gpus, int clocks, double period_ns) {
  std::uniform_real_distribution<double> u01(0, 1);
  Schedule s(gpus);
  for (std::vector<Landing>& l : s) {
    if (u01(rng) < 0.2) continue;
    const int k = 1 + static_cast<int>(u01(rng) * 6);
    for (int i = 0; i < k; ++i)
      l.push_back({(-0.1 + 1.2 * u01(rng)) * period_ns, static_cast<int>(u01(rng) * clocks) % clocks});
    if (u01(rng) < 0.9)
      std::sort(l.begin(), l.end(), [](const Landing& x, const Landing& y) { return x.t_ns < y.t_ns; });
  }
  return s;
}

// A change as the search makes them: one GPU's landings from some index on replaced (the earlier
// ones kept), or its last clock changed, or now and then a schedule with nothing in common.
Schedule Mutate(std::mt19937& rng, const Schedule& s, int clocks, double period_ns) {
  std::uniform_real_distribution<double> u01(0, 1);
  if (u01(rng) < 0.15) return RandomSchedule(rng, static_cast<int>(s.size()), clocks, period_ns);
  Schedule out = s;
  std::vector<Landing>& l = out[static_cast<size_t>(u01(rng) * s.size()) % s.size()];
  if (!l.empty() && u01(rng) < 0.2) {
    l.back().clock = (l.back().clock + 1) % clocks;
    return out;
  }
  l.resize(static_cast<size_t>(u01(rng) * (l.size() + 1)) % (l.size() + 1));
  double t = l.empty() ? -0.1 * period_ns : l.back().t_ns;
  const int k = static_cast<int>(u01(rng) * 4);
  for (int i = 0; i < k; ++i) {
    t += u01(rng) * 0.4 * period_ns;
    l.push_back({t, static_cast<int>(u01(rng) * clocks) % clocks});
  }
  return out;
}

// Chains of changes, each predicted from the one before (into a state of its own or in place),
// against the whole pass of a predictor that saw nothing else: the same bits.
void ExpectRunFromMatchesRun(Predictor& pred, uint32_t seed, int chains, int length) {
  std::mt19937 rng(seed);
  const int64_t n = static_cast<int64_t>(pred.nodes_per_pass());
  int64_t kept = 0, computed = 0, stopped = 0;
  for (int c = 0; c < chains; ++c) {
    Schedule s = RandomSchedule(rng, pred.gpus(), pred.clocks(), pred.period_ns());
    Predictor::PassState state, other, limited;
    pred.Run(s, &state);
    for (int i = 0; i < length; ++i) {
      SCOPED_TRACE("chain " + std::to_string(c) + ", change " + std::to_string(i));
      const Schedule next = Mutate(rng, s, pred.clocks(), pred.period_ns());
      const Predictor::Result full = pred.Run(next);
      // With a limit on the end: at the end itself (rounding must not stop it), a microsecond
      // before it, and at the default schedule's end.
      const double limit = std::array{full.end_ns, full.end_ns - 1e3, pred.base().end_ns}[i % 3];
      const Predictor::Result cut = pred.RunFrom(next, s, state, &limited, limit);
      if (full.end_ns <= limit || !std::isinf(cut.end_ns)) {
        ASSERT_EQ(cut.end_ns, full.end_ns);
        ASSERT_EQ(cut.energy_j, full.energy_j);
      } else {
        ASSERT_TRUE(std::isinf(cut.energy_j));
        ++stopped;
      }
      const bool in_place = i % 2 == 1;
      Predictor::PassState* out = in_place ? &state : &other;
      const Predictor::Result r = pred.RunFrom(next, s, state, out);
      if (!in_place) std::swap(state, other);
      ASSERT_EQ(r.end_ns, full.end_ns);
      ASSERT_EQ(r.energy_j, full.energy_j);
      ASSERT_EQ(r.gpu_energy_j, full.gpu_energy_j);
      computed += state.nodes_computed;
      kept += n - state.nodes_computed;
      s = next;
    }
  }
  // The test means something only if passes started part-way, and some stopped at the limit.
  EXPECT_GT(kept, 0);
  EXPECT_GT(computed, 0);
  EXPECT_GT(stopped, 0);
}

// The same predictor with split_at_landings.
void ExpectRunFromMatchesRunSplit(const Predictor& unsplit, uint32_t seed, int chains, int length) {
  PredictorInput in = unsplit.input();
  in.split_at_landings = true;
  Predictor pred;
  std::string err;
  ASSERT_TRUE(pred.Init(in, &err)) << err;
  ExpectRunFromMatchesRun(pred, seed, chains, length);
}

TEST(PredictFrom, MatchesTheWholePassOnRandomInstances) {
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE(seed);
    RandomInstance inst(seed, 12);
    ASSERT_EQ(inst.err, "");
    ExpectRunFromMatchesRun(inst.pred, seed, 20, 20);
    ExpectRunFromMatchesRunSplit(inst.pred, seed, 20, 20);
  }
}

// Three iterations with no marker node (the graph's only CPU call is at its start): their starts
// are guessed from the delay of their first packs, a path of its own for the resumed pass.
TEST(PredictFrom, MatchesTheWholePassWithGuessedIterationStarts) {
  for (uint32_t seed : {6u, 7u}) {
    SCOPED_TRACE(seed);
    RandomInstance inst(seed, 30);
    ASSERT_EQ(inst.err, "");
    PredictorInput in = inst.pred.input();
    const double end = inst.pred.base().end_ns;
    in.iteration_start_ns = {0, end / 3, 2 * end / 3};
    Predictor pred;
    std::string err;
    ASSERT_TRUE(pred.Init(in, &err)) << err;
    ExpectRunFromMatchesRun(pred, seed, 10, 20);
    ExpectRunFromMatchesRunSplit(pred, seed, 10, 20);
  }
}

// A simulated pipeline traced over three iterations, with their marker nodes.
TEST(PredictFrom, MatchesTheWholePassOnASimulatedPipeline) {
  SimulatedInstance inst("pp2-qwen2-7b-uniform-a100.json", 3);
  ASSERT_EQ(inst.err, "");
  ASSERT_EQ(inst.pred.iterations(), 3);
  ExpectRunFromMatchesRun(inst.pred, 8, 4, 10);
  ExpectRunFromMatchesRunSplit(inst.pred, 8, 4, 10);
}

// The same, with its send/recv kernels following the clock (collective_time_ratio): a change of
// clock where a collective starts is where the resumed pass must start.
TEST(PredictFrom, MatchesTheWholePassWithCollectivesFollowingTheClock) {
  SimulatedInstance inst("pp2-qwen2-7b-uniform-a100.json", 3);
  ASSERT_EQ(inst.err, "");
  PredictorInput in = inst.pred.input();
  in.comm_time_ratio = {1.6, 1.3, 1.1, 1.02, 1};
  Predictor pred;
  std::string err;
  ASSERT_TRUE(pred.Init(in, &err)) << err;
  ASSERT_GT(std::count(inst.g.kind.begin(), inst.g.kind.end(), NodeKind::kComm), 0);
  EXPECT_GT(pred.Run(Schedule(pred.gpus(), {{0, 0}})).end_ns, inst.pred.Run(Schedule(pred.gpus(), {{0, 0}})).end_ns);
  ExpectRunFromMatchesRun(pred, 9, 4, 10);
  ExpectRunFromMatchesRunSplit(pred, 9, 4, 10);
}

}  // namespace
}  // namespace emo
