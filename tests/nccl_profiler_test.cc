// nccl_profiler_test.cc — libemo_nccl_profiler.so driven as NCCL 2.28 drives it: loaded with
// dlopen, its ncclProfiler_v5 called with synthetic communicators and event descriptors; the
// file it writes is checked field by field.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "inject/nccl_profiler_v5.h"
#include "trace/nccl_records.h"

namespace emo {
namespace {

namespace fs = std::filesystem;
namespace v5 = nccl_v5;

// A fresh copy of the plugin (its own process-wide state), as NCCL would load it.
v5::Profiler* LoadPlugin(const fs::path& dir) {
  const fs::path copy = dir / "libemo_nccl_profiler_copy.so";
  fs::copy_file(EMO_NCCL_PROFILER, copy, fs::copy_options::overwrite_existing);
  void* lib = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded: NCCL never unloads it mid-run either
  EXPECT_NE(lib, nullptr) << dlerror();
  return lib ? static_cast<v5::Profiler*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
}

fs::path TempDir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

v5::EventDescr Descr(uint64_t type, void* parent) {
  v5::EventDescr d{};
  d.type = type;
  d.parentObj = parent;
  d.rank = 1;
  return d;
}

// One group: an all-reduce (sequence number 7) and two sends to rank 0, one kernel launch; plus a
// proxy event (not activated: no handle), a collective whose parent is not one of the plugin's
// handles (group 0), and calls with null handles.
// Event ids in start order: GroupApi 1, CollApi 2, Coll 3, KernelLaunch 4, P2pApi 5, P2p 6, P2p 7,
// stray Coll 8. Written at stop, in stop order: launch 4, coll 3, p2p 6, p2p 7, coll 8.
TEST(NcclProfiler, RecordsCollectivesSendsAndLaunches) {
  const fs::path dir = TempDir("emo-nccl-plugin");
  setenv("EMO_TRACE_DIR", dir.c_str(), 1);
  setenv("RANK", "5", 1);
  v5::Profiler* p = LoadPlugin(dir);
  ASSERT_NE(p, nullptr);
  EXPECT_STREQ(p->name, "emo");

  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, 0xabcdef0123456789ULL, &mask, "tp group", 1, 2, 1, nullptr), v5::kSuccess);
  EXPECT_EQ(mask, 0xF06);  // GroupApi, CollApi, P2pApi, KernelLaunch, Coll, P2p: no proxy or kernel-channel events

  void *group = nullptr, *coll_api = nullptr, *coll = nullptr, *launch = nullptr, *p2p_api = nullptr;
  void *send0 = nullptr, *send1 = nullptr, *proxy = &mask, *stray = nullptr;
  v5::EventDescr d = Descr(v5::kGroupApi, nullptr);
  d.groupApi.groupDepth = 1;
  p->startEvent(ctx, &group, &d);
  d = Descr(v5::kCollApi, group);
  d.collApi.func = "AllReduce";
  p->startEvent(ctx, &coll_api, &d);
  p->stopEvent(coll_api);  // the API call returns before its task starts
  d = Descr(v5::kColl, coll_api);
  d.coll.seqNumber = 7;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.root = 0;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  p->startEvent(ctx, &coll, &d);
  d = Descr(v5::kKernelLaunch, group);
  d.kernelLaunch.stream = reinterpret_cast<void*>(0x7f00beef);
  p->startEvent(ctx, &launch, &d);
  p->stopEvent(launch);
  d = Descr(v5::kP2pApi, group);
  p->startEvent(ctx, &p2p_api, &d);
  d = Descr(v5::kP2p, p2p_api);
  d.p2p.func = "Send";
  d.p2p.count = 100;
  d.p2p.datatype = "ncclBfloat16";
  d.p2p.peer = 0;
  p->startEvent(ctx, &send0, &d);
  p->startEvent(ctx, &send1, &d);
  d = Descr(v5::kProxyOp, coll);
  p->startEvent(ctx, &proxy, &d);
  EXPECT_EQ(proxy, nullptr);
  EXPECT_EQ(p->stopEvent(nullptr), v5::kSuccess);
  EXPECT_EQ(p->recordEventState(nullptr, 23, nullptr), v5::kSuccess);
  d = Descr(v5::kColl, &d);  // a parent the plugin never handed out
  d.coll.seqNumber = 8;
  d.coll.func = "AllReduce";
  p->startEvent(ctx, &stray, &d);
  p->stopEvent(coll);
  p->stopEvent(send0);
  p->stopEvent(send1);
  p->stopEvent(p2p_api);
  p->stopEvent(stray);
  p->stopEvent(group);
  ASSERT_EQ(p->finalize(ctx), v5::kSuccess);

