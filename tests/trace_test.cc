// trace_test.cc — API-call classification and string interning.
#include "trace/trace.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace emo
