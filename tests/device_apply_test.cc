// device_apply_test.cc — the device boundary and the apply stage's shared pieces: frequency-policy
// JSON round trips, the measurement window, the online-method registry (options, the telemetry a
// method needs against what a back end offers), a back end whose reads fail, and the step socket.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "apply/measurement.h"
#include "apply/step_socket.h"
#include "device/frequency_policy.h"
#include "fake_gpus.h"
#include "fake_metric_source.h"
#include "online/geepafs.h"
#include "online/registry.h"

namespace emo {
namespace {

TEST(FrequencyPolicy, JsonRoundTrips) {
  FrequencyPolicy p;
  p.gpus.push_back({0, {{0, 1410}, {20.5, 1065}}});
  p.gpus.push_back({3, {{0.25, 705}}});
  p.gpus.push_back({1, {}});
  FrequencyPolicy q;
  std::string err;
  ASSERT_TRUE(ParsePolicy("p.json", PolicyJson(p), &q, &err)) << err;
  EXPECT_EQ(p, q);
  EXPECT_EQ(q.budget, -1);  // not recorded, and not written
  EXPECT_EQ(PolicyJson(p).find("budget"), std::string::npos);
  p.budget = 0.05;
  p.default_iteration_ms = 412.5;
  ASSERT_TRUE(ParsePolicy("p.json", PolicyJson(p), &q, &err)) << err;
  EXPECT_EQ(p, q);
}

TEST(FrequencyPolicy, NamesABadBudgetOrReference) {
  FrequencyPolicy p;
  std::string err;
  EXPECT_FALSE(ParsePolicy("p", R"({"budget": -0.1, "gpus": []})", &p, &err));
  EXPECT_EQ(err, "p: field budget: expected a non-negative fraction (0.05 = 5 %)");
  EXPECT_FALSE(ParsePolicy("p", R"({"budget": "5%", "gpus": []})", &p, &err));
  EXPECT_EQ(err, "p: field budget: expected a non-negative fraction (0.05 = 5 %)");
  EXPECT_FALSE(ParsePolicy("p", R"({"default_iteration_ms": 0, "gpus": []})", &p, &err));
  EXPECT_EQ(err, "p: field default_iteration_ms: expected a positive number of ms");
}

TEST(FrequencyPolicy, SortsChangesAndNamesBadFields) {
  FrequencyPolicy p;
  std::string err;
  ASSERT_TRUE(ParsePolicy(
      "p", R"({"gpus": [{"gpu": 0, "changes": [{"t_ms": 9, "mhz": 900}, {"t_ms": 1, "mhz": 1200}]}]})", &p, &err));
  ASSERT_EQ(p.gpus[0].changes.size(), 2u);
  EXPECT_EQ(p.gpus[0].changes[0].mhz, 1200);
  EXPECT_FALSE(ParsePolicy("p", R"({"gpus": [{"gpu": 0, "changes": [{"t_ms": -1, "mhz": 900}]}]})", &p, &err));
  EXPECT_EQ(err, "p: field gpus[0].changes[0].t_ms: expected a non-negative number");
  EXPECT_FALSE(ParsePolicy("p", R"({"gpus": [{"gpu": "0", "changes": []}]})", &p, &err));
  EXPECT_EQ(err, "p: field gpus[0].gpu: expected a non-negative integer");
  EXPECT_FALSE(ParsePolicy("p", R"({"gpus": [{"gpu": 4294967296, "changes": []}]})", &p, &err));
  EXPECT_EQ(err, "p: field gpus[0].gpu: expected a non-negative integer");
  EXPECT_FALSE(ParsePolicy("p", R"({"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 4294968706}]}]})", &p, &err));
  EXPECT_EQ(err, "p: field gpus[0].changes[0].mhz: expected a positive integer of MHz");
  EXPECT_FALSE(ParsePolicy("p", "{\"gpus\": [", &p, &err));
  EXPECT_EQ(err, "p: not JSON");
}

