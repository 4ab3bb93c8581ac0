// replay_workload.h — the `replay` workload: an imported real trace re-executed on simulated
// GPUs, so that real traces can be optimised in simulation.
//
// Each traced CPU thread of a rank is replayed by its own simulated thread, its API calls in the
// order they started and the CPU time between them as measured. The threads run concurrently,
// ordered where the trace says one waited for another: the graph's cross-thread hand-offs (a
// thread blocked until another's call: PyTorch's main thread in backward() and the autograd
// thread) become host-flag waits (program.h) in place of the blocked gap. Host flags also keep
// each stream's launch order and the rank's collectives in trace order (NCCL kernels issued in
// another order than on the peers deadlock), an event's record before the wait on it and an op's
// launch before a sync on it; and the first thread starts and ends each iteration for all.
// A single-threaded trace gets no flags. Kernels get hidden characteristics drawn per name from
// the archetype the name suggests (replay_kernels.h: GEMM tiles, attention, reductions, elementwise,
// gathers, NCCL, ...), one kernel per name and 2 % duration bucket, scaled so that, at the
// device's default clock, each takes its measured time. Ordering
// comes from the execution graph: its event-wait edges become cudaEventRecord / cudaStreamWaitEvent pairs, its sync
// edges the synchronising calls, its collective barriers NCCL groups. An NCCL kernel whose peers are not in the trace
// (one rank of a larger job) has no one to meet: it runs as a plain kernel of its measured time (waits for the absent
// peers included, as the graph keeps it), named "(no peer traced) " + its name. The trace is one iteration; the engine
// repeats it.
#pragma once

#include <string>

#include "graph/graph.h"
#include "sim/program.h"
#include "trace/trace.h"

namespace emo::sim {

// `g` must be the graph BuildGraph made from `trace`.
bool BuildReplayWorkload(const Trace& trace, const Graph& g, const std::string& device, Program* out, std::string* err);

}  // namespace emo::sim
