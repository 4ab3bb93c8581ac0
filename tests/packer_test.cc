// packer_test.cc — packing on hand-made traces whose packs are worked out by hand (times in µs),
// and on real traces: every kernel in exactly one pack, packs within Δmax unless one kernel is
// longer, and repeated iterations collapsing into few unique packs.
#include "pack/packer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_metric_source.h"
#include "model/pack_profile.h"
#include "test_util.h"
#include "trace/load.h"

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

// The kernels' names, pack by pack.
std::vector<std::vector<std::string>> Names(const Trace& t, const Graph& g, const Packing& p) {
  std::vector<std::vector<std::string>> out(p.packs());
  for (size_t k = 0; k < p.packs(); ++k)
    for (uint32_t i = p.member_begin[k]; i < p.member_begin[k + 1]; ++i)
      out[k].push_back(t.names.Get(g.name[p.members[i]]));
  return out;
}

// Kernels of `ms` µs each on stream 7, all launched 1 µs apart long before the GPU gets to them:
// each kernel's critical predecessor is the one before it on the stream.
Trace QueuedKernels(const std::vector<const char*>& names, double ms) {
  std::vector<std::string> ev;
  for (size_t i = 0; i < names.size(); ++i) {
    const int corr = static_cast<int>(i) + 1;
    ev.push_back(Call("cudaLaunchKernel", static_cast<double>(i) * 2, 1, corr));
    ev.push_back(Kernel(names[i], 7, 10 + static_cast<double>(i) * ms * 1000, ms * 1000, corr));
  }
  Trace t;
  AddKinetoRank(TraceJson(ev), &t);
  return t;
}

TEST(Packer, BackToBackKernelsFillPacksUpToDeltaMax) {
  // Seven 1 ms kernels: the first five span exactly 5 ms (allowed), the sixth would make 6 ms.
  Trace t = QueuedKernels({"A", "B", "C", "D", "E", "F", "G"}, 1);
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names);
  EXPECT_EQ(Names(t, g, p), (std::vector<std::vector<std::string>>{{"A", "B", "C", "D", "E"}, {"F", "G"}}));
  EXPECT_DOUBLE_EQ(p.end_ns[0] - p.start_ns[0], 5e6);
  EXPECT_DOUBLE_EQ(p.busy_ns[1], 2e6);
  EXPECT_EQ(p.stream[0], 7);
  for (uint32_t v = 0; v < g.nodes(); ++v) EXPECT_EQ(p.pack_of[v] != kNoPack, g.kind[v] == NodeKind::kKernel) << v;
}

TEST(Packer, RepeatedSequencesShareOneUniquePack) {
  // Δmax 3 ms: packs ABC, ABC, A; the second is the first's repeat.
  Trace t = QueuedKernels({"A", "B", "C", "A", "B", "C", "A"}, 1);
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names, PackOptions{3e6});
  ASSERT_EQ(p.packs(), 3u);
  EXPECT_EQ(p.unique, (std::vector<uint32_t>{0, 0, 2}));
  EXPECT_EQ(p.hash[0], p.hash[1]);
  EXPECT_NE(p.hash[0], p.hash[2]);
  EXPECT_EQ(p.unique_packs(), 2u);
}

TEST(Packer, LaunchBoundKernelsStayAlone) {
  // 10 µs kernels launched every 100 µs: each waits for its launch, not for the stream.
  std::vector<std::string> ev;
  for (int i = 0; i < 4; ++i) {
    ev.push_back(Call("cudaLaunchKernel", i * 100, 5, i + 1));
    ev.push_back(Kernel("K", 7, i * 100 + 10, 10, i + 1));
  }
  Trace t;
  AddKinetoRank(TraceJson(ev), &t);
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names);
  EXPECT_EQ(p.packs(), 4u);
  EXPECT_EQ(p.unique_packs(), 1u);  // four repeats of one single-kernel pack
}

TEST(Packer, CrossStreamDependenciesEndAndStartPacks) {
  // Stream 7: K1 [20,1020] K2 [1020,2020]; stream 20 waits for K1 (event recorded after it):
  // K3 [1020,1520] K4 [1520,2020]. K1 has a critical successor on stream 20, so it must end its
  // pack (rule 2); K3's critical predecessor is K1, on another stream, so it starts one (rule 1);
  // K4 follows K3 on its stream and joins it.
  Trace t;
  AddKinetoRank(TraceJson({Call("cudaLaunchKernel", 0, 4, 1), Call("cudaEventRecord", 5, 1, 2),
                           Call("cudaLaunchKernel", 7, 4, 5), Call("cudaStreamWaitEvent", 12, 1, 3),
                           Call("cudaLaunchKernel", 14, 4, 4), Call("cudaLaunchKernel", 19, 4, 6),
                           Kernel("K1", 7, 20, 1000, 1), Kernel("K2", 7, 1020, 1000, 5), Kernel("K3", 20, 1020, 500, 4),
                           Kernel("K4", 20, 1520, 500, 6), SyncRec("Stream Wait Event", 3, 20, 7, 2)}),
                &t);
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names);
  EXPECT_EQ(Names(t, g, p), (std::vector<std::vector<std::string>>{{"K1"}, {"K2"}, {"K3", "K4"}}));
  EXPECT_EQ(p.stream[2], 20);
}

