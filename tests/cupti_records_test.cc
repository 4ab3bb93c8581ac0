// cupti_records_test.cc — CUPTI activity records (the installed headers' structs, filled in memory:
// no GPU needed) -> Trace -> EMO's Kineto writer -> EMO's importer -> execution graph: the calls,
// ops, syncs and iteration survive, and the graph has the launch, stream, event-wait and sync edges.
#include "trace/cupti_records.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "test_util.h"
#include "trace/kineto_json.h"
#include "trace/kineto_writer.h"

namespace emo {
namespace {

constexpr uint64_t kBase = 1'700'000'000'123'456'789ULL;  // CUPTI timestamps are ns since the epoch
constexpr uint32_t kPid = 4242, kTid = 4243;

const CUpti_Activity* AsRecord(const void* r) { return reinterpret_cast<const CUpti_Activity*>(r); }

void AddApi(CuptiRecordConverter* c, CUpti_CallbackId cbid, uint64_t start, uint64_t end, uint32_t corr) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = kBase + start;
  a.end = kBase + end;
  a.processId = kPid;
  a.threadId = kTid;
  a.correlationId = corr;
  c->Add(AsRecord(&a));
}

void AddKernel(CuptiRecordConverter* c, const char* name, uint32_t stream, uint64_t start, uint64_t end,
               uint32_t corr) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.deviceId = 0;
  k.streamId = stream;
  k.start = kBase + start;
  k.end = kBase + end;
  k.correlationId = corr;
  c->Add(AsRecord(&k));
}

void AddMarker(CuptiRecordConverter* c, uint32_t id, CUpti_ActivityFlag flag, uint64_t t, const char* name) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.id = id;
  m.timestamp = kBase + t;
  m.name = name;
  m.domain = nullptr;
  c->Add(AsRecord(&m));
}

// One iteration of a two-stream program, as CUPTI would report it. Times in ns after kBase.
//   thread: ProfilerStep#3 range [0, 300]
//     cudaLaunchKernel      corr 1  -> producer(float*) on stream 7 [100, 200]
//     cudaMemcpyAsync       corr 2  -> HtoD copy on stream 7 [200, 220]
//     cudaEventRecord       corr 3  on stream 7 (event 5)
//     cudaStreamWaitEvent   corr 4  stream 9 waits for event 5
//     cudaLaunchKernel      corr 5  -> consumer on stream 9 [225, 260]
//     cudaMemsetAsync       corr 6  -> memset on stream 9 [262, 270]
//     cudaStreamSynchronize corr 7  on stream 9, returns at 275
void FillOneIteration(CuptiRecordConverter* c) {
  CUpti_ActivityDevice5 dev{};
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  dev.name = "NVIDIA H200";
  c->Add(AsRecord(&dev));
  AddMarker(c, 1, CUPTI_ACTIVITY_FLAG_MARKER_START, 0, "ProfilerStep#3");
  AddMarker(c, 2, CUPTI_ACTIVITY_FLAG_MARKER_START, 5, "forward");  // not an iteration
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 20, 1);
  AddKernel(c, "_Z8producerPf", 7, 100, 200, 1);
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 25, 30, 2);
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 4096;
  copy.start = kBase + 200;
  copy.end = kBase + 220;
  copy.streamId = 7;
  copy.correlationId = 2;
  c->Add(AsRecord(&copy));
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 35, 37, 3);
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, 40, 42, 4);
  CUpti_ActivitySynchronization2 wait{};
  wait.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  wait.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  wait.start = kBase + 40;
  wait.end = kBase + 42;
  wait.correlationId = 4;
  wait.streamId = 9;
  wait.cudaEventId = 5;
  wait.cudaEventSyncId = 77;
  c->Add(AsRecord(&wait));
  // The event record arrives after the wait (another buffer): the converter resolves at Finish.
  CUpti_ActivityCudaEvent2 event{};
  event.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
  event.correlationId = 3;
  event.streamId = 7;
  event.eventId = 5;
  event.cudaEventSyncId = 77;
  c->Add(AsRecord(&event));
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 45, 50, 5);
  AddKernel(c, "consumer", 9, 225, 260, 5);
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 52, 55, 6);
  CUpti_ActivityMemset4 memset{};
  memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  memset.bytes = 512;
  memset.start = kBase + 262;
  memset.end = kBase + 270;
  memset.streamId = 9;
  memset.correlationId = 6;
  memset.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c->Add(AsRecord(&memset));
  AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 60, 275, 7);
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = kBase + 60;
  sync.end = kBase + 275;
  sync.correlationId = 7;
  sync.streamId = 9;
  sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  c->Add(AsRecord(&sync));
  AddMarker(c, 2, CUPTI_ACTIVITY_FLAG_MARKER_END, 90, nullptr);
  AddMarker(c, 1, CUPTI_ACTIVITY_FLAG_MARKER_END, 300, nullptr);
  CUpti_ActivityOverhead3 overhead{};  // a kind EMO does not use
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  c->Add(AsRecord(&overhead));
}

