// sim_metric_source_test.cc — range profiling through the MetricSource interface: the simulator's
// ranges are the kernels the trace shows at those launch ordinals, ranges add up, bad ranges are
// refused.
#include "sim/sim_metric_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "sim/engine_constants.h"
#include "sim/workload.h"

namespace emo::sim {
namespace {

Program Load(const char* name) {
  Program p;
  std::string err;
  EXPECT_TRUE(LoadWorkload(std::string(std::getenv("EMO_WORKLOADS")) + "/" + name, &p, &err)) << err;
  return p;
}

EngineOptions Options() {
  EngineOptions o;
  o.iterations = 2;
  o.record_trace = true;
  return o;
}

// A range's kernels are those the trace lists at those launch ordinals: the compute kernels of the
// GPU in correlation (launch) order. Its summed time is theirs.
TEST(SimMetricSource, RangesAreTheKernelsAtThoseLaunchOrdinals) {
  const Program p = Load("tp2-gpt3-6.7b-a100.json");
  SimMetricSource source(p, Options());
  std::vector<PackMetrics> out;
  ProfileCost cost;
  std::string err;
  ASSERT_TRUE(source.Profile({{1, 5, 9}, {0, 0, 0}, {1, 40, 40}}, &out, &cost, &err)) << err;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kernels, 5);
  EXPECT_EQ(out[1].kernels, 1);
  EXPECT_EQ(out[2].kernels, 1);
  EXPECT_EQ(cost.ranges, 3);
  EXPECT_EQ(cost.kernels_profiled, 7);
  EXPECT_EQ(cost.passes, 3 * kRangeProfilerPasses);
  // Each profiled kernel ran once per pass: the passes after the first are the run time added.
  EXPECT_NEAR(cost.overhead_s, (out[0].time_ns + out[1].time_ns + out[2].time_ns) * 1e-9 * (kRangeProfilerPasses - 1),
              0.03 * cost.overhead_s);
  EXPECT_GT(out[0].sm_mhz, 0);

  Engine e(p, Options());
  ASSERT_TRUE(e.Run(&err)) << err;
  std::vector<GpuOp> kernels;
  for (const GpuOp& op : e.trace().ranks[1].ops)
    if (op.kind == GpuOpKind::kKernel && !op.is_comm) kernels.push_back(op);
  std::sort(kernels.begin(), kernels.end(),
            [](const GpuOp& a, const GpuOp& b) { return a.correlation < b.correlation; });
  ASSERT_GT(kernels.size(), 41u);
  double ns = 0;
  for (size_t i = 5; i <= 9; ++i) ns += static_cast<double>(kernels[i].end_ns - kernels[i].start_ns);
  // A pass's time, in the profiling run: the passes lengthen the kernels, so what ran beside them
  // (other streams, the other GPU's collectives) shifts, as replay perturbs a real run.
  EXPECT_NEAR(out[0].time_ns, ns, 0.05 * ns);
  const double k40 = static_cast<double>(kernels[40].end_ns - kernels[40].start_ns);
  EXPECT_NEAR(out[2].time_ns, k40, 0.05 * k40);
}

// Profiling two neighbouring ranges or their union counts the same kernels with the same noise.
TEST(SimMetricSource, NeighbouringRangesAddUpToTheirUnion) {
  const Program p = Load("dp2-gpt3-1.3b-a100.json");
  SimMetricSource source(p, Options());
  std::vector<PackMetrics> parts, whole;
  ProfileCost cost;
  std::string err;
  ASSERT_TRUE(source.Profile({{0, 10, 19}, {0, 20, 29}}, &parts, &cost, &err)) << err;
  ASSERT_TRUE(source.Profile({{0, 10, 29}}, &whole, &cost, &err)) << err;
  PackMetrics sum = parts[0];
  sum.Add(parts[1]);
  for (int m = 0; m < kMetrics; ++m)
    EXPECT_NEAR(sum.v[m], whole[0].v[m], 1e-9 * std::abs(whole[0].v[m])) << MetricName(Metric(m));
  EXPECT_EQ(sum.kernels, 20);
  EXPECT_GT(whole[0].v[kInstTensor], 0);  // GEMMs in the range
  EXPECT_GT(whole[0].v[kDramReadBytes], 0);
}

TEST(SimMetricSource, RefusesBadRanges) {
  const Program p = Load("tp2-gpt3-6.7b-a100.json");
  SimMetricSource source(p, Options());
  std::vector<PackMetrics> out;
  ProfileCost cost;
  std::string err;
  EXPECT_FALSE(source.Profile({{0, 5, 9}, {0, 9, 12}}, &out, &cost, &err));
  EXPECT_EQ(err, "ranges overlap on GPU 0 at launch 9");
  EXPECT_FALSE(source.Profile({{2, 0, 0}}, &out, &cost, &err));
  EXPECT_EQ(err, "no simulated GPU 2 (there are 2)");
  EXPECT_FALSE(source.Profile({{0, 3, 2}}, &out, &cost, &err));
  EXPECT_FALSE(source.Profile({{0, 0, 100000000}}, &out, &cost, &err));
  EXPECT_NE(err.find("is beyond them"), std::string::npos) << err;
}

}  // namespace
}  // namespace emo::sim