TEST(Packer, CopiesAndCommunicationSplitPacks) {
  Trace t;
  AddKinetoRank(
      TraceJson({Call("cudaLaunchKernel", 0, 1, 1), Call("cudaMemcpyAsync", 2, 1, 2), Call("cudaLaunchKernel", 4, 1, 3),
                 Call("cudaLaunchKernel", 6, 1, 4), Call("cudaLaunchKernel", 8, 1, 5), Kernel("A", 7, 10, 100, 1),
                 Op("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 7, 110, 50, 2), Kernel("B", 7, 160, 100, 3),
                 Kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 7, 260, 100, 4), Kernel("C", 7, 360, 100, 5)}),
      &t);
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names);
  EXPECT_EQ(Names(t, g, p), (std::vector<std::vector<std::string>>{{"A"}, {"B"}, {"C"}}));
  EXPECT_EQ(p.pack_of[FindNode(t, g, "ncclKernel_AllReduce_RING_LL_Sum_float")], kNoPack);
}

// Real traces: a partition of the kernels; Δmax holds except for single kernels longer than it;
// and on DLRM's eight ranks of one model the packs repeat across ranks.
// A trace of a window of a longer run (emo trace --iterations) names its kernels to the metric
// source counted from the run's first kernel: with 4 kernels launched before the window, the
// window's seven kernels (packs A-E and F-G) are ordinals 4..8 and 9..10.
TEST(Packer, WindowedTracesProfileByTheRunsLaunchOrdinals) {
  Trace t = QueuedKernels({"A", "B", "C", "D", "E", "F", "G"}, 1);
  t.ranks[0].windowed = true;
  t.ranks[0].kernels_before = 4;
  Graph g;
  Build(t, &g);
  const Packing p = PackKernels(g, t.names);
  FakeMetricSource source;
  for (int k = 0; k < 11; ++k) {
    PackMetrics m;
    m.kernels = 1;
    m.time_ns = 1000.0 * k;  // tells the ordinals apart
    source.kernels[0].push_back(m);
  }
  PackProfile pp;
  std::string err;
  ASSERT_TRUE(ProfilePacks(t, g, p, source, &pp, &err)) << err;
  ASSERT_EQ(pp.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(pp.metrics[0].time_ns, 1000.0 * (4 + 5 + 6 + 7 + 8));
  EXPECT_DOUBLE_EQ(pp.metrics[1].time_ns, 1000.0 * (9 + 10));
  EXPECT_EQ(pp.kernels_in_run, 7);
}

TEST(Packer, RealTraces) {
  const std::string dir = test::TracesDir();
  if (dir.empty()) GTEST_SKIP() << "EMO_TRACES is not set";
  for (const char* name : {"HolisticTraceAnalysis/critical_path/alexnet", "param/dlrm_kineto",
                           "HolisticTraceAnalysis/df_index_resolver"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> files;
    std::string err;
    Trace t;
    ASSERT_TRUE(ExpandTracePaths({dir + "/" + name}, &files, &err)) << err;
    ASSERT_TRUE(LoadTraces(files, &t, &err)) << err;
    Graph g;
    Build(t, &g);
    const Packing p = PackKernels(g, t.names);
    size_t kernels = 0;
    for (uint32_t v = 0; v < g.nodes(); ++v) kernels += g.kind[v] == NodeKind::kKernel;
    EXPECT_EQ(p.members.size(), kernels);
    for (size_t k = 0; k < p.packs(); ++k) {
      const uint32_t size = p.member_begin[k + 1] - p.member_begin[k];
      if (size > 1) {
        EXPECT_LE(p.end_ns[k] - p.start_ns[k], 5e6) << "pack " << k;
      }
      EXPECT_LE(p.busy_ns[k], p.end_ns[k] - p.start_ns[k] + 1e-6) << "pack " << k;
    }
    std::printf("%s: %zu kernels, %zu packs, %zu unique\n", name, kernels, p.packs(), p.unique_packs());
    EXPECT_LT(p.unique_packs(), p.packs());
  }
}

}  // namespace
}  // namespace emo
