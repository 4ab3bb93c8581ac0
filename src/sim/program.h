// program.h — what the simulator executes: one program per rank (GPU), each a set of CPU
// threads whose instructions do CPU work, call the CUDA API (launch kernels, copy, record and
// wait for events, synchronise) and start NCCL collectives. Workload generators (workload.h)
// build programs from JSON specs; the engine (engine.h) runs them for N iterations.
//
// A thread's code is one iteration; the engine runs it `iterations` times, marking each with a
// ProfilerStep. A program in phases (a job whose work changes mid-run: a new sequence length, an
// evaluation phase) runs each thread's phase_code[k] from iteration phase_starts[k] on. Streams and events are small
// integers local to their rank. A collective is identified by its group and its order within the group, as NCCL orders
// work per communicator.
//
// Threads of a rank run concurrently. Host-side order between them is explicit: a per-rank
// flag is a counting semaphore that one thread signals (kSignal) and another waits on (kWait),
// as a condition variable hands work from PyTorch's main thread to its autograd thread. Both cost
// nothing and are not API calls, so a trace shows only the waiting thread's gap. Each flag is
// signalled and awaited equally often per iteration (Validate), so iterations never bank signals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/kernel_model.h"

namespace emo::sim {

enum class Op : uint8_t {
  kCpu = 0,           // CPU work of `cpu_ns` (not an API call)
  kLaunch = 1,        // cudaLaunchKernel of `kernel` on `stream`
  kCopy = 2,          // cudaMemcpyAsync (or cudaMemcpy when `blocking`) of `bytes` on `stream`
  kRecord = 3,        // cudaEventRecord(`event`, `stream`)
  kWaitEvent = 4,     // cudaStreamWaitEvent(`stream`, `event`)
  kEventSync = 5,     // cudaEventSynchronize(`event`)
  kStreamSync = 6,    // cudaStreamSynchronize(`stream`)
  kDeviceSync = 7,    // cudaDeviceSynchronize()
  kCollective = 8,    // NCCL kernel `kernel` of `group` on `stream` (all-reduce, send/recv, ...)
  kRangePush = 9,     // a host-side range opens, named Program::ranges[`range`] (nvtxRangePush, or a
                      // framework hook such as Perseus's on_instruction_begin): no cost, no GPU work
  kRangePop = 10,     // the innermost open range `range` closes
  kSignal = 11,       // the rank's host flag `flag` is signalled once (no cost, not an API call)
  kWait = 12,         // the thread takes one signal of host flag `flag`, waiting until there is one
  kStreamQuery = 13,  // cudaStreamQuery(`stream`): a poll that returns at once, never waiting
};

enum class CopyDir : uint8_t { kHostToDevice = 0, kDeviceToHost = 1, kDeviceToDevice = 2 };

struct Instr {
  Op op = Op::kCpu;
  int32_t stream = -1;
  int32_t event = -1;
  int32_t kernel = -1;  // index into Program::kernels (kLaunch, kCollective)
  int32_t group = -1;   // index into Program::groups (kCollective)
  int32_t range = -1;   // index into Program::ranges (kRangePush, kRangePop)
  int32_t flag = -1;    // the rank's host flag (kSignal, kWait)
  double cpu_ns = 0;    // kCpu
  double bytes = 0;     // kCopy; kCollective: bytes each rank contributes
  CopyDir dir = CopyDir::kHostToDevice;
  bool blocking = false;  // kCopy: cudaMemcpy instead of cudaMemcpyAsync
  bool pinned = true;     // kCopy: host memory is pinned (else pageable)
};

struct Kernel {
  std::string name;     // as a profiler shows it
  KernelTraits traits;  // hidden from the rest of EMO
  // > 0: the kernel's measured time at the device's default clock (a replayed trace's), which its
  // hidden per-name factors must leave as it is: they then change only how it scales with the clock.
  double measured_s = 0;
};

enum class CollectiveKind : uint8_t {
  kAllReduce = 0,
  kAllGather = 1,
  kReduceScatter = 2,
  kSendRecv = 3,
  kAllToAll = 4
};

struct Group {
  std::vector<int32_t> ranks;  // participants, by rank index
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string name;  // process-group name written into the trace
};

struct Thread {
  std::vector<Instr> code;                     // one iteration (of the first phase)
  std::vector<std::vector<Instr>> phase_code;  // one iteration of each later phase (Program::phase_starts)
  // A thread that runs free of the steps (a poller, a data loader): it repeats its code until the
  // other threads have run every iteration and the GPUs are idle, and the run ends without it. It
  // may not use host flags or collectives, and its code must take CPU time.
  bool background = false;
};

struct RankProgram {
  std::vector<Thread> threads;
  int32_t streams = 1;
  int32_t events = 0;
  int32_t flags = 0;  // host flags (kSignal, kWait), numbered from 0
};

struct Program {
  std::string name;
  std::string device;           // DeviceSpec name for every rank
  double link_bytes_per_s = 0;  // per-GPU bandwidth to peers (NVLink or PCIe)
  std::vector<Kernel> kernels;
  std::vector<Group> groups;
  std::vector<std::string> ranges;  // names of host-side ranges (e.g. "forward", "backward")
  std::vector<RankProgram> ranks;
  // Iterations at which the later phases begin, ascending and positive; every thread has one
  // phase_code per entry.
  std::vector<int32_t> phase_starts;
};

// Checks indices and rank/group consistency; false with a message naming the first problem.
bool Validate(const Program& p, std::string* err);

}  // namespace emo::sim
