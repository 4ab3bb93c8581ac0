// fake_nvml.cc — a stand-in for libnvidia-ml.so with the functions EMO's NVML back end calls,
// reporting and recording what fake_nvml.h holds. Return codes and units are NVML's.
#include "fake_nvml.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

emo::test::FakeNvml state;

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kNoPermission = 4, kGpuIsLost = 15;

emo::test::FakeNvmlGpu* Gpu(void* handle) { return static_cast<emo::test::FakeNvmlGpu*>(handle); }
int Index(void* handle) { return static_cast<int>(Gpu(handle) - state.gpus.data()); }

// Commands that took effect, one line each, appended to $FAKE_NVML_LOG when set (for tests of
// the emo executable, whose fake driver lives in its own process).
void Log(const char* what, void* h, unsigned int a = 0, unsigned int b = 0) {
  const char* path = std::getenv("FAKE_NVML_LOG");
  if (!path) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s %d %u %u\n", what, Index(h), a, b);
    std::fclose(f);
  }
}

}  // namespace

extern "C" {

emo::test::FakeNvml* fake_nvml_state() { return &state; }

int nvmlInit_v2() { return ++state.inits, kSuccess; }
int nvmlShutdown() { return ++state.shutdowns, kSuccess; }
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kSuccess:
      return "Success";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kNoPermission:
      return "Insufficient Permissions";
    case kGpuIsLost:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  return *count = static_cast<unsigned int>(state.gpus.size()), kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** handle) {
  if (i >= state.gpus.size()) return kInvalidArgument;
  *handle = &state.gpus[i];
  return kSuccess;
}
int nvmlDeviceGetName(void* h, char* name, unsigned int length) {
  std::strncpy(name, Gpu(h)->name.c_str(), length - 1);
  return kSuccess;
}
int nvmlDeviceGetUUID(void* h, char* uuid, unsigned int length) {
  const std::string u =
      Gpu(h)->uuid.empty() ? "GPU-fa4e0000-0000-0000-0000-00000000000" + std::to_string(Index(h)) : Gpu(h)->uuid;
  if (length < u.size() + 1) return kInvalidArgument;
  std::memcpy(uuid, u.c_str(), u.size() + 1);
  return kSuccess;
}
// The GPU's memory clocks and, at any of them, graphics clocks 1410..210 in 15 MHz steps, highest
// first as NVML lists them.
int nvmlDeviceGetSupportedMemoryClocks(void* h, unsigned int* count, unsigned int* clocks) {
  const std::vector<unsigned int>& mem = Gpu(h)->mem_clocks;
  if (*count < mem.size()) return kInvalidArgument;
  *count = static_cast<unsigned int>(mem.size());
  for (size_t i = 0; i < mem.size(); ++i) clocks[i] = mem[mem.size() - 1 - i];
  return kSuccess;
}
int nvmlDeviceGetSupportedGraphicsClocks(void* h, unsigned int mem, unsigned int* count, unsigned int* clocks) {
  const std::vector<unsigned int>& listed = Gpu(h)->mem_clocks;
  if (std::find(listed.begin(), listed.end(), mem) == listed.end()) return kInvalidArgument;
  unsigned int n = 0;
  for (unsigned int f = 1410; f >= 210 && n < *count; f -= 15) clocks[n++] = f;
  *count = n;
  return kSuccess;
}
int nvmlDeviceSetGpuLockedClocks(void* h, unsigned int lo, unsigned int hi) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (state.deny) return kNoPermission;
  Gpu(h)->locked_min = lo, Gpu(h)->locked_max = hi;
  Log("lock", h, lo, hi);
  return kSuccess;
}
int nvmlDeviceResetGpuLockedClocks(void* h) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (state.deny) return kNoPermission;
  Gpu(h)->locked_min = Gpu(h)->locked_max = 0;
  Log("reset", h);
  return kSuccess;
}
// Memory locks: refused as NOT_SUPPORTED on a GPU with one memory clock (HBM).
int nvmlDeviceSetMemoryLockedClocks(void* h, unsigned int lo, unsigned int hi) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (Gpu(h)->mem_clocks.size() < 2) return kNotSupported;
  if (state.deny) return kNoPermission;
  Gpu(h)->mem_locked_min = lo, Gpu(h)->mem_locked_max = hi;
  Log("mem_lock", h, lo, hi);
  return kSuccess;
}
int nvmlDeviceResetMemoryLockedClocks(void* h) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (Gpu(h)->mem_clocks.size() < 2) return kNotSupported;
  if (state.deny) return kNoPermission;
  Gpu(h)->mem_locked_min = Gpu(h)->mem_locked_max = 0;
  Log("mem_reset", h);
  return kSuccess;
}
int nvmlDeviceSetPowerManagementLimit(void* h, unsigned int mw) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (state.deny) return kNoPermission;
  if (mw < Gpu(h)->min_mw || mw > Gpu(h)->max_mw) return kInvalidArgument;
  Gpu(h)->limit_mw = mw;
  Log("limit", h, mw);
  return kSuccess;
}
int nvmlDeviceGetPowerManagementLimit(void* h, unsigned int* mw) {
  if (Gpu(h)->lost) return kGpuIsLost;
  return *mw = Gpu(h)->limit_mw, kSuccess;
}
int nvmlDeviceGetPowerManagementDefaultLimit(void* h, unsigned int* mw) {
  if (Gpu(h)->lost) return kGpuIsLost;
  return *mw = Gpu(h)->default_mw, kSuccess;
}
int nvmlDeviceGetPowerManagementLimitConstraints(void* h, unsigned int* lo, unsigned int* hi) {
  if (Gpu(h)->lost) return kGpuIsLost;
  *lo = Gpu(h)->min_mw, *hi = Gpu(h)->max_mw;
  return kSuccess;
}
// With $FAKE_NVML_ENERGY_FROM_POWER set the counter runs at power_mw from the library's first
// reading (for tests of whole runs of the emo executable); otherwise it stands still.
int nvmlDeviceGetTotalEnergyConsumption(void* h, unsigned long long* mj) {
  if (Gpu(h)->lost) return kGpuIsLost;
  static const auto start = std::chrono::steady_clock::now();
  const double s = std::getenv("FAKE_NVML_ENERGY_FROM_POWER")
                       ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                       : 0.0;
  return *mj = Gpu(h)->energy_mj + static_cast<unsigned long long>(Gpu(h)->power_mw * s), kSuccess;
}
int nvmlDeviceGetPowerUsage(void* h, unsigned int* mw) {
  if (Gpu(h)->lost) return kGpuIsLost;
  return *mw = Gpu(h)->power_mw, kSuccess;
}
struct Utilization {
  unsigned int gpu, memory;
};
int nvmlDeviceGetUtilizationRates(void* h, Utilization* u) {
  if (Gpu(h)->lost) return kGpuIsLost;
  u->gpu = Gpu(h)->util_gpu, u->memory = Gpu(h)->util_mem;
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void* h, int type, unsigned int* mhz) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (type == 2) return *mhz = Gpu(h)->mem_locked_max ? Gpu(h)->mem_locked_max : Gpu(h)->mem_clocks.back(), kSuccess;
  if (type != 1) return kInvalidArgument;  // NVML_CLOCK_SM and NVML_CLOCK_MEM are faked
  return *mhz = Gpu(h)->sm_mhz, kSuccess;
}

