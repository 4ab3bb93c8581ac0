// nsys_sqlite_test.cc — LoadNsysSqlite on the two real nvFuser exports (EMO_TRACES), on a small
// hand-made export with odd rows, and on inputs that must be rejected.
#include "trace/nsys_sqlite.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace emo {
namespace {

namespace fs = std::filesystem;

std::string TracePath(const char* rel) {
  const char* dir = std::getenv("EMO_TRACES");
  return dir == nullptr ? std::string() : std::string(dir) + "/" + rel;
}

#define LOAD_OR_SKIP(rel, trace)                          \
  std::string path = TracePath(rel);                      \
  if (path.empty()) GTEST_SKIP() << "EMO_TRACES not set"; \
  std::string err;                                        \
  ASSERT_TRUE(LoadNsysSqlite(path, &trace, &err)) << err;

std::map<GpuOpKind, int> OpCounts(const RankTrace& r) {
  std::map<GpuOpKind, int> n;
  for (const GpuOp& op : r.ops) ++n[op.kind];
  return n;
}

// Every GPU op was launched by an asynchronous API call of the same rank with its correlation id.
void ExpectOpsHaveLaunches(const Trace& t, const RankTrace& r) {
  std::map<int64_t, const CpuCall*> by_corr;
  for (const CpuCall& c : r.calls) by_corr[c.correlation] = &c;
  for (const GpuOp& op : r.ops) {
    auto it = by_corr.find(op.correlation);
    ASSERT_NE(it, by_corr.end()) << "no call for correlation " << op.correlation;
    EXPECT_EQ(it->second->kind, CallKind::kLaunch) << t.names.Get(it->second->name);
    EXPECT_LE(it->second->start_ns, op.start_ns);
  }
}

bool HasOpNamed(const Trace& t, const RankTrace& r, const std::string& name) {
  for (const GpuOp& op : r.ops)
    if (t.names.Get(op.name) == name) return true;
  return false;
}

// Figures from /work/shared/traces/README.md and sqlite3 queries on the file.
TEST(NsysSqlite, Fuser2025Export) {
  Trace trace;
  LOAD_OR_SKIP("Fuser/a04989202/report1.sqlite", trace);
  // pytest (pid 50556) does all GPU work; python3 (pid 50922) only made 2 API calls and is
  // not a rank.
  ASSERT_EQ(trace.ranks.size(), 1u);
  const RankTrace& r = trace.ranks[0];
  EXPECT_EQ(r.source, path);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.clock_id, 0);
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  EXPECT_EQ(r.calls.size(), 988u);  // of the file's 990
  EXPECT_EQ(r.threads.size(), 7u);
  for (const ThreadId& th : r.threads) EXPECT_EQ(th.pid, 50556);
  EXPECT_EQ(r.threads[0].tid, 50556);

  auto n = OpCounts(r);
  EXPECT_EQ(n[GpuOpKind::kKernel], 18);
  EXPECT_EQ(n[GpuOpKind::kMemcpy], 3);
  EXPECT_EQ(n[GpuOpKind::kMemset], 3);
  for (const GpuOp& op : r.ops) {
    EXPECT_EQ(op.stream, 7);
    EXPECT_EQ(op.device, 0);
    EXPECT_FALSE(op.is_comm);
    EXPECT_FALSE(trace.names.Get(op.name).empty());
    EXPECT_LT(op.start_ns, op.end_ns);
  }
  for (size_t i = 1; i < r.ops.size(); ++i) EXPECT_LE(r.ops[i - 1].start_ns, r.ops[i].start_ns);
  ExpectOpsHaveLaunches(trace, r);
  EXPECT_TRUE(HasOpNamed(trace, r, "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"));
  EXPECT_TRUE(HasOpNamed(trace, r,
                         "<unnamed>::nvfuser_pointwise_f0_c1_r0_g4(<unnamed>::Tensor<<unnamed>::__bfloat, (int)3, "
                         "(int)3>, <unnamed>::Tensor<float, (int)3, (int)3>)"));
  int htod = 0, dtod = 0;
  for (const GpuOp& op : r.ops) {
    if (op.kind == GpuOpKind::kMemcpy) {
      // Named like Kineto's copies, memory kinds from ENUM_CUDA_MEM_KIND (srcKind, dstKind).
      htod += trace.names.Get(op.name) == "Memcpy HtoD (Pageable -> Device)";
      dtod += trace.names.Get(op.name) == "Memcpy DtoD (Device -> Device)";
      if (op.correlation == 213) {
        EXPECT_EQ(op.bytes, 394002432);
      }
    } else if (op.kind == GpuOpKind::kMemset) {
      EXPECT_EQ(trace.names.Get(op.name), "Memset");
      EXPECT_EQ(op.bytes, 4);
    }
  }
  EXPECT_EQ(htod, 2);
  EXPECT_EQ(dtod, 1);