size_t CountEdges(const Graph& g, EdgeKind k) { return std::count(g.pred_kind.begin(), g.pred_kind.end(), k); }

// Whether node `to` has an edge of kind k from node `from`.
bool HasEdge(const Graph& g, uint32_t from, uint32_t to, EdgeKind k) {
  for (uint32_t e = g.pred_begin[to]; e < g.pred_begin[to + 1]; ++e)
    if (g.pred[e] == from && g.pred_kind[e] == k) return true;
  return false;
}

TEST(CuptiRecords, ConvertsRecordsIntoATrace) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  FillOneIteration(&c);
  c.Finish();
  EXPECT_EQ(c.skipped(), 1);
  const RankTrace& r = t.ranks[0];
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0], (ThreadId{kPid, kTid}));
  ASSERT_EQ(r.calls.size(), 7u);
  EXPECT_EQ(t.names.Get(r.calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(r.calls[0].kind, CallKind::kLaunch);
  EXPECT_EQ(r.calls[6].kind, CallKind::kStreamSync);
  EXPECT_EQ(r.calls[0].start_ns, static_cast<int64_t>(kBase + 10));
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(t.names.Get(r.ops[0].name), "producer(float*)");  // demangled, as Kineto shows it
  EXPECT_EQ(r.ops[0].stream, 7);
  EXPECT_EQ(r.ops[0].correlation, 1);
  EXPECT_EQ(t.names.Get(r.ops[1].name), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(r.ops[1].bytes, 4096);
  EXPECT_EQ(r.ops[3].kind, GpuOpKind::kMemset);
  ASSERT_EQ(r.syncs.size(), 2u);
  const SyncRecord& wait = r.syncs[0];
  EXPECT_EQ(wait.kind, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(wait.stream, 9);
  EXPECT_EQ(wait.wait_on_stream, 7);
  EXPECT_EQ(wait.record_correlation, 3);
  EXPECT_EQ(r.syncs[1].kind, SyncKind::kStreamSync);
  EXPECT_EQ(r.syncs[1].event_id, -1);
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].step, 3);
  EXPECT_EQ(r.iterations[0].end_ns - r.iterations[0].start_ns, 300);
}

TEST(CuptiRecords, KinetoRoundTripBuildsTheGraph) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  FillOneIteration(&c);
  c.Finish();
  std::string json;
  WriteKinetoJson(t, 0, &json);

  Trace back;
  std::string err;
  ASSERT_TRUE(ParseKinetoJson("cupti.json", json.data(), json.size(), &back, &err)) << err;
  const RankTrace& r = back.ranks[0];
  EXPECT_EQ(r.calls.size(), 7u);
  EXPECT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.syncs.size(), 2u);
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].step, 3);
  EXPECT_EQ(r.iterations[0].start_ns, static_cast<int64_t>(kBase));
  EXPECT_EQ(r.iterations[0].end_ns, static_cast<int64_t>(kBase + 300));

  Graph g;
  BuildReport report;
  test::Build(back, &g, &report);
  EXPECT_EQ(CountEdges(g, EdgeKind::kLaunch), 4u);  // two kernels, the copy, the memset
  EXPECT_EQ(CountEdges(g, EdgeKind::kStream), 2u);  // producer -> copy on 7, consumer -> memset on 9
  EXPECT_EQ(CountEdges(g, EdgeKind::kEventWait), 1u);
  EXPECT_GE(CountEdges(g, EdgeKind::kSync), 1u);
  ASSERT_EQ(report.ranks.size(), 1u);
  EXPECT_EQ(report.ranks[0].waits_exact, 2);  // the stream wait and the stream sync, from sync records
  EXPECT_EQ(report.ranks[0].waits_inferred, 0);
  EXPECT_EQ(report.ranks[0].ops_without_launch, 0);

  const uint32_t producer = test::FindNode(back, g, "producer(float*)");
  const uint32_t copy = test::FindNode(back, g, "Memcpy HtoD (Pinned -> Device)");
  const uint32_t consumer = test::FindNode(back, g, "consumer");
  const uint32_t memset = test::FindNode(back, g, "Memset (Device)");
  const uint32_t launch = test::FindNode(back, g, "cudaLaunchKernel");
  const uint32_t sync = test::FindNode(back, g, "cudaStreamSynchronize");
  EXPECT_TRUE(HasEdge(g, launch, producer, EdgeKind::kLaunch));
  EXPECT_TRUE(HasEdge(g, producer, copy, EdgeKind::kStream));
  EXPECT_TRUE(HasEdge(g, copy, consumer, EdgeKind::kEventWait));  // the last op on 7 before the record
  EXPECT_TRUE(HasEdge(g, consumer, memset, EdgeKind::kStream));
  EXPECT_TRUE(HasEdge(g, memset, sync, EdgeKind::kSync));
}

