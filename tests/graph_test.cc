// graph_test.cc — the graph builder on hand-made traces, one per edge kind, with replay times,
// critical paths and what-if answers computed by hand (all times in microseconds below).
#include "graph/builder.h"

#include <fmt/core.h>

#include <gtest/gtest.h>

#include "graph/analysis.h"
#include "graph/replay.h"
#include "test_util.h"

namespace emo {
namespace {

using test::AddKinetoRank;
using test::Build;
using test::Call;
using test::FindNode;
using test::Kernel;
using test::Op;
using test::SyncRec;
using test::TraceJson;

struct Replayed {
  std::vector<double> finish;
  std::vector<uint32_t> crit;
  double end = 0;
};
Replayed ReplayAll(const Graph& g) {
  Replayed r;
  r.finish.resize(g.nodes());
  r.crit.resize(g.nodes());
  r.end = Replay(g, g.duration, r.finish, r.crit);
  return r;
}
int64_t Count(const Graph& g, EdgeKind k) { return std::count(g.pred_kind.begin(), g.pred_kind.end(), k); }
// Finish time in µs relative to the earliest event.
double Us(const Replayed& r, uint32_t v) { return r.finish[v] / 1000; }

// Thread:  A [0,10] ─gap 10─► B [20,30]
// Stream 7:      K1 [15,115] ──► K2 [115,215]
// Launch latency (call end to op start, idle stream): K1: 5. K2 was queued behind K1: its gap
// (0) is the stream gap. Replay: K1 = 10 + 5 + 100 = 115; K2 = max(115, 30 + 5) + 100 = 215.
TEST(GraphBuilder, LaunchStreamAndThreadOrder) {
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 10, 1), Call("cudaLaunchKernel", 20, 10, 2),
                           Kernel("K1", 7, 15, 100, 1), Kernel("K2", 7, 115, 100, 2)}),
                &t);
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(g.nodes(), 5u);  // 2 calls, 1 gap, 2 kernels
  EXPECT_EQ(Count(g, EdgeKind::kThread), 2);
  EXPECT_EQ(Count(g, EdgeKind::kLaunch), 2);
  EXPECT_EQ(Count(g, EdgeKind::kStream), 1);
  EXPECT_DOUBLE_EQ(rep.ranks[0].launch_latency_ns, 5000);
  EXPECT_DOUBLE_EQ(rep.ranks[0].stream_gap_ns, 0);
  Replayed r = ReplayAll(g);
  uint32_t k1 = FindNode(t, g, "K1"), k2 = FindNode(t, g, "K2");
  EXPECT_DOUBLE_EQ(Us(r, k1), 115);
  EXPECT_DOUBLE_EQ(Us(r, k2), 215);
  std::vector<uint32_t> path = CriticalPath(r.finish, r.crit);
  ASSERT_EQ(path.size(), 3u);  // A -> K1 -> K2
  EXPECT_EQ(t.names.Get(g.name[path[0]]), "cudaLaunchKernel");
  EXPECT_EQ(path[1], k1);
  EXPECT_EQ(path[2], k2);
  // What-if: K1 at 50 µs lets K2 start at max(15 + 50, 35) = 65 and end at 165.
  WhatIf w(g, std::vector<double>(g.nodes(), 0.0));
  WhatIf::Change c{k1, 50000, 0};
  EXPECT_DOUBLE_EQ(w.Evaluate(std::span(&c, 1)).end, 165000);
}

