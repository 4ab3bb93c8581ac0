// test_util.h — helpers shared by the tests: real-trace paths and building graphs from inline
// Kineto JSON.
#pragma once

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/graph.h"
#include "trace/trace.h"

namespace emo::test {

// Directory of the real traces (env EMO_TRACES), or "" when not configured.
std::string TracesDir();

// Parses inline Kineto JSON into `trace` as one more rank; fails the test on error.
void AddKinetoRank(const std::string& json, Trace* trace, const std::string& name = "inline.json");

// Builds the graph; fails the test on error.
void Build(const Trace& trace, Graph* g, BuildReport* report = nullptr);

// Event builders for inline Kineto JSON (times in µs): a CUDA runtime call on CPU thread `tid`,
// a GPU op of category `cat` (kernel, gpu_memcpy, ...), a kernel, a cuda_sync record, and the
// whole trace around a list of events.
std::string Call(const char* name, double ts, double dur, int corr, int tid = 1);
std::string Op(const char* cat, const char* name, int stream, double ts, double dur, int corr);
std::string Kernel(const char* name, int stream, double ts, double dur, int corr);
std::string SyncRec(const char* kind, int corr, int stream, int wait_on_stream = -1, int record_corr = -1);
std::string TraceJson(const std::vector<std::string>& events, const std::string& extra = "");

// Node id of the node whose source is the op/call named `name` (first match), or UINT32_MAX.
uint32_t FindNode(const Trace& trace, const Graph& g, const std::string& name);

}  // namespace emo::test
