// trace.h — the in-memory trace that every trace source (Kineto JSON, Nsight Systems SQLite,
// the simulator) produces and the graph builder consumes.
//
// A Trace holds one RankTrace per process/GPU. Each rank keeps flat vectors of plain records:
// CPU-side CUDA API calls, GPU operations (kernels, copies, memsets), CUDA synchronisation
// records and iteration markers. Times are int64 nanoseconds on the rank's host clock.
// Names are interned in one table per Trace so that a kernel name compares across ranks by id.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace emo {

// Interned strings. Id 0 is always the empty string.
class StringTable {
 public:
  StringTable() { Intern(""); }
  uint32_t Intern(std::string_view s);
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // deque: views into it stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// What a CUDA runtime/driver API call does, as far as happens-before is concerned.
// Values are written to JSON output by name (CallKindName); keep them explicit.
enum class CallKind : uint8_t {
  kOther = 0,            // no ordering effect beyond its thread (cudaMalloc, cudaEventQuery, ...)
  kLaunch = 1,           // enqueues GPU work asynchronously (kernel launch, *Async copy/memset, graph launch)
  kBlockingCopy = 2,     // cudaMemcpy/cudaMemset without Async: returns when its GPU op ends
  kStreamSync = 3,       // cudaStreamSynchronize
  kEventSync = 4,        // cudaEventSynchronize
  kDeviceSync = 5,       // cudaDeviceSynchronize / cuCtxSynchronize
  kEventRecord = 6,      // cudaEventRecord
  kStreamWaitEvent = 7,  // cudaStreamWaitEvent
};
const char* CallKindName(CallKind k);
// Classifies an API function name (cuda*, cu*, hip*), ignoring _v2/_ptsz style suffixes.
CallKind ClassifyCall(std::string_view name);

enum class GpuOpKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

// A CUDA runtime or driver API call on a CPU thread.
struct CpuCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = -1;  // links to the GPU ops it launched; -1 unknown
  uint32_t thread = 0;       // index into RankTrace::threads
  uint32_t name = 0;         // StringTable id
  CallKind kind = CallKind::kOther;
};

// A kernel, copy or memset executed on a GPU stream.
struct GpuOp {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = -1;  // the launching CpuCall's correlation; -1 unknown
  int64_t stream = 0;
  int32_t device = 0;
  uint32_t name = 0;
  GpuOpKind kind = GpuOpKind::kKernel;
  bool is_comm = false;  // NCCL/RCCL kernel: communication, not compute
  // Collective metadata, when the trace carries it (Kineto args, the NCCL profiler plugin's
  // records: trace/nccl_records.h); 0 / -1 when absent.
  uint32_t process_group = 0;   // StringTable id of the process group name ("nccl:COMM" from the plugin)
  uint32_t collective = 0;      // StringTable id of the operation the number counts ("AllReduce", "p2p 0->1")
  int64_t collective_seq = -1;  // its sequence number within (process_group, collective)
  int64_t bytes = -1;
};

// A CUDA synchronisation record (Kineto cat "cuda_sync", Nsight SYNCHRONIZATION table):
// it tells what a blocking call or a cudaStreamWaitEvent waited on.
enum class SyncKind : uint8_t { kStreamSync = 0, kEventSync = 1, kContextSync = 2, kStreamWaitEvent = 3 };
struct SyncRecord {
  int64_t correlation = -1;         // the API call this record belongs to
  int64_t stream = -1;              // stream synchronised (kStreamSync) or made to wait (kStreamWaitEvent)
  int64_t wait_on_stream = -1;      // stream of the awaited event record; -1 unknown
  int64_t record_correlation = -1;  // correlation of the cudaEventRecord awaited; -1 unknown
  int64_t event_id = -1;
  SyncKind kind = SyncKind::kStreamSync;
};

// One iteration marker (PyTorch ProfilerStep#N or an NVTX range).
struct Iteration {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t step = -1;
};

struct ThreadId {
  int64_t pid = 0;
  int64_t tid = 0;
  bool operator==(const ThreadId&) const = default;
};

// One GPU's reading over time, as NVML reports it: its SM clock ("sm_clock", MHz), its power
// ("power", W) and its energy counter ("energy", J, cumulative). Written as Chrome-trace counter
// events ("ph": "C", args {unit: value}), which Perfetto draws as the track "name unit" beside the
// GPU's kernels. The simulator and libemo_inject.so record them; the graph does not use them, but
// `emo optimize --trace` takes each GPU's power and clock from them where not given.
struct CounterTrack {
  int32_t device = 0;
  std::string name;
  std::string unit;
  std::vector<int64_t> t_ns;
  std::vector<double> value;
};

struct RankTrace {
  std::string source;       // file it came from
  int32_t rank = 0;         // distributedInfo.rank, or the file's position among the inputs
  bool rank_given = false;  // the trace named the rank (distributedInfo; a SQLite file's process order)
  int32_t world_size = 1;
  std::string gpu_name;
  int64_t clock_id = 0;  // ranks with equal clock_id share a host clock (same host)
  std::vector<ThreadId> threads;
  std::vector<CpuCall> calls;  // sorted by (thread, start) after Finish()
  std::vector<GpuOp> ops;      // sorted by start after Finish()
  std::vector<SyncRecord> syncs;
  std::vector<Iteration> iterations;
  std::vector<CounterTrack> counters;
  // Threads that ran PyTorch autograd engine work (cpu_op "autograd::engine::evaluate_function: ..."),
  // with how many such ops each ran; the graph builder names hand-offs to and from them.
  std::vector<std::pair<ThreadId, int64_t>> autograd_threads;
  int64_t events_read = 0;  // raw records consumed, for throughput figures
  // A trace of some iterations of a longer run (`emo trace --iterations`): the compute kernels
  // (NCCL's left out) the process launched before the first one kept, where launch ordinals start.
  bool windowed = false;
  int64_t kernels_before = 0;

  uint32_t ThreadIndex(int64_t pid, int64_t tid);
  // Sorts the vectors into the orders documented above. Importers call it last.
  void Finish();
};

struct Trace {
  StringTable names;
  std::vector<RankTrace> ranks;
  std::vector<std::string> notes;  // what the importers could not use, for the user (the builder reports them)
};

}  // namespace emo
