// cuda_bench_device.cc — the BenchDevice of real NVIDIA GPUs (libemo_cuda.so, which `emo calibrate
// --device cuda:N` loads with dlopen): the CUDA microbenchmark kernels timed with CUDA events, the
// clock and the energy counter through the GpuControl that EMO passes in (NVML), and the metric
// vectors from CUPTI range profiling (one user range per KernelRange, replayed by re-launching).
//
// Launch ends and telemetry polls share one clock: the host's steady clock, with launch ends placed
// by CUDA events relative to an event whose completion the host waited for. Polls run on a thread of
// their own while this one enqueues the launches.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/microbench.h"
#include "microbench_kernels.h"

namespace emo::cuda {
namespace {

double NowNs() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool CudaOk(cudaError_t rc, const char* what, std::string* err) {
  if (rc == cudaSuccess) return true;
  *err = std::string(what) + ": " + cudaGetErrorString(rc);
  return false;
}

bool CuptiOk(CUptiResult rc, const char* what, std::string* err) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  *err = std::string("CUPTI ") + what + ": " + (text ? text : "error " + std::to_string(rc));
  return false;
}

// GPU `index` of `all`, seen as GPU 0: calibration speaks of GPU 0 only.
class OneGpu : public GpuControl {
 public:
  OneGpu(GpuControl& all, int index) : all_(all), at_(index) {}
  int Count() const override { return 1; }
  std::string Name(int) const override { return all_.Name(at_); }
  std::vector<int> SupportedClocks(int) const override { return all_.SupportedClocks(at_); }
  bool SetLockedClock(int, int mhz, std::string* err) override { return all_.SetLockedClock(at_, mhz, err); }
  bool ResetClock(int, std::string* err) override { return all_.ResetClock(at_, err); }
  bool SetPowerLimit(int, double watts, std::string* err) override { return all_.SetPowerLimit(at_, watts, err); }
  bool Offers(Reading r) const override { return all_.Offers(r); }
  std::optional<double> EnergyJ(int) const override { return all_.EnergyJ(at_); }
  std::optional<double> PowerW(int) const override { return all_.PowerW(at_); }
  std::optional<double> Utilization(int) const override { return all_.Utilization(at_); }
  std::optional<double> MemoryUtilization(int) const override { return all_.MemoryUtilization(at_); }
  std::optional<double> ClockMhz(int) const override { return all_.ClockMhz(at_); }
  std::optional<double> PowerLimitW(int) const override { return all_.PowerLimitW(at_); }
  bool PowerLimitRange(int, double* min_w, double* max_w) const override {
    return all_.PowerLimitRange(at_, min_w, max_w);
  }
  std::string error() const override { return all_.error(); }

 private:
  GpuControl& all_;
  int at_;
};

// The CUPTI metrics behind EMO's metric vector: metric m is the sum of its names that the chip has
// (the tensor pipe counts mma.sync HMMA and IMMA, and Hopper's warpgroup GMMA).
struct CuptiMetric {
  Metric m;
  const char* name;
  bool optional;  // dropped where the chip lacks it
};
const CuptiMetric kCuptiMetrics[] = {
    {kSmCyclesActive, "sm__cycles_active.sum", false},
    {kWarpsPerActiveCycle, "sm__warps_active.avg.per_cycle_active", false},
    {kDramReadBytes, "dram__bytes_read.sum", false},
    {kDramWriteBytes, "dram__bytes_write.sum", false},
    {kL1Bytes, "l1tex__t_bytes.sum", false},
    {kL2Bytes, "lts__t_bytes.sum", false},
    {kInstAlu, "smsp__inst_executed_pipe_alu.sum", false},
    {kInstFma, "smsp__inst_executed_pipe_fma.sum", false},
    {kInstFp64, "smsp__inst_executed_pipe_fp64.sum", false},
    {kInstLsu, "smsp__inst_executed_pipe_lsu.sum", false},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_hmma.sum", false},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_imma.sum", true},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_gmma.sum", true},
};

