// trace_test.cc — API-call classification, string interning and counter tracks' means and rates.
#include "trace/trace.h"

#include <gtest/gtest.h>

#include "trace/counter_tracks.h"

namespace emo {
namespace {

TEST(Trace, ClassifiesCalls) {
  EXPECT_EQ(ClassifyCall("cudaLaunchKernel"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("cuLaunchKernel"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("hipExtLaunchKernel"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("cudaGraphLaunch"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("cudaMemcpyAsync"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("cuMemsetD32Async"), CallKind::kLaunch);
  EXPECT_EQ(ClassifyCall("cudaMemcpy"), CallKind::kBlockingCopy);
  EXPECT_EQ(ClassifyCall("cuMemcpyDtoH_v2"), CallKind::kBlockingCopy);
  EXPECT_EQ(ClassifyCall("cudaStreamSynchronize"), CallKind::kStreamSync);
  EXPECT_EQ(ClassifyCall("cudaEventSynchronize"), CallKind::kEventSync);
  EXPECT_EQ(ClassifyCall("cudaDeviceSynchronize"), CallKind::kDeviceSync);
  EXPECT_EQ(ClassifyCall("cuCtxSynchronize"), CallKind::kDeviceSync);
  EXPECT_EQ(ClassifyCall("cudaEventRecord"), CallKind::kEventRecord);
  EXPECT_EQ(ClassifyCall("cudaEventRecordWithFlags"), CallKind::kEventRecord);
  EXPECT_EQ(ClassifyCall("cudaStreamWaitEvent"), CallKind::kStreamWaitEvent);
  EXPECT_EQ(ClassifyCall("cudaEventQuery"), CallKind::kOther);
  EXPECT_EQ(ClassifyCall("cudaMalloc"), CallKind::kOther);
}

TEST(Trace, InternsStrings) {
  StringTable t;
  EXPECT_EQ(t.Intern(""), 0u);
  uint32_t a = t.Intern("gemm");
  uint32_t b = t.Intern("relu");
  EXPECT_NE(a, b);
  EXPECT_EQ(t.Intern("gemm"), a);
  for (int i = 0; i < 1000; ++i) t.Intern("k" + std::to_string(i));  // growth keeps old ids valid
  EXPECT_EQ(t.Get(a), "gemm");
  EXPECT_EQ(t.Intern(std::string("re") + "lu"), b);
}

// A reading holds its value until the next sample: over [0, 40] ns of 100 (0-10), 200 (10-30) and
// 50 (30-40) the mean is (1000 + 4000 + 500) / 40; before the first sample the first value holds.
TEST(CounterTracks, MeanHoldsEachValueUntilTheNextSample) {
  CounterTrack c{0, "power", "W", {30, 0, 10}, {50, 100, 200}};  // as a file may order them
  double mean = 0;
  ASSERT_TRUE(CounterMean(c, 0, 40, &mean));
  EXPECT_DOUBLE_EQ(mean, 137.5);
  ASSERT_TRUE(CounterMean(c, 5, 20, &mean));
  EXPECT_DOUBLE_EQ(mean, (100.0 * 5 + 200.0 * 10) / 15);
  ASSERT_TRUE(CounterMean(c, -10, 5, &mean));
  EXPECT_DOUBLE_EQ(mean, 100);
  ASSERT_TRUE(CounterMean(c, 12, 12, &mean));
  EXPECT_DOUBLE_EQ(mean, 200);
  EXPECT_FALSE(CounterMean(c, 20, 10, &mean));
  EXPECT_FALSE(CounterMean(CounterTrack{}, 0, 10, &mean));
}

// An energy counter read every 100 ms rising 25 J each time: 250 W between the first and last
// samples inside the span, whatever it read outside it.
TEST(CounterTracks, RateIsTheRiseBetweenTheSamplesInsideTheSpan) {
  CounterTrack c{1, "energy", "J", {0, 100'000'000, 200'000'000, 300'000'000, 400'000'000}, {0, 35, 60, 85, 500}};
  double w = 0, s = 0;
  ASSERT_TRUE(CounterRate(c, 50'000'000, 300'000'000, &w, &s));
  EXPECT_DOUBLE_EQ(w, 250);
  EXPECT_DOUBLE_EQ(s, 0.2);
  EXPECT_FALSE(CounterRate(c, 50'000'000, 150'000'000, &w, &s));  // one sample inside
  RankTrace r;
  r.counters = {c};
  EXPECT_EQ(FindCounter(r, 1, "energy", "J"), &r.counters[0]);
  EXPECT_EQ(FindCounter(r, 0, "energy", "J"), nullptr);
}

// A process that saw two GPUs and ran its work on device 1 keeps device 1's tracks only.
TEST(CounterTracks, OnlyTheDevicesTheRankUsedKeepTheirTracks) {
  RankTrace r;
  r.counters = {{0, "power", "W", {0}, {60}}, {1, "power", "W", {0}, {300}}, {1, "energy", "J", {0}, {9}}};
  GpuOp o;
  o.device = 1;
  r.ops = {o, o};
  DropCountersOfUnusedDevices(&r);
  ASSERT_EQ(r.counters.size(), 2u);
  EXPECT_EQ(r.counters[0].device, 1);
  EXPECT_EQ(r.counters[1].name, "energy");
}

}  // namespace
}  // namespace emo