// A cudaStreamSynchronize that blocked ends when the awaited kernel ends plus the return latency
// (5 µs = 120 - 115), whatever its own measured duration.
// Thread: A [0,10] gap S [12,120] gap C [130,135];  stream 7: K1 [15,115]  K2 [140,150]
// Launch latency 5. Replay: K1 115; S = 115 + 5 = 120; gap 10 -> 130; C 135; K2 = 135 + 5 + 10 = 150.
TEST(GraphBuilder, StreamSyncWaitsForAwaitedKernel) {
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 10, 1), Call("cudaStreamSynchronize", 12, 108, 2),
                           Call("cudaLaunchKernel", 130, 5, 3), Kernel("K1", 7, 15, 100, 1),
                           Kernel("K2", 7, 140, 10, 3), SyncRec("Stream Sync", 2, 7)}),
                &t);
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(Count(g, EdgeKind::kSync), 1);
  EXPECT_EQ(rep.ranks[0].waits_exact, 1);
  EXPECT_DOUBLE_EQ(rep.ranks[0].sync_return_ns, 5000);
  Replayed r = ReplayAll(g);
  uint32_t s = FindNode(t, g, "cudaStreamSynchronize");
  EXPECT_DOUBLE_EQ(g.duration[s], 0);
  EXPECT_DOUBLE_EQ(Us(r, s), 120);
  EXPECT_DOUBLE_EQ(Us(r, FindNode(t, g, "K2")), 150);
  // Slowing K1 by 50 µs delays the CPU and so K2 by 50 µs.
  WhatIf w(g, std::vector<double>(g.nodes(), 0.0));
  WhatIf::Change c{FindNode(t, g, "K1"), 150000, 0};
  EXPECT_DOUBLE_EQ(w.Evaluate(std::span(&c, 1)).end, 200000);
  // The same trace without the cuda_sync record: the awaited op is inferred.
  Trace t2;
  AddKinetoRank(
      TraceJson({Call("cudaLaunchKernel", 0, 10, 1), Call("cudaStreamSynchronize", 12, 108, 2),
                 Call("cudaLaunchKernel", 130, 5, 3), Kernel("K1", 7, 15, 100, 1), Kernel("K2", 7, 140, 10, 3)}),
      &t2);
  Graph g2;
  Build(t2, &g2, &rep);
  EXPECT_EQ(rep.ranks[0].waits_inferred, 1);
  EXPECT_DOUBLE_EQ(ReplayAll(g2).end, r.end);
}

// cudaEventRecord on stream 7 after K1, cudaStreamWaitEvent on stream 20 before K2:
// K2 (launched at 14 µs) must wait for K1 (ends 105).
// Thread: A [0,4] R [6,8] W [10,12] B [14,18];  stream 7: K1 [5,105];  stream 20: K2 [105,125]
TEST(GraphBuilder, EventRecordOrdersStreams) {
  std::vector<std::string> ev = {
      Call("cudaLaunchKernel", 0, 4, 1),  Call("cudaEventRecord", 6, 2, 2), Call("cudaStreamWaitEvent", 10, 2, 3),
      Call("cudaLaunchKernel", 14, 4, 4), Kernel("K1", 7, 5, 100, 1),       Kernel("K2", 20, 105, 20, 4)};
  for (bool with_record : {true, false}) {
    Trace t;
    std::vector<std::string> e = ev;
    if (with_record) e.push_back(SyncRec("Stream Wait Event", 3, 20, 7, 2));
    AddKinetoRank(TraceJson(e), &t);
    Graph g;
    BuildReport rep;
    Build(t, &g, &rep);
    EXPECT_EQ(Count(g, EdgeKind::kEventWait), 1) << with_record;
    EXPECT_EQ(with_record ? rep.ranks[0].waits_exact : rep.ranks[0].waits_inferred, 1);
    Replayed r = ReplayAll(g);
    uint32_t k1 = FindNode(t, g, "K1"), k2 = FindNode(t, g, "K2");
    EXPECT_DOUBLE_EQ(Us(r, k2), 125);
    EXPECT_EQ(r.crit[k2], k1);
    // K2's launch is not an idle-stream sample (it waited on an event): latency is K1's 1 µs.
    EXPECT_DOUBLE_EQ(rep.ranks[0].launch_latency_ns, 1000);
  }
}

// cudaDeviceSynchronize waits for the last op of every stream.
// Thread: A [0,2] B [3,5] D [6,300] X [310,312];  stream 7: K1 [10,110];  stream 20: K2 [8,258]
TEST(GraphBuilder, DeviceSyncWaitsForAllStreams) {
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 2, 1), Call("cudaLaunchKernel", 3, 2, 2),
                           Call("cudaDeviceSynchronize", 6, 294, 3), Call("cudaMalloc", 310, 2, 4),
                           Kernel("K1", 7, 10, 100, 1), Kernel("K2", 20, 8, 250, 2)}),
                &t);
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(Count(g, EdgeKind::kSync), 2);
  // Return latency 300 - 258 = 42 µs. Launch latency, the upper median of {8, 3}: 8.
  // K1 = 2 + 8 + 100 = 110, K2 = 5 + 8 + 250 = 263, D = 263 + 42 = 305, X = 305 + 10 + 2 = 317.
  Replayed r = ReplayAll(g);
  uint32_t d = FindNode(t, g, "cudaDeviceSynchronize");
  EXPECT_DOUBLE_EQ(Us(r, d), 305);
  EXPECT_EQ(r.crit[d], FindNode(t, g, "K2"));
  EXPECT_DOUBLE_EQ(r.end / 1000, 317);
}