class CudaBenchDevice : public BenchDevice {
 public:
  CudaBenchDevice(GpuControl& gpus, int index) : gpu_(gpus, index), index_(index) {}
  ~CudaBenchDevice() override {
    Free(&buf_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  bool Open(std::string* err) {
    if (!CudaOk(cudaSetDevice(index_), ("cudaSetDevice(" + std::to_string(index_) + ")").c_str(), err)) return false;
    if (!CudaOk(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, index_), "SM count", err)) return false;
    if (!CudaOk(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", err)) return false;
    return true;
  }

  std::string Name() const override { return gpu_.Name(0); }
  std::vector<int> SupportedClocks() const override { return gpu_.SupportedClocks(0); }

  bool Run(Microbench b, int launches, double poll_ms, const std::function<void(GpuControl&)>& start,
           const std::function<void(GpuControl&, double now_ns)>& poll, BenchRun* out, std::string* err) override {
    if (!Allocate(b, &buf_, err)) return false;
    std::vector<cudaEvent_t> events(static_cast<size_t>(launches) + 1, nullptr);
    for (cudaEvent_t& e : events)
      if (!CudaOk(cudaEventCreate(&e), "cudaEventCreate", err)) return DestroyEvents(&events, false);
    start(gpu_);
    // The origin: the first event, completed before the host reads its clock.
    cudaEventRecord(events[0], stream_);
    if (!CudaOk(cudaEventSynchronize(events[0]), "cudaEventSynchronize", err)) return DestroyEvents(&events, false);
    const double origin_ns = NowNs();
    // Telemetry from a thread of its own, so that reading NVML (a millisecond or more a read) never
    // starves the GPU of launches; this thread only enqueues.
    std::atomic<bool> finished{false};
    std::thread poller([&] {
      while (!finished.load()) {
        const double now = NowNs();
        poll(gpu_, now);
        std::this_thread::sleep_for(std::chrono::duration<double, std::nano>(now + poll_ms * 1e6 - NowNs()));
      }
    });
    for (int i = 0; i < launches; ++i) {
      Launch(b, sms_, buf_, stream_);
      cudaEventRecord(events[static_cast<size_t>(i) + 1], stream_);
    }
    const cudaError_t synced = cudaEventSynchronize(events.back());
    finished = true;
    poller.join();
    if (!CudaOk(synced, "cudaEventSynchronize", err)) return DestroyEvents(&events, false);
    std::string reset_err;
    const bool reset = gpu_.ResetClock(0, &reset_err);
    if (!CudaOk(cudaGetLastError(), MicrobenchName(b), err)) return DestroyEvents(&events, false);
    if (!reset) {
      *err = "resetting the clock: " + reset_err;
      return DestroyEvents(&events, false);
    }
    out->launch_end_ns.assign(static_cast<size_t>(launches), 0);
    for (int i = 0; i < launches; ++i) {
      float ms = 0;
      if (!CudaOk(cudaEventElapsedTime(&ms, events[0], events[static_cast<size_t>(i) + 1]), "cudaEventElapsedTime",
                  err))
        return DestroyEvents(&events, false);
      out->launch_end_ns[static_cast<size_t>(i)] = origin_ns + ms * 1e6;
    }
    return DestroyEvents(&events, true);
  }

  // Range profiling of `launches` launches of b: one CUPTI user range per KernelRange, the whole
  // launch sequence replayed once per pass (user replay), at the default clock.
  bool Profile(Microbench b, int launches, const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out,
               ProfileCost* cost, std::string* err) override {
    for (size_t r = 0; r < ranges.size(); ++r)
      if (ranges[r].gpu != 0 || ranges[r].first < 0 || ranges[r].last < ranges[r].first || ranges[r].last >= launches ||
          (r > 0 && ranges[r].first <= ranges[r - 1].last)) {
        *err = "range profiling takes disjoint ascending launch ranges on GPU 0 within the launches";
        return false;
      }
    if (!Allocate(b, &buf_, err) || !OpenProfiler(ranges.size(), err)) return false;
    bool ok = true;
    std::vector<cudaEvent_t> events(2 * ranges.size(), nullptr);
    for (cudaEvent_t& e : events) ok = ok && CudaOk(cudaEventCreate(&e), "cudaEventCreate", err);
    std::vector<double> time_ns(ranges.size(), 0);
    double mhz = 0;
    int64_t passes = 0;
    for (bool all_submitted = false; ok && !all_submitted; ++passes) {
      CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
      start.pRangeProfilerObject = profiler_;
      ok = CuptiOk(cuptiRangeProfilerStart(&start), "range profiler start", err);
      size_t r = 0;
      for (int i = 0; ok && i < launches; ++i) {
        if (r < ranges.size() && i == ranges[r].first) {
          CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
          push.pRangeProfilerObject = profiler_;
          const std::string name = "range" + std::to_string(r);
          push.pRangeName = name.c_str();
          ok = CuptiOk(cuptiRangeProfilerPushRange(&push), "push range", err);
          cudaEventRecord(events[2 * r], stream_);
        }
        Launch(b, sms_, buf_, stream_);
        if (r < ranges.size() && i == ranges[r].last) {
          cudaEventRecord(events[2 * r + 1], stream_);
          CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
          pop.pRangeProfilerObject = profiler_;
          ok = ok && CuptiOk(cuptiRangeProfilerPopRange(&pop), "pop range", err);
          ++r;
        }
      }
      ok = ok && CudaOk(cudaStreamSynchronize(stream_), MicrobenchName(b), err);
      if (ok && gpu_.ClockMhz(0)) mhz = *gpu_.ClockMhz(0);
      CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
      stop.pRangeProfilerObject = profiler_;
      ok = ok && CuptiOk(cuptiRangeProfilerStop(&stop), "range profiler stop", err);
      all_submitted = stop.isAllPassSubmitted != 0;
      for (size_t k = 0; ok && k < ranges.size(); ++k) {  // the last pass's times are kept
        float ms = 0;
        ok = CudaOk(cudaEventElapsedTime(&ms, events[2 * k], events[2 * k + 1]), "cudaEventElapsedTime", err);
        time_ns[k] = ms * 1e6;
      }
    }
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    ok = ok && Evaluate(ranges, time_ns, mhz, out, err);
    if (ok && cost) {
      cost->ranges += static_cast<int64_t>(ranges.size());
      cost->passes += passes * static_cast<int64_t>(ranges.size());
      for (const KernelRange& r : ranges) cost->kernels_profiled += passes * (r.last - r.first + 1);
    }
    CloseProfiler();
    return ok;
  }

 private:
  static bool DestroyEvents(std::vector<cudaEvent_t>* events, bool result) {
    for (cudaEvent_t e : *events)
      if (e) cudaEventDestroy(e);
    return result;
  }

  // Host object with the metrics this chip has; config image; range profiler on the context.
  bool OpenProfiler(size_t max_ranges, std::string* err) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if (!CuptiOk(cuptiProfilerInitialize(&init), "profiler initialise", err)) return false;
    CUcontext ctx = nullptr;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
      *err = "no current CUDA context";
      return false;
    }
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(index_);
    if (!CuptiOk(cuptiDeviceGetChipName(&chip), "chip name", err)) return false;
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    if (!CuptiOk(cuptiProfilerGetCounterAvailability(&avail), "counter availability", err)) return false;
    availability_.assign(avail.counterAvailabilityImageSize, 0);
    avail.pCounterAvailabilityImage = availability_.data();
    if (!CuptiOk(cuptiProfilerGetCounterAvailability(&avail), "counter availability", err)) return false;
    // The metrics the chip has: required ones must all be there; optional ones are tried one by one.
    names_.clear();
    metric_of_.clear();
    for (const CuptiMetric& c : kCuptiMetrics) {
      std::vector<const char*> trial = names_;
      trial.push_back(c.name);
      std::string why;
      if (!HostWithMetrics(chip.pChipName, trial, nullptr, &why)) {
        if (c.optional) continue;
        *err = std::string("metric ") + c.name + " on " + chip.pChipName + ": " + why;
        return false;
      }
      names_.push_back(c.name);
      metric_of_.push_back(c.m);
    }
    std::vector<uint8_t> config;
    if (!HostWithMetrics(chip.pChipName, names_, &config, err)) return false;
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    if (!CuptiOk(cuptiRangeProfilerEnable(&enable), "range profiler enable", err)) return false;
    profiler_ = enable.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = profiler_;
    size.pMetricNames = names_.data();
    size.numMetrics = names_.size();
    size.maxNumOfRanges = max_ranges;
    size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
    if (!CuptiOk(cuptiRangeProfilerGetCounterDataSize(&size), "counter data size", err)) return false;
    counter_data_.assign(size.counterDataSize, 0);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params image{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    image.pRangeProfilerObject = profiler_;
    image.pCounterData = counter_data_.data();
    image.counterDataSize = counter_data_.size();
    if (!CuptiOk(cuptiRangeProfilerCounterDataImageInitialize(&image), "counter data image", err)) return false;
    config_ = std::move(config);
    CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    set.pRangeProfilerObject = profiler_;
    set.pConfig = config_.data();
    set.configSize = config_.size();
    set.pCounterDataImage = counter_data_.data();
    set.counterDataImageSize = counter_data_.size();
    set.range = CUPTI_UserRange;
    set.replayMode = CUPTI_UserReplay;
    set.maxRangesPerPass = max_ranges;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    return CuptiOk(cuptiRangeProfilerSetConfig(&set), "range profiler config", err);
  }

  // A host object for `chip` holding `metrics` (kept in host_), and its config image when asked.
  bool HostWithMetrics(const char* chip, std::vector<const char*> metrics, std::vector<uint8_t>* config,
                       std::string* err) {
    DestroyHost();
    CUpti_Profiler_Host_Initialize_Params init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    init.pChipName = chip;
    init.pCounterAvailabilityImage = availability_.data();
    if (!CuptiOk(cuptiProfilerHostInitialize(&init), "host initialise", err)) return false;
    host_ = init.pHostObject;
    if (metrics.empty()) return true;
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host_;
    add.ppMetricNames = metrics.data();
    add.numMetrics = metrics.size();
    if (!CuptiOk(cuptiProfilerHostConfigAddMetrics(&add), "add metrics", err)) return false;
    if (!config) return true;
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host_;
    if (!CuptiOk(cuptiProfilerHostGetConfigImageSize(&size), "config image size", err)) return false;
    config->assign(size.configImageSize, 0);
    CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    image.pHostObject = host_;
    image.pConfigImage = config->data();
    image.configImageSize = config->size();
    return CuptiOk(cuptiProfilerHostGetConfigImage(&image), "config image", err);
  }

  bool Evaluate(const std::vector<KernelRange>& ranges, const std::vector<double>& time_ns, double mhz,
                std::vector<PackMetrics>* out, std::string* err) {
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = profiler_;
    if (!CuptiOk(cuptiRangeProfilerDecodeData(&decode), "decode", err)) return false;
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    if (!CuptiOk(cuptiRangeProfilerGetCounterDataInfo(&info), "counter data info", err)) return false;
    if (info.numTotalRanges != ranges.size() || decode.numOfRangeDropped != 0) {
      *err = "range profiling returned " + std::to_string(info.numTotalRanges) + " ranges (" +
             std::to_string(decode.numOfRangeDropped) + " dropped) for " + std::to_string(ranges.size());
      return false;
    }
    out->assign(ranges.size(), {});
    std::vector<double> values(names_.size(), 0);
    for (size_t r = 0; r < ranges.size(); ++r) {
      CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      eval.pHostObject = host_;
      eval.pCounterDataImage = counter_data_.data();
      eval.counterDataImageSize = counter_data_.size();
      eval.ppMetricNames = names_.data();
      eval.numMetrics = names_.size();
      eval.rangeIndex = r;
      eval.pMetricValues = values.data();
      if (!CuptiOk(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluate", err)) return false;
      PackMetrics& p = (*out)[r];
      for (size_t k = 0; k < names_.size(); ++k) p.v[metric_of_[k]] += values[k];
      p.kernels = ranges[r].last - ranges[r].first + 1;
      p.time_ns = time_ns[r];
      p.sm_mhz = mhz;
    }
    return true;
  }

  void DestroyHost() {
    if (!host_) return;
    CUpti_Profiler_Host_Deinitialize_Params done{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    done.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&done);
    host_ = nullptr;
  }

  void CloseProfiler() {
    if (profiler_) {
      CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      disable.pRangeProfilerObject = profiler_;
      cuptiRangeProfilerDisable(&disable);
      profiler_ = nullptr;
    }
    DestroyHost();
    CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&deinit);
  }

  OneGpu gpu_;
  int index_;
  int sms_ = 0;
  cudaStream_t stream_ = nullptr;
  BenchBuffers buf_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* profiler_ = nullptr;
  std::vector<uint8_t> availability_, config_, counter_data_;
  std::vector<const char*> names_;
  std::vector<Metric> metric_of_;
};

}  // namespace
}  // namespace emo::cuda

// The entry point `emo calibrate` finds with dlsym: the device of CUDA device `index`, whose clock
// and telemetry are GPU `index` of `gpus` (the caller orders CUDA devices by PCI bus, as NVML does).
// Null with *err when CUDA or the device is missing.
extern "C" __attribute__((visibility("default"))) emo::BenchDevice* EmoOpenCudaBenchDevice(emo::GpuControl* gpus,
                                                                                           int index,
                                                                                           std::string* err) {
  auto device = std::make_unique<emo::cuda::CudaBenchDevice>(*gpus, index);
  if (!device->Open(err)) return nullptr;
  return device.release();
}
