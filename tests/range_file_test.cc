// range_file_test.cc — the files between `emo profile` and the injected pack profiler: round trips,
// and the range checks that keep a bad file from profiling the wrong kernels.
#include "device/range_file.h"

#include <gtest/gtest.h>

namespace emo {
namespace {

TEST(RangeFile, RangesRoundTrip) {
  const std::vector<KernelRange> in = {{0, 0, 3}, {0, 7, 7}, {1, 2, 9}};
  std::vector<KernelRange> out;
  std::string err;
  ASSERT_TRUE(ParseRanges(RangesJson(in), &out, &err)) << err;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].gpu, 1);
  EXPECT_EQ(out[2].first, 2);
  EXPECT_EQ(out[2].last, 9);
}

TEST(RangeFile, BadRangesAreNamed) {
  std::vector<KernelRange> out;
  std::string err;
  EXPECT_FALSE(ParseRanges("{\"ranges\": [{\"gpu\": 0, \"first\": 5, \"last\": 4}]}", &out, &err));
  EXPECT_NE(err.find("range 0"), std::string::npos) << err;
  EXPECT_FALSE(ParseRanges(RangesJson({{0, 0, 5}, {1, 0, 5}, {0, 5, 8}}), &out, &err));
  EXPECT_NE(err.find("overlap on GPU 0"), std::string::npos) << err;
  EXPECT_FALSE(ParseRanges("{\"ranges\": [{\"gpu\": 0, \"first\": \"a\", \"last\": 4}]}", &out, &err));
  EXPECT_FALSE(ParseRanges("{\"ranges\": 3}", &out, &err));
  EXPECT_FALSE(ParseRanges("{\"ran", &out, &err));
}

TEST(RangeFile, ResultRoundTrip) {
  ProfileResult r;
  r.gpu = 2;
  r.kernels_seen = 40;
  r.passes_per_kernel = 7;
  r.error = "stopped";
  ProfiledRange p;
  p.range = {2, 10, 12};
  p.metrics.v[kDramReadBytes] = 1.5e9;
  p.metrics.v[kWarpsPerActiveCycle] = 31.5;
  p.metrics.kernels = 3;
  p.first_kernel = "void gemm<float>(float*)";
  r.ranges.push_back(p);
  ProfileResult back;
  std::string err;
  ASSERT_TRUE(ParseProfileResult(ProfileResultJson(r), &back, &err)) << err;
  EXPECT_EQ(back.gpu, 2);
  EXPECT_EQ(back.kernels_seen, 40);
  EXPECT_EQ(back.passes_per_kernel, 7);
  EXPECT_EQ(back.error, "stopped");
  ASSERT_EQ(back.ranges.size(), 1u);
  EXPECT_EQ(back.ranges[0].range.last, 12);
  EXPECT_EQ(back.ranges[0].metrics.kernels, 3);
  EXPECT_DOUBLE_EQ(back.ranges[0].metrics.v[kDramReadBytes], 1.5e9);
  EXPECT_DOUBLE_EQ(back.ranges[0].metrics.v[kWarpsPerActiveCycle], 31.5);
  EXPECT_EQ(back.ranges[0].first_kernel, "void gemm<float>(float*)");
  EXPECT_FALSE(ParseProfileResult("{\"gpu\": 0, \"kernels_seen\": 1, \"ranges\": [{\"gpu\": 0}]}", &back, &err));
  EXPECT_NE(err.find("profile result"), std::string::npos);
}

}  // namespace
}  // namespace emo