TEST(CuptiRecords, EventWaitFallsBackToTheEventId) {
  // Without cudaEventSyncId (0), the wait takes the last record of its event before it.
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  for (uint32_t corr : {3u, 8u, 20u}) {
    CUpti_ActivityCudaEvent2 e{};
    e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    e.correlationId = corr;
    e.streamId = corr + 100;
    e.eventId = 5;
    c.Add(AsRecord(&e));
  }
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  s.correlationId = 10;
  s.cudaEventId = 5;
  c.Add(AsRecord(&s));
  c.Finish();
  ASSERT_EQ(t.ranks[0].syncs.size(), 1u);
  EXPECT_EQ(t.ranks[0].syncs[0].kind, SyncKind::kEventSync);
  EXPECT_EQ(t.ranks[0].syncs[0].record_correlation, 8);
  EXPECT_EQ(t.ranks[0].syncs[0].wait_on_stream, 108);
}

TEST(CuptiRecords, NamesCallsItDoesNotKnowByCallbackId) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0, [](CUpti_CallbackDomain, CUpti_CallbackId cbid) {
    return cbid == 1 ? std::string("cudaDriverGetVersion") : std::string();
  });
  AddApi(&c, 1, 0, 1, 1);
  AddApi(&c, 999999, 2, 3, 2);
  AddApi(&c, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 4, 5, 3);
  CUpti_ActivityAPI d{};
  d.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  d.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  d.correlationId = 4;
  c.Add(AsRecord(&d));
  AddMarker(&c, 7, CUPTI_ACTIVITY_FLAG_MARKER_START, 10, "emo.step");
  AddMarker(&c, 7, CUPTI_ACTIVITY_FLAG_MARKER_END, 20, nullptr);
  AddMarker(&c, 8, CUPTI_ACTIVITY_FLAG_MARKER_START, 20, "emo.step");
  AddMarker(&c, 8, CUPTI_ACTIVITY_FLAG_MARKER_END, 30, nullptr);
  c.Finish();
  std::vector<std::string> names;
  for (const CpuCall& call : t.ranks[0].calls) names.push_back(t.names.Get(call.name));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"cuLaunchKernel", "cudaDeviceSynchronize", "cudaDriverGetVersion",
                                             "cudaRuntimeApi#999999"}));
  ASSERT_EQ(t.ranks[0].iterations.size(), 2u);
  EXPECT_EQ(t.ranks[0].iterations[0].step, 0);
  EXPECT_EQ(t.ranks[0].iterations[1].step, 1);
}

