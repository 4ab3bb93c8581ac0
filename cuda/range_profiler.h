// range_profiler.h — EMO's metric vector (device/metric_source.h) from CUPTI's range profiler (the
// CUDA 13 API), shared by the microbenchmark device (user ranges, replayed by re-launching) and the
// pack profiler in libemo_inject.so (automatic per-kernel ranges, replayed by CUPTI kernel by kernel).
#pragma once

#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>

#include <string>
#include <vector>

#include "device/metric_source.h"

namespace emo::cuda {

class RangeProfiler {
 public:
  RangeProfiler() = default;
  ~RangeProfiler() { Close(); }
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  // Sets the profiler up on `ctx` (of CUDA device `device`) for up to max_ranges ranges per
  // collection, with the metrics the chip has. False with *err naming the call or the metric.
  bool Open(CUcontext ctx, int device, CUpti_ProfilerRange range, CUpti_ProfilerReplayMode replay, size_t max_ranges,
            std::string* err);
  bool Start(std::string* err);
  // *all_submitted: every pass of user replay has run (always true for kernel replay).
  bool Stop(bool* all_submitted, std::string* err);
  bool Push(const char* name, std::string* err);
  bool Pop(std::string* err);
  // The metric vector of every range collected since Open or the last Collect, in order; the
  // counter data is then cleared for the next collection.
  bool Collect(std::vector<PackMetrics>* ranges, std::string* err);
  void Close();
  // Replay passes the configured metrics need (CUPTI's count for the config image): under kernel
  // replay each profiled kernel runs this many times. 0 before Open.
  size_t passes() const { return passes_; }

 private:
  bool HostWithMetrics(const char* chip, const std::vector<const char*>& metrics, std::vector<uint8_t>* config,
                       std::string* err);
  bool InitCounterData(std::string* err);
  void DestroyHost();

  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* profiler_ = nullptr;
  bool initialized_ = false;
  size_t max_ranges_ = 0, passes_ = 0;
  std::vector<uint8_t> availability_, config_, counter_data_;
  std::vector<const char*> names_;
  std::vector<Metric> metric_of_;
};

// CUPTI's message for `rc`, prefixed by `what`; false unless rc is CUPTI_SUCCESS.
bool CuptiOk(CUptiResult rc, const char* what, std::string* err);

}  // namespace emo::cuda
