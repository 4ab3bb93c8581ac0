// pack_profiler.cc — libemo_inject.so's second mode (`emo profile`): when $EMO_PROFILE_RANGES names
// a range file, the traced program's compute kernels are counted in launch order as the trace
// counted them (NCCL's left out), and each range of launch ordinals for this process's GPU (its
// rank) is profiled with CUPTI's range profiler, one automatic range per kernel replayed by CUPTI
// (kernel replay), the kernels' counters summed per range. At exit the results go to
// $EMO_PROFILE_OUT/profile-rank<R>.json (or -pid<P>). Errors stop profiling, never the program.
#include "inject/pack_profiler.h"

#include <cupti.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "device/range_file.h"
#include "range_profiler.h"
#include "trace/cupti_records.h"

namespace emo {
namespace {

// Kernels profiled per collection: the counter data holds this many ranges; a longer range is
// collected in several pieces.
constexpr size_t kKernelsPerCollection = 64;

struct Profiler {
  std::mutex mu;
  int gpu = 0;                      // this process's GPU in EMO's numbering (its rank)
  std::vector<KernelRange> ranges;  // this GPU's, ascending
  size_t next = 0;                  // the next range to begin
  bool inside = false;              // between a range's first and last kernel
  size_t in_collection = 0;         // kernels since the last Start
  int64_t ordinal = 0;              // compute kernels launched so far
  CUcontext ctx = nullptr;
  cuda::RangeProfiler profiler;
  ProfiledRange current;
  ProfileResult result;
  std::string out_path;
  bool written = false;
};
Profiler* g_profiler = nullptr;
thread_local int t_depth = 0;      // launch callbacks nest (a runtime launch calls the driver)
thread_local bool t_comm = false;  // the outer launch in progress is NCCL's (named once, at its entry)

void Fail(Profiler& p, const std::string& what) {
  if (p.result.error.empty()) p.result.error = what;
  std::fprintf(stderr, "emo inject: profiling stopped: %s\n", what.c_str());
  p.next = p.ranges.size();
  p.inside = false;
}

bool IsLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
  return false;
}

// Stops the running collection and adds its kernels to the current range.
bool CollectInto(Profiler& p) {
  std::string err;
  bool all = false;
  std::vector<PackMetrics> kernels;
  if (!p.profiler.Stop(&all, &err) || !p.profiler.Collect(&kernels, &err)) {
    Fail(p, err);
    return false;
  }
  for (const PackMetrics& k : kernels) {
    if (p.current.metrics.kernels == 0)
      p.current.metrics = k;
    else
      p.current.metrics.Add(k);
  }
  p.in_collection = 0;
  return true;
}

void OnLaunch(Profiler& p, const CUpti_CallbackData* data) {
  if (data->callbackSite == CUPTI_API_ENTER) {
    if (t_depth++ > 0) return;
    const std::string name = KernelName(data->symbolName);
    t_comm = IsCommKernelName(name);
    if (t_comm) return;
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.inside || p.next >= p.ranges.size() || p.ordinal != p.ranges[p.next].first) return;
    // A launch's context is null where the runtime makes the context current inside the call (the
    // first launch of a thread): it is then the context kernels ran on so far.
    CUcontext ctx = data->context ? data->context : p.ctx;
    std::string err;
    if (!ctx) {
      Fail(p, "a launch without a CUDA context");
      return;
    }
    if (ctx != p.ctx) {  // the first range, or a range on another device's context
      uint32_t device = 0;
      if (!cuda::CuptiOk(cuptiGetDeviceId(ctx, &device), "device of the context", &err) ||
          !p.profiler.Open(ctx, static_cast<int>(device), CUPTI_AutoRange, CUPTI_KernelReplay, kKernelsPerCollection,
                           &err)) {
        Fail(p, err);
        return;
      }
      p.ctx = ctx;
    }
    if (!p.profiler.Start(&err)) {
      Fail(p, err);
      return;
    }
    p.inside = true;
    p.current = ProfiledRange{p.ranges[p.next], PackMetrics(), name};
    return;
  }
  if (--t_depth > 0 || t_comm) return;
  std::lock_guard<std::mutex> lock(p.mu);
  const int64_t k = p.ordinal++;
  if (!p.inside) return;
  ++p.in_collection;
  const bool last = k == p.ranges[p.next].last;
  if (!last && p.in_collection < kKernelsPerCollection) return;
  if (!CollectInto(p)) return;
  if (!last) {
    std::string err;
    if (!p.profiler.Start(&err)) Fail(p, err);
    return;
  }
  p.current.metrics.kernels = p.current.range.last - p.current.range.first + 1;
  p.result.ranges.push_back(p.current);
  p.inside = false;
  ++p.next;
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* cbdata) {
  if (g_profiler && IsLaunch(domain, cbid)) OnLaunch(*g_profiler, static_cast<const CUpti_CallbackData*>(cbdata));
}

void WriteAtExit() {
  Profiler& p = *g_profiler;
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.written) return;
  p.written = true;
  if (p.inside)
    Fail(p, "the program ended inside range " + std::to_string(p.ranges[p.next].first) + ".." +
                std::to_string(p.ranges[p.next].last));
  p.result.kernels_seen = p.ordinal;
  p.result.passes_per_kernel = static_cast<int64_t>(p.profiler.passes());
  p.profiler.Close();
  std::ofstream f(p.out_path);
  f << ProfileResultJson(p.result) << "\n";
  if (!f) std::fprintf(stderr, "emo inject: %s: cannot write\n", p.out_path.c_str());
}

}  // namespace

bool StartPackProfiler(const char* ranges_path, int rank) {
  g_profiler = new Profiler;
  Profiler& p = *g_profiler;
  p.gpu = rank >= 0 ? rank : 0;
  p.result.gpu = p.gpu;
  const char* dir = std::getenv("EMO_PROFILE_OUT");
  p.out_path = std::string(dir && *dir ? dir : ".") + "/profile-" +
               (rank >= 0 ? "rank" + std::to_string(rank) : "pid" + std::to_string(getpid())) + ".json";
  std::atexit(WriteAtExit);
  std::ifstream in(ranges_path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<KernelRange> all;
  std::string err;
  if (!in || !ParseRanges(text.str(), &all, &err)) {
    Fail(p, std::string(ranges_path) + ": " + (err.empty() ? "cannot read" : err));
    return false;
  }
  for (const KernelRange& r : all)
    if (r.gpu == p.gpu) p.ranges.push_back(r);
  std::sort(p.ranges.begin(), p.ranges.end(),
            [](const KernelRange& a, const KernelRange& b) { return a.first < b.first; });
  CUpti_SubscriberHandle subscriber;
  if (!cuda::CuptiOk(cuptiSubscribe(&subscriber, Callback, nullptr), "subscribe", &err) ||
      !cuda::CuptiOk(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "runtime callbacks", &err) ||
      !cuda::CuptiOk(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "driver callbacks", &err)) {
    Fail(p, err);
    return false;
  }
  return true;
}

}  // namespace emo
