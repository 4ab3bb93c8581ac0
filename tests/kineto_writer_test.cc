// kineto_writer_test.cc — the Kineto JSON writer: exact round trips through EMO's importer (a
// hand-built trace and a real PyTorch trace), and the output's shape as plain JSON.
#include "trace/kineto_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"
#include "trace/kineto_json.h"

namespace emo {
namespace {

bool Parse(const std::string& json, Trace* t, std::string* err) {
  return ParseKinetoJson("written.json", json.data(), json.size(), t, err);
}

// Every field of every record of two ranks (of possibly different Traces, so names compare as
// strings) is equal; source and events_read are where they came from, not what they hold.
void ExpectSameRank(const Trace& ta, const RankTrace& a, const Trace& tb, const RankTrace& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.gpu_name, b.gpu_name);
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) EXPECT_EQ(a.threads[i], b.threads[i]) << "thread " << i;
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    const CpuCall &x = a.calls[i], &y = b.calls[i];
    SCOPED_TRACE("call " + std::to_string(i) + " " + ta.names.Get(x.name));
    EXPECT_EQ(x.start_ns, y.start_ns);
    EXPECT_EQ(x.end_ns, y.end_ns);
    EXPECT_EQ(x.correlation, y.correlation);
    EXPECT_EQ(x.thread, y.thread);
    EXPECT_EQ(ta.names.Get(x.name), tb.names.Get(y.name));
    EXPECT_EQ(x.kind, y.kind);
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const GpuOp &x = a.ops[i], &y = b.ops[i];
    SCOPED_TRACE("op " + std::to_string(i) + " " + ta.names.Get(x.name));
    EXPECT_EQ(x.start_ns, y.start_ns);
    EXPECT_EQ(x.end_ns, y.end_ns);
    EXPECT_EQ(x.correlation, y.correlation);
    EXPECT_EQ(x.stream, y.stream);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(ta.names.Get(x.name), tb.names.Get(y.name));
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.is_comm, y.is_comm);
    EXPECT_EQ(ta.names.Get(x.process_group), tb.names.Get(y.process_group));
    EXPECT_EQ(x.collective_seq, y.collective_seq);
    EXPECT_EQ(x.bytes, y.bytes);
  }
  ASSERT_EQ(a.syncs.size(), b.syncs.size());
  for (size_t i = 0; i < a.syncs.size(); ++i) {
    const SyncRecord &x = a.syncs[i], &y = b.syncs[i];
    SCOPED_TRACE("sync " + std::to_string(i));
    EXPECT_EQ(x.correlation, y.correlation);
    EXPECT_EQ(x.stream, y.stream);
    EXPECT_EQ(x.wait_on_stream, y.wait_on_stream);
    EXPECT_EQ(x.record_correlation, y.record_correlation);
    EXPECT_EQ(x.event_id, y.event_id);
    EXPECT_EQ(x.kind, y.kind);
  }
  ASSERT_EQ(a.iterations.size(), b.iterations.size());
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    EXPECT_EQ(a.iterations[i].start_ns, b.iterations[i].start_ns);
    EXPECT_EQ(a.iterations[i].end_ns, b.iterations[i].end_ns);
    EXPECT_EQ(a.iterations[i].step, b.iterations[i].step);
  }
  ASSERT_EQ(a.counters.size(), b.counters.size());
  for (size_t i = 0; i < a.counters.size(); ++i) {
    SCOPED_TRACE("counter " + a.counters[i].name);
    EXPECT_EQ(a.counters[i].device, b.counters[i].device);
    EXPECT_EQ(a.counters[i].name, b.counters[i].name);
    EXPECT_EQ(a.counters[i].unit, b.counters[i].unit);
    EXPECT_EQ(a.counters[i].t_ns, b.counters[i].t_ns);
    EXPECT_EQ(a.counters[i].value, b.counters[i].value);  // exactly: the shortest exact decimal
  }
}

const char kEscapedKernel[] = "void f<\"a\\b\">(int)\tx";  // quote, backslash, tab