// A synchronous cudaMemcpy: its CPU part ends when the copy is submitted; the thread goes on only
// after the copy ends plus the return latency.
// Thread: M [0,100] gap X [110,115];  stream 7: copy [20,90] then K [120,130]
TEST(GraphBuilder, BlockingCopyHoldsTheThread) {
  Trace t;
  AddKinetoRank(
      TraceJson({Call("cudaMemcpy", 0, 100, 1), Call("cudaLaunchKernel", 110, 5, 2),
                 Op("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 7, 20, 70, 1), Kernel("K", 7, 120, 10, 2)}),
      &t);
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(Count(g, EdgeKind::kBlockingCopy), 1);
  EXPECT_DOUBLE_EQ(rep.ranks[0].sync_return_ns, 10000);
  Replayed r = ReplayAll(g);
  EXPECT_DOUBLE_EQ(Us(r, FindNode(t, g, "cudaMemcpy")), 20);
  EXPECT_DOUBLE_EQ(Us(r, FindNode(t, g, "cudaLaunchKernel")), 115);
  EXPECT_DOUBLE_EQ(Us(r, FindNode(t, g, "K")), 130);
  // A slower copy holds the CPU and everything after it.
  WhatIf w(g, std::vector<double>(g.nodes(), 0.0));
  WhatIf::Change c{FindNode(t, g, "Memcpy DtoH (Device -> Pinned)"), 100000, 0};
  EXPECT_DOUBLE_EQ(w.Evaluate(std::span(&c, 1)).end, 160000);
}

// Two ranks, one all-reduce. Rank 1 launches 50 µs later; both kernels end at 105.
// Rank 0: L0 [0,2] -> N0 [5,105];  rank 1: L1 [50,52] -> N1 [55,105]; shared host clock.
// The transfer runs from the last arrival (55) to the end: 50 µs on both ranks.
TEST(GraphBuilder, CollectiveJoinsRanks) {
  Trace t;
  const char* nccl = "ncclKernel_AllReduce_RING_LL_Sum_float";
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 2, 1), Kernel(nccl, 9, 5, 100, 1)},
                          R"("distributedInfo": {"rank": 0, "world_size": 2},)"),
                &t, "r0.json");
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 50, 2, 1), Kernel(nccl, 9, 55, 50, 1)},
                          R"("distributedInfo": {"rank": 1, "world_size": 2},)"),
                &t, "r1.json");
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(Count(g, EdgeKind::kCollective), 2);
  EXPECT_EQ(rep.ranks[0].collectives_matched, 1);
  EXPECT_EQ(rep.ranks[1].collectives_matched, 1);
  Replayed r = ReplayAll(g);
  EXPECT_DOUBLE_EQ(r.end / 1000, 105);
  uint32_t n0 = UINT32_MAX, l1 = UINT32_MAX;
  for (uint32_t v = 0; v < g.nodes(); ++v) {
    if (g.kind[v] == NodeKind::kComm && g.rank[v] == 0) n0 = v;
    if (g.kind[v] == NodeKind::kCpuCall && g.rank[v] == 1) l1 = v;
  }
  EXPECT_DOUBLE_EQ(g.duration[n0], 50000);
  // Rank 1's CPU is on rank 0's critical path: 10 µs more there delays rank 0's kernel.
  WhatIf w(g, std::vector<double>(g.nodes(), 0.0));
  WhatIf::Change c{l1, 12000, 0};
  EXPECT_DOUBLE_EQ(w.Evaluate(std::span(&c, 1)).end, 115000);
  EXPECT_DOUBLE_EQ(w.finish()[n0], 115000);
}

