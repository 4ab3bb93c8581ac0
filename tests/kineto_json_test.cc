// kineto_json_test.cc — the Kineto JSON importer on small inline traces and on bad input.
#include "trace/kineto_json.h"
#include "util/file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "test_util.h"

namespace emo {
namespace {

bool Parse(const std::string& json, Trace* t, std::string* err) {
  return ParseKinetoJson("t.json", json.data(), json.size(), t, err);
}

TEST(KinetoJson, ReadsEventsArgsAndMetadata) {
  const char* json = R"J({
    "schemaVersion": 1,
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
    "traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11,
       "ts": 100.5, "dur": 2.25, "args": {"correlation": 7, "cbid": 211}},
      {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 103, "cat": "ac2g", "name": "ac2g", "bp": "e"},
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 40,
       "ts": 103.0004, "dur": 10, "args": {"device": 0, "stream": 40, "correlation": 7,
       "Process Group Name": "0", "In msg nelems": 256, "dtype": "Float"}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
       "ts": 120, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 9, "bytes": 4096}},
      {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 118, "dur": 0,
       "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 40, "wait_on_cuda_event_record_corr_id": 8,
                "wait_on_cuda_event_id": 2, "stream": 7, "correlation": 9}},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 10, "tid": 11, "ts": 90, "dur": 50},
      {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "pid": 10, "tid": 11, "ts": 90, "dur": 50},
      {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 5},
      {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 200}
    ],
    "baseTimeNanoseconds": 1000000
  })J";
  Trace t;
  std::string err;
  ASSERT_TRUE(Parse(json, &t, &err)) << err;
  ASSERT_EQ(t.ranks.size(), 1u);
  const RankTrace& r = t.ranks[0];
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.gpu_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r.events_read, 9);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].start_ns, 1000000 + 100500);  // base + 100.5 us
  EXPECT_EQ(r.calls[0].end_ns, 1000000 + 102750);
  EXPECT_EQ(r.calls[0].kind, CallKind::kLaunch);
  EXPECT_EQ(r.calls[0].correlation, 7);
  ASSERT_EQ(r.ops.size(), 2u);
  const GpuOp& nccl = r.ops[0];
  EXPECT_EQ(nccl.start_ns, 1000000 + 103000);  // 103.0004 us rounds to the nanosecond
  EXPECT_TRUE(nccl.is_comm);
  EXPECT_EQ(nccl.stream, 40);
  EXPECT_EQ(t.names.Get(nccl.process_group), "0");
  EXPECT_EQ(nccl.bytes, 1024);
  EXPECT_EQ(r.ops[1].kind, GpuOpKind::kMemcpy);
  EXPECT_EQ(r.ops[1].bytes, 4096);
  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].kind, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(r.syncs[0].wait_on_stream, 40);
  EXPECT_EQ(r.syncs[0].record_correlation, 8);
  EXPECT_EQ(r.syncs[0].stream, 7);
  ASSERT_EQ(r.iterations.size(), 1u);  // written twice by PyTorch, kept once
  EXPECT_EQ(r.iterations[0].step, 4);
  EXPECT_EQ(r.iterations[0].end_ns - r.iterations[0].start_ns, 50000);
}

// The older PyTorch profiler dialect (categories Runtime, Kernel, Memcpy; flows async_gpu) reads
// like today's, and a graph built from it links the launch to its kernel.
TEST(KinetoJson, ReadsOlderProfilerDialect) {
  const char* json = R"J({"traceEvents": [
      {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 6, "ts": 10, "dur": 4,
       "args": {"correlation": 3, "external id": 1}},
      {"ph": "s", "id": 3, "pid": 5, "tid": 6, "ts": 10, "cat": "async_gpu", "name": "async_gpu"},
      {"ph": "X", "cat": "Kernel", "name": "volta_sgemm", "pid": 0, "tid": "stream 7", "ts": 20, "dur": 5,
       "args": {"device": 0, "stream": 7, "correlation": 3}},
      {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": "stream 7",
       "ts": 30, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 4}}
  ]})J";
  Trace t;
  std::string err;
  ASSERT_TRUE(Parse(json, &t, &err)) << err;
  ASSERT_EQ(t.ranks.size(), 1u);
  const RankTrace& r = t.ranks[0];
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].kind, CallKind::kLaunch);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].kind, GpuOpKind::kKernel);
  EXPECT_EQ(r.ops[0].stream, 7);
  EXPECT_EQ(r.ops[0].correlation, 3);
  EXPECT_EQ(r.ops[1].kind, GpuOpKind::kMemcpy);
}

