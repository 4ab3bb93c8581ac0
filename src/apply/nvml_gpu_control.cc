// nvml_gpu_control.cc — the NVML functions EMO uses, resolved with dlsym; units converted to the
// interface's (MHz, W, J, fractions).
#include "apply/nvml_gpu_control.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace emo {

namespace {

// The few NVML types used, as nvml.h declares them (a stable C ABI).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent
};
// GPU performance monitoring (GPM): an opaque sample, and the request for metrics between two.
using nvmlGpmSample_t = void*;
struct nvmlGpmSupport_t {
  unsigned int version, isSupportedDevice;  // version: NVML_GPM_SUPPORT_VERSION (1)
};
struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
};
// NVML reads and writes metrics[0, numMetrics) only, so the array need not be NVML_GPM_METRIC_MAX long.
constexpr unsigned int kGpmMetrics = 7;
struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION (1)
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[kGpmMetrics];
};
// NVML_GPM_METRIC_* in the order of Activity's fields.
constexpr unsigned int kGpmMetricIds[kGpmMetrics] = {2 /*SM_UTIL*/,
                                                     3 /*SM_OCCUPANCY*/,
                                                     4 /*INTEGER_UTIL*/,
                                                     12 /*FP32_UTIL*/,
                                                     11 /*FP64_UTIL*/,
                                                     5 /*ANY_TENSOR_UTIL*/,
                                                     10 /*DRAM_BW_UTIL*/};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlErrorNotSupported = 3;
constexpr int kNvmlErrorNoPermission = 4;
constexpr int kNvmlErrorGpuIsLost = 15;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;

}  // namespace

struct NvmlGpuControl::Api {
  void* lib = nullptr;
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*GetCount)(unsigned int*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetSupportedMemoryClocks)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*GetSupportedGraphicsClocks)(nvmlDevice_t, unsigned int, unsigned int*, unsigned int*);
  nvmlReturn_t (*SetGpuLockedClocks)(nvmlDevice_t, unsigned int, unsigned int);
  nvmlReturn_t (*ResetGpuLockedClocks)(nvmlDevice_t);
  nvmlReturn_t (*SetPowerManagementLimit)(nvmlDevice_t, unsigned int);
  nvmlReturn_t (*GetPowerManagementLimit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetPowerManagementLimitConstraints)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*GetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*GetPowerUsage)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*GetClockInfo)(nvmlDevice_t, int, unsigned int*);
  // Memory clock locks (Ampere and later, drivers from 2020 on); null where the library lacks them.
  nvmlReturn_t (*SetMemoryLockedClocks)(nvmlDevice_t, unsigned int, unsigned int);
  nvmlReturn_t (*ResetMemoryLockedClocks)(nvmlDevice_t);
  // GPM (NVML 12.0 and later); null where the library lacks it.
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*);
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*);
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t);
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t);
  nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t*);
};

struct NvmlGpuControl::Gpu {
  nvmlDevice_t handle = nullptr;
  std::string name;
  std::string uuid;                                          // "GPU-..."
  std::vector<int> clocks;                                   // ascending
  std::vector<int> mem_clocks;                               // ascending
  bool locked = false;                                       // this object locked its clocks
  bool mem_locked = false;                                   // ... and its memory clock
  unsigned int original_limit_mw = 0;                        // the limit before this object changed it; 0: unchanged
  bool gpm = false;                                          // the GPU supports GPM
  nvmlGpmSample_t window_start = nullptr, sample = nullptr;  // allocated by StartActivity
  std::chrono::steady_clock::time_point window_opened;       // when window_start was taken
};

NvmlGpuControl::NvmlGpuControl() : api_(std::make_unique<Api>()) {}

