// trace.cc — string interning, API-call classification and record ordering for Trace.
#include "trace/trace.h"

#include <algorithm>

namespace emo {

uint32_t StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return id;
}

const char* CallKindName(CallKind k) {
  switch (k) {
    case CallKind::kOther:
      return "other";
    case CallKind::kLaunch:
      return "launch";
    case CallKind::kBlockingCopy:
      return "blocking_copy";
    case CallKind::kStreamSync:
      return "stream_sync";
    case CallKind::kEventSync:
      return "event_sync";
    case CallKind::kDeviceSync:
      return "device_sync";
    case CallKind::kEventRecord:
      return "event_record";
    case CallKind::kStreamWaitEvent:
      return "stream_wait_event";
  }
  return "?";
}

static bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

CallKind ClassifyCall(std::string_view n) {
  if (Contains(n, "StreamWaitEvent")) return CallKind::kStreamWaitEvent;
  if (Contains(n, "EventRecord")) return CallKind::kEventRecord;
  if (Contains(n, "EventSynchronize")) return CallKind::kEventSync;
  if (Contains(n, "StreamSynchronize")) return CallKind::kStreamSync;
  if (Contains(n, "DeviceSynchronize") || Contains(n, "CtxSynchronize")) return CallKind::kDeviceSync;
  if (Contains(n, "Launch")) return CallKind::kLaunch;  // kernels, cooperative kernels, graphs, host funcs
  if (Contains(n, "Memcpy") || Contains(n, "Memset")) {
    // cuMemcpyHtoDAsync_v2, cudaMemcpyAsync, hipMemsetAsync: asynchronous; the rest block the thread.
    return Contains(n, "Async") ? CallKind::kLaunch : CallKind::kBlockingCopy;
  }
  return CallKind::kOther;
}

uint32_t RankTrace::ThreadIndex(int64_t pid, int64_t tid) {
  // Few threads per rank: a linear scan beats hashing and keeps the order of first appearance.
  for (size_t i = 0; i < threads.size(); ++i)
    if (threads[i].pid == pid && threads[i].tid == tid) return static_cast<uint32_t>(i);
  threads.push_back({pid, tid});
  return static_cast<uint32_t>(threads.size() - 1);
}

void RankTrace::Finish() {
  std::stable_sort(calls.begin(), calls.end(), [](const CpuCall& a, const CpuCall& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;  // an enclosing call before the calls it contains
  });
  std::stable_sort(ops.begin(), ops.end(), [](const GpuOp& a, const GpuOp& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.correlation < b.correlation;
  });
  std::stable_sort(iterations.begin(), iterations.end(),
                   [](const Iteration& a, const Iteration& b) { return a.start_ns < b.start_ns; });
}

}  // namespace emo
