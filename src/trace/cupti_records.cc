// cupti_records.cc — CUPTI activity records -> Trace (see cupti_records.h).
#include "trace/cupti_records.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "trace/iteration_window.h"

namespace emo {
namespace {

int64_t Ns(uint64_t t) { return static_cast<int64_t>(t); }

// CUPTI writes 0xffffffff for "not applicable" ids in synchronization records.
int64_t IdOrNone(uint32_t id) { return id == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : static_cast<int64_t>(id); }

const char* MemoryKindName(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

const char* CopyKindName(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}

// Kineto's names, e.g. "Memcpy HtoD (Pageable -> Device)"; EMO's graph builder looks for "Pageable".
std::string CopyName(uint8_t copy_kind, uint8_t src, uint8_t dst) {
  return std::string("Memcpy ") + CopyKindName(copy_kind) + " (" + MemoryKindName(src) + " -> " + MemoryKindName(dst) +
         ")";
}

// "ProfilerStep#12" -> 12, "emo.step" -> next_emo_step, anything else -> -1.
int64_t StepOf(std::string_view name, int64_t next_emo_step) {
  if (name == "emo.step") return next_emo_step;
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  int64_t step = -1;
  const char* begin = name.data() + kPrefix.size();
  auto [p, ec] = std::from_chars(begin, name.data() + name.size(), step);
  return ec == std::errc() && p == name.data() + name.size() && step >= 0 ? step : -1;
}

}  // namespace

bool IsStepRangeName(std::string_view name) { return StepOf(name, 0) >= 0; }

bool NcclInTraceWindow(int64_t steps, int64_t warmup, int64_t count) {
  return count <= 0 || (steps > warmup && steps <= warmup + count);
}

std::string KernelName(const char* name) {
  if (!name) return "kernel";
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : name;
  std::free(demangled);
  return out;
}

bool IsCommKernelName(const std::string& n) {
  return n.starts_with("nccl") || n.starts_with("rccl") || n.starts_with("void nccl");
}

std::string BuiltinCallbackName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        return "cudaLaunchKernel";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        return "cudaLaunchKernelExC";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
        return "cudaGraphLaunch";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        return "cudaMemcpy";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        return "cudaMemcpyAsync";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
        return "cudaMemset";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
        return "cudaMemsetAsync";
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        return "cudaStreamSynchronize";
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        return "cudaEventSynchronize";
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
        return "cudaDeviceSynchronize";
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
        return "cudaEventRecord";
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
        return "cudaStreamWaitEvent";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
        return "cudaMalloc";
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
        return "cudaFree";
      default:
        return "";
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        return "cuLaunchKernel";
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        return "cuLaunchKernelEx";
      case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
        return "cuCtxSynchronize";
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
        return "cuStreamSynchronize";
      case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
        return "cuEventSynchronize";
      case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
        return "cuEventRecord";
      case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
        return "cuStreamWaitEvent";
      default:
        return "";
    }
  }
  return "";
}

CuptiRecordConverter::CuptiRecordConverter(Trace* trace, size_t rank_index, CallbackNamer namer)
    : trace_(trace), rank_index_(rank_index), namer_(namer) {}

void CuptiRecordConverter::SetWindow(int64_t warmup, int64_t count) {
  warmup_ = warmup;
  count_ = count;
}

void CuptiRecordConverter::Add(const CUpti_Activity* record) {
  ++rank().events_read;
  ++converted_;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      AddApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record));
      return;
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      AddOp(Ns(r.start), Ns(r.end), r.correlationId, r.deviceId, r.streamId, trace_->names.Intern(KernelName(r.name)),
            GpuOpKind::kKernel, -1);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      AddOp(Ns(r.start), Ns(r.end), r.correlationId, r.deviceId, r.streamId,
            trace_->names.Intern(CopyName(r.copyKind, r.srcKind, r.dstKind)), GpuOpKind::kMemcpy,
            static_cast<int64_t>(r.bytes));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      AddOp(Ns(r.start), Ns(r.end), r.correlationId, r.deviceId, r.streamId,
            trace_->names.Intern(CopyName(r.copyKind, r.srcKind, r.dstKind)), GpuOpKind::kMemcpy,
            static_cast<int64_t>(r.bytes));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      const std::string name = std::string("Memset (") + MemoryKindName(static_cast<uint8_t>(r.memoryKind)) + ")";
      AddOp(Ns(r.start), Ns(r.end), r.correlationId, r.deviceId, r.streamId, trace_->names.Intern(name),
            GpuOpKind::kMemset, static_cast<int64_t>(r.bytes));
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      AddSync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
      return;
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityCudaEvent2*>(record);
      events_.push_back({r.cudaEventSyncId, r.eventId, r.streamId, r.correlationId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      if (rank().gpu_name.empty() && r.name) rank().gpu_name = r.name;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
      AddMarker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record));
      return;
    default:
      --converted_;
      ++skipped_;
      return;
  }
}