// Two ranks of one communicator; rank 0's trace began after all-reduce #0, so its kernels are
// AllReduce #1 and AllGather #0 while rank 1 has AllReduce #0, #1 and AllGather #0 (NCCL numbers
// each collective function apart). Shared host clock, µs:
//   rank 0: AR#1 [100,150]  AG#0 [200,260]
//   rank 1: AR#0 [5,40]  AR#1 [110,150]  AG#0 [210,260]
// By number: AR#1 pairs (last arrival 110: 40 µs on both), AG#0 pairs (arrival 210: 50 on both),
// rank 1's AR#0 is unmatched. By order the k-th kernels would pair: rank 0's AR#1 with rank 1's
// AR#0 (arrival 100: 50 and 0 µs) and rank 0's AG#0 with rank 1's AR#1 (arrival 200: 60 and 0).
TEST(GraphBuilder, CollectivesJoinBySequenceNumber) {
  const char* ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  const char* ag = "ncclDevKernel_AllGather_RING_LL";
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 90, 2, 1), Call("cudaLaunchKernel", 190, 2, 2),
                           Kernel(ar, 9, 100, 50, 1), Kernel(ag, 9, 200, 60, 2)},
                          R"("distributedInfo": {"rank": 0, "world_size": 2},)"),
                &t, "r0.json");
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 2, 1), Call("cudaLaunchKernel", 100, 2, 2),
                           Call("cudaLaunchKernel", 200, 2, 3), Kernel(ar, 9, 5, 35, 1), Kernel(ar, 9, 110, 40, 2),
                           Kernel(ag, 9, 210, 50, 3)},
                          R"("distributedInfo": {"rank": 1, "world_size": 2},)"),
                &t, "r1.json");
  const uint32_t comm = t.names.Intern("nccl:00000000000000ab");
  const uint32_t all_reduce = t.names.Intern("AllReduce"), all_gather = t.names.Intern("AllGather");
  auto number = [&](int rank, size_t op, uint32_t what, int64_t seq) {
    GpuOp& o = t.ranks[rank].ops[op];
    o.process_group = comm, o.collective = what, o.collective_seq = seq;
  };
  number(0, 0, all_reduce, 1), number(0, 1, all_gather, 0);
  number(1, 0, all_reduce, 0), number(1, 1, all_reduce, 1), number(1, 2, all_gather, 0);
  // The duration (µs) the graph gives each rank's comm kernels, in start order.
  auto durations = [&](const Graph& g, int rank) {
    std::vector<double> out;
    for (uint32_t v = 0; v < g.nodes(); ++v)
      if (g.kind[v] == NodeKind::kComm && g.rank[v] == rank) out.push_back(g.duration[v] / 1000);
    return out;
  };
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(rep.groups_matched_by_seq, 1);
  EXPECT_EQ(rep.ranks[0].collectives_matched, 2);
  EXPECT_EQ(rep.ranks[1].collectives_matched, 2);
  EXPECT_EQ(rep.ranks[0].collectives_unmatched, 0);
  EXPECT_EQ(rep.ranks[1].collectives_unmatched, 1);
  EXPECT_EQ(Count(g, EdgeKind::kCollective), 4);
  EXPECT_EQ(durations(g, 0), (std::vector<double>{40, 50}));
  EXPECT_EQ(durations(g, 1), (std::vector<double>{35, 40, 50}));  // AR#0 keeps its measured 35
  for (const std::string& n : rep.notes) EXPECT_EQ(n.find("differ in name"), std::string::npos) << n;

  // Without a number on one kernel, the group falls back to order, and pairs the wrong kernels.
  t.ranks[1].ops[0].collective_seq = -1;
  Build(t, &g, &rep);
  EXPECT_EQ(rep.groups_matched_by_seq, 0);
  EXPECT_EQ(rep.ranks[0].collectives_matched, 2);
  EXPECT_EQ(rep.ranks[1].collectives_unmatched, 1);
  EXPECT_EQ(durations(g, 0), (std::vector<double>{50, 60}));
  EXPECT_EQ(durations(g, 1), (std::vector<double>{0, 0, 50}));  // AR#0, AR#1 ended before their arrivals
  bool named = false;
  for (const std::string& n : rep.notes) named |= n.starts_with("1 matched collective kernels differ in name");
  EXPECT_TRUE(named);
}