// A small trace using every record kind and field: 2 threads, 3 streams, nanosecond times on
// a 2024 epoch.
Trace HandTrace() {
  Trace t;
  RankTrace r;
  r.source = "hand";
  r.rank = 2;
  r.world_size = 4;
  r.gpu_name = "NVIDIA H100 80GB HBM3";
  const int64_t T = 1712195495520883123;  // ns
  uint32_t main = r.ThreadIndex(4242, 4242), worker = r.ThreadIndex(4242, 4250);
  auto call = [&](uint32_t th, int64_t start, int64_t dur, int64_t corr, const std::string& name) {
    CpuCall c;
    c.start_ns = T + start;
    c.end_ns = T + start + dur;
    c.correlation = corr;
    c.thread = th;
    c.name = t.names.Intern(name);
    c.kind = ClassifyCall(name);
    r.calls.push_back(c);
  };
  auto op = [&](GpuOpKind kind, int64_t stream, int64_t start, int64_t dur, int64_t corr, const std::string& name,
                int64_t bytes = -1, const std::string& pg = "") {
    GpuOp o;
    o.start_ns = T + start;
    o.end_ns = T + start + dur;
    o.correlation = corr;
    o.stream = stream;
    o.device = 3;
    o.name = t.names.Intern(name);
    o.kind = kind;
    o.is_comm = kind == GpuOpKind::kKernel && name.rfind("nccl", 0) == 0;
    o.bytes = bytes;
    o.process_group = pg.empty() ? 0 : t.names.Intern(pg);
    r.ops.push_back(o);
  };
  call(main, 0, 1001, 1, "cudaLaunchKernel");
  call(main, 2003, 999, 2, "cudaMemcpyAsync");
  call(main, 4000, 7, 3, "cudaEventRecord");
  call(worker, 5, 3000, 4, "cudaStreamWaitEvent");
  call(worker, 3100, 2, 5, "cudaLaunchKernel");
  call(worker, 3200, 2, 6, "cudaMemsetAsync");
  call(main, 5000, 123456, 7, "cudaStreamSynchronize");
  call(main, 130000, 10, 8, "cudaEventSynchronize");
  call(main, 140000, 999999, 9, "cudaDeviceSynchronize");
  call(worker, 9000, 1, 10, "cudaLaunchKernel");
  call(worker, 9100, 1, -1, "cudaGetDevice\x01 \xc3\xa9\xe2\x82\xac");  // control char, é, €
  op(GpuOpKind::kKernel, 7, 1500, 20000, 1, kEscapedKernel);
  op(GpuOpKind::kMemcpy, 7, 21500, 300, 2, "Memcpy HtoD (Pageable -> Device)", 1 << 20);
  op(GpuOpKind::kKernel, 13, 3500, 40001, 5,
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 4096, "default_pg \"0\"");
  op(GpuOpKind::kMemset, 20, 3400, 1, 6, "Memset (Device)", 256);
  op(GpuOpKind::kKernel, 20, 9500, 1, 10, "ncclKernel_Broadcast_RING_LL", 64);  // no process group: bytes
  op(GpuOpKind::kKernel, 20, 9600, 2, -1, "orphan");
  op(GpuOpKind::kKernel, 13, 3500, 5, 5, "same start, same correlation");
  SyncRecord s;
  s.kind = SyncKind::kStreamWaitEvent, s.correlation = 4, s.stream = 13, s.wait_on_stream = 7;
  s.record_correlation = 3, s.event_id = 77;
  r.syncs.push_back(s);
  s = {};
  s.kind = SyncKind::kStreamSync, s.correlation = 7, s.stream = 7;
  r.syncs.push_back(s);
  s = {};
  s.kind = SyncKind::kEventSync, s.correlation = 8, s.stream = 20, s.wait_on_stream = 13, s.record_correlation = 3;
  s.event_id = 78;
  r.syncs.push_back(s);
  s = {};
  s.kind = SyncKind::kContextSync, s.correlation = 9;
  r.syncs.push_back(s);
  s = {};
  s.kind = SyncKind::kStreamSync, s.correlation = 999, s.stream = 20;  // no such call
  r.syncs.push_back(s);
  r.iterations.push_back({T - 100, T + 100000, 3});
  r.iterations.push_back({T + 100000, T + 1140000, 4});
  r.counters.push_back({3, "sm_clock", "MHz", {T, T + 20000001}, {1980, 1395}});
  r.counters.push_back({3, "power", "W", {T - 50, T + 100000, T + 200000}, {312.25, 0.1 + 0.2, 1e-300}});
  r.Finish();
  t.ranks.push_back(std::move(r));
  return t;
}