void CuptiRecordConverter::AddApi(const CUpti_ActivityAPI& r) {
  const CUpti_CallbackDomain domain =
      r.kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | r.cbid;
  auto it = api_names_.find(key);
  if (it == api_names_.end()) {
    std::string name = namer_ ? namer_(domain, r.cbid) : "";
    if (name.empty()) name = BuiltinCallbackName(domain, r.cbid);
    if (name.empty()) {
      name = std::string(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuDriverApi#" : "cudaRuntimeApi#") +
             std::to_string(r.cbid);
    }
    it = api_names_.emplace(key, trace_->names.Intern(name)).first;
  }
  if (Ns(r.start) < floor_ns_ || Ns(r.start) > end_ns_) {
    ++outside_window_;
    if (Ns(r.start) < floor_ns_) floor_correlation_ = std::max<int64_t>(floor_correlation_, r.correlationId);
    return;
  }
  CpuCall c;
  c.start_ns = Ns(r.start);
  c.end_ns = Ns(r.end);
  c.correlation = r.correlationId;
  c.thread = rank().ThreadIndex(r.processId, r.threadId);
  c.name = it->second;
  c.kind = ClassifyCall(trace_->names.Get(c.name));
  rank().calls.push_back(c);
  if (end_ns_ != INT64_MAX) max_correlation_ = std::max(max_correlation_, c.correlation);
}

void CuptiRecordConverter::AddOp(int64_t start, int64_t end, int64_t correlation, uint32_t device, uint32_t stream,
                                 uint32_t name, GpuOpKind kind, int64_t bytes) {
  // An op cannot start before the call that issued it; one that starts after the window was
  // issued after it unless a call inside the window has its correlation or a later one.
  if (start <= 0 || end < start) {  // incomplete: a forced flush delivers running work without its times
    --converted_;
    ++skipped_;
    return;
  }
  const bool compute = kind == GpuOpKind::kKernel && !IsCommKernelName(trace_->names.Get(name));
  if (start < floor_ns_ || (start > end_ns_ && correlation > max_correlation_)) {
    ++outside_window_;
    kernels_before_ += start < floor_ns_ && compute;
    return;
  }
  GpuOp o;
  o.start_ns = start;
  o.end_ns = end;
  o.correlation = correlation;
  o.device = static_cast<int32_t>(device);
  o.stream = stream;
  o.name = name;
  o.kind = kind;
  o.bytes = bytes;
  o.is_comm = kind == GpuOpKind::kKernel && !compute;
  rank().ops.push_back(o);
}

void CuptiRecordConverter::AddSync(const CUpti_ActivitySynchronization2& r) {
  SyncRecord s;
  s.correlation = r.correlationId;
  switch (r.type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      s.kind = SyncKind::kEventSync;
      break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      s.kind = SyncKind::kStreamWaitEvent;
      break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      s.kind = SyncKind::kStreamSync;
      break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      s.kind = SyncKind::kContextSync;
      break;
    default:
      --converted_;
      ++skipped_;
      return;
  }
  const bool stream_applies = s.kind == SyncKind::kStreamSync || s.kind == SyncKind::kStreamWaitEvent;
  s.stream = stream_applies ? IdOrNone(r.streamId) : -1;
  s.event_id = IdOrNone(r.cudaEventId);
  if (s.kind == SyncKind::kEventSync || s.kind == SyncKind::kStreamWaitEvent)
    waits_.push_back({rank().syncs.size(), r.cudaEventSyncId, r.cudaEventId});
  rank().syncs.push_back(s);
}

void CuptiRecordConverter::AddMarker(const CUpti_ActivityMarker2& r) {
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    const int64_t step = StepOf(r.name ? std::string_view(r.name) : std::string_view(), emo_steps_);
    if (step >= 0 && r.name && std::string_view(r.name) == "emo.step") ++emo_steps_;
    const int64_t ordinal = step >= 0 ? step_ranges_++ : -1;
    open_ranges_[r.id] = {Ns(r.timestamp), step, ordinal};
    if (warmup_ >= 0 && ordinal >= 0 && ordinal <= warmup_) RaiseFloor(Ns(r.timestamp));
  } else if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(r.id);
    if (it == open_ranges_.end()) return;
    if (it->second.step >= 0) rank().iterations.push_back({it->second.start_ns, Ns(r.timestamp), it->second.step});
    if (warmup_ >= 0 && it->second.ordinal == warmup_ + count_ - 1) {
      end_ns_ = Ns(r.timestamp);
      outside_window_ += std::erase_if(rank().calls, [&](const CpuCall& c) { return c.start_ns > end_ns_; });
      for (const CpuCall& c : rank().calls) max_correlation_ = std::max(max_correlation_, c.correlation);
    }
    open_ranges_.erase(it);
  }
}