  const fs::path file = dir / "emo-nccl-rank5.txt";
  const std::string text = ReadAll(file);
  EXPECT_TRUE(
      text.starts_with("# emo-nccl-profiler 1\ncomm abcdef0123456789 1 2 1 tp_group\n"
                       "launch 4 abcdef0123456789 1 1 " +
                       std::to_string(syscall(SYS_gettid)) + " "))
      << text;
  NcclRecords recs;
  std::string err;
  ASSERT_TRUE(ParseNcclRecords(file.string(), text, &recs, &err)) << err;
  ASSERT_EQ(recs.comms.size(), 1u);
  EXPECT_EQ(recs.comms[0].comm, 0xabcdef0123456789ULL);
  EXPECT_EQ(recs.comms[0].rank, 1);
  EXPECT_EQ(recs.comms[0].nranks, 2);
  EXPECT_EQ(recs.comms[0].name, "tp_group");
  ASSERT_EQ(recs.records.size(), 5u);
  const long tid = static_cast<long>(syscall(SYS_gettid));
  for (const NcclRecord& r : recs.records) {
    EXPECT_EQ(r.comm, 0xabcdef0123456789ULL);
    EXPECT_EQ(r.rank, 1);
    EXPECT_EQ(r.tid, tid);
    EXPECT_GT(r.start_ns, 0);
    EXPECT_GE(r.end_ns, r.start_ns);
  }
  const NcclRecord& l = recs.records[0];
  EXPECT_EQ(l.kind, NcclRecordKind::kLaunch);
  EXPECT_EQ(l.id, 4u);
  EXPECT_EQ(l.group, 1u);
  EXPECT_EQ(l.stream, 0x7f00beefu);
  EXPECT_FALSE(l.captured);
  const NcclRecord& c = recs.records[1];
  EXPECT_EQ(c.kind, NcclRecordKind::kColl);
  EXPECT_EQ(c.id, 3u);
  EXPECT_EQ(c.group, 1u);  // through its CollApi parent, stopped before it started
  EXPECT_EQ(c.seq, 7);
  EXPECT_EQ(c.func, "AllReduce");
  EXPECT_EQ(c.count, 1024);
  EXPECT_EQ(c.datatype, "ncclFloat32");
  EXPECT_EQ(c.peer, 0);  // the root
  EXPECT_NE(text.find(" 7 AllReduce 1024 ncclFloat32 0 RING LL 2\n"), std::string::npos);
  for (int k = 0; k < 2; ++k) {
    const NcclRecord& s = recs.records[2 + k];
    EXPECT_EQ(s.kind, NcclRecordKind::kP2p);
    EXPECT_EQ(s.id, 6u + k);
    EXPECT_EQ(s.group, 1u);
    EXPECT_EQ(s.seq, k);  // the k-th send to rank 0
    EXPECT_EQ(s.func, "Send");
    EXPECT_EQ(s.count, 100);
    EXPECT_EQ(s.datatype, "ncclBfloat16");
    EXPECT_EQ(s.peer, 0);
  }
  EXPECT_EQ(recs.records[4].id, 8u);
  EXPECT_EQ(recs.records[4].group, 0u);
  EXPECT_EQ(recs.records[4].seq, 8);
  unsetenv("RANK");
  fs::remove_all(dir);
}

