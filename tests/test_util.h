// test_util.h — helpers shared by the tests: real-trace paths and building graphs from inline
// Kineto JSON.
#pragma once

#include <string>

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

// Node id of the node whose source is the op/call named `name` (first match), or UINT32_MAX.
uint32_t FindNode(const Trace& trace, const Graph& g, const std::string& name);

}  // namespace emo::test
