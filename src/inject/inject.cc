// inject.cc — libemo_inject.so, EMO's CUPTI tracer for unmodified CUDA programs. CUDA loads it when
// CUDA_INJECTION64_PATH names it and calls InitializeInjection(); it subscribes to CUPTI activity
// records, converts each completed buffer at once (CuptiRecordConverter; no raw buffers are kept)
// and at exit writes one Kineto JSON file to $EMO_TRACE_DIR: emo-trace-rank<R>.json, R from the
// launcher's variables (trace/launcher_rank.h: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID),
// else emo-trace-pid<P>.json. $EMO_TRACE_WARMUP and $EMO_TRACE_ITERATIONS (`emo trace --warmup M
// --iterations N`) keep only N steps after M warm-up ones (and the NCCL plugin, which asks
// EmoTraceRecording, records only during them). With $EMO_TRACE_CONTROL set it records
// nothing until asked, then windows of iterations on request (trace/trace_control.h). Errors go to
// stderr as one line each and never stop the traced program. With $EMO_PROFILE_RANGES set it
// profiles kernel ranges instead of tracing (pack_profiler.h). Every $EMO_TRACE_COUNTERS_MS (20
// unless set; 0: never) a thread reads each CUDA device's SM clock, power and energy counter from
// NVML (dlopen'ed: none without a driver) into counter tracks of the trace, stamped with CUPTI's
// clock, the records' own (apply/counter_recorder.h).
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fmt/core.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apply/counter_recorder.h"
#include "apply/nvml_gpu_control.h"
#include "inject/pack_profiler.h"
#include "trace/counter_tracks.h"
#include "trace/cupti_records.h"
#include "trace/iteration_window.h"
#include "trace/kineto_writer.h"
#include "trace/launcher_rank.h"
#include "trace/trace_control.h"

namespace {

constexpr size_t kBufferBytes = 8 << 20;  // CUPTI fills one buffer at a time per context
constexpr size_t kAlign = 8;

// The activity kinds EMO subscribes to (see cupti_records.h for what each becomes).
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_RUNTIME,         CUPTI_ACTIVITY_KIND_DRIVER,     CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMCPY2,    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT, CUPTI_ACTIVITY_KIND_MARKER,
    CUPTI_ACTIVITY_KIND_DEVICE,
};

// Process-wide state; allocated once and never destroyed, so that CUPTI's worker thread and the
// atexit handler never see it half torn down.
struct State {
  std::mutex mu;
  emo::Trace trace;
  emo::CuptiRecordConverter* converter = nullptr;  // on demand: null while no window records
  uint64_t dropped = 0;
  bool written = false;
  std::string gpu_name;  // from the DEVICE record, which comes once (kept for on-demand windows)
};
State* g_state = nullptr;

void Warn(const std::string& what) { std::fprintf(stderr, "emo inject: %s\n", what.c_str()); }

bool Check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || !msg) msg = "unknown error";
  Warn(std::string(call) + ": " + msg);
  return false;
}

std::string NameFromCupti(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) return "";
  return name;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_state->mu);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
        const char* name = reinterpret_cast<const CUpti_ActivityDevice5*>(record)->name;
        if (g_state->gpu_name.empty() && name) g_state->gpu_name = name;
      }
      if (g_state->converter) g_state->converter->Add(record);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_state->dropped += dropped;
  }
  std::free(buffer);
}

// With --warmup and --iterations a callback (OnNvtx, below) counts the steps as they begin, so that the
// NCCL plugin in this process records only during the window's steps (EmoTraceRecording, below).
struct NcclGate {
  int64_t warmup = 0, count = 0;
  std::atomic<int64_t> steps{0};
  std::atomic<bool> counting{false};  // the callback is subscribed
};
NcclGate g_gate;

// ---- Counters: each CUDA device's clock, power and energy from NVML, as counter tracks ----
struct Counters {
  std::chrono::milliseconds period{20};
  std::thread thread;
  std::mutex mu;  // with wake: stop promptly
  std::condition_variable wake;
  bool stop = false;
  std::unique_ptr<emo::NvmlGpuControl> nvml;       // the sampling thread's
  std::unique_ptr<emo::CounterRecorder> recorder;  // null until the devices are known
  std::atomic<bool> ready{false};                  // recorder set
  pid_t pid = 0;                                   // the process whose thread it is (not a forked child)
};
Counters* g_counters = nullptr;

