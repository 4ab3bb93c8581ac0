// test_util.cc — shared test helpers.
#include "test_util.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "trace/kineto_json.h"

namespace emo::test {

std::string TracesDir() {
  const char* d = std::getenv("EMO_TRACES");
  return d ? d : "";
}

std::string Call(const char* name, double ts, double dur, int corr, int tid) {
  return fmt::format(
      R"({{"ph":"X","cat":"cuda_runtime","name":"{}","pid":1,"tid":{},"ts":{},"dur":{},"args":{{"correlation":{}}}}})",
      name, tid, ts, dur, corr);
}
std::string Op(const char* cat, const char* name, int stream, double ts, double dur, int corr) {
  return fmt::format(
      R"({{"ph":"X","cat":"{}","name":"{}","pid":0,"tid":{},"ts":{},"dur":{},"args":{{"device":0,"stream":{},"correlation":{}}}}})",
      cat, name, stream, ts, dur, stream, corr);
}
std::string Kernel(const char* name, int stream, double ts, double dur, int corr) {
  return Op("kernel", name, stream, ts, dur, corr);
}
std::string SyncRec(const char* kind, int corr, int stream, int wait_on_stream, int record_corr) {
  return fmt::format(
      R"({{"ph":"X","cat":"cuda_sync","name":"{}","pid":0,"tid":{},"ts":0,"dur":0,"args":{{"cuda_sync_kind":"{}","stream":{},"wait_on_stream":{},"wait_on_cuda_event_record_corr_id":{},"correlation":{}}}}})",
      kind, stream, kind, stream, wait_on_stream, record_corr, corr);
}
std::string TraceJson(const std::vector<std::string>& events, const std::string& extra) {
  std::string s = "{" + extra + "\"traceEvents\": [";
  for (size_t i = 0; i < events.size(); ++i) s += (i ? "," : "") + events[i];
  return s + "]}";
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
