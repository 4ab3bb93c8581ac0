// trace.h — `emo trace`: run an unmodified CUDA program under EMO's CUPTI injection library
// (libemo_inject.so) and collect one Kineto JSON trace per process for `emo analyze`; or run it
// traced on demand, and ask it for windows of iterations while it runs (trace/trace_control.h).
#pragma once

#include <string>
#include <vector>

namespace emo {

struct TraceOptions {
  std::string out_dir;               // where the processes write emo-trace-*.json
  std::vector<std::string> command;  // program and arguments
  int warmup = 0;                    // steps left out before the window
  int iterations = 0;                // steps kept after them; 0 keeps the whole run
  bool on_demand = false;            // record nothing until `emo trace --request out_dir` asks
  std::string request;               // instead of a command: ask the job traced on demand in this directory
  double timeout_s = 60;             // with request: how long the processes may take
  int counters_ms = 20;              // NVML's clock, power and energy read this often into the trace; 0: never
};

// Returns the command's exit status (128+N when signal N ended it), or 1 when EMO itself failed
// (no CUDA support built in, no command, no injection library, the command would not start).
// With opt.request: 0 when every traced process wrote its window (the files are printed), else 1.
int RunTrace(const TraceOptions& opt);

}  // namespace emo