// GPM: a sample remembers its GPU and when it was taken.
struct GpmSample {
  int gpu = -1;
  long taken = 0;
};
long gpm_clock = 0;
struct GpmSupport {
  unsigned int version, supported;
};
int nvmlGpmQueryDeviceSupport(void* h, GpmSupport* s) {
  if (s->version != 1) return kInvalidArgument;
  return s->supported = Gpu(h)->gpm, kSuccess;
}
int nvmlGpmSampleAlloc(GpmSample** s) { return *s = new GpmSample, ++state.gpm_samples_allocated, kSuccess; }
int nvmlGpmSampleFree(GpmSample* s) { return delete s, ++state.gpm_samples_freed, kSuccess; }
int nvmlGpmSampleGet(void* h, GpmSample* s) {
  if (Gpu(h)->lost) return kGpuIsLost;
  if (!Gpu(h)->gpm) return kInvalidArgument;
  s->gpu = Index(h);
  s->taken = ++gpm_clock;
  return kSuccess;
}
struct GpmMetric {
  unsigned int id;
  int rc;
  double value;
  char* info[3];
};
struct GpmMetricsGet {
  unsigned int version, n;
  GpmSample *sample1, *sample2;
  GpmMetric metrics[1];  // n of them
};
int nvmlGpmMetricsGet(GpmMetricsGet* get) {
  if (get->version != 1 || !get->sample1 || !get->sample2 || get->sample1->gpu < 0 ||
      get->sample1->gpu != get->sample2->gpu || get->sample2->taken <= get->sample1->taken)
    return kInvalidArgument;
  const emo::test::FakeNvmlGpu& g = state.gpus[static_cast<size_t>(get->sample1->gpu)];
  for (unsigned int i = 0; i < get->n; ++i) {
    GpmMetric& m = (&get->metrics[0])[i];
    m.rc = m.id < 16 ? kSuccess : kInvalidArgument;
    m.value = m.id < 16 ? g.gpm_percent[m.id] : 0;
  }
  return kSuccess;
}

}  // extern "C"
