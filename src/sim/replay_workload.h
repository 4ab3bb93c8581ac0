// replay_workload.h — the `replay` workload: an imported real trace re-executed on simulated
// GPUs, so that real traces can be optimised in simulation.
//
// Each rank's API calls are replayed in the order they started by one CPU thread, with the CPU
// time between calls kept as measured (several CPU threads of a rank are serialised: replayed
// apart, they could reorder NCCL kernels on a shared stream and deadlock). Kernels get hidden characteristics inferred
// from their names (GEMM, convolution and attention kernels compute-bound on tensor cores, NCCL kernels communication,
// the rest memory-bound) and scaled so that, at the device's default clock, each takes its measured time. Ordering
// comes from the execution graph: its event-wait edges become cudaEventRecord / cudaStreamWaitEvent pairs, its sync
// edges the synchronising calls, its collective barriers NCCL groups. The trace is one iteration; the engine repeats
// it.
#pragma once

#include <string>

#include "graph/graph.h"
#include "sim/program.h"
#include "trace/trace.h"

namespace emo::sim {

// `g` must be the graph BuildGraph made from `trace`.
bool BuildReplayWorkload(const Trace& trace, const Graph& g, const std::string& device, Program* out, std::string* err);

}  // namespace emo::sim