std::unique_ptr<NvmlGpuControl> NvmlGpuControl::Open(std::string* err, const std::string& library) {
  std::string path = library;
  if (path.empty()) {
    const char* env = std::getenv("EMO_NVML_LIBRARY");
    path = env && *env ? env : "libnvidia-ml.so.1";
  }
  std::unique_ptr<NvmlGpuControl> c(new NvmlGpuControl());
  Api& a = *c->api_;
  a.lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a.lib) {
    const char* why = dlerror();
    *err = "cannot load " + path + " (is an NVIDIA driver installed?): " + (why ? why : "unknown error");
    return nullptr;
  }
  bool ok = true;
  auto bind = [&](auto* fn, const char* symbol) {
    void* s = dlsym(a.lib, symbol);
    if (!s && ok) {
      *err = path + ": no function " + symbol + " (driver too old?)";
      ok = false;
    }
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(s);
  };
  bind(&a.Init, "nvmlInit_v2");
  bind(&a.Shutdown, "nvmlShutdown");
  bind(&a.ErrorString, "nvmlErrorString");
  bind(&a.GetCount, "nvmlDeviceGetCount_v2");
  bind(&a.GetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
  bind(&a.GetName, "nvmlDeviceGetName");
  bind(&a.GetUUID, "nvmlDeviceGetUUID");
  bind(&a.GetSupportedMemoryClocks, "nvmlDeviceGetSupportedMemoryClocks");
  bind(&a.GetSupportedGraphicsClocks, "nvmlDeviceGetSupportedGraphicsClocks");
  bind(&a.SetGpuLockedClocks, "nvmlDeviceSetGpuLockedClocks");
  bind(&a.ResetGpuLockedClocks, "nvmlDeviceResetGpuLockedClocks");
  bind(&a.SetPowerManagementLimit, "nvmlDeviceSetPowerManagementLimit");
  bind(&a.GetPowerManagementLimit, "nvmlDeviceGetPowerManagementLimit");
  bind(&a.GetPowerManagementLimitConstraints, "nvmlDeviceGetPowerManagementLimitConstraints");
  bind(&a.GetPowerManagementDefaultLimit, "nvmlDeviceGetPowerManagementDefaultLimit");
  bind(&a.GetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
  bind(&a.GetPowerUsage, "nvmlDeviceGetPowerUsage");
  bind(&a.GetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  bind(&a.GetClockInfo, "nvmlDeviceGetClockInfo");
  auto bind_optional = [&](auto* fn, const char* symbol) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(a.lib, symbol));
  };
  bind_optional(&a.SetMemoryLockedClocks, "nvmlDeviceSetMemoryLockedClocks");
  bind_optional(&a.ResetMemoryLockedClocks, "nvmlDeviceResetMemoryLockedClocks");
  bind_optional(&a.GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport");
  bind_optional(&a.GpmSampleAlloc, "nvmlGpmSampleAlloc");
  bind_optional(&a.GpmSampleFree, "nvmlGpmSampleFree");
  bind_optional(&a.GpmSampleGet, "nvmlGpmSampleGet");
  bind_optional(&a.GpmMetricsGet, "nvmlGpmMetricsGet");
  const bool gpm = a.GpmQueryDeviceSupport && a.GpmSampleAlloc && a.GpmSampleFree && a.GpmSampleGet && a.GpmMetricsGet;
  if (!ok) {
    dlclose(a.lib);
    a.lib = nullptr;
    return nullptr;
  }
  if (nvmlReturn_t rc = a.Init(); rc != kNvmlSuccess) {
    *err = path + ": nvmlInit: " + a.ErrorString(rc);
    dlclose(a.lib);
    a.lib = nullptr;
    return nullptr;
  }
  unsigned int count = 0;
  if (nvmlReturn_t rc = a.GetCount(&count); rc != kNvmlSuccess) {
    *err = std::string("nvmlDeviceGetCount: ") + a.ErrorString(rc);
    return nullptr;  // the destructor shuts NVML down
  }
  if (count == 0) {
    *err = "NVML sees no NVIDIA GPU";
    return nullptr;
  }
  for (unsigned int i = 0; i < count; ++i) {
    Gpu g;
    char name[96] = {}, uuid[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE
    if (!c->Check(-1, a.GetHandleByIndex(i, &g.handle), "nvmlDeviceGetHandleByIndex", err) ||
        !c->Check(-1, a.GetName(g.handle, name, sizeof name), "nvmlDeviceGetName", err) ||
        !c->Check(-1, a.GetUUID(g.handle, uuid, sizeof uuid), "nvmlDeviceGetUUID", err)) {
      *err = "GPU " + std::to_string(i) + ": " + *err;
      return nullptr;
    }
    g.name = name;
    g.uuid = uuid;
    // Graphics clocks are listed per memory clock; the highest memory clock is the default one.
    unsigned int mem[64], n_mem = 64, gfx[1024], n_gfx = 1024;
    if (a.GetSupportedMemoryClocks(g.handle, &n_mem, mem) == kNvmlSuccess && n_mem > 0) {
      const unsigned int top = *std::max_element(mem, mem + n_mem);
      if (a.GetSupportedGraphicsClocks(g.handle, top, &n_gfx, gfx) == kNvmlSuccess) g.clocks.assign(gfx, gfx + n_gfx);
      g.mem_clocks.assign(mem, mem + n_mem);
    }
    nvmlGpmSupport_t support{1, 0};
    g.gpm = gpm && a.GpmQueryDeviceSupport(g.handle, &support) == kNvmlSuccess && support.isSupportedDevice;
    for (std::vector<int>* list : {&g.clocks, &g.mem_clocks}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    c->gpus_.push_back(std::move(g));
  }
  return c;
}

NvmlGpuControl::~NvmlGpuControl() {
  if (!api_->lib) return;
  std::string ignored;
  RestoreAll(&ignored);
  for (Gpu& g : gpus_)
    for (nvmlGpmSample_t s : {g.window_start, g.sample})
      if (s) api_->GpmSampleFree(s);
  api_->Shutdown();
  dlclose(api_->lib);
}

bool NvmlGpuControl::Check(int gpu, int rc, const char* call, std::string* err) const {
  if (rc == kNvmlSuccess) return true;
  std::string where =
      gpu >= 0 ? "GPU " + std::to_string(gpu) + " (" + gpus_[static_cast<size_t>(gpu)].name + "): " : "";
  *err = where + call + ": " + api_->ErrorString(rc);
  if (rc == kNvmlErrorNoPermission) *err += " (clock and power-limit changes need root or CAP_SYS_ADMIN)";
  if (rc == kNvmlErrorGpuIsLost) *err += " (the GPU fell off the bus)";
  return false;
}

std::optional<double> NvmlGpuControl::Read(int gpu, int rc, const char* call, double value) const {
  if (Check(gpu, rc, call, &error_)) return value;
  return std::nullopt;
}

int NvmlGpuControl::Count() const { return static_cast<int>(gpus_.size()); }
std::string NvmlGpuControl::Name(int gpu) const { return gpus_[static_cast<size_t>(gpu)].name; }
std::string NvmlGpuControl::Uuid(int gpu) const { return gpus_[static_cast<size_t>(gpu)].uuid; }
std::vector<int> NvmlGpuControl::SupportedClocks(int gpu) const { return gpus_[static_cast<size_t>(gpu)].clocks; }

bool NvmlGpuControl::SetLockedClock(int gpu, int mhz, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  const unsigned int f = static_cast<unsigned int>(std::max(mhz, 0));
  // The watchdog hears of the lock before it is made, so no lock can outlive both processes.
  if (!g.locked && watchdog_) watchdog_->Locked(gpu);
  if (!Check(gpu, api_->SetGpuLockedClocks(g.handle, f, f), "nvmlDeviceSetGpuLockedClocks", err)) return false;
  g.locked = true;
  return true;
}

bool NvmlGpuControl::ResetClock(int gpu, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (!Check(gpu, api_->ResetGpuLockedClocks(g.handle), "nvmlDeviceResetGpuLockedClocks", err)) return false;
  g.locked = false;
  return true;
}

std::vector<int> NvmlGpuControl::SupportedMemoryClocks(int gpu) const {
  return api_->SetMemoryLockedClocks ? gpus_[static_cast<size_t>(gpu)].mem_clocks : std::vector<int>{};
}

bool NvmlGpuControl::SetMemoryLockedClock(int gpu, int mhz, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (!api_->SetMemoryLockedClocks) {
    *err = "GPU " + std::to_string(gpu) + ": this NVML has no nvmlDeviceSetMemoryLockedClocks (driver too old?)";
    return false;
  }
  const unsigned int f = static_cast<unsigned int>(std::max(mhz, 0));
  // The watchdog's unlock of a GPU's clocks resets its memory clock too (ResetMemoryLocks).
  if (!g.locked && !g.mem_locked && watchdog_) watchdog_->Locked(gpu);
  if (!Check(gpu, api_->SetMemoryLockedClocks(g.handle, f, f), "nvmlDeviceSetMemoryLockedClocks", err)) return false;
  g.mem_locked = true;
  return true;
}

bool NvmlGpuControl::ResetMemoryClock(int gpu, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (!g.mem_locked) return true;
  if (!ResetMemoryLocks(gpu, err)) return false;
  g.mem_locked = false;
  return true;
}

std::optional<double> NvmlGpuControl::MemoryClockMhz(int gpu) const {
  unsigned int mhz = 0;
  const int rc = api_->GetClockInfo(gpus_[static_cast<size_t>(gpu)].handle, kNvmlClockMem, &mhz);
  return Read(gpu, rc, "nvmlDeviceGetClockInfo", mhz);
}

// Unlocks the GPU's memory clock whoever locked it; a GPU or driver without memory locks has
// nothing to unlock.
bool NvmlGpuControl::ResetMemoryLocks(int gpu, std::string* err) const {
  if (!api_->ResetMemoryLockedClocks) return true;
  const int rc = api_->ResetMemoryLockedClocks(gpus_[static_cast<size_t>(gpu)].handle);
  return rc == kNvmlErrorNotSupported || Check(gpu, rc, "nvmlDeviceResetMemoryLockedClocks", err);
}

bool NvmlGpuControl::SetPowerLimit(int gpu, double watts, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  unsigned int before = 0;
  if (g.original_limit_mw == 0 &&
      !Check(gpu, api_->GetPowerManagementLimit(g.handle, &before), "nvmlDeviceGetPowerManagementLimit", err))
    return false;
  const unsigned int mw = static_cast<unsigned int>(std::lround(std::max(watts, 0.0) * 1000));
  if (g.original_limit_mw == 0 && watchdog_) watchdog_->LimitChanged(gpu, before);
  if (!Check(gpu, api_->SetPowerManagementLimit(g.handle, mw), "nvmlDeviceSetPowerManagementLimit", err)) return false;
  if (g.original_limit_mw == 0) g.original_limit_mw = before;
  return true;
}

bool NvmlGpuControl::RestoreForOther(int gpu, bool clocks, unsigned int limit_mw, std::string* err) {
  if (gpu < 0 || gpu >= Count()) {
    *err = "no GPU " + std::to_string(gpu) + " (there are " + std::to_string(Count()) + ")";
    return false;
  }
  const Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (clocks)
    return Check(gpu, api_->ResetGpuLockedClocks(g.handle), "nvmlDeviceResetGpuLockedClocks", err) &&
           ResetMemoryLocks(gpu, err);
  return Check(gpu, api_->SetPowerManagementLimit(g.handle, limit_mw), "nvmlDeviceSetPowerManagementLimit", err);
}

bool NvmlGpuControl::RestoreAll(std::string* err) {
  bool ok = true;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    Gpu& g = gpus_[i];
    const int gpu = static_cast<int>(i);
    std::string e;
    if (g.locked && !ResetClock(gpu, &e) && ok) ok = false, *err = e;
    if (!ResetMemoryClock(gpu, &e) && ok) ok = false, *err = e;
    if (g.original_limit_mw != 0) {
      if (Check(gpu, api_->SetPowerManagementLimit(g.handle, g.original_limit_mw), "nvmlDeviceSetPowerManagementLimit",
                &e))
        g.original_limit_mw = 0;
      else if (ok)
        ok = false, *err = e;
    }
  }
  return ok;
}

bool NvmlGpuControl::ResetToDefaults(int gpu, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  unsigned int mw = 0;
  if (!Check(gpu, api_->ResetGpuLockedClocks(g.handle), "nvmlDeviceResetGpuLockedClocks", err) ||
      !ResetMemoryLocks(gpu, err) ||
      !Check(gpu, api_->GetPowerManagementDefaultLimit(g.handle, &mw), "nvmlDeviceGetPowerManagementDefaultLimit",
             err) ||
      !Check(gpu, api_->SetPowerManagementLimit(g.handle, mw), "nvmlDeviceSetPowerManagementLimit", err))
    return false;
  g.locked = g.mem_locked = false;
  g.original_limit_mw = 0;
  return true;
}

std::optional<double> NvmlGpuControl::PowerLimitW(int gpu) const {
  unsigned int mw = 0;
  const int rc = api_->GetPowerManagementLimit(gpus_[static_cast<size_t>(gpu)].handle, &mw);
  return Read(gpu, rc, "nvmlDeviceGetPowerManagementLimit", mw / 1e3);
}

bool NvmlGpuControl::PowerLimitRange(int gpu, double* min_w, double* max_w) const {
  unsigned int lo = 0, hi = 0;
  const int rc = api_->GetPowerManagementLimitConstraints(gpus_[static_cast<size_t>(gpu)].handle, &lo, &hi);
  if (!Read(gpu, rc, "nvmlDeviceGetPowerManagementLimitConstraints", 0)) return false;
  *min_w = lo / 1e3;
  *max_w = hi / 1e3;
  return true;
}

std::optional<double> NvmlGpuControl::EnergyJ(int gpu) const {
  unsigned long long mj = 0;
  const int rc = api_->GetTotalEnergyConsumption(gpus_[static_cast<size_t>(gpu)].handle, &mj);
  return Read(gpu, rc, "nvmlDeviceGetTotalEnergyConsumption", static_cast<double>(mj) / 1e3);
}

std::optional<double> NvmlGpuControl::PowerW(int gpu) const {
  unsigned int mw = 0;
  const int rc = api_->GetPowerUsage(gpus_[static_cast<size_t>(gpu)].handle, &mw);
  return Read(gpu, rc, "nvmlDeviceGetPowerUsage", mw / 1e3);
}

std::optional<double> NvmlGpuControl::Utilization(int gpu) const {
  nvmlUtilization_t u{};
  const int rc = api_->GetUtilizationRates(gpus_[static_cast<size_t>(gpu)].handle, &u);
  return Read(gpu, rc, "nvmlDeviceGetUtilizationRates", u.gpu / 100.0);
}

std::optional<double> NvmlGpuControl::MemoryUtilization(int gpu) const {
  nvmlUtilization_t u{};
  const int rc = api_->GetUtilizationRates(gpus_[static_cast<size_t>(gpu)].handle, &u);
  return Read(gpu, rc, "nvmlDeviceGetUtilizationRates", u.memory / 100.0);
}

std::optional<double> NvmlGpuControl::ClockMhz(int gpu) const {
  unsigned int mhz = 0;
  const int rc = api_->GetClockInfo(gpus_[static_cast<size_t>(gpu)].handle, kNvmlClockSm, &mhz);
  return Read(gpu, rc, "nvmlDeviceGetClockInfo", mhz);
}

bool NvmlGpuControl::Offers(Reading r) const {
  if (r == Reading::kCounters) return false;  // counters are read inside the job (CUPTI), not through NVML
  if (r != Reading::kActivity) return true;
  return std::all_of(gpus_.begin(), gpus_.end(), [](const Gpu& g) { return g.gpm; });
}

bool NvmlGpuControl::StartActivity(int gpu) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (!g.gpm) {
    error_ =
        "GPU " + std::to_string(gpu) + " (" + g.name + "): no GPM (GPU performance monitoring needs Hopper or later)";
    return false;
  }
  for (nvmlGpmSample_t* s : {&g.window_start, &g.sample})
    if (!*s && !Check(gpu, api_->GpmSampleAlloc(s), "nvmlGpmSampleAlloc", &error_)) return false;
  g.window_opened = std::chrono::steady_clock::now();
  return Check(gpu, api_->GpmSampleGet(g.handle, g.window_start), "nvmlGpmSampleGet", &error_);
}

std::optional<Activity> NvmlGpuControl::ReadActivity(int gpu) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  if (!g.window_start) {
    error_ = "GPU " + std::to_string(gpu) + ": no activity window open (StartActivity first)";
    return std::nullopt;
  }
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - g.window_opened).count() < kActivityMinWindowS) {
    error_ = "GPU " + std::to_string(gpu) + ": an activity window must span over 100 ms (GPM's sample refresh)";
    return std::nullopt;
  }
  if (!Check(gpu, api_->GpmSampleGet(g.handle, g.sample), "nvmlGpmSampleGet", &error_)) return std::nullopt;
  g.window_opened = now;
  nvmlGpmMetricsGet_t get{};
  get.version = 1;
  get.numMetrics = kGpmMetrics;
  get.sample1 = g.window_start;
  get.sample2 = g.sample;
  for (unsigned int i = 0; i < kGpmMetrics; ++i) get.metrics[i].metricId = kGpmMetricIds[i];
  const int rc = api_->GpmMetricsGet(&get);
  std::swap(g.window_start, g.sample);  // this sample opens the next window
  if (!Check(gpu, rc, "nvmlGpmMetricsGet", &error_)) return std::nullopt;
  double v[kGpmMetrics];
  for (unsigned int i = 0; i < kGpmMetrics; ++i) {
    if (!Check(gpu, get.metrics[i].nvmlReturn, "nvmlGpmMetricsGet (a metric)", &error_)) return std::nullopt;
    v[i] = std::clamp(get.metrics[i].value / 100, 0.0, 1.0);  // percent
  }
  return Activity{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

}  // namespace emo
