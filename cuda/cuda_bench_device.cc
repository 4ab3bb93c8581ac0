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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/microbench.h"
#include "microbench_kernels.h"
#include "range_profiler.h"

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

// Telemetry from a thread of its own, so that reading NVML (a millisecond or more a read) never
// starves the GPU of launches: poll(gpu, now) every poll_ms until Stop() (or destruction).
class Poller {
 public:
  Poller(GpuControl& gpu, double poll_ms, const std::function<void(GpuControl&, double now_ns)>& poll)
      : thread_([this, &gpu, poll_ms, &poll] {
          while (!stop_.load()) {
            const double now = NowNs();
            poll(gpu, now);
            std::this_thread::sleep_for(std::chrono::duration<double, std::nano>(now + poll_ms * 1e6 - NowNs()));
          }
        }) {}
  ~Poller() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;  // after stop_, which it reads from its start
};

class CudaBenchDevice : public BenchDevice {
 public:
  CudaBenchDevice(GpuControl& gpu, int index) : gpu_(gpu), index_(index) {}
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
  std::vector<int> SupportedMemoryClocks() const override {
    std::vector<int> m = gpu_.SupportedMemoryClocks(0);
    std::sort(m.begin(), m.end());
    return m;
  }

  bool Run(Microbench b, int launches, double poll_ms, const std::function<void(GpuControl&)>& start,
           const std::function<void(GpuControl&, double now_ns)>& poll, BenchRun* out, std::string* err) override {
    if (!Allocate(b, &buf_, err)) return false;
    // events[0]: the origin; events[2i + 1] and events[2i + 2]: before and after launch i.
    std::vector<cudaEvent_t> events(2 * static_cast<size_t>(launches) + 1, nullptr);
    for (cudaEvent_t& e : events)
      if (!CudaOk(cudaEventCreate(&e), "cudaEventCreate", err)) return DestroyEvents(&events, false);
    start(gpu_);
    // The origin: the first event, completed before the host reads its clock.
    cudaEventRecord(events[0], stream_);
    if (!CudaOk(cudaEventSynchronize(events[0]), "cudaEventSynchronize", err)) return DestroyEvents(&events, false);
    const double origin_ns = NowNs();
    Poller poller(gpu_, poll_ms, poll);  // this thread only enqueues
    if (b == kBenchEmpty) LaunchGate(sms_, stream_);
    for (size_t i = 0; i < static_cast<size_t>(launches); ++i) {
      cudaEventRecord(events[2 * i + 1], stream_);
      Launch(b, sms_, buf_, stream_);
      cudaEventRecord(events[2 * i + 2], stream_);
    }
    const cudaError_t synced = cudaEventSynchronize(events.back());
    poller.Stop();
    if (!CudaOk(synced, "cudaEventSynchronize", err)) return DestroyEvents(&events, false);
    std::string reset_err;
    const bool reset = gpu_.ResetClock(0, &reset_err);
    if (!CudaOk(cudaGetLastError(), MicrobenchName(b), err)) return DestroyEvents(&events, false);
    if (!reset) {
      *err = "resetting the clock: " + reset_err;
      return DestroyEvents(&events, false);
    }
    out->launch_start_ns.assign(static_cast<size_t>(launches), 0);
    out->launch_end_ns.assign(static_cast<size_t>(launches), 0);
    for (size_t i = 0; i < static_cast<size_t>(launches); ++i) {
      float start_ms = 0, end_ms = 0;
      if (!CudaOk(cudaEventElapsedTime(&start_ms, events[0], events[2 * i + 1]), "cudaEventElapsedTime", err) ||
          !CudaOk(cudaEventElapsedTime(&end_ms, events[0], events[2 * i + 2]), "cudaEventElapsedTime", err))
        return DestroyEvents(&events, false);
      out->launch_start_ns[i] = origin_ns + start_ms * 1e6;
      out->launch_end_ns[i] = origin_ns + end_ms * 1e6;
    }
    return DestroyEvents(&events, true);
  }