// Slack of compute kernels: latest minus earliest start in the replay; the report weighs kernels
// by their time. Launch latency 5 (every launch is to an idle stream but K4's, queued behind K3).
// Thread: L1 [0,10] L2 [20,30] L3 [40,50] L4 [60,70] L5 [80,90]
// Stream 7:  K1 [15,10015]                      end of the graph: 10015
// Stream 8:  K2 [35,9535]                       slack 10015 - 9535 = 480
// Stream 9:  K3 [55,4055] K4 [4055,7055]        K4: 10015 - 7055 = 2960; K3 must end by K4's
//                                               latest start 10015 - 3000: 7015 - 4055 = 2960
// Stream 10: K5 [95,1095]                       slack 10015 - 1095 = 8920
// K3 and K4 share their 2960 µs: slowing one uses it up for the other, so slack is not summed.
// Kernel time 10000 + 9500 + 4000 + 3000 + 1000 = 27500 µs = 27.5 ms. Off the critical path (all
// but K1): 17.5 ms; slack >= 1 ms (K3, K4, K5): 8 ms; slack >= 5 ms (K5): 1 ms.
// Cross-thread hand-off. Thread 1: A [0,10], idle 1990 (blocked), B [2000,2010]. Thread 2: C
// [20,30], D [40,1990]. Thread 3 polls with cudaEventQuery only (background), last at [1995,1998].
// Thread 1 resumes 10 after D ends, within 5 % of its gap (99.5): D -> B, a hand-off of delay 10,
// and the gap itself counts 0. The poller's later call is no candidate. Replay: B ends at
// 1990 + 10 + 10 = 2010; D 100 longer moves B by 100, as it could not without the edge.
// When D ends at 1500 instead, thread 1 resumes 500 after it (> 99.5): no hand-off, counted dropped.
TEST(GraphBuilder, BlockedThreadResumesAfterAnotherThreadsCall) {
  auto trace = [](double d_end) {
    return TraceJson({Call("cudaLaunchKernel", 0, 10, 1, 1), Call("cudaLaunchKernel", 2000, 10, 2, 1),
                      Call("cudaLaunchKernel", 20, 10, 3, 2), Call("cudaLaunchKernel", 40, d_end - 40, 4, 2),
                      Call("cudaEventQuery", 100, 5, 5, 3), Call("cudaEventQuery", 1995, 3, 6, 3),
                      Kernel("K1", 7, 15, 10, 1), Kernel("K3", 7, 35, 10, 3), Kernel("K4", 7, d_end + 5, 10, 4),
                      Kernel("K2", 7, 2015, 10, 2)});
  };
  Trace t;
  AddKinetoRank(trace(1990), &t);
  Graph g;
  BuildReport rep;
  Build(t, &g, &rep);
  EXPECT_EQ(rep.ranks[0].handoffs_inferred, 1);
  EXPECT_EQ(rep.ranks[0].handoffs_dropped, 0);
  ASSERT_EQ(rep.ranks[0].background.size(), 1u);
  EXPECT_EQ(Count(g, EdgeKind::kCrossThread), 1);
  // B's node is the call whose kernel is K2: the launch with correlation 2.
  uint32_t b = UINT32_MAX, d = UINT32_MAX;
  for (uint32_t v = 0; v < g.nodes(); ++v) {
    if (g.source[v] < 0 || !IsCpu(g.kind[v])) continue;
    const CpuCall& c = t.ranks[0].calls[static_cast<size_t>(g.source[v])];
    if (c.correlation == 2) b = v;
    if (c.correlation == 4) d = v;
  }
  ASSERT_NE(b, UINT32_MAX);
  ASSERT_NE(d, UINT32_MAX);
  Replayed r = ReplayAll(g);
  EXPECT_NEAR(Us(r, b), 2010, 1e-6);
  std::vector<double> longer = g.duration;
  longer[d] += 100e3;
  std::vector<double> finish(g.nodes());
  std::vector<uint32_t> crit(g.nodes());
  Replay(g, longer, finish, crit);
  EXPECT_NEAR(finish[b] / 1000, 2110, 1e-6);

  Trace late;
  AddKinetoRank(trace(1500), &late);
  Graph g2;
  BuildReport rep2;
  Build(late, &g2, &rep2);
  EXPECT_EQ(rep2.ranks[0].handoffs_inferred, 0);
  EXPECT_EQ(rep2.ranks[0].handoffs_dropped, 1);
  EXPECT_EQ(Count(g2, EdgeKind::kCrossThread), 0);
}