// A range's counters are its kernels' sums, except warps per active cycle, an average weighted by
// active cycles: kernels of 100 cycles at 32 warps and 300 cycles at 64 warps give 56 warps.
TEST(MetricSource, RangesSumTheirKernelsAndAverageWarpsByCycles) {
  FakeMetricSource source;
  auto kernel = [](double cycles, double warps, double dram, double ns) {
    PackMetrics m;
    m.v[kSmCyclesActive] = cycles;
    m.v[kWarpsPerActiveCycle] = warps;
    m.v[kDramReadBytes] = dram;
    m.kernels = 1;
    m.time_ns = ns;
    m.sm_mhz = 1410;
    return m;
  };
  source.kernels[0] = {kernel(100, 32, 1e6, 10), kernel(300, 64, 3e6, 30), kernel(50, 8, 0, 5)};
  source.passes_per_range = 3;
  std::vector<PackMetrics> out;
  ProfileCost cost;
  std::string err;
  ASSERT_TRUE(source.Profile({{0, 0, 1}, {0, 2, 2}}, &out, &cost, &err)) << err;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].v[kSmCyclesActive], 400);
  EXPECT_DOUBLE_EQ(out[0].v[kWarpsPerActiveCycle], 56);
  EXPECT_DOUBLE_EQ(out[0].v[kDramReadBytes], 4e6);
  EXPECT_EQ(out[0].kernels, 2);
  EXPECT_DOUBLE_EQ(out[0].time_ns, 40);
  EXPECT_DOUBLE_EQ(out[0].sm_mhz, 1410);
  EXPECT_DOUBLE_EQ(out[1].v[kWarpsPerActiveCycle], 8);
  EXPECT_EQ(cost.ranges, 2);
  EXPECT_EQ(cost.passes, 6);
  EXPECT_EQ(cost.kernels_profiled, 9);
  EXPECT_FALSE(source.Profile({{0, 2, 3}}, &out, &cost, &err));
  EXPECT_EQ(err, "no kernels 2..3 on GPU 0");
  EXPECT_STREQ(MetricCuptiName(kDramReadBytes), "dram__bytes_read.sum");
  EXPECT_STREQ(MetricName(kInstTensor), "inst_tensor");
}

// Two GPUs whose counters the test advances by hand: 100 J and 50 J per iteration, 10 ms each.
TEST(Meter, WindowOverIterationsAfterWarmup) {
  FakeGpus gpus(2, "A100-SXM4-80GB", {1410}, 100, 400);
  Meter meter(&gpus, 2);
  for (int i = 0; i < 5; ++i) {
    meter.OnIterationStart(i, i * 10e6);
    gpus.energy[0] += 100;
    gpus.energy[1] += 50;
  }
  Measurement m;
  std::string err;
  ASSERT_TRUE(meter.Close(50e6, &m, &err)) << err;
  EXPECT_EQ(m.iterations, 3);
  EXPECT_DOUBLE_EQ(m.window_s, 0.030);
  EXPECT_DOUBLE_EQ(m.energy_j, 450);
  EXPECT_DOUBLE_EQ(m.iteration_ms(), 10);
  EXPECT_DOUBLE_EQ(m.iteration_energy_j(), 150);
  EXPECT_DOUBLE_EQ(m.avg_power_w(), 15000);
  nlohmann::ordered_json j;
  AddMeasurementJson(m, &j);
  EXPECT_DOUBLE_EQ(j["per_gpu"][1]["iteration_energy_j"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j["per_gpu"][0]["avg_power_w"].get<double>(), 10000);
}

TEST(Meter, SaysWhyThereIsNoMeasurement) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1410}, 100, 400);
  Measurement m;
  std::string err;
  Meter early(&gpus, 3);
  early.OnIterationStart(0, 0);
  EXPECT_FALSE(early.Close(1e6, &m, &err));
  EXPECT_EQ(err, "the measurement window never opened (1 iterations began, 3 of them warm-up)");
  Meter lost(&gpus, 0);
  lost.OnIterationStart(0, 0);
  gpus.failing = true;
  EXPECT_FALSE(lost.Close(1e6, &m, &err));
  EXPECT_EQ(err, "GPU 0: energy counter unreadable: GPU fell off the bus");
}

