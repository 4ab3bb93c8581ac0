// inject.cc — libemo_inject.so, EMO's CUPTI tracer for unmodified CUDA programs. CUDA loads it when
// CUDA_INJECTION64_PATH names it and calls InitializeInjection(); it subscribes to CUPTI activity
// records, converts each completed buffer at once (CuptiRecordConverter; no raw buffers are kept)
// and at exit writes one Kineto JSON file to $EMO_TRACE_DIR: emo-trace-rank<R>.json, R from the
// launcher's variables (trace/launcher_rank.h: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID),
// else emo-trace-pid<P>.json. $EMO_TRACE_WARMUP and $EMO_TRACE_ITERATIONS (`emo trace --warmup M
// --iterations N`) keep only N steps after M warm-up ones. Errors go to stderr as one line each and never stop the
// traced program. With $EMO_PROFILE_RANGES set it profiles kernel ranges instead of tracing (pack_profiler.h).
#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "inject/pack_profiler.h"
#include "trace/cupti_records.h"
#include "trace/kineto_writer.h"
#include "trace/launcher_rank.h"

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
  emo::CuptiRecordConverter* converter = nullptr;
  uint64_t dropped = 0;
  bool written = false;
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
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) g_state->converter->Add(record);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_state->dropped += dropped;
  }
  std::free(buffer);
}

void WriteAtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_state->mu);
  if (g_state->written) return;
  g_state->written = true;
  g_state->converter->Finish();
  if (!g_state->converter->window_note().empty()) Warn(g_state->converter->window_note());
  if (g_state->dropped > 0) Warn("CUPTI dropped " + std::to_string(g_state->dropped) + " records");
  emo::RankTrace& r = g_state->trace.ranks[0];
  if (r.calls.empty() && r.ops.empty()) return;  // the process did no CUDA work worth a file
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
  g_state->trace.ranks.emplace_back();
  g_state->converter = new emo::CuptiRecordConverter(&g_state->trace, 0, NameFromCupti);
  if (const char* n = std::getenv("EMO_TRACE_ITERATIONS"); n && *n) {
    const char* m = std::getenv("EMO_TRACE_WARMUP");
    const long warmup = m && *m ? std::strtol(m, nullptr, 10) : 0, count = std::strtol(n, nullptr, 10);
    if (warmup >= 0 && count >= 1)
      g_state->converter->SetWindow(warmup, count);
    else
      Warn("EMO_TRACE_WARMUP / EMO_TRACE_ITERATIONS must be a count >= 0 and >= 1: tracing the whole run");
  }
  // Thread ids as the kernel gives them (gettid), the same ids that NVTX markers carry.
  Check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType");
  if (!Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks"))
    return 1;
  // One line for all the kinds CUPTI refused (on a machine without a driver it refuses them all).
  std::string refused;
  CUptiResult first_error = CUPTI_SUCCESS;
  for (CUpti_ActivityKind kind : kKinds) {
    const CUptiResult r = cuptiActivityEnable(kind);
    if (r == CUPTI_SUCCESS) continue;
    if (first_error == CUPTI_SUCCESS) first_error = r;
    refused += (refused.empty() ? "" : ",") + std::to_string(static_cast<int>(kind));
  }
  if (first_error != CUPTI_SUCCESS) Check(first_error, ("cuptiActivityEnable (kinds " + refused + ")").c_str());
  PointNvtxAtCupti();
  std::atexit(WriteAtExit);
  return 1;
}
