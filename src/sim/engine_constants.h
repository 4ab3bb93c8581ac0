// engine_constants.h — the engine's fixed costs (API call times, latencies, host link), shared
// with the replay workload, which subtracts them from measured times: one definition, so that
// retuning the engine cannot silently break replays.
#pragma once

#include "sim/program.h"

namespace emo::sim {

// CPU cost of API calls and the GPU's reaction times, ns.
inline constexpr double kLaunchCallNs = 4000;
inline constexpr double kCopyCallNs = 5000;
inline constexpr double kEventCallNs = 2000;  // an event record or stream wait
inline constexpr double kSyncReturnNs = 2000;
inline constexpr double kLaunchLatencyNs = 3000;  // call return -> op may start
inline constexpr double kCollectiveLatencyNs = 8000;
inline constexpr double kHostLinkBps = 24e9;  // PCIe 4.0 x16, pinned host memory

// Replay passes the range profiler takes for the metrics table (DESIGN.md) under kernel replay:
// each kernel of a profiled range runs this many times back to back, one pass per group of
// counters the hardware collects together. An assumption ("several passes for a dozen metrics on
// GA100", issue 8); on hardware CUPTI reports the count (RangeProfiler::passes(), printed by `emo
// profile`) and none has been measured yet. The memory save and restore between passes is not
// modelled, nor that replay serialises the kernels.
inline constexpr int kRangeProfilerPasses = 4;

// Bytes a collective moves over each link per byte of its message among `ranks` GPUs (NCCL's
// bus-bandwidth factor): ring all-reduce 2(n-1)/n, send/receive 1, the others (n-1)/n.
inline double CollectiveBusFactor(CollectiveKind kind, double ranks) {
  return kind == CollectiveKind::kAllReduce  ? 2 * (ranks - 1) / ranks
         : kind == CollectiveKind::kSendRecv ? 1.0
                                             : (ranks - 1) / ranks;
}

}  // namespace emo::sim