TEST(KinetoWriter, HandTraceRoundTripsExactly) {
  Trace t = HandTrace();
  std::string json, err;
  WriteKinetoJson(t, 0, &json);
  Trace back;
  ASSERT_TRUE(Parse(json, &back, &err)) << err << "\n" << json;
  ASSERT_EQ(back.ranks.size(), 1u);
  ExpectSameRank(t, t.ranks[0], back, back.ranks[0]);
  // Spot checks that the comparison is not vacuous.
  const RankTrace& b = back.ranks[0];
  EXPECT_EQ(b.calls.size(), 11u);
  EXPECT_EQ(b.ops.size(), 7u);
  EXPECT_EQ(b.syncs.size(), 5u);
  EXPECT_EQ(b.iterations.size(), 2u);
  EXPECT_EQ(b.counters.size(), 2u);
  EXPECT_EQ(b.iterations[0].start_ns, 1712195495520883023);
  EXPECT_EQ(b.calls[0].start_ns, 1712195495520883123);
  EXPECT_EQ(back.names.Get(b.ops[0].name), kEscapedKernel);
}

TEST(KinetoWriter, FileIsWrittenAtomicallyPlainAndGzip) {
  Trace t = HandTrace();
  std::string dir = testing::TempDir();
  for (std::string path : {dir + "/kw_rank.json", dir + "/kw_rank.json.gz"}) {
    std::string err;
    ASSERT_TRUE(WriteKinetoJson(t, 0, path, &err)) << err;
    if (std::FILE* f = std::fopen((path + ".tmp").c_str(), "rb")) {
      std::fclose(f);
      ADD_FAILURE() << "temporary file left behind";
    }
    Trace back;
    ASSERT_TRUE(LoadKinetoJson(path, &back, &err)) << err;
    ASSERT_EQ(back.ranks.size(), 1u);
    ExpectSameRank(t, t.ranks[0], back, back.ranks[0]);
    std::remove(path.c_str());
  }
  std::string err;
  const std::string bad = dir + "/no/such/dir/x.json";
  EXPECT_FALSE(WriteKinetoJson(t, 0, bad, &err));
  EXPECT_NE(err.find(bad), std::string::npos) << err;
  EXPECT_FALSE(WriteKinetoJson(t, 5, dir + "/x.json", &err));
  EXPECT_NE(err.find("x.json"), std::string::npos) << err;
}

