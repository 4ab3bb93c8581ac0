// kineto_json_fuzz.cc — libFuzzer target: any byte string fed to the Kineto JSON importer, and
// whatever it accepts to the graph builder and analysis, must give an answer or a clean error,
// never a crash or sanitizer report.
#include <cstdint>
#include <string>

#include "graph/analysis.h"
#include "graph/builder.h"
#include "trace/kineto_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  emo::Trace trace;
  std::string err;
  if (!emo::ParseKinetoJson("fuzz.json", reinterpret_cast<const char*>(data), size, &trace, &err)) return 0;
  emo::Graph g;
  emo::BuildReport report;
  if (!emo::BuildGraph(trace, &g, &report, &err)) return 0;
  emo::Analyze(trace, g);
  return 0;
}