  std::map<std::string, int> call_names;
  for (const CpuCall& c : r.calls) ++call_names[trace.names.Get(c.name)];
  EXPECT_EQ(call_names["cudaLaunchKernel_v7000"], 9);
  EXPECT_EQ(call_names["cudaStreamSynchronize_v3020"], 2);
  EXPECT_EQ(call_names["cudaDeviceSynchronize_v3020"], 1);

  // 2 cudaStreamSynchronize + 1 cudaDeviceSynchronize. ENUM_CUPTI_SYNC_TYPE labels the two stream
  // syncs' syncType 2 "Stream wait sync"; the importer follows the API call instead.
  ASSERT_EQ(r.syncs.size(), 3u);
  std::map<int64_t, SyncRecord> syncs;
  for (const SyncRecord& s : r.syncs) syncs[s.correlation] = s;
  for (int64_t corr : {214, 1886}) {
    ASSERT_TRUE(syncs.count(corr));
    EXPECT_EQ(syncs[corr].kind, SyncKind::kStreamSync);
    EXPECT_EQ(syncs[corr].stream, 7);
  }
  ASSERT_TRUE(syncs.count(2213));
  EXPECT_EQ(syncs[2213].kind, SyncKind::kContextSync);
  EXPECT_EQ(syncs[2213].stream, -1);  // 0xFFFFFFFF in the file
  for (const SyncRecord& s : r.syncs) {
    EXPECT_EQ(s.event_id, -1);
    EXPECT_EQ(s.record_correlation, -1);  // eventSyncId is 0xFFFFFFFF and there is no CUDA_EVENT table
    EXPECT_EQ(s.wait_on_stream, -1);
  }
  EXPECT_TRUE(r.iterations.empty());  // no ProfilerStep ranges among the 13513 NVTX events
  EXPECT_EQ(r.events_read, 988 + 24 + 3);
}

TEST(NsysSqlite, Fuser2024Export) {
  Trace trace;
  LOAD_OR_SKIP("Fuser/64ee035dc/report1.sqlite", trace);
  ASSERT_EQ(trace.ranks.size(), 1u);
  const RankTrace& r = trace.ranks[0];
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  EXPECT_EQ(r.calls.size(), 968u);
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].pid, 30156);
  EXPECT_EQ(r.threads[0].tid, 30156);
  auto n = OpCounts(r);
  EXPECT_EQ(n[GpuOpKind::kKernel], 19);
  EXPECT_EQ(n[GpuOpKind::kMemcpy], 1);
  EXPECT_EQ(n[GpuOpKind::kMemset], 1);
  for (const GpuOp& op : r.ops) EXPECT_EQ(op.stream, 7);
  ExpectOpsHaveLaunches(trace, r);
  EXPECT_TRUE(HasOpNamed(trace, r, "Memcpy DtoH (Device -> Pinned)"));
  EXPECT_TRUE(HasOpNamed(trace, r, "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT"));
  ASSERT_EQ(r.syncs.size(), 1u);  // schema 3.16.1: no eventSyncId column
  EXPECT_EQ(r.syncs[0].kind, SyncKind::kStreamSync);
  EXPECT_EQ(r.syncs[0].correlation, 1694);
  EXPECT_EQ(r.syncs[0].stream, 7);
  EXPECT_TRUE(r.iterations.empty());
  EXPECT_EQ(r.events_read, 968 + 21 + 1);
}

// ---- hand-made databases ----

class TempDb {
 public:
  explicit TempDb(const std::string& name)
      : path_((fs::path(testing::TempDir()) / (std::to_string(getpid()) + "_" + name)).string()) {
    fs::remove(path_);
  }
  ~TempDb() { fs::remove(path_); }
  const std::string& path() const { return path_; }
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
    std::string err = msg ? msg : "";
    sqlite3_free(msg);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << err;
  }

 private:
  std::string path_;
};

// globalTid / globalPid as nsys serializes them.
std::string Gid(int64_t pid, int64_t tid = 0) { return std::to_string((int64_t{1} << 48) | (pid << 24) | tid); }

constexpr const char* kSchema = R"(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
    correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
)";

