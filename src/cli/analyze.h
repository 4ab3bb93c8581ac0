// analyze.h — `emo analyze TRACE... [--json]`: import, build the execution graph, replay it and
// report fidelity, critical path, slack and asynchrony.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct AnalyzeOptions {
  std::vector<std::string> inputs;
  bool json = false;
  double pack_ms = 5;     // Δmax of packing
  bool progress = false;  // print progress lines on stderr
};

// Returns the process exit code; errors go to stderr as one line.
int RunAnalyze(const AnalyzeOptions& opt);

}  // namespace emo