// Five emo.step ranges of 1000 ns, [1000 i, 1000 i + 900]. In step i a launch at 1000 i + 10
// (correlation 10 i + 1) issues kernel k<i> on stream 7 at [1000 i + 500, 1000 i + 1200], past
// the step's end; in step 1 a second launch at 1020 (correlation 12) issues "late" at
// [2100, 2150]. Kernel records reach the converter a step after their launches, as CUPTI's
// per-context buffers complete after the API buffer. --warmup 2 --iterations 2 keeps [2000, 3900].
void FillFiveSteps(CuptiRecordConverter* c, Trace* t, std::vector<size_t>* calls_at_window_start) {
  static const char* const kNames[] = {"k0", "k1", "k2", "k3", "k4"};
  for (uint32_t i = 0; i < 5; ++i) {
    const uint64_t s = 1000 * i;
    AddMarker(c, 100 + i, CUPTI_ACTIVITY_FLAG_MARKER_START, s, "emo.step");
    if (i == 2) calls_at_window_start->push_back(t->ranks[0].calls.size());
    if (i > 0) AddKernel(c, kNames[i - 1], 7, s - 500, s + 200, 10 * (i - 1) + 1);
    if (i == 2) AddKernel(c, "late", 7, 2100, 2150, 12);
    AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s + 10, s + 15, 10 * i + 1);
    if (i == 1) AddApi(c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s + 20, s + 25, 12);
    AddMarker(c, 100 + i, CUPTI_ACTIVITY_FLAG_MARKER_END, s + 900, nullptr);
  }
  AddKernel(c, "k4", 7, 4500, 5200, 41);
}

// The NCCL plugin's gate for --warmup 3 --iterations 2 (iterations 3 and 4, the 4th and 5th step
// ranges): from the 4th step's start to the 6th's; always without a window.
TEST(CuptiRecords, NcclEventsAreKeptInsideTheWindowsSteps) {
  const bool expect[] = {false, false, false, false, true, true, false, false};
  for (int64_t steps = 0; steps < 8; ++steps) {
    SCOPED_TRACE(steps);
    EXPECT_EQ(NcclInTraceWindow(steps, 3, 2), expect[steps]);
    EXPECT_TRUE(NcclInTraceWindow(steps, 0, 0));
  }
  EXPECT_FALSE(NcclInTraceWindow(0, 0, 1));  // before the first step: outside the window
  EXPECT_TRUE(NcclInTraceWindow(1, 0, 1));
  EXPECT_FALSE(NcclInTraceWindow(2, 0, 1));
}