TEST(NsysSqlite, OddRowsProcessesAndEventLinks) {
  TempDb db("odd.sqlite");
  const std::string p1 = Gid(100), p2 = Gid(200);
  db.Exec(std::string(kSchema) + R"(
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
    correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),
    (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device');
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, streamId INTEGER,
    correlationId INTEGER, globalPid INTEGER, syncType INTEGER, eventId INTEGER, eventSyncId INTEGER);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER, name TEXT, label TEXT);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES
    (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'),
    (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'),
    (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'),
    (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'),
    (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync');
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER, streamId INTEGER, correlationId INTEGER,
    globalPid INTEGER, eventId INTEGER, eventSyncId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
    textId INTEGER);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
INSERT INTO TARGET_INFO_GPU VALUES (0, 'GPU zero'), (1, 'GPU one');
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaEventRecord'),
    (3, 'cudaStreamWaitEvent'), (4, 'cudaEventSynchronize'), (5, 'gemm_short'),
    (6, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096>)'), (7, 'ProfilerStep#4'),
    (8, 'cudaMemcpyAsync');
)" + "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES" +
          // pid 100, thread 101: launch, record (eventSyncId 77), wait; record twice more on event 9, sync.
          "(10, 20, " + Gid(100, 101) + ", 1, 1), (21, 22, " + Gid(100, 101) + ", 2, 2)," + "(23, 24, " +
          Gid(100, 101) + ", 3, 3), (25, 26, " + Gid(100, 101) + ", 4, 2)," + "(27, 28, " + Gid(100, 101) +
          ", 6, 2), (29, 40, " + Gid(100, 101) + ", 7, 4)," +
          // odd rows: NULL correlation, missing StringIds row, end before start, NULL globalTid
          "(50, 60, " + Gid(100, 102) + ", NULL, 999), (70, 65, " + Gid(100, 102) + ", 8, 1)," +
          "(80, 90, NULL, 9, 1)," +
          // pid 200: a copy
          "(5, 6, " + Gid(200, 200) + ", 1, 8);" + "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES" +
          "(30, 35, 1, 13, 1, " + p1 + ", 555, 5)," +           // demangled name row missing -> shortName
          "(36, 37, 1, 14, 8, " + p1 + ", 6, 6)," +             // NCCL
          "(38, 39, 1, NULL, NULL, " + p1 + ", NULL, NULL);" +  // no names at all
          "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (7, 8, 0, 7, 1, " + p2 + ", 4096, 1)," + "(9, 10, 0, 7, 2, " +
          p2 + ", NULL, 42);" + "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (1, 13, 2, " + p1 + ", 9, 77)," +
          "(1, 14, 5, " + p1 + ", 9, NULL), (1, 15, 6, " + p1 + ", 9, NULL);" +
          "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES" + "(23, 24, 16, 3, " + p1 +
          ", 2, 9, 77)," +                                      // wait: linked by eventSyncId to corr 2
          "(29, 40, 4294967295, 7, " + p1 + ", 1, 9, NULL)," +  // event sync: latest record of event 9 before corr 7
          "(1, 2, 7, 99, " + p1 + ", 0, 1, NULL)," +            // unknown type, no call: skipped
          "(1, 2, -5, NULL, " + p1 + ", 3, -1, -1);" +          // stream sync with odd values
          "INSERT INTO NVTX_EVENTS VALUES (0, 100, 59, 'ProfilerStep#3', " + Gid(100, 101) + ", NULL)," +
          "(100, 200, 59, NULL, " + Gid(100, 101) + ", 7)," + "(5, NULL, 34, 'ProfilerStep#5', " + Gid(100, 101) +
          ", NULL)," +  // a mark, not a range
          "(5, 9, 59, 'ProfilerStep#x', " + Gid(100, 101) + ", NULL)," + "(1, 2, 59, 'ProfilerStep#1', " +
          Gid(300, 300) + ", NULL);");  // pid 300 has no calls or ops

  Trace trace;
  std::string err;
  ASSERT_TRUE(LoadNsysSqlite(db.path(), &trace, &err)) << err;
  // pids 100 and 200 ran GPU work; pid 0 (the NULL globalTid call) made one API call only and
  // pid 300 has only NVTX: neither is a rank.
  ASSERT_EQ(trace.ranks.size(), 2u);
  const RankTrace& r = trace.ranks[0];
  const RankTrace& r2 = trace.ranks[1];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r2.rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.gpu_name, "GPU one");
  EXPECT_EQ(r2.gpu_name, "GPU zero");
  ASSERT_EQ(r.threads.size(), 2u);
  EXPECT_EQ(r.threads[0].pid, 100);
  EXPECT_EQ(r.threads[0].tid, 101);
  EXPECT_EQ(r.threads[1].tid, 102);
  ASSERT_EQ(r.calls.size(), 8u);
  const CpuCall& unnamed = r.calls[6];  // thread 102 sorted by start: (50,60) then (70,65)
  EXPECT_EQ(unnamed.correlation, -1);
  EXPECT_EQ(unnamed.name, 0u);
  EXPECT_EQ(unnamed.kind, CallKind::kOther);
  EXPECT_EQ(r.calls[7].start_ns, 70);
  EXPECT_EQ(r.calls[7].end_ns, 70);  // end before start is clamped
  EXPECT_EQ(r.calls[1].kind, CallKind::kEventRecord);
  EXPECT_EQ(r.calls[2].kind, CallKind::kStreamWaitEvent);

  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(trace.names.Get(r.ops[0].name), "gemm_short");
  EXPECT_FALSE(r.ops[0].is_comm);
  EXPECT_EQ(r.ops[0].stream, 13);
  EXPECT_EQ(r.ops[0].device, 1);
  EXPECT_TRUE(r.ops[1].is_comm);
  EXPECT_EQ(r.ops[2].name, 0u);
  EXPECT_EQ(r.ops[2].correlation, -1);
  EXPECT_EQ(r.ops[2].stream, 0);

  ASSERT_EQ(r2.ops.size(), 2u);
  EXPECT_EQ(trace.names.Get(r2.ops[0].name), "Memcpy HtoD");
  EXPECT_EQ(r2.ops[0].bytes, 4096);
  EXPECT_EQ(trace.names.Get(r2.ops[1].name), "Memcpy");  // copyKind 42 is not in the enum
  EXPECT_EQ(r2.ops[1].bytes, -1);

  ASSERT_EQ(r.syncs.size(), 3u);
  EXPECT_EQ(r.syncs[0].kind, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(r.syncs[0].correlation, 3);
  EXPECT_EQ(r.syncs[0].stream, 16);
  EXPECT_EQ(r.syncs[0].event_id, 9);
  EXPECT_EQ(r.syncs[0].record_correlation, 2);
  EXPECT_EQ(r.syncs[0].wait_on_stream, 13);
  EXPECT_EQ(r.syncs[1].kind, SyncKind::kEventSync);
  EXPECT_EQ(r.syncs[1].stream, -1);
  EXPECT_EQ(r.syncs[1].record_correlation, 6);
  EXPECT_EQ(r.syncs[1].wait_on_stream, 15);
  EXPECT_EQ(r.syncs[2].kind, SyncKind::kStreamSync);
  EXPECT_EQ(r.syncs[2].correlation, -1);
  EXPECT_EQ(r.syncs[2].stream, -1);
  EXPECT_EQ(r.syncs[2].event_id, -1);

  ASSERT_EQ(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations[0].step, 3);
  EXPECT_EQ(r.iterations[0].start_ns, 0);
  EXPECT_EQ(r.iterations[1].step, 4);  // text from StringIds via textId
  EXPECT_EQ(r.iterations[1].end_ns, 200);
}

// ---- rejected inputs: false, one line naming the file ----

void ExpectRejected(const std::string& path, const std::string& what) {
  Trace trace;
  std::string err;
  EXPECT_FALSE(LoadNsysSqlite(path, &trace, &err));
  EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
  EXPECT_NE(err.find(what), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_TRUE(trace.ranks.empty());
}

TEST(NsysSqlite, RejectsMissingFile) {
  ExpectRejected((fs::path(testing::TempDir()) / "no_such_dir" / "report.sqlite").string(), "cannot open");
}

TEST(NsysSqlite, RejectsTextFile) {
  TempDb f("not_sqlite.sqlite");
  {
    std::ofstream out(f.path());
    out << "this is a plain text file, long enough to fill a database header page......\n";
  }
  ExpectRejected(f.path(), "not an SQLite database");
}

TEST(NsysSqlite, RejectsDatabaseWithoutTables) {
  TempDb db("empty.sqlite");
  db.Exec("CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
  ExpectRejected(db.path(), "not an Nsight Systems export");
  ExpectRejected(db.path(), "CUPTI_ACTIVITY_KIND_KERNEL");
}

TEST(NsysSqlite, RejectsMissingKernelTable) {
  TempDb db("no_kernel.sqlite");
  db.Exec(R"(CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
             CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId);)");
  ExpectRejected(db.path(), "not an Nsight Systems export: table CUPTI_ACTIVITY_KIND_KERNEL missing");
}

TEST(NsysSqlite, RejectsMissingColumn) {
  TempDb db("no_stream.sqlite");
  db.Exec(R"(CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
             CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, correlationId, globalPid,
                                                      demangledName);)");
  ExpectRejected(db.path(), "column CUPTI_ACTIVITY_KIND_KERNEL.streamId missing");
}

}  // namespace
}  // namespace emo