// The traced process's CUDA devices, once the driver has initialised (this library is loaded
// inside cuInit): their UUIDs, and which the process uses (has a primary context on, as PyTorch and
// the runtime API make them; before any is made, or with contexts of its own, every device).
struct CudaDevices {
  void* lib = nullptr;  // the driver, already loaded: no dlopen loads it
  decltype(&::cuDevicePrimaryCtxGetState) ctx_state = nullptr;
  std::vector<CUdevice> handles;
  // False until the driver has initialised.
  bool Open(std::vector<std::string>* uuids) {
    if (!lib && !(lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD))) return false;
    auto count_fn = reinterpret_cast<decltype(&::cuDeviceGetCount)>(dlsym(lib, "cuDeviceGetCount"));
    auto get_fn = reinterpret_cast<decltype(&::cuDeviceGet)>(dlsym(lib, "cuDeviceGet"));
    auto uuid_fn = reinterpret_cast<decltype(&::cuDeviceGetUuid)>(dlsym(lib, "cuDeviceGetUuid_v2"));
    ctx_state = reinterpret_cast<decltype(ctx_state)>(dlsym(lib, "cuDevicePrimaryCtxGetState"));
    int n = 0;
    if (!count_fn || !get_fn || !uuid_fn || count_fn(&n) != CUDA_SUCCESS) return false;
    for (int i = 0; i < n; ++i) {
      CUdevice dev = 0;
      CUuuid uuid{};
      unsigned char bytes[16] = {};
      if (get_fn(&dev, i) == CUDA_SUCCESS && uuid_fn(&uuid, dev) == CUDA_SUCCESS) std::memcpy(bytes, uuid.bytes, 16);
      handles.push_back(dev);
      uuids->push_back(emo::GpuUuidString(bytes));
    }
    return true;
  }
  void InUse(std::vector<char>* out) const {
    out->assign(handles.size(), 0);
    bool any = false;
    for (size_t i = 0; i < handles.size(); ++i) {
      unsigned int flags = 0;
      int active = 0;
      (*out)[i] = ctx_state && ctx_state(handles[i], &flags, &active) == CUDA_SUCCESS && active;
      any |= (*out)[i] != 0;
    }
    if (!any) out->assign(handles.size(), 1);
  }
};

// Waits for the driver, opens NVML, then samples every period until stopped.
void SampleCounters() {
  Counters& c = *g_counters;
  auto wait = [&](std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(c.mu);
    return !c.wake.wait_for(lock, d, [&] { return c.stop; });
  };
  CudaDevices devices;
  std::vector<std::string> uuids;
  while (!devices.Open(&uuids))
    if (!wait(c.period)) return;
  std::string err;
  c.nvml = emo::NvmlGpuControl::Open(&err);
  if (!c.nvml) return Warn("no clock, power or energy counters in the trace: " + err);
  c.recorder = std::make_unique<emo::CounterRecorder>(c.nvml.get(), uuids);
  for (const std::string& u : c.recorder->unmatched())
    Warn("no clock, power or energy counters of CUDA device " + u + ": NVML does not list it");
  c.ready.store(true);
  std::vector<char> in_use;
  do {
    // With --warmup and --iterations: only the latest sample before the window (memory stays
    // bounded), none after the step that follows it (its work may still run).
    const int64_t steps = g_gate.steps.load();
    if (g_gate.counting.load() && steps > g_gate.warmup + g_gate.count + 1) continue;
    uint64_t ts = 0;
    devices.InUse(&in_use);
    if (cuptiGetTimestamp(&ts) == CUPTI_SUCCESS) c.recorder->Sample(static_cast<int64_t>(ts), &in_use);
    if (g_gate.counting.load() && steps < g_gate.warmup) c.recorder->KeepLatestOnly();
  } while (wait(c.period));
}

