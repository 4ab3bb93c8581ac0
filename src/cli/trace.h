// trace.h — `emo trace`: run an unmodified CUDA program under EMO's CUPTI injection library
// (libemo_inject.so) and collect one Kineto JSON trace per process for `emo analyze`.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct TraceOptions {
  std::string out_dir;               // where the processes write emo-trace-*.json
  std::vector<std::string> command;  // program and arguments
  int warmup = 0;                    // steps left out before the window
  int iterations = 0;                // steps kept after them; 0 keeps the whole run
};

// Returns the command's exit status (128+N when signal N ended it), or 1 when EMO itself failed
// (no CUDA support built in, no command, no injection library, the command would not start).
int RunTrace(const TraceOptions& opt);

}  // namespace emo