// Drops what was issued before `ns`, the start of a step at or before the window's first.
void CuptiRecordConverter::RaiseFloor(int64_t ns) {
  floor_ns_ = ns;
  outside_window_ += std::erase_if(rank().calls, [&](const CpuCall& c) {
    if (c.start_ns >= ns) return false;
    floor_correlation_ = std::max(floor_correlation_, c.correlation);
    return true;
  });
  outside_window_ += std::erase_if(rank().ops, [&](const GpuOp& o) {
    if (o.start_ns >= ns) return false;
    kernels_before_ += o.kind == GpuOpKind::kKernel && !o.is_comm;
    return true;
  });
}

// Cuts the finished rank to the window, or, when the run had fewer steps than asked, to what is left
// of it after the records already dropped (the steps from the last one the floor reached).
void CuptiRecordConverter::CutToWindow() {
  const int64_t have = static_cast<int64_t>(rank().iterations.size());
  if (have == 0) {
    window_note_ = "no iteration markers (NVTX ranges emo.step or ProfilerStep#N): the whole run is kept";
    return;
  }
  const int64_t first = std::min(warmup_, have - 1), count = std::min(warmup_ + count_, have) - first;
  // Ops of calls already dropped before the floor (their calls are gone, so the cut below could
  // only judge them by time).
  std::erase_if(rank().ops, [&](const GpuOp& o) {
    if (o.correlation < 0 || o.correlation > floor_correlation_) return false;
    kernels_before_ += o.kind == GpuOpKind::kKernel && !o.is_comm;
    return true;
  });
  std::string err;
  if (!KeepIterationWindow(&rank(), first, count, &err)) {
    window_note_ = err;
    return;
  }
  rank().kernels_before += kernels_before_;
  if (first != warmup_ || count != count_)
    window_note_ = "the run had " + std::to_string(have) + (have == 1 ? " step" : " steps") + ", not " +
                   std::to_string(warmup_) + " warm-up + " + std::to_string(count_) + ": kept steps " +
                   std::to_string(first) + ".." + std::to_string(first + count - 1);
}

void CuptiRecordConverter::Finish() {
  // An event wait awaits the latest cudaEventRecord of its event: matched by cudaEventSyncId when
  // CUPTI filled it in, else the last record of the same event id issued before the wait.
  std::unordered_map<uint64_t, size_t> by_sync_id;
  std::vector<size_t> by_event(events_.size());  // indices sorted by (event id, correlation)
  for (size_t i = 0; i < events_.size(); ++i) {
    if (events_[i].sync_id != 0) by_sync_id[events_[i].sync_id] = i;
    by_event[i] = i;
  }
  auto event_key = [&](size_t i) {
    return std::make_pair(static_cast<int64_t>(events_[i].event_id), events_[i].correlation);
  };
  std::sort(by_event.begin(), by_event.end(), [&](size_t a, size_t b) { return event_key(a) < event_key(b); });
  for (const PendingWait& w : waits_) {
    SyncRecord& s = rank().syncs[w.sync_index];
    const EventRecord* found = nullptr;
    if (w.sync_id != 0) {
      auto it = by_sync_id.find(w.sync_id);
      if (it != by_sync_id.end()) found = &events_[it->second];
    }
    if (!found) {  // the last record of this event before the wait
      const auto key = std::make_pair(static_cast<int64_t>(w.event_id), s.correlation);
      auto it = std::lower_bound(by_event.begin(), by_event.end(), key,
                                 [&](size_t i, const std::pair<int64_t, int64_t>& k) { return event_key(i) < k; });
      if (it != by_event.begin() && events_[*(it - 1)].event_id == w.event_id) found = &events_[*(it - 1)];
    }
    if (found) {
      s.wait_on_stream = found->stream;
      s.record_correlation = found->correlation;
    }
  }
  rank().Finish();
  if (warmup_ >= 0) CutToWindow();
}

}  // namespace emo