TEST(CuptiRecords, KeepsTheIterationWindowAndDropsTheRestAsItArrives) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  c.SetWindow(2, 2);
  std::vector<size_t> calls_at_window_start;
  FillFiveSteps(&c, &t, &calls_at_window_start);
  // Memory holds the window: the warm-up steps' calls were dropped when step 2 began.
  EXPECT_EQ(calls_at_window_start, std::vector<size_t>{0});
  c.Finish();
  EXPECT_EQ(c.window_note(), "");
  const RankTrace& r = t.ranks[0];
  ASSERT_EQ(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations[0].start_ns, static_cast<int64_t>(kBase + 2000));
  EXPECT_EQ(r.iterations[1].end_ns, static_cast<int64_t>(kBase + 3900));
  std::vector<int64_t> calls, ops;
  for (const CpuCall& call : r.calls) calls.push_back(call.correlation);
  for (const GpuOp& o : r.ops) ops.push_back(o.correlation);
  EXPECT_EQ(calls, (std::vector<int64_t>{21, 31}));
  EXPECT_EQ(ops, (std::vector<int64_t>{21, 31}));  // k3 ends after the window but was issued in it
  // k0 and k1 started before the window; "late" started in it but was issued in step 1.
  EXPECT_TRUE(r.windowed);
  EXPECT_EQ(r.kernels_before, 3);

  // The launch ordinals' origin survives the Kineto file.
  std::string json;
  WriteKinetoJson(t, 0, &json);
  Trace back;
  std::string err;
  ASSERT_TRUE(ParseKinetoJson("window.json", json.data(), json.size(), &back, &err)) << err;
  EXPECT_TRUE(back.ranks[0].windowed);
  EXPECT_EQ(back.ranks[0].kernels_before, 3);
}

TEST(CuptiRecords, AShortRunKeepsWhatFollowsTheWarmUp) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  c.SetWindow(3, 5);  // 8 steps asked, 5 run: steps 3 and 4 stay
  std::vector<size_t> unused;
  FillFiveSteps(&c, &t, &unused);
  c.Finish();
  EXPECT_EQ(c.window_note(), "the run had 5 steps, not 3 warm-up + 5: kept steps 3..4");
  ASSERT_EQ(t.ranks[0].iterations.size(), 2u);
  EXPECT_EQ(t.ranks[0].iterations[0].start_ns, static_cast<int64_t>(kBase + 3000));
  EXPECT_EQ(t.ranks[0].kernels_before, 4);  // k0, k1, late, k2

  Trace unmarked;
  unmarked.ranks.emplace_back();
  CuptiRecordConverter u(&unmarked, 0);
  u.SetWindow(1, 1);
  FillOneIteration(&u);  // its only range is ProfilerStep#3: one step, kept whole
  u.Finish();
  EXPECT_EQ(u.window_note(), "the run had 1 step, not 1 warm-up + 1: kept steps 0..0");
  EXPECT_EQ(unmarked.ranks[0].calls.size(), 7u);
}

TEST(CuptiRecords, DropsGpuWorkAForcedFlushDeliveredUnfinished) {
  Trace t;
  t.ranks.emplace_back();
  CuptiRecordConverter c(&t, 0);
  AddApi(&c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 20, 1);
  AddApi(&c, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 30, 40, 2);
  AddKernel(&c, "done", 7, 50, 90, 1);
  CUpti_ActivityKernel10 running{};  // still running at the flush: no end time yet
  running.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  running.name = "running";
  running.start = kBase + 95;
  running.correlationId = 2;
  c.Add(AsRecord(&running));
  c.Finish();
  ASSERT_EQ(t.ranks[0].ops.size(), 1u);
  EXPECT_EQ(t.names.Get(t.ranks[0].ops[0].name), "done");
  EXPECT_EQ(c.skipped(), 1);
}

TEST(CuptiRecords, StepRangeNames) {
  EXPECT_TRUE(IsStepRangeName("emo.step"));
  EXPECT_TRUE(IsStepRangeName("ProfilerStep#0"));
  EXPECT_TRUE(IsStepRangeName("ProfilerStep#12"));
  EXPECT_FALSE(IsStepRangeName("ProfilerStep#"));
  EXPECT_FALSE(IsStepRangeName("ProfilerStep#1x"));
  EXPECT_FALSE(IsStepRangeName("emo.step2"));
  EXPECT_FALSE(IsStepRangeName("forward"));
}

}  // namespace
}  // namespace emo
