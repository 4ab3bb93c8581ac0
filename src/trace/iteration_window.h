// iteration_window.h — cuts a trace down to N iterations after M warm-up ones: the steady-state
// window that `emo trace --warmup M --iterations N` keeps, so that start-up work (allocation,
// autotuning, compilation) does not enter the graph.
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace emo {

// Keeps iterations [warmup, warmup + count) of a Finish()ed rank (iterations in start order) and the
// work they issued: CPU calls that start inside the window [start of the first kept iteration, end
// of the last], the GPU ops and sync records of those calls (by correlation id, so that work issued
// inside the window and running after its end stays, and work issued before it goes), and GPU ops
// with no known launching call that start inside the window. Marks the rank windowed and adds the
// compute kernels cut before the first kept one to kernels_before (launch ordinals count from
// there). Counter tracks keep their samples from the window's start to the last kept op's end, and
// the one in force at its start. False with *err, and the rank left untouched, when the rank has
// fewer than warmup + count iterations.
bool KeepIterationWindow(RankTrace* rank, int64_t warmup, int64_t count, std::string* err);

}  // namespace emo
