// profile.h — `emo profile --trace DIR -o OUT -- CMD`: the pack profiler on hardware. It packs the
// traced run as `emo analyze` does, runs CMD again under libemo_inject.so with CUPTI range
// profiling of each unique pack's first occurrence (by launch ordinal), and writes the packs'
// metric vectors: the MetricSource of a real job.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct ProfileOptions {
  std::vector<std::string> traces;   // the trace(s) of the same command (files or directories)
  std::string out;                   // METRICS.json
  std::vector<std::string> command;  // run again, unchanged
  double pack_ms = 5;                // Δmax of packing, as for emo analyze
};

int RunProfile(const ProfileOptions& opt);

}  // namespace emo