void StartCounters() {
  const char* ms = std::getenv("EMO_TRACE_COUNTERS_MS");
  const long period = ms && *ms ? std::strtol(ms, nullptr, 10) : 20;
  if (period <= 0) return;
  g_counters = new Counters;
  g_counters->period = std::chrono::milliseconds(period);
  g_counters->pid = getpid();
  g_counters->thread = std::thread(SampleCounters);
}

// Stops the sampling thread (at exit) and hands its tracks to the rank.
void StopCounters(emo::RankTrace* r) {
  if (!g_counters) return;
  Counters& c = *g_counters;
  if (c.pid != getpid()) return;  // a forked child: the thread stayed with its parent
  if (c.thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(c.mu);
      c.stop = true;
    }
    c.wake.notify_all();
    c.thread.join();
  }
  if (c.ready.load()) r->counters = c.recorder->Tracks();
}

void WriteAtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_state->mu);
  if (g_state->written) return;
  g_state->written = true;
  StopCounters(&g_state->trace.ranks[0]);  // before Finish, which cuts them to the window with the rest
  g_state->converter->Finish();
  if (!g_state->converter->window_note().empty()) Warn(g_state->converter->window_note());
  if (g_state->dropped > 0) Warn("CUPTI dropped " + std::to_string(g_state->dropped) + " records");
  emo::RankTrace& r = g_state->trace.ranks[0];
  if (r.calls.empty() && r.ops.empty()) return;  // the process did no CUDA work worth a file
  emo::DropCountersOfUnusedDevices(&r);
  const char* dir_env = std::getenv("EMO_TRACE_DIR");
  const std::string dir = dir_env && *dir_env ? dir_env : ".";
  const emo::LauncherRank launcher = emo::RankFromEnvironment([](const char* var) { return std::getenv(var); });
  if (launcher.rank >= 0) r.rank = launcher.rank;
  if (launcher.world_size > 0) r.world_size = launcher.world_size;
  const std::string path = dir + "/" + emo::TraceFileName(launcher, static_cast<long>(getpid()));
  r.source = path;
  std::string err;
  if (!emo::WriteKinetoJson(g_state->trace, 0, path, &err)) Warn(err);
}

// CUPTI records NVTX ranges only when NVTX loads CUPTI as its injection library, which NVTX looks
// up in NVTX_INJECTION64_PATH at the program's first NVTX call. Point it at the libcupti this
// library uses unless the user set it; ranges begun before CUDA starts still need it set in advance.
void PointNvtxAtCupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) != 0 && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

// Enables (or disables) the activity kinds, DEVICE excepted when disabling; false after one line
// on stderr for all the kinds CUPTI refused (on a machine without a driver it refuses them all).
bool EnableKinds(bool on) {
  std::string refused;
  CUptiResult first_error = CUPTI_SUCCESS;
  for (CUpti_ActivityKind kind : kKinds) {
    if (!on && kind == CUPTI_ACTIVITY_KIND_DEVICE) continue;
    const CUptiResult r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (r == CUPTI_SUCCESS) continue;
    if (first_error == CUPTI_SUCCESS) first_error = r;
    refused += (refused.empty() ? "" : ",") + std::to_string(static_cast<int>(kind));
  }
  if (first_error == CUPTI_SUCCESS) return true;
  return Check(first_error,
               ((on ? "cuptiActivityEnable (kinds " : "cuptiActivityDisable (kinds ") + refused + ")").c_str());
}

// ---- On demand ($EMO_TRACE_CONTROL): windows of iterations when asked (trace/trace_control.h) ----
// Iterations are counted as their NVTX ranges begin, by a CUPTI callback on the program's thread,
// which also stamps the window's iteration starts in CUPTI's time: the window's end is known at
// once, and its iterations do not wait for the marker records, which come later in buffers.
struct OnDemand {
  std::string dir, file;
  long pid = 0;
  emo::LauncherRank launcher;
  std::atomic<int64_t> steps{0};                           // step ranges begun so far
  std::atomic<int64_t> first_step_ns{0}, last_step_ns{0};  // when the first and the latest began (steady clock)
  std::atomic<bool> armed{false};
  std::mutex step_mu;  // the window's iteration starts (the callback's side)
  int64_t start = 0;   // the window's first iteration, counted from 1
  int64_t count = 0;   // and how many
  std::vector<int64_t> starts_ns;
  std::mutex mu;              // the rest, between the control thread and exit
  int64_t seq = 0;            // the latest request seen
  emo::TraceRequest request;  // the window's, while one records
  std::chrono::steady_clock::time_point deadline, drained;
};
OnDemand* g_on_demand = nullptr;
constexpr auto kPoll = std::chrono::milliseconds(50);

