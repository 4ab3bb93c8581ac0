// graph.h — the execution graph: a DAG of CPU intervals, API calls, GPU ops and collective
// rendezvous, with typed happens-before edges, stored in flat arrays indexed by node id.
//
// Node ids are a topological order: every edge goes from a smaller id to a larger one, so one
// forward loop over the ids replays the graph (see replay.h). Predecessors are kept in CSR form:
// the edges into node v are pred[pred_begin[v] .. pred_begin[v+1]).
//
// Replay semantics (Algorithm 1 of the EMO paper): node v completes at
//   C_v = duration_v + max(anchor_v, max over edges k->v of (C_k + latency_k->v))
// where anchor_v is the observed start for nodes that nothing in the trace explains
// (a thread's first call, a GPU op whose launch is missing) and -infinity otherwise.
// Times are nanoseconds relative to Graph::origin_ns (the earliest observed event).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace emo {

// Values are reported by name (NodeKindName); keep them explicit and dense.
enum class NodeKind : uint8_t {
  kCpuCall = 0,  // a CUDA API call on a CPU thread
  kCpuGap = 1,   // CPU time between two consecutive API calls of a thread (fixed duration)
  kKernel = 2,   // GPU compute kernel
  kComm = 3,     // NCCL/RCCL kernel (communication)
  kMemcpy = 4,
  kMemset = 5,
  kBarrier = 6,  // zero-length rendezvous of one collective across ranks
};
inline constexpr int kNodeKinds = 7;
const char* NodeKindName(NodeKind k);
inline bool IsGpu(NodeKind k) { return k >= NodeKind::kKernel && k <= NodeKind::kMemset; }
inline bool IsCpu(NodeKind k) { return k == NodeKind::kCpuCall || k == NodeKind::kCpuGap; }

enum class EdgeKind : uint8_t {
  kThread = 0,        // CPU thread program order
  kLaunch = 1,        // API call -> the GPU op it enqueued (latency: the trace's launch latency)
  kStream = 2,        // GPU op -> next op on the same stream
  kEventWait = 3,     // op before cudaEventRecord -> first op after cudaStreamWaitEvent on the waiting stream
  kSync = 4,          // awaited GPU op -> stream/event/device synchronize call
  kBlockingCopy = 5,  // synchronous memcpy/memset op -> the thread's next node
  kCollective = 6,    // collective participants' readiness -> barrier -> participants
  kCrossThread = 7,   // another thread's call -> the first call of a thread that was blocked until it ended
};
inline constexpr int kEdgeKinds = 8;
const char* EdgeKindName(EdgeKind k);

inline constexpr double kNoAnchor = -std::numeric_limits<double>::infinity();

struct Graph {
  // Per node, indexed by node id.
  std::vector<NodeKind> kind;
  std::vector<int32_t> rank;           // index into Trace::ranks
  std::vector<int64_t> lane;           // GPU: stream id; CPU: thread index; barrier: -1
  std::vector<uint32_t> name;          // StringTable id (0 for gaps and barriers)
  std::vector<int32_t> source;         // index into the rank's calls/ops; -1 for gaps and barriers
  std::vector<double> duration;        // replay duration, ns
  std::vector<double> anchor;          // earliest start, or kNoAnchor
  std::vector<double> observed_start;  // ns from origin_ns (barriers: latest participant arrival)
  std::vector<double> observed_end;
  // 1 for nodes of background threads (pollers, loggers: see builder.h), which belong to the graph
  // but do not define the iteration's end. May be empty (no background threads).
  std::vector<uint8_t> background;
  // Edges into each node (CSR).
  std::vector<uint32_t> pred_begin;  // size nodes()+1
  std::vector<uint32_t> pred;
  std::vector<float> pred_latency;  // ns added on the edge
  std::vector<EdgeKind> pred_kind;

  int64_t origin_ns = 0;

  size_t nodes() const { return kind.size(); }
  size_t edges() const { return pred.size(); }
};

}  // namespace emo
