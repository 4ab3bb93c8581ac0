// test_util.cc — shared test helpers.
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "trace/kineto_json.h"

namespace emo::test {

std::string TracesDir() {
  const char* d = std::getenv("EMO_TRACES");
  return d ? d : "";
}

void AddKinetoRank(const std::string& json, Trace* trace, const std::string& name) {
  std::string err;
  ASSERT_TRUE(ParseKinetoJson(name, json.data(), json.size(), trace, &err)) << err;
}

void Build(const Trace& trace, Graph* g, BuildReport* report) {
  BuildReport local;
  std::string err;
  ASSERT_TRUE(BuildGraph(trace, g, report ? report : &local, &err)) << err;
}

uint32_t FindNode(const Trace& trace, const Graph& g, const std::string& name) {
  for (uint32_t v = 0; v < g.nodes(); ++v)
    if (g.name[v] != 0 && trace.names.Get(g.name[v]) == name) return v;
  return UINT32_MAX;
}

}  // namespace emo::test
