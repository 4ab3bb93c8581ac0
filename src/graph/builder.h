// builder.h — turns a Trace (one or more ranks) into an execution Graph.
//
// Per rank: each CPU thread becomes a chain call -> gap -> call ...; each GPU op a node, chained
// per stream; launches link calls to their ops by correlation id; blocking calls wait for the
// GPU work they synchronise with; cudaEventRecord/cudaStreamWaitEvent pairs order two streams.
// Across ranks: NCCL kernels of one collective meet at a zero-length barrier node.
//
// Where the trace says what was awaited (cuda_sync records, Nsight SYNCHRONIZATION rows) the
// edge is exact; otherwise it is inferred and counted in BuildReport so that users learn the
// trace lacks information (profile with cuda_sync events enabled for exact waits).
//
// Across the threads of a rank: a thread that stays without API calls for at least
// kBlockedGapNs and resumes within kResumeShare of that gap after another thread's call ends
// was blocked until that call's thread got there (PyTorch's main thread in backward() waiting for
// the autograd engine's thread, and that thread waiting for the next backward()). The gap becomes
// a wait: a kCrossThread edge from the other thread's call, its latency the observed delay, and the
// gap's own duration 0. Candidates the trace's times contradict (resumed too late after every other
// thread's call, or closing a cycle) add no edge and are counted as dropped.
//
// Background threads: a thread whose API calls neither launch GPU work nor wait on it (an
// event-query poller, a logger, a data loader's cudaHostAlloc) belongs to the graph but does not
// define the iteration's end (Graph::background); it neither wakes nor is woken by other threads.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "trace/trace.h"

namespace emo {

struct RankBuildReport {
  double launch_latency_ns = 0;         // median kernel start - launch call end, on idle streams
  double copy_latency_ns = 0;           // the same for memcpy/memset ops from pinned/device memory
  double pageable_copy_latency_ns = 0;  // median copy end - call end for pageable-memory copies
  double stream_gap_ns = 0;             // median idle gap between back-to-back ops queued on a stream
  double sync_return_ns = 0;            // median call end - awaited op end over calls that blocked
  int64_t waits_exact = 0;              // stream waits / syncs resolved from sync records
  int64_t waits_inferred = 0;           // resolved by heuristics (no sync record)
  int64_t waits_unresolved = 0;         // a wait whose source or target could not be found
  int64_t ops_without_launch = 0;       // GPU ops whose launching call is not in the trace
  int64_t collectives_matched = 0;      // NCCL kernels joined to peers on other loaded ranks
  int64_t collectives_unmatched = 0;    // NCCL kernels with no peer loaded (duration kept as measured)
  int64_t calls_nested = 0;             // API calls inside another call on the same thread (merged)
  int64_t handoffs_inferred = 0;        // kCrossThread edges added
  int64_t handoffs_autograd = 0;        // ... of them to or from the autograd engine's thread
  int64_t handoffs_dropped = 0;         // candidates the trace's times contradict
  struct Background {
    int64_t tid = 0;
    int64_t calls = 0;
    std::string reason;
  };
  std::vector<Background> background;  // threads that do not define the iteration's end
  std::string no_gpu;                  // when the rank holds no GPU activity: what kind of trace it looks like
};

inline constexpr int64_t kBlockedGapNs = 1'000'000;  // a thread idle this long may be blocked
inline constexpr double kResumeShare = 0.05;         // ... and resumed within this share of its gap

struct BuildReport {
  std::vector<RankBuildReport> ranks;
  std::vector<std::string> notes;     // what was inferred or missing, for the user
  int64_t groups_matched_by_seq = 0;  // process groups whose collectives were joined by sequence number, not order
};

// Builds the graph. Returns false with *err on bad input (duplicate correlation ids, cycles).
bool BuildGraph(const Trace& trace, Graph* graph, BuildReport* report, std::string* err);

}  // namespace emo
