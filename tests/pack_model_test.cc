// pack_model_test.cc — the pack model on a synthetic device profile (tests/model_fixtures.h): a
// known non-negative mix of two microbenchmarks is recovered and predicted exactly, anchoring to the
// measured time (and energy) scales the tables, a pack outside the cone gets x ≥ 0 and a residual,
// and the idle power and the empty fit behave as documented in pack_model.h.
#include "model/pack_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/pack_profile.h"
#include "model_fixtures.h"

namespace emo {
namespace {

// The metric vector of a mix: sums, with warps per active cycle averaged over active cycles.
PackMetrics Mix(const DeviceProfile& p, const std::vector<std::pair<Microbench, double>>& parts) {
  PackMetrics out;
  for (auto [b, k] : parts) {
    PackMetrics one;
    one.v = p.bench[b].metrics;
    for (int m = 0; m < kMetrics; ++m)
      if (m != kWarpsPerActiveCycle) one.v[m] *= k;
    out.Add(one);
  }
  return out;
}

struct Prediction {
  PackFit fit;
  std::vector<double> time_s, energy_j;
};

Prediction Predict(PackModel& model, const PackMetrics& m, const PackObservation& obs) {
  Prediction p;
  p.time_s.resize(model.clocks());
  p.energy_j.resize(model.clocks());
  std::string err;
  EXPECT_TRUE(model.Predict(m, obs, &p.fit, p.time_s.data(), p.energy_j.data(), &err)) << err;
  return p;
}

TEST(PackModel, FitsAllElevenRows) {
  PackModel model(test::SyntheticProfile());
  EXPECT_EQ(model.clocks(), 8);
  EXPECT_EQ(model.fit_rows(), kMetrics);  // every metric is shown by some microbenchmark
}

TEST(PackModel, RecoversATwoBenchmarkMixAndPredictsIt) {
  // 2 runs of FP32 FMA and 3 of DRAM read. The mix is the only non-negative representation: DRAM
  // read alone has DRAM read bytes, FMA instructions come only from FMA and HMMA (HMMA is ruled out
  // by zero tensor instructions), every other benchmark but idle has a counter the mix lacks, and
  // idle is ruled out by the cycles left once FMA and DRAM read are fixed.
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  const PackMetrics m = Mix(prof, {{kBenchFp32Fma, 2}, {kBenchDramRead, 3}});
  const int f0 = 1410;
  const double t0 = 2 * test::SyntheticTime(kBenchFp32Fma, f0) + 3 * test::SyntheticTime(kBenchDramRead, f0);
  Prediction p = Predict(model, m, {t0, f0, 0});
  EXPECT_TRUE(p.fit.converged);
  EXPECT_TRUE(p.fit.anchored);
  for (int b = 0; b < kMicrobenches; ++b) {
    const double want = b == kBenchFp32Fma ? 2 : b == kBenchDramRead ? 3 : 0;
    EXPECT_NEAR(p.fit.x[b], want, 1e-6) << MicrobenchName(static_cast<Microbench>(b));
  }
  EXPECT_LT(p.fit.rel_residual, 1e-9);
  EXPECT_NEAR(p.fit.time_scale, 1, 1e-9);
  EXPECT_NEAR(p.fit.energy_scale, 1, 1e-9);
  for (int c = 0; c < model.clocks(); ++c) {
    const int f = prof.clocks_mhz[c];
    const double t = 2 * test::SyntheticTime(kBenchFp32Fma, f) + 3 * test::SyntheticTime(kBenchDramRead, f);
    const double e = 2 * test::SyntheticTime(kBenchFp32Fma, f) * test::SyntheticPower(kBenchFp32Fma, f) +
                     3 * test::SyntheticTime(kBenchDramRead, f) * test::SyntheticPower(kBenchDramRead, f);
    EXPECT_NEAR(p.time_s[c], t, 1e-9 * t) << f << " MHz";
    EXPECT_NEAR(p.energy_j[c], e, 1e-9 * e) << f << " MHz";
  }
}

TEST(PackModel, AnchorsToMeasuredTimeAndEnergy) {
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  const PackMetrics m = Mix(prof, {{kBenchIntAlu, 1}, {kBenchL2, 0.5}});
  // Profiled at 840 MHz (index 3): the raw mix's time there, 1.5 times over.
  const double raw_t = test::SyntheticTime(kBenchIntAlu, 840) + 0.5 * test::SyntheticTime(kBenchL2, 840);
  Prediction base = Predict(model, m, {raw_t, 840, 0});
  Prediction slow = Predict(model, m, {1.5 * raw_t, 840, 0});
  EXPECT_NEAR(base.fit.time_scale, 1, 1e-9);
  EXPECT_NEAR(slow.fit.time_scale, 1.5, 1e-9);
  EXPECT_NEAR(slow.fit.energy_scale, 1.5, 1e-9);  // energy follows time when not measured
  EXPECT_NEAR(slow.time_s[3], 1.5 * raw_t, 1e-12);
  for (int c = 0; c < model.clocks(); ++c) {
    EXPECT_NEAR(slow.time_s[c], 1.5 * base.time_s[c], 1e-9 * base.time_s[c]);
    EXPECT_NEAR(slow.energy_j[c], 1.5 * base.energy_j[c], 1e-9 * base.energy_j[c]);
  }
  // A measured energy anchors energy on its own.
  const double e0 = 2 * base.energy_j[3];
  Prediction measured = Predict(model, m, {1.5 * raw_t, 840, e0});
  EXPECT_NEAR(measured.fit.time_scale, 1.5, 1e-9);
  EXPECT_NEAR(measured.fit.energy_scale, 2, 1e-9);
  EXPECT_NEAR(measured.energy_j[3], e0, 1e-12);
  for (int c = 0; c < model.clocks(); ++c) EXPECT_NEAR(measured.energy_j[c], 2 * base.energy_j[c], 1e-9);
  // Between clocks (1000 MHz, between 840 and 1050) the anchor interpolates the raw time linearly.
  const double t840 = base.time_s[3], t1050 = base.time_s[4];
  const double at1000 = t840 + (1000.0 - 840) / (1050 - 840) * (t1050 - t840);
  Prediction between = Predict(model, m, {at1000, 1000, 0});
  EXPECT_NEAR(between.fit.time_scale, 1, 1e-9);
  // No clock given: the default clock.
  Prediction dflt = Predict(model, m, {2 * base.time_s[7], 0, 0});
  EXPECT_NEAR(dflt.fit.time_scale, 2, 1e-9);
}

// Every kernel pays the profile's kernel floor, which no metric shows and which scales as it was
// measured to, not as the mix: a pack of 1000 kernels doing one FP32 FMA run's work takes that
// run's time plus 1000 floors at every clock, and the floors draw the idle power.
TEST(PackModel, KernelsPayTheFloorWhichScalesAsItDoes) {
  DeviceProfile prof = test::SyntheticProfile();
  auto floor_at = [](int mhz) { return 1e-6 + 420e-6 / mhz; };  // 3 µs at 210 MHz, 1.3 µs at 1410
  for (int f : prof.clocks_mhz) prof.kernel_floor_s.push_back(floor_at(f));
  PackModel model(prof);
  PackMetrics m = Mix(prof, {{kBenchFp32Fma, 1}});
  m.kernels = 1000;
  const double t0 = test::SyntheticTime(kBenchFp32Fma, 1410) + 1000 * floor_at(1410);
  Prediction p = Predict(model, m, {t0, 1410, 0});
  EXPECT_NEAR(p.fit.floor_share, 1000 * floor_at(1410) / t0, 1e-12);
  EXPECT_NEAR(p.fit.x[kBenchFp32Fma], 1, 1e-6);
  for (int c = 0; c < model.clocks(); ++c) {
    const int f = prof.clocks_mhz[c];
    const double floors = 1000 * floor_at(f);
    const double t = test::SyntheticTime(kBenchFp32Fma, f) + floors;
    const double e = test::SyntheticTime(kBenchFp32Fma, f) * test::SyntheticPower(kBenchFp32Fma, f) +
                     floors * test::SyntheticPower(kBenchIdle, f);
    EXPECT_NEAR(p.time_s[c], t, 1e-9 * t) << f << " MHz";
    EXPECT_NEAR(p.energy_j[c], e, 1e-9 * e) << f << " MHz";
  }
  // Without the floor the whole time would scale as FP32 FMA does: 6.4x at 210 MHz, not 3.9x.
  PackModel without(test::SyntheticProfile());
  Prediction q = Predict(without, m, {t0, 1410, 0});
  EXPECT_NEAR(q.time_s[0] / t0, test::SyntheticTime(kBenchFp32Fma, 210) / test::SyntheticTime(kBenchFp32Fma, 1410),
              1e-9);
  EXPECT_LT(p.time_s[0], 0.8 * q.time_s[0]);
  // Kernels measured shorter than their floors are all floor.
  Prediction tiny = Predict(model, m, {500 * floor_at(1410), 1410, 0});
  EXPECT_EQ(tiny.fit.floor_share, 1);
  for (int c = 0; c < model.clocks(); ++c)
    EXPECT_NEAR(tiny.time_s[c], 500 * floor_at(prof.clocks_mhz[c]), 1e-15) << prof.clocks_mhz[c] << " MHz";
}

// The anchor reads a benchmark at the clock it held. Here the HMMA benchmark was power-throttled
// to 1200 MHz when locked at 1305 and 1410 MHz, while a pack of one HMMA run's work (a cooler one)
// ran at 1305 MHz: anchored to the table by setting, its 1305 MHz would read the benchmark's
// 1200 MHz time and every lower clock would look 8 % faster than it is. Above the highest clock
// the benchmark held, its trend continues (a power law over 1050-1200 MHz, 0.03 % off here).
TEST(PackModel, AnchorsAtTheClockTheBenchmarksHeld) {
  DeviceProfile prof = test::SyntheticProfile();
  DeviceProfile::Bench& hmma = prof.bench[kBenchHmma];
  std::vector<double> held(prof.clocks_mhz.size(), 0);
  for (int c : {6, 7}) {  // 1305 and 1410 MHz
    held[c] = 1200;
    hmma.time_s[c] = test::SyntheticTime(kBenchHmma, 1200);
    hmma.energy_j[c] = hmma.time_s[c] * test::SyntheticPower(kBenchHmma, 1200);
  }
  hmma.SetThrottled(held);
  PackModel model(prof);
  const double t0 = test::SyntheticTime(kBenchHmma, 1305);
  Prediction p = Predict(model, Mix(prof, {{kBenchHmma, 1}}), {t0, 1305, 0});
  EXPECT_NEAR(p.fit.x[kBenchHmma], 1, 1e-6);
  for (int c = 0; c < 6; ++c) {  // the settings the benchmark held
    const double want = test::SyntheticTime(kBenchHmma, prof.clocks_mhz[c]);
    EXPECT_NEAR(p.time_s[c] / want, 1, 1e-3) << prof.clocks_mhz[c] << " MHz";
  }
}

// A pack that repeats a profiled one takes its mix, anchored to its own busy time and clock: here
// the repeat ran at 1050 MHz with twice the work time (the same 1000 kernels' floors), so its body
// is twice the profiled pack's and its floor the same, at every clock up to its own; above it, it
// keeps its busy time (what it ran at is what it would run at again).
TEST(PackModel, RepeatedPacksAreAnchoredToTheirOwnTimeAndClock) {
  DeviceProfile prof = test::SyntheticProfile();
  auto floor_at = [](int mhz) { return 1e-6 + 420e-6 / mhz; };
  for (int f : prof.clocks_mhz) prof.kernel_floor_s.push_back(floor_at(f));
  PackModel model(prof);
  PackProfile profile;
  profile.packs = {0};
  profile.metrics = {Mix(prof, {{kBenchFp32Fma, 1}})};
  profile.metrics[0].kernels = 1000;
  auto body = [](int mhz) { return test::SyntheticTime(kBenchFp32Fma, mhz); };
  Packing packing;
  packing.rank = {0, 0};
  packing.unique = {0, 0};
  packing.busy_ns = {(body(1410) + 1000 * floor_at(1410)) * 1e9, (2 * body(1050) + 1000 * floor_at(1050)) * 1e9};
  std::vector<double> t, e;
  PackTables tables;
  std::string err;
  ASSERT_TRUE(PackTimeEnergy(model, packing, profile, {1410, 1050}, &t, &e, &tables, &err)) << err;
  const int nc = model.clocks();
  for (int c = 0; c < nc; ++c) {
    const int f = prof.clocks_mhz[c];
    const double first = body(f) + 1000 * floor_at(f);
    const double repeat = f > 1050 ? packing.busy_ns[1] * 1e-9 : 2 * body(f) + 1000 * floor_at(f);
    EXPECT_NEAR(t[c], first, 1e-9 * first) << f << " MHz";
    EXPECT_NEAR(t[nc + c], repeat, 1e-9 * repeat) << f << " MHz";
  }
  for (int c = 5; c < nc; ++c)  // above 1050 MHz (index 4), the energy at 1050 MHz
    EXPECT_NEAR(e[nc + c], e[nc + 4], 1e-12 * e[nc + 4]) << prof.clocks_mhz[c] << " MHz";
}

// A second run at a lower clock measures how much of the predicted change shows. Two occurrences
// of one pack of FMA work (the second twice as long) show 40 % and 60 % of their predicted change
// at 840 MHz: pooled, β = (0.4 d + 0.6 · 2d) / (d + 2d) = 1.6 / 3. At and above 840 MHz each
// takes t0 + β (T(f) − t0); below, the model's slope from the point measured at 840 MHz. A pack
// the model sees no change in (an empty fit) keeps its time whatever the second run says.
TEST(PackModel, ARunAtALowClockScalesThePredictedChange) {
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  PackProfile profile;
  profile.packs = {0, 2};
  profile.metrics = {Mix(prof, {{kBenchFp32Fma, 1}}), PackMetrics()};
  profile.metrics[0].kernels = profile.metrics[1].kernels = 1;
  auto body = [](int mhz) { return test::SyntheticTime(kBenchFp32Fma, mhz); };
  const double t0 = body(1410), d = body(840) - t0;
  Packing packing;
  packing.rank = {0, 0, 0};
  packing.unique = {0, 0, 2};
  packing.busy_ns = {t0 * 1e9, 2 * t0 * 1e9, 1e6};
  LowClockRun low{840, {(t0 + 0.4 * d) * 1e9, (2 * t0 + 0.6 * 2 * d) * 1e9, 3e6}};
  std::vector<double> t, e, t_model, e_model;
  PackTables tables;
  std::string err;
  ASSERT_TRUE(PackTimeEnergy(model, packing, profile, {1410, 1410, 1410}, &t_model, &e_model, &tables, &err)) << err;
  ASSERT_TRUE(PackTimeEnergy(model, packing, profile, {1410, 1410, 1410}, &t, &e, &tables, &err, low)) << err;
  const double beta = 1.6 / 3;
  const int nc = model.clocks();
  for (int c = 0; c < nc; ++c) {
    const int f = prof.clocks_mhz[c];
    const double want = f >= 840 ? t0 + beta * (body(f) - t0) : t0 + beta * d + (body(f) - body(840));
    EXPECT_NEAR(t[c], want, 1e-9 * want) << f << " MHz";
    EXPECT_NEAR(t[nc + c], 2 * want, 2e-9 * want) << f << " MHz";
    EXPECT_NEAR(t[2 * nc + c], 1e-3, 1e-12) << f << " MHz";
    // The same work in less time: the idle power over the time taken off is saved.
    const double idle = model.idle_power_w()[c];
    EXPECT_NEAR(e[c], e_model[c] - idle * (t_model[c] - t[c]), 1e-9 * e_model[c]) << f << " MHz";
    EXPECT_EQ(e[2 * nc + c], e_model[2 * nc + c]);
  }
  low.busy_ns.pop_back();
  EXPECT_FALSE(PackTimeEnergy(model, packing, profile, {1410, 1410, 1410}, &t, &e, &tables, &err, low));
  EXPECT_NE(err.find("low clock for 2 packs, there are 3"), std::string::npos) << err;
}

TEST(PackModel, PackOutsideTheConeGetsNonNegativeFitAndResidual) {
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  // DRAM write bytes without the L2 bytes every DRAM write brings, and ALU instructions with
  // no cycles to speak of: no non-negative mix matches.
  PackMetrics m;
  m.v[kSmCyclesActive] = 1e3;
  m.v[kWarpsPerActiveCycle] = 8;
  m.v[kDramWriteBytes] = 2e9;
  m.v[kInstAlu] = 1e8;
  Prediction p = Predict(model, m, {1e-3, 1410, 0});
  EXPECT_TRUE(p.fit.converged);
  for (double x : p.fit.x) EXPECT_GE(x, 0);
  EXPECT_GT(p.fit.rel_residual, 0.05);
  EXPECT_LT(p.fit.rel_residual, 1);
  EXPECT_NEAR(p.time_s[7], 1e-3, 1e-15);
  for (int c = 0; c < model.clocks(); ++c) {
    EXPECT_GT(p.time_s[c], 0);
    EXPECT_GT(p.energy_j[c], 0);
    if (c > 0) {
      EXPECT_LT(p.time_s[c], p.time_s[c - 1]);  // every benchmark is faster at a higher clock
    }
  }
}

TEST(PackModel, IdlePowerAndEmptyFit) {
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  for (int c = 0; c < model.clocks(); ++c)
    EXPECT_NEAR(model.idle_power_w()[c], test::SyntheticPower(kBenchIdle, prof.clocks_mhz[c]), 1e-9);
  // All-zero counters: nothing to fit, time held, energy at idle power.
  Prediction p = Predict(model, PackMetrics(), {2e-3, 1410, 0});
  EXPECT_FALSE(p.fit.anchored);
  for (int c = 0; c < model.clocks(); ++c) {
    EXPECT_EQ(p.time_s[c], 2e-3);
    EXPECT_NEAR(p.energy_j[c], 2e-3 * model.idle_power_w()[c], 1e-12);
  }
}

TEST(PackModel, RejectsBadObservations) {
  PackModel model(test::SyntheticProfile());
  PackFit fit;
  std::vector<double> t(model.clocks()), e(model.clocks());
  std::string err;
  EXPECT_FALSE(model.Predict(PackMetrics(), {0, 1410, 0}, &fit, t.data(), e.data(), &err));
  EXPECT_NE(err.find("not positive"), std::string::npos) << err;
  EXPECT_FALSE(model.Predict(PackMetrics(), {1e-3, 2000, 0}, &fit, t.data(), e.data(), &err));
  EXPECT_NE(err.find("outside"), std::string::npos) << err;
}

TEST(PackModel, PredictPacksWritesFlatTables) {
  const DeviceProfile prof = test::SyntheticProfile();
  PackModel model(prof);
  std::vector<PackMetrics> packs = {Mix(prof, {{kBenchFp64, 1}}), Mix(prof, {{kBenchFp32Fma, 2}, {kBenchDramRead, 1}})};
  std::vector<PackObservation> obs = {{1e-3, 1410, 0}, {2e-3, 1410, 0}};
  PackTables tables;
  std::string err;
  ASSERT_TRUE(PredictPacks(model, packs, obs, &tables, &err)) << err;
  EXPECT_EQ(tables.packs, 2);
  EXPECT_EQ(tables.clocks, 8);
  ASSERT_EQ(tables.time_s.size(), 16u);
  EXPECT_NEAR(tables.time_s[7], 1e-3, 1e-15);
  EXPECT_NEAR(tables.time_s[8 + 7], 2e-3, 1e-15);
  EXPECT_NEAR(tables.x[kBenchFp64], 1, 1e-6);
  EXPECT_NEAR(tables.x[kMicrobenches + kBenchFp32Fma], 2, 1e-6);
  EXPECT_NEAR(tables.x[kMicrobenches + kBenchDramRead], 1, 1e-6);
  obs.pop_back();
  EXPECT_FALSE(PredictPacks(model, packs, obs, &tables, &err));
  obs = {{1e-3, 1410, 0}, {-1, 1410, 0}};
  EXPECT_FALSE(PredictPacks(model, packs, obs, &tables, &err));
  EXPECT_NE(err.find("pack 1: "), std::string::npos) << err;
}

// A window traced later: the pack seen before takes its profiled metrics, a new one the known
// packs' metrics added up (their mix as a whole), with its own kernel count.
TEST(PackModel, AWindowsPacksTakeKnownMetricsByHashAndTheJobsMixOtherwise) {
  const DeviceProfile prof = test::SyntheticProfile();
  std::vector<KnownPack> known(2);
  known[0].hash = 0xa;
  known[0].metrics = Mix(prof, {{kBenchFp32Fma, 1}});
  known[0].metrics.kernels = 3;
  known[1].hash = 0xc;
  known[1].metrics = Mix(prof, {{kBenchDramRead, 2}});
  known[1].metrics.kernels = 5;
  Packing packing;  // packs A, B, A: B is new
  packing.rank = {0, 0, 0};
  packing.hash = {0xa, 0xb, 0xa};
  packing.unique = {0, 1, 0};
  packing.busy_ns = {1e6, 2e6, 1e6};
  packing.member_begin = {0, 3, 10, 13};
  packing.members.resize(13);
  PackProfile pp;
  EXPECT_DOUBLE_EQ(PackProfileFromKnown(packing, known, &pp), 0.5);  // B's 2 of 4 ms
  ASSERT_EQ(pp.packs, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(pp.metrics[0].v, known[0].metrics.v);
  EXPECT_EQ(pp.metrics[0].kernels, 3);
  for (int m = 0; m < kMetrics; ++m) {
    if (m == kWarpsPerActiveCycle) continue;  // averaged over active cycles (PackMetrics::Add)
    EXPECT_DOUBLE_EQ(pp.metrics[1].v[m], known[0].metrics.v[m] + known[1].metrics.v[m]) << MetricName(Metric(m));
  }
  EXPECT_EQ(pp.metrics[1].kernels, 7);
  // The model fits B with both: one run of FMA and two of DRAM read.
  PackModel model(prof);
  PackFit fit;
  model.Fit(pp.metrics[1], &fit);
  for (int b = 0; b < kMicrobenches; ++b)
    EXPECT_NEAR(fit.x[b],
                b == kBenchFp32Fma    ? 1
                : b == kBenchDramRead ? 2
                                      : 0,
                1e-6)
        << MicrobenchName(static_cast<Microbench>(b));
  // With B known too, no kernel time is in unknown packs (emo run --adapt then says nothing).
  known.push_back(known[1]);
  known.back().hash = 0xb;
  EXPECT_EQ(PackProfileFromKnown(packing, known, &pp), 0.0);
  EXPECT_EQ(pp.metrics[1].v, known[1].metrics.v);
}

TEST(PackModel, KnownPacksAreReadByHashWithClearErrors) {
  std::string metrics;
  for (int m = 0; m < kMetrics; ++m)
    metrics += std::string(m ? ", " : "") + "\"" + MetricName(Metric(m)) + "\": " + std::to_string(m + 1);
  const std::string pack = "\"kernels\": 3, \"metrics\": {" + metrics + "}";
  std::vector<KnownPack> known;
  std::string err;
  ASSERT_TRUE(ParseKnownPacks("p.json",
                              "{\"packs\": [{\"pack\": 0, \"hash\": \"00000000000000ff\", " + pack +
                                  "}, {\"pack\": 4, \"hash\": \"BB7D413AA4B44D68\", " + pack + "}]}",
                              &known, &err))
      << err;
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0].hash, 0xffu);
  EXPECT_EQ(known[1].hash, 0xbb7d413aa4b44d68u);
  EXPECT_EQ(known[1].metrics.kernels, 3);
  EXPECT_EQ(known[1].metrics.v[kMetrics - 1], kMetrics);
  const std::pair<std::string, std::string> bad[] = {
      {"{\"packs\": [{\"pack\": 0, " + pack + "}]}", "p.json: a pack without its hash"},
      {"{\"packs\": [{\"hash\": \"12g4\", " + pack + "}]}", "p.json: hash \"12g4\" is not hexadecimal"},
      {"{\"packs\": [{\"hash\": \"\", " + pack + "}]}", "p.json: hash \"\" is not hexadecimal"},
      {"{\"packs\": [{\"hash\": \"ff\", \"kernels\": 3}]}", "p.json: "},
      {"{\"packs\": []}", "p.json: no packs"},
      {"{\"packs\": [", "p.json: not JSON"},
  };
  for (const auto& [text, want] : bad) {
    err.clear();
    EXPECT_FALSE(ParseKnownPacks("p.json", text, &known, &err)) << text;
    EXPECT_EQ(err.rfind(want, 0), 0u) << err;
  }
}

}  // namespace
}  // namespace emo
