// predict_test.cc — the prediction pass on hand-built packed graphs (times and energies worked by
// hand), and on a simulated trace against the unpacked graph's what-if.
#include "model/predict.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "graph/builder.h"
#include "graph/replay.h"
#include "packed_graph.h"
#include "sim/engine.h"
#include "sim/workload.h"

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

}  // namespace
}  // namespace emo