TEST(KinetoWriter, OutputIsValidJsonWithKinetoKeys) {
  Trace t = HandTrace();
  // Invalid UTF-8 must not make the output invalid JSON.
  CpuCall bad = t.ranks[0].calls.back();
  bad.name = t.names.Intern("bad\xff\xc3(utf8)\xed\xa0\x80");
  t.ranks[0].calls.push_back(bad);
  std::string text;
  WriteKinetoJson(t, 0, &text);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  EXPECT_EQ(j["schemaVersion"], 1);
  EXPECT_EQ(j["distributedInfo"]["backend"], "nccl");
  EXPECT_EQ(j["distributedInfo"]["rank"], 2);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 4);
  EXPECT_EQ(j["deviceProperties"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["deviceProperties"][0]["id"], 3);
  EXPECT_EQ(j["traceName"], "hand");
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  EXPECT_EQ(j["baseTimeNanoseconds"].get<int64_t>(), 1712195495000000000);
  ASSERT_TRUE(j["traceEvents"].is_array());

  int flows_s = 0, flows_f = 0, syncs = 0, steps = 0, kernels = 0, clocks = 0, powers = 0;
  bool named_python = false, named_stream = false, escaped = false, replaced = false;
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e["ph"], name = e.value("name", "");
    if (ph == "M") {
      named_python |= name == "process_name" && e["args"]["name"] == "python";
      named_stream |= name == "thread_name" && e["args"]["name"] == "stream 7" && e["pid"] == 3;
      continue;
    }
    ASSERT_TRUE(e["ts"].is_number()) << e;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_LT(e["ts"].get<double>(), 2e6);  // small: relative to the base second
    if (ph == "s") {
      ++flows_s;
      EXPECT_EQ(e["cat"], "ac2g");
    }
    if (ph == "f") {
      ++flows_f;
      EXPECT_EQ(e["bp"], "e");
    }
    if (ph == "C") {  // Perfetto's counter tracks "sm_clock MHz" and "power W" of process "GPU 3"
      EXPECT_EQ(e["pid"], 3);
      clocks += name == "sm_clock" && e["args"].size() == 1 && e["args"]["MHz"].is_number();
      powers += name == "power" && e["args"].size() == 1 && e["args"]["W"].is_number();
    }
    if (ph != "X") continue;
    std::string cat = e["cat"];
    if (cat == "cuda_sync") {
      ++syncs;
      EXPECT_EQ(e["args"]["cuda_sync_kind"], name);
      EXPECT_EQ(e["pid"], 3);
      EXPECT_EQ(e["tid"], e["args"]["stream"]);
      if (e["args"]["correlation"] == 7) {  // timed as cudaStreamSynchronize
        EXPECT_EQ(name, "Stream Sync");
        EXPECT_NEAR(e["ts"].get<double>(), 520883.123 + 5.0, 1e-6);
        EXPECT_NEAR(e["dur"].get<double>(), 123.456, 1e-9);
      }
      if (e["args"]["correlation"] == 9) {
        EXPECT_EQ(e["tid"], -1);
      }
    }
    if (cat == "user_annotation") {
      ++steps;
      EXPECT_EQ(name.rfind("ProfilerStep#", 0), 0u);
    }
    if (cat == "kernel") {
      ++kernels;
      EXPECT_EQ(e["args"]["queued"], 0);
      escaped |= name == kEscapedKernel;
      if (name.rfind("ncclDevKernel", 0) == 0) {
        EXPECT_EQ(e["args"]["Process Group Name"], "default_pg \"0\"");
        EXPECT_EQ(e["args"]["In msg nelems"], 4096);
        EXPECT_EQ(e["args"]["dtype"], "Byte");
        EXPECT_FALSE(e["args"].contains("Collective name"));
      }
    }
    if (cat == "gpu_memcpy") {
      EXPECT_EQ(e["args"]["bytes"], 1 << 20);
    }
    if (cat == "gpu_memset") {
      EXPECT_EQ(e["args"]["bytes"], 256);
    }
    if (cat == "cuda_runtime") {
      replaced |= name == "bad\xef\xbf\xbd\xef\xbf\xbd(utf8)\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
      EXPECT_EQ(e["args"]["cbid"], 0);
    }
  }
  EXPECT_EQ(flows_s, 5);  // correlations 1, 2, 5 (two ops: one flow), 6 and 10 launched GPU work
  EXPECT_EQ(flows_f, flows_s);
  EXPECT_EQ(syncs, 5);
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(kernels, 5);
  EXPECT_EQ(clocks, 2);
  EXPECT_EQ(powers, 3);
  EXPECT_TRUE(named_python);
  EXPECT_TRUE(named_stream);
  EXPECT_TRUE(escaped);
  EXPECT_TRUE(replaced);
  // Control characters are written as \u00XX.
  EXPECT_NE(text.find("void f<\\\"a\\\\b\\\">(int)\\u0009x"), std::string::npos);
  EXPECT_NE(text.find("\\u0001"), std::string::npos);
}

TEST(KinetoWriter, EmptyRankIsValid) {
  Trace t;
  t.ranks.emplace_back();
  std::string text, err;
  WriteKinetoJson(t, 0, &text);
  EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  Trace back;
  ASSERT_TRUE(Parse(text, &back, &err)) << err;
  EXPECT_TRUE(back.ranks[0].calls.empty());
}

TEST(KinetoWriter, RealTraceRoundTripsExactly) {
  std::string dir = test::TracesDir();
  if (dir.empty()) GTEST_SKIP() << "EMO_TRACES not set";
  const std::string path =
      dir + "/HolisticTraceAnalysis/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz";
  Trace t;
  std::string err;
  ASSERT_TRUE(LoadKinetoJson(path, &t, &err)) << err;
  ASSERT_EQ(t.ranks.size(), 1u);
  const RankTrace& r = t.ranks[0];
  ASSERT_GT(r.calls.size(), 0u);
  ASSERT_GT(r.ops.size(), 0u);

  std::string text;
  WriteKinetoJson(t, 0, &text);

  Trace back;
  ASSERT_TRUE(Parse(text, &back, &err)) << err;
  ASSERT_EQ(back.ranks.size(), 1u);
  ExpectSameRank(t, r, back, back.ranks[0]);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

}  // namespace
}  // namespace emo