// Inside `emo trace --warmup M --iterations N` the plugin records only what the injection library's
// EmoTraceRecording says belongs to the trace (here a stand-in whose answer the test sets), and
// counts the sends it leaves out, so that the recorded ones keep the numbers the peer's have.
TEST(NcclProfiler, RecordsOnlyWhatTheInjectionLibrarySaysBelongsToTheTrace) {
  const fs::path dir = TempDir("emo-nccl-plugin-gate");
  setenv("EMO_TRACE_DIR", dir.c_str(), 1);
  setenv("RANK", "3", 1);
  setenv("CUDA_INJECTION64_PATH", EMO_TRACE_GATE_STUB, 1);
  void* stub = dlopen(EMO_TRACE_GATE_STUB, RTLD_NOW | RTLD_GLOBAL);  // as CUDA has loaded it by then
  ASSERT_NE(stub, nullptr) << dlerror();
  int* answer = static_cast<int*>(dlsym(stub, "emo_trace_gate_answer"));
  ASSERT_NE(answer, nullptr);
  v5::Profiler* p = LoadPlugin(dir);
  ASSERT_NE(p, nullptr);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, 0x42, &mask, "pp", 1, 2, 0, nullptr), v5::kSuccess);
  auto coll = [&](uint64_t seq) {
    v5::EventDescr d = Descr(v5::kColl, nullptr);
    d.coll.seqNumber = seq;
    d.coll.func = "AllGather";
    void* h = nullptr;
    p->startEvent(ctx, &h, &d);
    return h;
  };
  auto send = [&]() {
    v5::EventDescr d = Descr(v5::kP2p, nullptr);
    d.p2p.func = "Send";
    d.p2p.peer = 1;
    void* h = nullptr;
    p->startEvent(ctx, &h, &d);
    return h;
  };
  *answer = 0;  // outside the window: nothing is recorded
  void* c1 = coll(1);
  void* s0 = send();
  EXPECT_EQ(c1, nullptr);
  EXPECT_EQ(s0, nullptr);
  *answer = 1;
  void* s1 = send();
  void* c2 = coll(2);
  ASSERT_NE(s1, nullptr);
  ASSERT_NE(c2, nullptr);
  p->stopEvent(s1);
  *answer = 0;  // an event recorded from its start is written at its stop
  p->stopEvent(c2);
  ASSERT_EQ(p->finalize(ctx), v5::kSuccess);
  NcclRecords recs;
  std::string err;
  ASSERT_TRUE(ReadNcclRecords((dir / "emo-nccl-rank3.txt").string(), &recs, &err)) << err;
  ASSERT_EQ(recs.comms.size(), 1u);
  ASSERT_EQ(recs.records.size(), 2u);
  EXPECT_EQ(recs.records[0].kind, NcclRecordKind::kP2p);
  EXPECT_EQ(recs.records[0].seq, 1);  // the second send to rank 1: the first was counted, not recorded
  EXPECT_EQ(recs.records[1].kind, NcclRecordKind::kColl);
  EXPECT_EQ(recs.records[1].seq, 2);
  unsetenv("CUDA_INJECTION64_PATH");
  unsetenv("RANK");
  fs::remove_all(dir);
}

// A file that cannot be written: one line on stderr naming it, and no recording afterwards.
TEST(NcclProfiler, WriteErrorStopsRecording) {
  const fs::path dir = TempDir("emo-nccl-plugin-err");
  setenv("EMO_TRACE_DIR", (dir / "missing").c_str(), 1);
  setenv("RANK", "2", 1);
  v5::Profiler* p = LoadPlugin(dir);
  ASSERT_NE(p, nullptr);
  void* ctx = nullptr;
  int mask = 0;
  p->init(&ctx, 1, &mask, "", 1, 1, 0, nullptr);
  testing::internal::CaptureStderr();
  p->finalize(ctx);  // flushes the comm line
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("emo nccl profiler: " + (dir / "missing" / "emo-nccl-rank2.txt").string() + ": cannot write"), 0u)
      << said;
  EXPECT_NE(said.find(": cannot write: No such file or directory; recording stops\n"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1);
  p->init(&ctx, 2, &mask, "", 1, 1, 0, nullptr);
  EXPECT_EQ(mask, 0);  // NCCL then sends no events
  v5::EventDescr d = Descr(v5::kGroupApi, nullptr);
  void* h = &mask;
  p->startEvent(ctx, &h, &d);
  EXPECT_EQ(h, nullptr);
  p->finalize(ctx);
  unsetenv("RANK");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace emo