TEST(KinetoJson, NanosecondFractionsSurviveLargeEpochs) {
  Trace t;
  std::string err;
  ASSERT_TRUE(Parse(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
      "ts": 1712195495520883.123, "dur": 0.001, "args": {"stream": 7, "correlation": 1}}]})",
                    &t, &err))
      << err;
  EXPECT_EQ(t.ranks[0].ops[0].start_ns, 1712195495520883123LL);
  EXPECT_EQ(t.ranks[0].ops[0].end_ns, 1712195495520883124LL);
}

// Counter events ("ph": "C") become one track per (process, name, first numeric arg), in the
// order read; a counter whose "ph" follows its "args", or with no numeric arg, is left out without
// an error (Chrome-trace writers put "ph" first).
TEST(KinetoJson, CountersBecomeTracksPerProcessNameAndUnit) {
  Trace t;
  std::string err;
  ASSERT_TRUE(Parse(R"({"traceEvents": [
      {"ph": "C", "name": "sm_clock", "pid": 1, "ts": 10, "args": {"MHz": 1410}},
      {"ph": "C", "name": "power", "pid": 1, "ts": 12.5, "args": {"state": "on", "W": 250.5, "V": 1}},
      {"ph": "C", "name": "sm_clock", "pid": 0, "ts": 11, "args": {"MHz": 1200}},
      {"ph": "C", "name": "sm_clock", "pid": 1, "ts": 30, "args": {"MHz": 1005}},
      {"name": "sm_clock", "pid": 1, "ts": 40, "args": {"MHz": 1}, "ph": "C"},
      {"ph": "C", "name": "label", "pid": 1, "ts": 50, "args": {"text": "x"}},
      {"ph": "C", "name": "untimed", "pid": 1, "args": {"MHz": 1}}]})",
                    &t, &err))
      << err;
  const std::vector<CounterTrack>& c = t.ranks[0].counters;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].device, 1);
  EXPECT_EQ(c[0].name, "sm_clock");
  EXPECT_EQ(c[0].unit, "MHz");
  EXPECT_EQ(c[0].t_ns, (std::vector<int64_t>{10000, 30000}));
  EXPECT_EQ(c[0].value, (std::vector<double>{1410, 1005}));
  EXPECT_EQ(c[1].name, "power");
  EXPECT_EQ(c[1].unit, "W");
  EXPECT_EQ(c[1].t_ns, (std::vector<int64_t>{12500}));
  EXPECT_EQ(c[1].value, (std::vector<double>{250.5}));
  EXPECT_EQ(c[2].device, 0);
  EXPECT_EQ(c[2].value, (std::vector<double>{1200}));
}

struct BadCase {
  const char* what;
  const char* json;
  const char* expect;  // substring of the error
};

TEST(KinetoJson, BadInputFailsWithPosition) {
  const BadCase cases[] = {
      {"empty", "", "t.json: byte 0"},
      {"not an object", "[1, 2]", "top level is not a JSON object"},
      {"truncated", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1)", "t.json: byte"},
      {"events not an array", R"({"traceEvents": 5})", "traceEvents is not an array"},
      {"event not an object", R"({"traceEvents": [1]})", "event #0 is not an object"},
      {"ts not a number", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "abc"}]})",
       "event #0: ts is not a number"},
      {"no ts", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "dur": 1}]})", "event #0 has no ts"},
      {"no traceEvents", R"({"schemaVersion": 1})", "no traceEvents array"},
      {"garbage", "\x01\x02 not json", "t.json: byte"},
      {"trailing comma", R"({"traceEvents": [{"ph": "i", "ts": 1},]})", "trailing ','"},
      {"unterminated string", R"({"traceEvents": [{"ph": "X", "cat": "ker)", "inside a string"},
      {"after the object", R"({"traceEvents": []} x)", "content after the top-level object"},
      {"bad event JSON", R"({"traceEvents": [{"ph": "X" "cat": 1}]})", "t.json: byte"},
  };
  for (const BadCase& c : cases) {
    Trace t;
    std::string err;
    EXPECT_FALSE(Parse(c.json, &t, &err)) << c.what;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << c.what << ": one line";
    EXPECT_TRUE(t.ranks.empty()) << c.what;
  }
}

// Many events: the importer hands them to simdjson in chunks of about 1 MiB; events across chunk
// boundaries, gzip streaming and error offsets deep in the file must all come out right.
std::string ManyEvents(int n, int bad_at = -1) {
  std::string s = R"({"traceEvents": [)";
  for (int i = 0; i < n; ++i) {
    s += i ? ",\n" : "";
    s += R"({"ph": "X", "cat": "kernel", "name": "kernel_with_a_long_name_)" + std::to_string(i % 97) +
         R"(", "pid": 0, "tid": 7, "ts": )" + (i == bad_at ? std::string("\"oops\"") : std::to_string(1000 + 10 * i)) +
         R"(, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": )" + std::to_string(i) + "}}";
  }
  return s + R"(], "distributedInfo": {"rank": 2}})";
}