void OnStepBegins() {
  if (!g_on_demand) {
    g_gate.steps.fetch_add(1);
    return;
  }
  OnDemand& od = *g_on_demand;
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (od.steps.load() == 0) od.first_step_ns = now;
  od.last_step_ns = now;
  const int64_t n = od.steps.fetch_add(1) + 1;
  if (!od.armed.load()) return;
  std::lock_guard<std::mutex> lock(od.step_mu);
  if (n < od.start || n > od.start + od.count) return;
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) == CUPTI_SUCCESS) od.starts_ns.push_back(static_cast<int64_t>(ts));
}

void CUPTIAPI OnNvtx(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* cbdata) {
  if (domain != CUPTI_CB_DOMAIN_NVTX) return;
  const void* params = static_cast<const CUpti_NvtxData*>(cbdata)->functionParams;
  const char* name = nullptr;
  const nvtxEventAttributes_t* attributes = nullptr;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      name = static_cast<const nvtxRangePushA_params*>(params)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      name = static_cast<const nvtxRangeStartA_params*>(params)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      attributes = static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib;
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      attributes = static_cast<const nvtxRangeStartEx_params*>(params)->eventAttrib;
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      attributes = static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib;
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      attributes = static_cast<const nvtxDomainRangeStartEx_params*>(params)->core.eventAttrib;
      break;
    default:
      return;
  }
  if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII) name = attributes->message.ascii;
  if (name && emo::IsStepRangeName(name)) OnStepBegins();
}

// Writes why request `seq` gets no trace from this process.
void Refuse(int64_t seq, const std::string& why) {
  const OnDemand& od = *g_on_demand;
  Warn("window " + std::to_string(seq) + ": " + why);
  std::error_code ec;
  std::filesystem::create_directories(emo::WindowDir(od.dir, seq), ec);
  std::ofstream(emo::WindowDir(od.dir, seq) + "/" + od.file + ".error") << why << "\n";
}

// Agrees on the window's first iteration with the job's other processes, and records from now on
// (its first iteration begins at least one iteration later). The first process to read the request
// proposes an iteration far enough ahead that the others, polling too, read it before then: two
// iterations, and as many more as begin in five polls. Holds od.mu.
void StartWindow(const emo::TraceRequest& request) {
  OnDemand& od = *g_on_demand;
  const int64_t begun = od.steps.load();
  const auto ran = std::chrono::steady_clock::duration(od.last_step_ns - od.first_step_ns);
  const int64_t ahead = begun >= 2 && ran.count() > 0 ? 5 * kPoll * (begun - 1) / ran + 1 : 0;
  int64_t start = 0;
  std::string err;
  if (!emo::ClaimWindowStart(od.dir, request.seq, begun + 2 + ahead, &start, &err)) return Refuse(request.seq, err);
  if (start <= begun + 1)  // the next iteration may begin before the records do
    return Refuse(request.seq, "iteration " + std::to_string(start) + " had begun (or was about to) when the request " +
                                   "reached this process, at iteration " + std::to_string(begun));
  {
    std::lock_guard<std::mutex> lock(g_state->mu);
    g_state->trace = emo::Trace();
    g_state->trace.ranks.emplace_back();
    g_state->converter = new emo::CuptiRecordConverter(&g_state->trace, 0, NameFromCupti);
  }
  {
    std::lock_guard<std::mutex> lock(od.step_mu);
    od.start = start;
    od.count = request.iterations;
    od.starts_ns.clear();
  }
  od.request = request;
  od.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(request.timeout_s));
  od.drained = {};
  EnableKinds(true);
  od.armed.store(true);
}