TEST(Registry, ParsesChecksAndBuilds) {
  MethodSpec spec;
  std::string err;
  EXPECT_TRUE(ParseMethodSpec("", &spec, &err));
  EXPECT_EQ(spec.entry, nullptr);
  EXPECT_FALSE(ParseMethodSpec("nope:x=1", &spec, &err));
  EXPECT_EQ(err, "unknown method 'nope' (zeus-power-limit, geepafs, gpoeo)");
  EXPECT_FALSE(ParseMethodSpec("geepafs:p=2", &spec, &err));
  EXPECT_NE(err.find("p=2"), std::string::npos) << err;
  ASSERT_TRUE(ParseMethodSpec("zeus-power-limit:warmup=1", &spec, &err)) << err;
  EXPECT_TRUE(spec.entry->iteration_driven);
  EXPECT_EQ(spec.entry->json_key, "zeus_power_limit");
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1410}, 100, 400);
  std::unique_ptr<OnlineMethod> m = BuildMethod(spec, &gpus, &err);
  ASSERT_TRUE(m) << err;
  std::vector<std::string> lines;
  nlohmann::ordered_json findings;
  m->Report(&lines, &findings);
  EXPECT_EQ(findings["done"], false);
  ASSERT_EQ(lines.size(), 1u);
}

// GEEPAFS needs utilisation; a back end without it (as the Zeus daemon) is refused up front.
TEST(Registry, RefusesABackEndWithoutTheNeededTelemetry) {
  MethodSpec spec;
  std::string err;
  ASSERT_TRUE(ParseMethodSpec("geepafs", &spec, &err)) << err;
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1410}, 100, 400);
  gpus.missing = Reading::kUtilization;
  EXPECT_FALSE(BuildMethod(spec, &gpus, &err));
  EXPECT_EQ(err, "geepafs: the GPU back end offers no utilisation reading");
  EXPECT_TRUE(gpus.commands.empty());
}

// A GPU lost mid-run: the method stops acting, says why, and still resets the clocks at the end.
TEST(Registry, AMethodWhoseReadsFailStopsAndSaysWhy) {
  FakeGpus gpus(1, "A100-SXM4-80GB", {1005, 1110, 1200, 1305, 1410}, 100, 400);
  Geepafs g(&gpus, GeepafsOptions{});
  gpus.util[0] = 0.9;
  g.Tick(0);
  const size_t sent = gpus.commands.size();
  gpus.failing = true;
  g.Tick(200e6);
  g.Tick(400e6);
  EXPECT_EQ(g.error(), "GPU 0: telemetry read failed: GPU fell off the bus");
  EXPECT_EQ(gpus.commands.size(), sent);
  g.Finish();
  EXPECT_EQ(gpus.commands.back().what, FakeGpus::Command::kReset);
}

TEST(StepSocket, EveryDatagramIsOneIterationStart) {
  StepSocket socket;
  std::atomic<int> heard{0};
  std::string err;
  const std::string path = "/tmp/emo-step-test-" + std::to_string(getpid()) + ".sock";
  ASSERT_TRUE(socket.Open([&] { ++heard; }, &err, path)) << err;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(SendStep(socket.path(), &err)) << err;
  for (int i = 0; i < 5000 && heard < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(heard, 3);
  socket.Close();
  EXPECT_EQ(socket.steps(), 3);
  EXPECT_FALSE(SendStep(path, &err));  // nobody listens: the job's send fails, it never blocks
  EXPECT_NE(err.find(path), std::string::npos);
}

}  // namespace
}  // namespace emo
