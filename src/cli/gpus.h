// gpus.h — `emo gpus`: what NVML (or the Zeus daemon) reports of this machine's GPUs; with --reset,
// every GPU back to its default clocks and power limit.
#pragma once

#include <string>

namespace emo {

struct GpusOptions {
  bool json = false;
  bool reset = false;            // unlock clocks and restore default power limits instead of listing
  std::string backend = "nvml";  // "nvml" or "zeusd"
};

// Returns the process exit code; errors go to stderr as one line.
int RunGpus(const GpusOptions& opt);

}  // namespace emo