// Stops recording and writes the window's iterations that ended (or why there are none) into the
// request's window directory; `why` says why it ends early ("" when they all ended). Holds od.mu.
void EndWindow(const std::string& why) {
  OnDemand& od = *g_on_demand;
  od.armed.store(false);
  EnableKinds(false);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // calls BufferCompleted: not under g_state->mu
  std::vector<int64_t> starts;
  {
    std::lock_guard<std::mutex> lock(od.step_mu);
    starts.swap(od.starts_ns);
  }
  std::lock_guard<std::mutex> lock(g_state->mu);
  std::unique_ptr<emo::CuptiRecordConverter> converter(g_state->converter);
  g_state->converter = nullptr;
  converter->Finish();
  emo::RankTrace& r = g_state->trace.ranks[0];
  if (g_counters && g_counters->ready.load()) r.counters = g_counters->recorder->Tracks();  // cut with the rest
  // The window's iterations, each from its start to the next one's.
  r.iterations.clear();
  for (size_t i = 0; i + 1 < starts.size(); ++i)
    r.iterations.push_back({starts[i], starts[i + 1], od.start - 1 + static_cast<int64_t>(i)});
  if (r.gpu_name.empty()) r.gpu_name = g_state->gpu_name;
  if (od.launcher.rank >= 0) r.rank = od.launcher.rank;
  if (od.launcher.world_size > 0) r.world_size = od.launcher.world_size;
  const std::string path = emo::WindowDir(od.dir, od.request.seq) + "/" + od.file;
  r.source = path;
  const int64_t kept = static_cast<int64_t>(r.iterations.size());
  std::string err;
  if (kept == 0) {
    err = why.empty() ? "no iteration ended" : why;
  } else if (emo::KeepIterationWindow(&r, 0, kept, &err)) {
    emo::DropCountersOfUnusedDevices(&r);
    if (!why.empty()) Warn("window " + std::to_string(od.request.seq) + ": " + why);
    emo::WriteKinetoJson(g_state->trace, 0, path, &err);
  }
  g_state->trace = emo::Trace();
  if (!err.empty()) Refuse(od.request.seq, err);
}

// One look at the control directory: a new request starts a window; a window whose iterations have
// all ended (the one after them has begun) ends once the GPU has had time to finish them.
void Poll(std::string* last_err) {
  OnDemand& od = *g_on_demand;
  std::lock_guard<std::mutex> lock(od.mu);
  const auto now = std::chrono::steady_clock::now();
  if (!od.armed.load()) {
    if (g_counters && g_counters->ready.load()) g_counters->recorder->KeepLatestOnly();  // no window to write them
    emo::TraceRequest request;
    std::string err;
    if (!emo::ReadTraceRequest(od.dir, &request, &err)) {
      if (err != *last_err) Warn(err);
      *last_err = err;
      return;
    }
    last_err->clear();
    if (request.seq <= od.seq) return;
    od.seq = request.seq;
    StartWindow(request);
    return;
  }
  size_t stamped = 0;
  int64_t first = 0, last = 0;
  {
    std::lock_guard<std::mutex> lock2(od.step_mu);
    stamped = od.starts_ns.size();
    if (stamped > 0) first = od.starts_ns.front(), last = od.starts_ns.back();
  }
  if (stamped == static_cast<size_t>(od.count) + 1 && od.drained == std::chrono::steady_clock::time_point()) {
    // The GPU may run behind the program by up to an iteration: wait one (and at least 0.3 s).
    const auto step = std::chrono::nanoseconds((last - first) / od.count);
    od.drained = now + std::max<std::chrono::steady_clock::duration>(step, std::chrono::milliseconds(300));
  }
  if (od.drained != std::chrono::steady_clock::time_point() && now >= od.drained) {
    EndWindow("");
  } else if (now >= od.deadline) {
    EndWindow(fmt::format("timed out after {} s, with {} of {} iterations ended (from iteration {}; {} begun in all)",
                          od.request.timeout_s, stamped > 0 ? stamped - 1 : 0, od.count, od.start, od.steps.load()));
  }
}

void ControlLoop() {
  std::string last_err;
  for (;;) {
    std::this_thread::sleep_for(kPoll);
    Poll(&last_err);
  }
}

void EndOnDemandAtExit() {
  OnDemand& od = *g_on_demand;
  std::lock_guard<std::mutex> lock(od.mu);
  emo::RankTrace unused;
  StopCounters(&unused);  // the thread stops; a window still recording takes the tracks
  if (od.armed.load()) EndWindow("the process ended");
  emo::UnregisterTracedProcess(od.dir, od.pid);
}