TEST(GraphAnalysis, SlackSharesOfKernelTime) {
  Trace t;
  AddKinetoRank(
      TraceJson({Call("cudaLaunchKernel", 0, 10, 1), Call("cudaLaunchKernel", 20, 10, 2),
                 Call("cudaLaunchKernel", 40, 10, 3), Call("cudaLaunchKernel", 60, 10, 4),
                 Call("cudaLaunchKernel", 80, 10, 5), Kernel("K1", 7, 15, 10000, 1), Kernel("K2", 8, 35, 9500, 2),
                 Kernel("K3", 9, 55, 4000, 3), Kernel("K4", 9, 4055, 3000, 4), Kernel("K5", 10, 95, 1000, 5)}),
      &t);
  Graph g;
  Build(t, &g);
  const ReplayResult r = ReplayMeasured(g);
  EXPECT_DOUBLE_EQ(r.end, 10015000);  // ns from the first event
  auto slack_us = [&](const char* k) {
    const uint32_t v = FindNode(t, g, k);
    return (r.latest[v] - r.finish[v]) / 1000;
  };
  EXPECT_DOUBLE_EQ(slack_us("K1"), 0);
  EXPECT_DOUBLE_EQ(slack_us("K2"), 480);
  EXPECT_DOUBLE_EQ(slack_us("K3"), 2960);
  EXPECT_DOUBLE_EQ(slack_us("K4"), 2960);
  EXPECT_DOUBLE_EQ(slack_us("K5"), 8920);

  const Analysis a = Analyze(t, g, r);
  const SlackStats& s = a.total.slack;
  EXPECT_DOUBLE_EQ(s.kernel_ms, 27.5);
  EXPECT_DOUBLE_EQ(s.Share(s.off_critical_ms), 17.5 / 27.5);  // 0.636
  EXPECT_DOUBLE_EQ(s.Share(s.slack_ge_1ms_ms), 8 / 27.5);     // 0.291
  EXPECT_DOUBLE_EQ(s.Share(s.slack_ge_5ms_ms), 1 / 27.5);     // 0.036
  EXPECT_DOUBLE_EQ(a.ranks[0].slack.kernel_ms, 27.5);
}

// Two stream waits whose sync records point at each other's later work form a cycle, which the
// builder reports by naming its nodes.
TEST(GraphBuilder, CycleIsAnError) {
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaStreamWaitEvent", 0, 1, 3), Call("cudaLaunchKernel", 2, 1, 4),
                           Call("cudaStreamWaitEvent", 4, 1, 5), Call("cudaLaunchKernel", 6, 1, 6),
                           Kernel("Ka", 20, 10, 5, 4), Kernel("Kb", 7, 20, 5, 6),
                           SyncRec("Stream Wait Event", 3, 20, 7, 10), SyncRec("Stream Wait Event", 5, 7, 20, 5)}),
                &t);
  Graph g;
  BuildReport rep;
  std::string err;
  EXPECT_FALSE(BuildGraph(t, &g, &rep, &err));
  EXPECT_NE(err.find("dependency cycle"), std::string::npos) << err;
  EXPECT_NE(err.find("'Ka'"), std::string::npos) << err;
  EXPECT_NE(err.find("'Kb'"), std::string::npos) << err;
}

TEST(GraphBuilder, DuplicateCorrelationIsAnError) {
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 1, 1), Call("cudaLaunchKernel", 2, 1, 1)}), &t, "dup.json");
  Graph g;
  BuildReport rep;
  std::string err;
  EXPECT_FALSE(BuildGraph(t, &g, &rep, &err));
  EXPECT_NE(err.find("dup.json: duplicate correlation id 1"), std::string::npos) << err;
}

}  // namespace
}  // namespace emo