  bool RunJob(const MixJob& job, int iterations, double poll_ms, const std::function<void(GpuControl&)>& start,
              const std::function<void(GpuControl&, double now_ns)>& poll, JobRun* out, std::string* err) override {
    for (const auto& [b, count] : job.launches)
      if (!Allocate(b, &buf_, err)) return false;
    cudaEvent_t done = nullptr;
    if (!CudaOk(cudaEventCreate(&done), "cudaEventCreate", err)) return false;
    start(gpu_);
    Poller poller(gpu_, poll_ms, poll);
    out->iteration_end_ns.clear();
    cudaError_t rc = cudaSuccess;
    for (int it = 0; it < iterations && rc == cudaSuccess; ++it) {
      for (const auto& [b, count] : job.launches)
        for (int i = 0; i < count; ++i) Launch(b, sms_, buf_, stream_);
      cudaEventRecord(done, stream_);
      rc = cudaEventSynchronize(done);
      if (job.host_gap_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(job.host_gap_ms));
      out->iteration_end_ns.push_back(NowNs());
    }
    poller.Stop();
    cudaEventDestroy(done);
    std::string reset_err;
    const bool reset = gpu_.ResetClock(0, &reset_err);
    // The memory clock too where a job's `start` may have locked it (several listed: GDDR parts).
    std::string mem_err;
    const bool mem_reset = gpu_.SupportedMemoryClocks(0).size() < 2 || gpu_.ResetMemoryClock(0, &mem_err);
    if (!CudaOk(rc, "cudaEventSynchronize", err) || !CudaOk(cudaGetLastError(), "a job's kernels", err)) return false;
    if (!reset) {
      *err = "resetting the clock: " + reset_err;
      return false;
    }
    if (!mem_reset) {
      *err = "resetting the memory clock: " + mem_err;
      return false;
    }
    return true;
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
    if (!Allocate(b, &buf_, err)) return false;
    CUcontext ctx = nullptr;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
      *err = "no current CUDA context";
      return false;
    }
    RangeProfiler profiler;
    if (!profiler.Open(ctx, index_, CUPTI_UserRange, CUPTI_UserReplay, ranges.size(), err)) return false;
    bool ok = true;
    std::vector<cudaEvent_t> events(2 * ranges.size(), nullptr);
    for (cudaEvent_t& e : events) ok = ok && CudaOk(cudaEventCreate(&e), "cudaEventCreate", err);
    std::vector<double> time_ns(ranges.size(), 0);
    double mhz = 0;
    int64_t passes = 0;
    for (bool all_submitted = false; ok && !all_submitted; ++passes) {
      ok = profiler.Start(err);
      size_t r = 0;
      for (int i = 0; ok && i < launches; ++i) {
        if (r < ranges.size() && i == ranges[r].first) {
          const std::string name = "range" + std::to_string(r);
          ok = profiler.Push(name.c_str(), err);
          cudaEventRecord(events[2 * r], stream_);
        }
        Launch(b, sms_, buf_, stream_);
        if (r < ranges.size() && i == ranges[r].last) {
          cudaEventRecord(events[2 * r + 1], stream_);
          ok = ok && profiler.Pop(err);
          ++r;
        }
      }
      ok = ok && CudaOk(cudaStreamSynchronize(stream_), MicrobenchName(b), err);
      if (ok && gpu_.ClockMhz(0)) mhz = *gpu_.ClockMhz(0);
      ok = ok && profiler.Stop(&all_submitted, err);
      for (size_t k = 0; ok && k < ranges.size(); ++k) {  // the last pass's times are kept
        float ms = 0;
        ok = CudaOk(cudaEventElapsedTime(&ms, events[2 * k], events[2 * k + 1]), "cudaEventElapsedTime", err);
        time_ns[k] = ms * 1e6;
      }
    }
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    ok = ok && profiler.Collect(out, err);
    if (ok && out->size() != ranges.size()) {
      *err = "range profiling returned " + std::to_string(out->size()) + " ranges for " + std::to_string(ranges.size());
      ok = false;
    }
    for (size_t r = 0; ok && r < ranges.size(); ++r) {
      (*out)[r].kernels = ranges[r].last - ranges[r].first + 1;
      (*out)[r].time_ns = time_ns[r];
      (*out)[r].sm_mhz = mhz;
    }
    if (ok && cost) {
      cost->ranges += static_cast<int64_t>(ranges.size());
      cost->passes += passes * static_cast<int64_t>(ranges.size());
      for (const KernelRange& r : ranges) cost->kernels_profiled += passes * (r.last - r.first + 1);
    }
    return ok;
  }

 private:
  static bool DestroyEvents(std::vector<cudaEvent_t>* events, bool result) {
    for (cudaEvent_t e : *events)
      if (e) cudaEventDestroy(e);
    return result;
  }

  GpuControl& gpu_;  // its GPU 0 is this device
  int index_;
  int sms_ = 0;
  cudaStream_t stream_ = nullptr;
  BenchBuffers buf_;
};

}  // namespace
}  // namespace emo::cuda

// The entry point `emo calibrate` finds with dlsym: the device of CUDA device `index`, whose clock
// and telemetry are GPU 0 of `gpu` (the caller orders CUDA devices by PCI bus, as NVML does, and
// hands over a view of that one GPU). Null with *err when CUDA or the device is missing.
extern "C" __attribute__((visibility("default"))) emo::BenchDevice* EmoOpenCudaBenchDevice(emo::GpuControl* gpu,
                                                                                           int index,
                                                                                           std::string* err) {
  auto device = std::make_unique<emo::cuda::CudaBenchDevice>(*gpu, index);
  if (!device->Open(err)) return nullptr;
  return device.release();
}