// Registers the process and starts the control thread; the kinds record only inside windows.
void StartOnDemand(const char* dir) {
  g_on_demand = new OnDemand;
  OnDemand& od = *g_on_demand;
  od.dir = dir;
  od.pid = static_cast<long>(getpid());
  od.launcher = emo::RankFromEnvironment([](const char* var) { return std::getenv(var); });
  od.file = emo::TraceFileName(od.launcher, od.pid);
  std::string err;
  emo::TraceRequest current;
  if (!emo::ReadTraceRequest(od.dir, &current, &err)) Warn(err);
  od.seq = current.seq;  // a request made before this process began is not its to answer
  CUpti_SubscriberHandle subscriber = nullptr;
  if (!Check(cuptiSubscribe(&subscriber, OnNvtx, nullptr), "cuptiSubscribe") ||
      !Check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX), "cuptiEnableDomain (NVTX)") ||
      !Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE), "cuptiActivityEnable (DEVICE)"))
    return;
  if (!emo::RegisterTracedProcess(od.dir, od.pid, od.file, od.seq, &err)) {
    Warn(err);
    return;
  }
  std::atexit(EndOnDemandAtExit);
  std::thread(ControlLoop).detach();
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. Returns 1 (success)
// even when CUPTI cannot be set up, so that the program runs untraced rather than not at all.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool initialized = false;
  if (initialized) return 1;
  initialized = true;
  if (const char* ranges = std::getenv("EMO_PROFILE_RANGES"); ranges && *ranges) {  // `emo profile`
    emo::StartPackProfiler(ranges, emo::RankFromEnvironment([](const char* var) { return std::getenv(var); }).rank);
    return 1;
  }
  g_state = new State;
  // Thread ids as the kernel gives them (gettid), the same ids that NVTX markers carry.
  Check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
  if (!Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks"))
    return 1;
  PointNvtxAtCupti();
  if (const char* dir = std::getenv(emo::kTraceControlEnv); dir && *dir) {  // `emo trace --on-demand`
    StartCounters();
    StartOnDemand(dir);
    return 1;
  }
  g_state->trace.ranks.emplace_back();
  g_state->converter = new emo::CuptiRecordConverter(&g_state->trace, 0, NameFromCupti);
  if (const char* n = std::getenv("EMO_TRACE_ITERATIONS"); n && *n) {
    const char* m = std::getenv("EMO_TRACE_WARMUP");
    const long warmup = m && *m ? std::strtol(m, nullptr, 10) : 0, count = std::strtol(n, nullptr, 10);
    if (warmup >= 0 && count >= 1) {
      g_state->converter->SetWindow(warmup, count);
      g_gate.warmup = warmup;
      g_gate.count = count;
      CUpti_SubscriberHandle subscriber = nullptr;
      if (Check(cuptiSubscribe(&subscriber, OnNvtx, nullptr), "cuptiSubscribe (NCCL records: the whole run)") &&
          Check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX),
                "cuptiEnableDomain (NCCL records: the whole run)"))
        g_gate.counting = true;
    } else {
      Warn("EMO_TRACE_WARMUP / EMO_TRACE_ITERATIONS must be a count >= 0 and >= 1: tracing the whole run");
    }
  }
  StartCounters();  // after the window's gate, which its thread reads
  EnableKinds(true);
  std::atexit(WriteAtExit);
  return 1;
}

// Asked by libemo_nccl_profiler.so as each NCCL event starts (it finds this library through
// CUDA_INJECTION64_PATH): whether the event belongs to the trace. With --warmup and --iterations,
// during the window's steps (emo::NcclInTraceWindow); on demand, while a window records (from its
// request on, so a little more than the window); else, or when the steps cannot be counted, always.
extern "C" __attribute__((visibility("default"))) int EmoTraceRecording(void) {
  if (g_on_demand) return g_on_demand->armed.load() ? 1 : 0;
  if (!g_gate.counting.load()) return 1;
  return emo::NcclInTraceWindow(g_gate.steps.load(), g_gate.warmup, g_gate.count) ? 1 : 0;
}