TEST(KinetoJson, ChunkedStreamingKeepsEveryEvent) {
  const int n = 30000;  // about 4 MiB
  std::string json = ManyEvents(n);
  ASSERT_GT(json.size(), 3u << 20);
  Trace t;
  std::string err;
  ASSERT_TRUE(Parse(json, &t, &err)) << err;
  const RankTrace& r = t.ranks[0];
  EXPECT_EQ(r.rank, 2);  // a top-level key after traceEvents
  ASSERT_EQ(r.ops.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(r.ops[i].correlation, i);
    ASSERT_EQ(r.ops[i].start_ns, (1000 + 10 * i) * 1000);
  }
  // The same through a gzip file, inflated piece by piece.
  std::string path = ::testing::TempDir() + "/many.json.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, json.data(), static_cast<unsigned>(json.size())), static_cast<int>(json.size()));
  gzclose(gz);
  Trace t2;
  ASSERT_TRUE(LoadKinetoJson(path, &t2, &err)) << err;
  EXPECT_EQ(t2.ranks[0].ops.size(), static_cast<size_t>(n));
  // A bad value in the third MiB is reported at its own byte offset.
  std::string bad = ManyEvents(n, 25000);
  size_t at = bad.find("\"oops\"");
  Trace t3;
  EXPECT_FALSE(Parse(bad, &t3, &err));
  EXPECT_NE(err.find("event #25000: ts is not a number"), std::string::npos) << err;
  EXPECT_NE(err.find("byte " + std::to_string(at)), std::string::npos) << err << " (expected byte " << at << ")";
}

TEST(KinetoJson, TruncatedGzipAndMissingFileFail) {
  Trace t;
  std::string err;
  EXPECT_FALSE(LoadKinetoJson("/nonexistent/trace.json", &t, &err));
  EXPECT_NE(err.find("/nonexistent/trace.json"), std::string::npos) << err;
  std::string dir = test::TracesDir();
  if (dir.empty()) GTEST_SKIP() << "EMO_TRACES not set";
  // The raw bytes of a real .gz trace, with the compressed stream cut in half.
  FILE* f =
      std::fopen((dir + "/HolisticTraceAnalysis/critical_path/cuda_event_sync/event_sync_trace.json.gz").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string raw(1 << 16, '\0');
  raw.resize(std::fread(raw.data(), 1, raw.size(), f));
  std::fclose(f);
  std::string path = ::testing::TempDir() + "/half.json.gz";
  f = std::fopen(path.c_str(), "wb");
  std::fwrite(raw.data(), 1, raw.size() / 2, f);
  std::fclose(f);
  EXPECT_FALSE(LoadKinetoJson(path, &t, &err));
  EXPECT_NE(err.find("truncated gzip"), std::string::npos) << err;
}

// The inflater (ISA-L's or zlib's) reads concatenated gzip members as one stream, and names a
// damaged one: the same small file twice, then with a byte of its deflate data flipped.
TEST(KinetoJson, GzipMembersAndDamage) {
  std::string dir = test::TracesDir();
  if (dir.empty()) GTEST_SKIP() << "EMO_TRACES not set";
  const std::string src = dir + "/HolisticTraceAnalysis/critical_path/cuda_event_sync/event_sync_trace.json.gz";
  std::string raw, plain, err;
  {
    FILE* f = std::fopen(src.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    raw.resize(1 << 20);
    raw.resize(std::fread(raw.data(), 1, raw.size(), f));
    std::fclose(f);
  }
  ASSERT_TRUE(ReadFileMaybeGz(src, &plain, &err)) << err;
  auto write = [](const std::string& path, const std::string& bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  const std::string twice = ::testing::TempDir() + "/twice.gz";
  write(twice, raw + raw);
  std::string both;
  ASSERT_TRUE(ReadFileMaybeGz(twice, &both, &err)) << err;
  EXPECT_EQ(both, plain + plain);
  std::string damaged = raw;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x5a);
  const std::string bad = ::testing::TempDir() + "/damaged.gz";
  write(bad, damaged);
  EXPECT_FALSE(ReadFileMaybeGz(bad, &both, &err));
  EXPECT_NE(err.find("damaged.gz: corrupt gzip data"), std::string::npos) << err;
}

}  // namespace
}  // namespace emo
