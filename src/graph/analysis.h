// analysis.h — what `emo analyze` reports about a trace: graph size, replay fidelity, critical
// path, slack and the three kinds of asynchrony that create slack (GPU compute overlapping
// communication, CPU work, or other GPUs).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/graph.h"
#include "graph/replay.h"
#include "trace/trace.h"

namespace emo {

struct Overlap {
  double compute_ms = 0;          // union of compute-kernel time
  double with_comm_ms = 0;        // ... while NCCL kernels of the same rank run
  double with_cpu_ms = 0;         // ... while the rank's CPU threads run (not blocked in a sync)
  double with_other_gpus_ms = 0;  // ... while other ranks' compute kernels run
};

// How much GPU compute time could run slower without delaying the replayed end. A compute
// kernel's slack is its latest start minus its earliest start in the replay at measured durations
// (ReplayResult: latest minus earliest completion; the duration is the same): how much later it
// could start, or how much longer it could run, alone, before the end of the whole replayed trace
// moves. Kernels in one chain share their slack, so slack does not add up over kernels; the shares
// below weigh each kernel by its duration instead.
struct SlackStats {
  double kernel_ms = 0;        // sum of compute-kernel durations (concurrent kernels each count)
  double off_critical_ms = 0;  // ... of kernels with slack > 0 (on no critical path)
  double slack_ge_1ms_ms = 0;  // ... of kernels with slack >= 1 ms
  double slack_ge_5ms_ms = 0;  // ... of kernels with slack >= 5 ms, a clock change's least latency
  double Share(double ms) const { return kernel_ms > 0 ? ms / kernel_ms : 0; }
};

struct SpanStats {
  std::array<int64_t, kNodeKinds> nodes{};
  std::array<int64_t, kEdgeKinds> edges{};
  double observed_ms = 0;         // first to last event, as traced
  double replayed_ms = 0;         // the same span after replaying the graph with measured durations
  double replay_error = 0;        // (replayed - observed) / observed
  double start_error_p50_us = 0;  // |replayed - observed| start of GPU ops
  double start_error_p95_us = 0;
  SlackStats slack;
  Overlap overlap;
  int64_t iterations = 0;   // ProfilerStep/NVTX markers; 1 (the whole trace) when there are none
  double iteration_ms = 0;  // their mean observed duration
};

// The critical path's length split into what advanced it: node time by kind and by lane, edge
// latency (launch/sync latencies between nodes) and idle time (waiting for an anchored start).
// by_kind_ms + edge_latency_ms + idle_ms == total_ms.
struct CriticalPathStats {
  double total_ms = 0;
  std::array<double, kNodeKinds> by_kind_ms{};
  double edge_latency_ms = 0;  // launch/sync latencies on the path
  double idle_ms = 0;          // anchored starts the path waits for
  struct Lane {
    std::string name;  // "rank 0 stream 7", "rank 0 thread 1"
    double ms = 0;
  };
  std::vector<Lane> by_lane;  // descending
  int64_t nodes = 0;
};

// The critical path of one iteration of one rank: from the iteration's last work node back to the
// iteration's start. An iteration (ProfilerStep/NVTX marker; the whole trace without markers)
// holds the nodes of its rank's working (not background) threads that start inside it and the
// GPU ops they launched; it ends when the last of them finishes in the replay.
struct IterationPath {
  size_t rank = 0;  // index into Trace::ranks
  int64_t step = -1;
  double start_ms = 0;          // from the graph origin
  CriticalPathStats path;       // its length (last work node's finish - start) and how it splits
  std::vector<uint32_t> nodes;  // node ids on it, first to last
};

struct Analysis {
  std::vector<SpanStats> ranks;
  SpanStats total;
  CriticalPathStats critical_path;             // to the end of the work (background threads left out)
  std::vector<uint32_t> critical_nodes;        // node ids, first to last
  std::vector<IterationPath> iteration_paths;  // every iteration of every rank, in time order per rank
  // The mean over steady-state iterations: every rank's iterations after its first (all of them
  // when a rank has only one). by_lane holds mean ms per lane; total_ms the mean length.
  CriticalPathStats steady_path;
  int64_t steady_iterations = 0;
};

// `replay` is ReplayMeasured(g); the second form computes it.
Analysis Analyze(const Trace& trace, const Graph& g, const ReplayResult& replay);
Analysis Analyze(const Trace& trace, const Graph& g);

}  // namespace emo
