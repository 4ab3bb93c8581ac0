// gpus.h — `emo gpus`: what NVML reports of this machine's GPUs (read only).
#pragma once

namespace emo {

struct GpusOptions {
  bool json = false;
};

// Returns the process exit code; errors go to stderr as one line.
int RunGpus(const GpusOptions& opt);

}  // namespace emo
