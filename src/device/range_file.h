// range_file.h — the files between `emo profile` and the pack profiler in libemo_inject.so: the
// kernel ranges to profile (by launch ordinal, as MetricSource names them), and per process the
// metric vectors measured for them, with the name of each range's first kernel so that EMO can
// check that the profiled run launched the same kernels in the same order as the traced one.
#pragma once

#include <string>
#include <vector>

#include "device/metric_source.h"

namespace emo {

// {"ranges": [{"gpu": G, "first": F, "last": L}, ...]}
std::string RangesJson(const std::vector<KernelRange>& ranges);
// Ranges must have 0 <= first <= last and not overlap on a GPU. False with *err naming the range.
bool ParseRanges(const std::string& json, std::vector<KernelRange>* ranges, std::string* err);

struct ProfiledRange {
  KernelRange range;
  PackMetrics metrics;
  std::string first_kernel;  // demangled name of the kernel at range.first
};

// What one profiled process measured: the GPU (rank) it profiled, how many compute kernels it
// launched, the ranges it finished, and the first error if profiling stopped early.
struct ProfileResult {
  int gpu = 0;
  int64_t kernels_seen = 0;
  int64_t passes_per_kernel = 0;  // replay passes each profiled kernel took (0: not reported)
  std::vector<ProfiledRange> ranges;
  std::string error;
};

std::string ProfileResultJson(const ProfileResult& r);
bool ParseProfileResult(const std::string& json, ProfileResult* out, std::string* err);

}  // namespace emo
