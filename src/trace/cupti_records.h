// cupti_records.h — turns CUPTI Activity API records (the structs of the installed cupti_activity.h)
// into EMO's in-memory Trace. It needs no GPU and no libcupti, so tests feed it records built in memory.
//
// Handled kinds and the records they arrive as with CUDA 13's CUPTI:
//   RUNTIME, DRIVER (CUpti_ActivityAPI)          CpuCall: thread, correlation, name from the callback id
//   KERNEL, CONCURRENT_KERNEL (CUpti_ActivityKernel10), MEMCPY (CUpti_ActivityMemcpy6),
//   MEMCPY2 (CUpti_ActivityMemcpyPtoP4), MEMSET (CUpti_ActivityMemset4)
//                                                GpuOp: device, stream, start, end, correlation
//   SYNCHRONIZATION (CUpti_ActivitySynchronization2)   SyncRecord; an event wait is resolved to the
//                                                awaited cudaEventRecord (stream, correlation) through
//   CUDA_EVENT (CUpti_ActivityCudaEvent2)         the records' cudaEventSyncId, else the event id
//   DEVICE (CUpti_ActivityDevice5)               the GPU name
//   MARKER (CUpti_ActivityMarker2)               NVTX ranges named "ProfilerStep#N" or "emo.step" become
//                                                Iterations; other markers are ignored
// With SetWindow(M, N) only iterations M..M+N-1 and the work they issued are kept
// (trace/iteration_window.h); calls and GPU ops that cannot belong to them are dropped as they
// arrive, so that a long run costs the memory of its window, not of the whole run.
// Every other kind, and GPU work a forced flush delivered unfinished (no end time), is counted in
// skipped() and dropped. Times are CUPTI's nanoseconds.
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/trace.h"

namespace emo {

// Names a CUDA API function from its CUPTI callback id. The injection library passes one that asks
// libcupti (cuptiGetCallbackName); without one, or when it returns "", a built-in table names the
// calls that order GPU work (launches, copies, memsets, syncs, event record/wait).
using CallbackNamer = std::string (*)(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// The built-in table; "" for callback ids it does not know.
std::string BuiltinCallbackName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// A kernel's name as Kineto shows it: demangled when it is a mangled C++ name.
std::string KernelName(const char* name);
// Whether an NVTX range of this name marks an iteration ("ProfilerStep#N", "emo.step").
bool IsStepRangeName(std::string_view name);
// Whether NCCL's events belong to the trace while `steps` iteration ranges have begun, for a window
// of SetWindow(warmup, count) (count 0: the whole run): from the start of the first kept step to
// the start of the one after the last, so that the plugin's launch records line up with the
// window's NCCL kernels one for one (libemo_nccl_profiler.so asks libemo_inject.so as each event
// starts: EmoTraceRecording).
bool NcclInTraceWindow(int64_t steps, int64_t warmup, int64_t count);
// NCCL's (and RCCL's) kernels, which EMO treats as communication, not compute.
bool IsCommKernelName(const std::string& name);

class CuptiRecordConverter {
 public:
  // Appends to trace->ranks[rank_index]; pid is the traced process (CPU threads' pid).
  CuptiRecordConverter(Trace* trace, size_t rank_index, CallbackNamer namer = nullptr);

  // Converts one record of any kind; names are copied, so the record's buffer may be reused after.
  void Add(const CUpti_Activity* record);

  // Keeps only the N = count iterations after the first M = warmup ones. Call before the first Add.
  void SetWindow(int64_t warmup, int64_t count);

  // Resolves event waits, turns closed step ranges into iterations, sorts the rank
  // (RankTrace::Finish) and cuts it to the window. Call once, after the last Add.
  void Finish();

  int64_t converted() const { return converted_; }
  int64_t skipped() const { return skipped_; }
  int64_t outside_window() const { return outside_window_; }  // calls and ops dropped as they arrived
  // Whether the window's last step has ended (its end record converted).
  bool window_closed() const { return end_ns_ != INT64_MAX; }
  // After Finish: "" when the window was cut as asked, else what was kept instead and why.
  const std::string& window_note() const { return window_note_; }

 private:
  struct EventRecord {  // one cudaEventRecord, from CUPTI_ACTIVITY_KIND_CUDA_EVENT
    uint64_t sync_id = 0;
    uint32_t event_id = 0;
    int64_t stream = -1;
    int64_t correlation = -1;
  };
  struct PendingWait {  // an event sync / stream wait whose event record may come in a later buffer
    size_t sync_index = 0;
    uint64_t sync_id = 0;
    uint32_t event_id = 0;
  };
  struct OpenRange {
    int64_t start_ns = 0;
    int64_t step = -1;     // -1: not an iteration marker
    int64_t ordinal = -1;  // the how-manieth step range this is, from 0
  };

  RankTrace& rank() { return trace_->ranks[rank_index_]; }
  void AddApi(const CUpti_ActivityAPI& r);
  void AddOp(int64_t start, int64_t end, int64_t correlation, uint32_t device, uint32_t stream, uint32_t name,
             GpuOpKind kind, int64_t bytes);
  void AddSync(const CUpti_ActivitySynchronization2& r);
  void AddMarker(const CUpti_ActivityMarker2& r);
  void RaiseFloor(int64_t ns);
  void CutToWindow();

  Trace* trace_;
  size_t rank_index_;
  CallbackNamer namer_;
  std::unordered_map<uint64_t, uint32_t> api_names_;  // (domain << 32 | cbid) -> StringTable id
  std::vector<EventRecord> events_;
  std::vector<PendingWait> waits_;
  std::unordered_map<uint32_t, OpenRange> open_ranges_;  // NVTX marker id -> its start
  int64_t emo_steps_ = 0;
  int64_t converted_ = 0;
  int64_t skipped_ = 0;
  // The window: -1 warm-up keeps everything. Nothing issued before floor_ns_ (the start of the
  // latest warm-up or first kept step seen) or after end_ns_ (the end of the last kept step, once
  // seen) can belong to it; max_correlation_ is the latest call issued up to end_ns_.
  int64_t warmup_ = -1, count_ = 0;
  int64_t step_ranges_ = 0;
  int64_t floor_ns_ = INT64_MIN, end_ns_ = INT64_MAX;
  int64_t max_correlation_ = -1;
  int64_t outside_window_ = 0;
  int64_t kernels_before_ = 0;      // compute kernels dropped for starting before the floor
  int64_t floor_correlation_ = -1;  // the latest call dropped for starting before the floor
  std::string window_note_;
};

}  // namespace emo
