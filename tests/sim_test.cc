// sim_test.cc — the simulator as a whole on its workload kinds: every kind's trace, written as
// Kineto JSON and read back, replays through EMO's graph within 1 %; runs are deterministic per
// seed; and the physics behaves: energy per iteration is lowest at an intermediate clock for
// compute-bound work, and slowing a GPU that waits on others leaves the iteration time alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "apply/measurement.h"
#include "graph/analysis.h"
#include "graph/builder.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/replay_kernels.h"
#include "sim/replay_workload.h"
#include "sim/sim_gpu_control.h"
#include "sim/workload.h"
#include "trace/kineto_json.h"
#include "trace/kineto_writer.h"
#include "trace/load.h"

namespace emo::sim {
namespace {

// Small specs of every kind (two layers, short sequences) so that the tests run in moments.
nlohmann::json Spec(const std::string& kind) {
  nlohmann::json s;
  s["kind"] = kind;
  s["name"] = "small-" + kind;
  s["device"] = "a100";
  s["model"] = {{"layers", 4}, {"hidden", 1024}, {"heads", 16}, {"seq", 512}, {"batch", 2}, {"vocab", 32000}};
  if (kind == "tp") s["parallel"] = {{"tp", 2}};
  if (kind == "pp") s["parallel"] = {{"pp", 2}, {"microbatches", 4}};
  if (kind == "dp") s["parallel"] = {{"dp", 2}};
  if (kind == "offload")
    s["model"].update({{"experts", 8}, {"top_k", 2}, {"expert_ffn", 512}, {"heads", 16}, {"batch", 4}});
  return s;
}

Program Build(const nlohmann::json& spec) {
  Program p;
  std::string err;
  EXPECT_TRUE(BuildWorkload(spec, &p, &err)) << err;
  return p;
}

struct Measured {
  double iteration_ms = 0;
  double energy_j = 0;  // per iteration, all GPUs, from the telemetry counters
};

// Runs `iterations`, locking `clocks[g]` on GPU g (0: default), and measures the iterations
// after the first through the energy counters. `uncapped` raises the power limits to their
// maximum, so that the clocks set are the clocks run.
Measured Measure(const Program& p, int iterations, const std::vector<int>& clocks = {}, bool uncapped = false) {
  EngineOptions o;
  o.iterations = iterations;
  o.record_trace = false;
  Engine e(p, o);
  SimGpuControl gpus(&e);
  SimHost host(&e);
  for (int g = 0; uncapped && g < gpus.Count(); ++g) {
    std::string err;
    EXPECT_TRUE(gpus.SetPowerLimit(g, FindDevice(p.device)->power_limit_max_w, &err)) << err;
  }
  for (size_t g = 0; g < clocks.size(); ++g) {
    std::string err;
    if (clocks[g] > 0) {
      EXPECT_TRUE(gpus.SetLockedClock(static_cast<int>(g), clocks[g], &err)) << err;
    }
  }
  Meter meter(&gpus, 1);
  host.Add(&meter);
  std::string err;
  EXPECT_TRUE(e.Run(&err)) << err;
  Measurement m;
  EXPECT_TRUE(meter.Close(e.end_ns(), &m, &err)) << err;
  return {m.iteration_ms(), m.iteration_energy_j()};
}

class Kinds : public ::testing::TestWithParam<const char*> {};

TEST_P(Kinds, TraceRoundTripsAndReplaysWithinOnePercent) {
  Program p = Build(Spec(GetParam()));
  EngineOptions o;
  o.iterations = 3;
  Engine e(p, o);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  // Through Kineto JSON and back, as a user's `emo sim --trace` then `emo analyze` does.
  Trace t;
  for (size_t r = 0; r < e.trace().ranks.size(); ++r) {
    std::string json;
    WriteKinetoJson(e.trace(), r, &json);
    ASSERT_TRUE(ParseKinetoJson("rank" + std::to_string(r) + ".json", json.data(), json.size(), &t, &err)) << err;
  }
  Graph g;
  BuildReport rep;
  ASSERT_TRUE(BuildGraph(t, &g, &rep, &err)) << err;
  for (const RankBuildReport& r : rep.ranks) {
    EXPECT_EQ(r.waits_inferred, 0);  // the simulator writes cuda_sync records for every wait
    EXPECT_EQ(r.waits_unresolved, 0);
    EXPECT_EQ(r.collectives_unmatched, 0);
  }
  Analysis a = Analyze(t, g);
  EXPECT_LT(std::fabs(a.total.replay_error), 0.01);
  EXPECT_EQ(a.total.iterations, 3);
}

TEST_P(Kinds, SameSeedSameRun) {
  Program p = Build(Spec(GetParam()));
  auto run = [&](uint64_t seed) {
    EngineOptions o;
    o.iterations = 2;
    o.seed = seed;
    Engine e(p, o);
    std::string err;
    EXPECT_TRUE(e.Run(&err)) << err;
    std::string all;
    for (size_t r = 0; r < e.trace().ranks.size(); ++r) {
      std::string json;
      WriteKinetoJson(e.trace(), r, &json);
      all += json;
    }
    return all;
  };
  std::string a = run(3);
  EXPECT_EQ(a, run(3));
  EXPECT_NE(a, run(4));
}

INSTANTIATE_TEST_SUITE_P(Sim, Kinds, ::testing::Values("tp", "pp", "dp", "offload"));

// A compute-bound workload: energy per iteration falls from the maximum clock, reaches its
// lowest at an intermediate clock and rises again towards the minimum (static power dominates).
TEST(SimPhysics, EnergyLowestAtIntermediateClock) {
  nlohmann::json spec = Spec("tp");
  spec["model"]["hidden"] = 4096;
  spec["model"]["heads"] = 32;
  spec["model"]["seq"] = 2048;
  Program p = Build(spec);
  std::vector<int> clocks = {1410, 1200, 1005, 810, 600, 405, 210};
  std::vector<double> energy;
  for (int mhz : clocks) energy.push_back(Measure(p, 6, {mhz, mhz}, true).energy_j);
  size_t best = static_cast<size_t>(std::min_element(energy.begin(), energy.end()) - energy.begin());
  EXPECT_GT(best, 0u) << "lowest at the maximum clock";
  EXPECT_LT(best, clocks.size() - 1) << "lowest at the minimum clock";
  EXPECT_LT(energy[best], 0.9 * energy[0]);
}

// The trace carries each GPU's SM clock at its changes and its NVML power reading at each sensor
// update (Perfetto's counter tracks): a lock at 50 ms shows on GPU 0 only, after the DVFS latency.
TEST(SimPhysics, TraceRecordsTheClockAndPowerAsNvmlReportsThem) {
  const Program p = Build(Spec("tp"));
  EngineOptions o;
  o.iterations = 40;  // 0.24 s
  Engine e(p, o);
  e.At(50e6, [&](double) { e.SetLockedClock(0, 1005); });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  for (int gpu = 0; gpu < 2; ++gpu) {
    SCOPED_TRACE("GPU " + std::to_string(gpu));
    const std::vector<CounterTrack>& c = e.trace().ranks[static_cast<size_t>(gpu)].counters;
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].name + " " + c[0].unit, "sm_clock MHz");
    EXPECT_EQ(c[1].name + " " + c[1].unit, "power W");
    EXPECT_EQ(c[2].name + " " + c[2].unit, "energy J");
    EXPECT_EQ(c[0].device, gpu);
    ASSERT_FALSE(c[0].value.empty());
    EXPECT_EQ(c[0].value[0], 1410);
    const auto at_1005 = std::find(c[0].value.begin(), c[0].value.end(), 1005.0);
    if (gpu == 1) {
      EXPECT_EQ(at_1005, c[0].value.end());
    } else {
      ASSERT_NE(at_1005, c[0].value.end());
      const int64_t landed = c[0].t_ns[static_cast<size_t>(at_1005 - c[0].value.begin())];
      EXPECT_GE(landed, 55e6);
      EXPECT_LE(landed, 65e6 + 1);
      EXPECT_EQ(c[0].value.back(), 1005);
    }
    // A reading every 100 ms (the A100's sensor), each a positive power.
    const double span_ms = e.end_ns() / 1e6;
    EXPECT_NEAR(static_cast<double>(c[1].t_ns.size()), span_ms / 100, 1.5);
    for (double w : c[1].value) EXPECT_GT(w, 0);
    // The energy counter beside each power reading, rising to where NVML's counter stands, in J:
    // the mean power it gives lies between the readings' least and most (each reading is the mean
    // of the last second's samples, so they lag a lock, where the counter does not).
    ASSERT_EQ(c[2].t_ns, c[1].t_ns);
    ASSERT_GE(c[2].t_ns.size(), 2u);
    EXPECT_TRUE(std::is_sorted(c[2].value.begin(), c[2].value.end()));
    EXPECT_EQ(c[2].value.back(), e.EnergyCounterJ(gpu));
    const double rise_w =
        (c[2].value.back() - c[2].value.front()) / (static_cast<double>(c[2].t_ns.back() - c[2].t_ns.front()) * 1e-9);
    EXPECT_GE(rise_w, 0.9 * *std::min_element(c[1].value.begin(), c[1].value.end()));
    EXPECT_LE(rise_w, 1.25 * *std::max_element(c[1].value.begin(), c[1].value.end()));
  }
}

// A launch gap of days (a spec off by orders of magnitude) ends the run with an error naming the
// iteration, at the limit of simulated time, in moments rather than as a hang on telemetry ticks;
// a normal run is far under that limit.
TEST(SimPhysics, AnIterationOfDaysIsAnErrorNotAHang) {
  nlohmann::json spec = Spec("tp");
  spec["cpu"] = {{"launch_gap_us", 1e12}};
  Program p = Build(spec);
  EngineOptions o;
  o.iterations = 2;
  Engine slow(p, o);
  std::string err;
  EXPECT_FALSE(slow.Run(&err));
  EXPECT_EQ(err.rfind("iteration 1 of 2 has run for over 3600 s of simulated time", 0), 0u) << err;
  spec["cpu"] = {{"launch_gap_us", 6}};
  const Program q = Build(spec);
  Engine normal(q, o);
  EXPECT_TRUE(normal.Run(&err)) << err;
}

// Data parallel where rank 0's CPU is slow (40x the CPU time between launches): rank 1's GPU
// finishes each bucket early and waits at the all-reduce, so lowering its clock (within that
// slack) costs no time and saves energy.
TEST(SimPhysics, SlowingOffCriticalGpuKeepsIterationTime) {
  Program p = Build(Spec("dp"));
  for (Instr& in : p.ranks[0].threads[0].code)
    if (in.op == Op::kCpu) in.cpu_ns *= 40;
  Measured base = Measure(p, 5);
  Measured slow = Measure(p, 5, {0, 1005});
  EXPECT_NEAR(slow.iteration_ms, base.iteration_ms, 0.01 * base.iteration_ms);
  EXPECT_LT(slow.energy_j, base.energy_j);
}

// ---------------------------------------------------------------------------------------------
// Threads of a real training job (threads in workload.h) as ground truth for the graph's
// cross-thread inference.

// The API calls a thread's code makes per iteration (what the trace records of it).
int64_t Calls(const std::vector<Instr>& code, size_t end = SIZE_MAX) {
  int64_t n = 0;
  for (size_t i = 0; i < std::min(end, code.size()); ++i)
    n += code[i].op != Op::kCpu && code[i].op != Op::kRangePush && code[i].op != Op::kRangePop &&
         code[i].op != Op::kSignal && code[i].op != Op::kWait;
  return n;
}

// A poller and a data loader can run beside every generated kind. They launch nothing and hold
// nothing, so the steps run exactly as without them (no noise: same iteration starts), each rank
// has the two threads, and the graph names the poller (the loader makes no call) as background.
TEST(SimThreads, PollerAndLoaderRunBesideEveryKindWithoutChangingTheSteps) {
  for (const char* kind : {"tp", "pp", "dp", "offload"}) {
    SCOPED_TRACE(kind);
    nlohmann::json spec = Spec(kind);
    const Program plain = Build(spec);
    spec["threads"] = {{"poll_ms", 1}, {"loader_ms", 2}};
    const Program threaded = Build(spec);
    ASSERT_EQ(threaded.ranks.size(), plain.ranks.size());
    for (size_t r = 0; r < threaded.ranks.size(); ++r) {
      const auto& th = threaded.ranks[r].threads;
      ASSERT_EQ(th.size(), plain.ranks[r].threads.size() + 2);
      EXPECT_TRUE(th[th.size() - 1].background && th[th.size() - 2].background);
    }
    EngineOptions o;
    o.iterations = 3;
    o.noise = 0;
    Engine a(plain, o), b(threaded, o);
    std::string err;
    ASSERT_TRUE(a.Run(&err)) << err;
    ASSERT_TRUE(b.Run(&err)) << err;
    EXPECT_EQ(a.iteration_starts(), b.iteration_starts());
    Graph g;
    BuildReport rep;
    ASSERT_TRUE(BuildGraph(b.trace(), &g, &rep, &err)) << err;
    for (size_t r = 0; r < rep.ranks.size(); ++r) {
      ASSERT_EQ(rep.ranks[r].background.size(), 1u) << "rank " << r;
      EXPECT_GT(rep.ranks[r].background[0].calls, 0);
    }
  }
}

// DDP on one GPU, CPU-bound (100 µs of CPU before every call, kernels of a few µs), with backward
// on an autograd thread, a poller (cudaStreamQuery every 2 ms, free of the steps until they end)
// and a data loader (3 ms of CPU work per batch, no calls).
// The simulated trace, through Kineto JSON and back, must give:
// - exactly the program's hand-offs as cross-thread edges: per step, the autograd thread's last
//   backward call wakes the main thread's first optimizer call, and (from the second step on) the
//   main thread's last forward call wakes the autograd thread's first backward call. The first
//   step's hand-off to the autograd thread is not in the trace: that thread's first call starts
//   its timeline, with no gap before it to be blocked in;
// - the poller as the only background thread (the loader makes no API call, so the trace has no
//   event of it);
// - per steady step, a critical path that runs along the autograd thread through every
//   backward call and touches no main-thread node while backward runs;
// - a graph replay within 1 %, and the trace replayed by the simulator (each thread its own, the
//   hand-offs as host flags) within 1 % of its span.
TEST(SimThreads, InferredHandOffsAreTheProgramsOwn) {
  nlohmann::json spec = Spec("dp");
  spec["parallel"] = nlohmann::json::object();
  spec["model"] = {{"layers", 2}, {"hidden", 512}, {"heads", 8}, {"seq", 256}, {"batch", 1}, {"vocab", 8000}};
  spec["cpu"] = {{"launch_gap_us", 100}};
  spec["threads"] = {{"autograd", true}, {"poll_ms", 2}, {"loader_ms", 3}};
  const Program p = Build(spec);
  ASSERT_EQ(p.ranks[0].threads.size(), 4u);  // main, autograd, poller, loader
  const std::vector<Instr>& main_code = p.ranks[0].threads[0].code;
  const int64_t M = Calls(main_code), A = Calls(p.ranks[0].threads[1].code);
  size_t wait_at = 0;
  while (wait_at < main_code.size() && main_code[wait_at].op != Op::kWait) ++wait_at;
  const int64_t F = Calls(main_code, wait_at);  // main-thread calls before it blocks in backward
  ASSERT_GT(A, 20);
  ASSERT_GT(M, F);

  constexpr int kSteps = 4;
  EngineOptions o;
  o.iterations = kSteps;
  Engine e(p, o);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  Trace t;
  std::string json;
  WriteKinetoJson(e.trace(), 0, &json);
  ASSERT_TRUE(ParseKinetoJson("rank0.json", json.data(), json.size(), &t, &err)) << err;
  Graph g;
  BuildReport rep;
  ASSERT_TRUE(BuildGraph(t, &g, &rep, &err)) << err;
  const RankTrace& rt = t.ranks[0];

  // Each thread's calls in order: (tid, ordinal) of every call.
  std::map<int64_t, std::vector<uint32_t>> by_tid;
  for (uint32_t i = 0; i < rt.calls.size(); ++i) by_tid[rt.threads[rt.calls[i].thread].tid].push_back(i);
  std::map<uint32_t, std::pair<int64_t, int64_t>> ordinal;
  for (auto& [tid, calls] : by_tid) {
    std::sort(calls.begin(), calls.end(),
              [&](uint32_t a, uint32_t b) { return rt.calls[a].start_ns < rt.calls[b].start_ns; });
    for (size_t k = 0; k < calls.size(); ++k) ordinal[calls[k]] = {tid, static_cast<int64_t>(k)};
  }
  const int64_t kMain = 1000, kAutograd = 1001, kPoller = 1002;  // the engine's thread ids (rank 0)
  ASSERT_EQ(by_tid.size(), 3u);                                  // the loader made no call
  ASSERT_EQ(static_cast<int64_t>(by_tid[kMain].size()), kSteps * M);
  ASSERT_EQ(static_cast<int64_t>(by_tid[kAutograd].size()), kSteps * A);
  // The poller runs free of the steps until they end: one poll per 2 ms of the run (±5 %).
  const double run_ms = static_cast<double>(rt.iterations.back().end_ns - rt.iterations.front().start_ns) / 1e6;
  const int64_t polls = static_cast<int64_t>(by_tid[kPoller].size());
  ASSERT_GT(run_ms, 8 * kSteps);
  EXPECT_NEAR(static_cast<double>(polls), run_ms / 2, 0.05 * run_ms / 2);

  using End = std::pair<int64_t, int64_t>;  // (tid, ordinal)
  std::set<std::pair<End, End>> truth, inferred;
  for (int64_t k = 0; k < kSteps; ++k) {
    truth.insert({{kAutograd, k * A + A - 1}, {kMain, k * M + F}});
    if (k > 0) truth.insert({{kMain, k * M + F - 1}, {kAutograd, k * A}});
  }
  for (uint32_t v = 0; v < g.nodes(); ++v)
    for (uint32_t k = g.pred_begin[v]; k < g.pred_begin[v + 1]; ++k)
      if (g.pred_kind[k] == EdgeKind::kCrossThread)
        inferred.insert(
            {ordinal.at(static_cast<uint32_t>(g.source[g.pred[k]])), ordinal.at(static_cast<uint32_t>(g.source[v]))});
  EXPECT_EQ(inferred, truth);
  EXPECT_EQ(rep.ranks[0].handoffs_inferred, static_cast<int64_t>(truth.size()));
  EXPECT_EQ(rep.ranks[0].handoffs_dropped, 0);
  ASSERT_EQ(rep.ranks[0].background.size(), 1u);
  EXPECT_EQ(rep.ranks[0].background[0].tid, kPoller);
  EXPECT_EQ(rep.ranks[0].background[0].calls, polls);

  const Analysis a = Analyze(t, g);
  EXPECT_LT(std::fabs(a.total.replay_error), 0.01);
  ASSERT_EQ(a.iteration_paths.size(), static_cast<size_t>(kSteps));
  for (const IterationPath& ip : a.iteration_paths) {
    if (ip.step == 0) continue;  // the first step has no hand-off into backward (above)
    SCOPED_TRACE("step " + std::to_string(ip.step));
    const auto& bwd = by_tid[kAutograd];
    const double first = static_cast<double>(rt.calls[bwd[ip.step * A]].start_ns);
    const double last = static_cast<double>(rt.calls[bwd[ip.step * A + A - 1]].end_ns);
    int64_t on_autograd = 0, main_inside = 0;
    for (uint32_t v : ip.nodes) {
      if (g.kind[v] != NodeKind::kCpuCall) continue;
      const int64_t tid = rt.threads[rt.calls[static_cast<size_t>(g.source[v])].thread].tid;
      const double start = static_cast<double>(rt.calls[static_cast<size_t>(g.source[v])].start_ns);
      on_autograd += tid == kAutograd;
      main_inside += tid == kMain && start > first && start < last;
    }
    EXPECT_EQ(on_autograd, A);
    EXPECT_EQ(main_inside, 0);
  }

  // The simulator's replay of this trace: four threads' worth of calls on three simulated threads.
  Program replay;
  ASSERT_TRUE(BuildReplayWorkload(t, g, "a100", &replay, &err)) << err;
  ASSERT_EQ(replay.ranks[0].threads.size(), 3u);
  EngineOptions ro;
  ro.iterations = 2;
  ro.noise = 0;
  ro.record_trace = false;
  Engine re(replay, ro);
  ASSERT_TRUE(re.Run(&err)) << err;
  const double replayed_ms = (re.iteration_starts()[1] - re.iteration_starts()[0]) / 1e6;
  EXPECT_NEAR(replayed_ms, a.total.observed_ms, 0.01 * a.total.observed_ms);
}

// Kinds tp and pp hand each micro-batch's backward pass to the autograd thread too (pp's p2p calls
// stay on the main thread), several times a step. On every rank the graph infers exactly two
// hand-offs per backward pass, all between the main and the autograd thread and none dropped, but
// the very first: the autograd thread's first call has no earlier one to wait after. The steps
// are the same work, so the run takes about as long as without the thread (the hand-offs cost
// host time).
TEST(SimThreads, AutogradHandOffsOnTensorAndPipelineParallel) {
  for (const char* kind : {"tp", "pp"}) {
    SCOPED_TRACE(kind);
    nlohmann::json spec = Spec(kind);
    spec["model"] = {{"layers", 2}, {"hidden", 512}, {"heads", 8}, {"seq", 256}, {"batch", 1}, {"vocab", 8000}};
    spec["cpu"] = {{"launch_gap_us", 100}};
    if (std::string(kind) == "tp") spec["parallel"]["microbatches"] = 2, spec["model"]["batch"] = 2;
    const int64_t microbatches = spec["parallel"]["microbatches"];
    constexpr int kSteps = 3;
    auto run = [&](bool autograd, Trace* t) {
      spec["threads"] = {{"autograd", autograd}};
      const Program p = Build(spec);
      for (const RankProgram& r : p.ranks) ASSERT_EQ(r.threads.size(), autograd ? 2u : 1u);
      EngineOptions o;
      o.iterations = kSteps;
      Engine e(p, o);
      std::string err;
      ASSERT_TRUE(e.Run(&err)) << err;
      for (size_t r = 0; r < e.trace().ranks.size(); ++r) {
        std::string json;
        WriteKinetoJson(e.trace(), r, &json);
        ASSERT_TRUE(ParseKinetoJson("rank" + std::to_string(r) + ".json", json.data(), json.size(), t, &err)) << err;
      }
    };
    Trace with, without;
    run(true, &with);
    run(false, &without);
    if (HasFatalFailure()) return;
    Graph g;
    BuildReport rep;
    std::string err;
    ASSERT_TRUE(BuildGraph(with, &g, &rep, &err)) << err;
    for (size_t r = 0; r < rep.ranks.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      EXPECT_EQ(rep.ranks[r].handoffs_inferred, 2 * kSteps * microbatches - 1);
      EXPECT_EQ(rep.ranks[r].handoffs_dropped, 0);
      EXPECT_TRUE(rep.ranks[r].background.empty());
    }
    for (uint32_t v = 0; v < g.nodes(); ++v)
      for (uint32_t k = g.pred_begin[v]; k < g.pred_begin[v + 1]; ++k)
        if (g.pred_kind[k] == EdgeKind::kCrossThread) {
          const RankTrace& rt = with.ranks[static_cast<size_t>(g.rank[v])];
          const int64_t a = rt.threads[rt.calls[static_cast<size_t>(g.source[g.pred[k]])].thread].tid;
          const int64_t b = rt.threads[rt.calls[static_cast<size_t>(g.source[v])].thread].tid;
          EXPECT_NE(a, b);
        }
    const auto span = [](const Trace& t) {
      return static_cast<double>(t.ranks[0].iterations.back().end_ns - t.ranks[0].iterations.front().start_ns);
    };
    EXPECT_NEAR(span(with) / span(without), 1, 0.03);
  }
}

}  // namespace
}  // namespace emo::sim

namespace emo::sim {
namespace {

// The replay kind: a trace's kernels keep their measured durations at the default clock, its
// CPU gaps and its stream waits.
// A program in phases runs each phase's code from its start: every iteration launches the kernels
// of its phase's code, and a snapshot mid-run (TraceSoFar, from an iteration-start hook) holds the
// iterations begun so far.
TEST(SimPhases, EachIterationRunsItsPhasesCode) {
  nlohmann::json a = Spec("tp"), b = a;
  b["model"]["layers"] = 8;
  const Program p = Build(
      {{"kind", "phases"},
       {"phases", {{{"workload", a}, {"iterations", 3}}, {{"workload", b}, {"iterations", 2}}, {{"workload", a}}}}});
  ASSERT_EQ(p.phase_starts, (std::vector<int32_t>{3, 5}));
  auto kernels_in = [](const std::vector<Instr>& code) {
    int n = 0;
    for (const Instr& in : code) n += in.op == Op::kLaunch || in.op == Op::kCollective;
    return n;
  };
  const int small = kernels_in(p.ranks[0].threads[0].code), large = kernels_in(p.ranks[0].threads[0].phase_code[0]);
  ASSERT_GT(large, small);
  EngineOptions o;
  o.iterations = 7;
  Engine e(p, o);
  size_t iterations_at_4 = 0;
  e.OnIterationStart([&](int i, double) {
    if (i == 4) iterations_at_4 = e.TraceSoFar().ranks[0].iterations.size();
  });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_EQ(iterations_at_4, 5u);
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.iterations.size(), 7u);
  std::map<int64_t, int64_t> issued;  // correlation -> the iteration of its call
  for (const CpuCall& c : r.calls)
    for (size_t i = 0; i < r.iterations.size(); ++i)
      if (c.start_ns >= r.iterations[i].start_ns && c.start_ns < r.iterations[i].end_ns)
        issued[c.correlation] = static_cast<int64_t>(i);
  std::vector<int> per_iteration(7, 0);
  for (const GpuOp& op : r.ops)
    if (op.kind == GpuOpKind::kKernel) ++per_iteration[static_cast<size_t>(issued.at(op.correlation))];
  EXPECT_EQ(per_iteration, (std::vector<int>{small, small, small, large, large, small, small}));
}

// Kineto JSON given inline, one string per rank, read, built into a graph and made a replay
// program on A100s, with the graph's build report.
struct Replayed {
  BuildReport rep;
  Program p;
};
void Replay(const std::vector<std::string>& ranks, Replayed* out) {
  Trace t;
  std::string err;
  for (size_t r = 0; r < ranks.size(); ++r)
    ASSERT_TRUE(ParseKinetoJson("rank" + std::to_string(r) + ".json", ranks[r].data(), ranks[r].size(), &t, &err))
        << err;
  Graph g;
  ASSERT_TRUE(BuildGraph(t, &g, &out->rep, &err)) << err;
  ASSERT_TRUE(BuildReplayWorkload(t, g, "a100", &out->p, &err)) << err;
}

TEST(SimReplay, ReproducesKernelDurationsGapsAndWaits) {
  const char* json = R"({"traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaEventRecord","pid":1,"tid":1,"ts":6,"dur":2,"args":{"correlation":2}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":40,"dur":2,"args":{"correlation":3}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":50,"dur":5,"args":{"correlation":4}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":60,"dur":900,"args":{"correlation":5}},
    {"ph":"X","cat":"kernel","name":"ampere_bf16_s16816gemm_bf16_128x128","pid":0,"tid":7,"ts":8,"dur":500,"args":{"stream":7,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":9,"ts":508,"dur":120,"args":{"stream":9,"correlation":4}},
    {"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":9,"ts":40,"dur":0,"args":{"cuda_sync_kind":"Stream Wait Event","stream":9,"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":2,"correlation":3}}
  ]})";
  Replayed rp;
  ASSERT_NO_FATAL_FAILURE(Replay({json}, &rp));
  Program& p = rp.p;
  std::string err;
  EngineOptions o;
  o.iterations = 1;
  o.noise = 0;
  Engine e(p, o);
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_NEAR(static_cast<double>(r.ops[0].end_ns - r.ops[0].start_ns), 500000, 0.01 * 500000);
  EXPECT_NEAR(static_cast<double>(r.ops[1].end_ns - r.ops[1].start_ns), 120000, 0.01 * 120000);
  EXPECT_GE(r.ops[1].start_ns, r.ops[0].end_ns);  // the stream wait survived
  // The second launch is issued after the measured CPU time (50 µs from the start).
  EXPECT_NEAR(static_cast<double>(r.calls[3].start_ns), 50000, 2000);
  // One thread: the program of a serial replay, no host flags.
  EXPECT_EQ(p.ranks[0].threads.size(), 1u);
  EXPECT_EQ(p.ranks[0].flags, 0);
}

// Two threads: thread 1 launches at 0, is blocked from 5 µs to 3000 µs, and resumes 5 µs after
// thread 2's call [2990, 2995 µs] ends: the graph's one hand-off (thread 2's other gap has no waker:
// nothing of thread 1 ended inside it). Each thread launches on its own stream, so the hand-off is
// the only order between them. Replayed (a launch call costs the engine 4 µs, the rest of the
// call is CPU time before it): thread 2 launches at 101 and 2991 µs, thread 1 at 1 µs and, after the
// hand-off and its 5 µs delay, at 3001 µs. The hand-off is a dependency, not a time: 1 ms more
// CPU on thread 1 before it blocks changes nothing after it, and 1 ms more in thread 2's gap moves
// thread 1's resume by 1 ms.
TEST(SimReplay, ThreadsRunConcurrentlyWithTheirHandOffs) {
  const char* json = R"({"traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":100,"dur":5,"args":{"correlation":2}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":2990,"dur":5,"args":{"correlation":3}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":3000,"dur":5,"args":{"correlation":4}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":7,"ts":10,"dur":50,"args":{"stream":7,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":8,"ts":110,"dur":50,"args":{"stream":8,"correlation":2}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":8,"ts":3000,"dur":50,"args":{"stream":8,"correlation":3}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":7,"ts":3010,"dur":50,"args":{"stream":7,"correlation":4}}
  ]})";
  Replayed rp;
  ASSERT_NO_FATAL_FAILURE(Replay({json}, &rp));
  ASSERT_EQ(rp.rep.ranks[0].handoffs_inferred, 1);
  const Program& p = rp.p;
  ASSERT_EQ(p.ranks[0].threads.size(), 2u);
  // Launch call starts (ns), with `extra` ns added to thread `th`'s first CPU instruction (its
  // largest when `largest`: thread 2's gap).
  auto run = [&](int th, double extra, bool largest) {
    Program q = p;
    Instr* target = nullptr;
    for (Instr& in : q.ranks[0].threads[static_cast<size_t>(th)].code)
      if (in.op == Op::kCpu && (!target || (largest && in.cpu_ns > target->cpu_ns))) target = &in;
    if (target) target->cpu_ns += extra;
    EngineOptions o;
    o.iterations = 1;
    o.noise = 0;
    Engine e(q, o);
    std::string run_err;
    EXPECT_TRUE(e.Run(&run_err)) << run_err;
    std::vector<int64_t> starts;
    for (const CpuCall& c : e.trace().ranks[0].calls) starts.push_back(c.start_ns);
    return starts;  // thread 0's calls, then thread 1's
  };
  EXPECT_EQ(run(0, 0, false), (std::vector<int64_t>{1000, 3001000, 101000, 2991000}));
  EXPECT_EQ(run(0, 1e6, false), (std::vector<int64_t>{1001000, 3001000, 101000, 2991000}));
  EXPECT_EQ(run(1, 1e6, true), (std::vector<int64_t>{1000, 4001000, 101000, 3991000}));
}

// Collectives issued from two threads stay in trace order. Two ranks all-reduce twice; on rank 0
// the first is launched by thread 1 at 0 µs and the second by thread 2 at 20 µs (rank 1 launches
// both from one thread). Replayed with 1 ms more CPU on rank 0's thread 1 before its launch
// (call [1001, 1005 µs]), thread 2 waits for it and launches at 1005 + 1 µs (the call's CPU time
// before the engine's 4 µs launch) instead of 21 µs: the NCCL kernels keep the order their peers
// expect, and both collectives complete.
TEST(SimReplay, CollectivesOfTwoThreadsKeepTraceOrder) {
  const std::string rank0 = R"({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":20,"dur":5,"args":{"correlation":2}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":10,"dur":100,"args":{"stream":9,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":110,"dur":100,"args":{"stream":9,"correlation":2}}
  ]})";
  const std::string rank1 = R"({"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":2}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":10,"dur":100,"args":{"stream":9,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":110,"dur":100,"args":{"stream":9,"correlation":2}}
  ]})";
  Replayed rp;
  ASSERT_NO_FATAL_FAILURE(Replay({rank0, rank1}, &rp));
  ASSERT_EQ(rp.rep.ranks[0].collectives_matched, 2);
  Program& p = rp.p;
  std::string err;
  ASSERT_EQ(p.ranks[0].threads.size(), 2u);
  ASSERT_EQ(p.ranks[1].threads.size(), 1u);
  for (Instr& in : p.ranks[0].threads[0].code)
    if (in.op == Op::kCpu) {
      in.cpu_ns += 1e6;
      break;
    }
  EngineOptions o;
  o.iterations = 1;
  o.noise = 0;
  Engine e(p, o);
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r0 = e.trace().ranks[0];
  ASSERT_EQ(r0.calls.size(), 2u);  // thread 0's, then thread 1's
  EXPECT_EQ(r0.calls[0].start_ns, 1001000);
  EXPECT_EQ(r0.calls[1].start_ns, 1006000);
  ASSERT_EQ(r0.ops.size(), 2u);
  EXPECT_EQ(r0.ops[0].correlation, r0.calls[0].correlation);
  EXPECT_EQ(e.trace().ranks[1].ops.size(), 2u);
}

// The real 8-rank DLRM step re-executed on simulated A100s: every rank's collectives meet.
TEST(SimReplay, RealDlrmRunsOnEightSimulatedGpus) {
  const char* dir = std::getenv("EMO_WORKLOADS");
  if (!dir || !std::getenv("EMO_TRACES")) GTEST_SKIP() << "EMO_WORKLOADS/EMO_TRACES not set";
  Program p;
  std::string err;
  ASSERT_TRUE(LoadWorkload(std::string(dir) + "/replay-dlrm-8rank-a100.json", &p, &err)) << err;
  ASSERT_EQ(p.ranks.size(), 8u);
  EngineOptions o;
  o.iterations = 3;
  Engine e(p, o);
  ASSERT_TRUE(e.Run(&err)) << err;
  Graph g;
  BuildReport rep;
  ASSERT_TRUE(BuildGraph(e.trace(), &g, &rep, &err)) << err;
  for (const RankBuildReport& r : rep.ranks) EXPECT_EQ(r.collectives_matched, 3 * 8);
  EXPECT_LT(std::fabs(Analyze(e.trace(), g).total.replay_error), 0.01);
}

// A replayed real trace is worth optimising in simulation only if, at the default clocks, it runs
// as long as it ran for real. Alexnet (one rank): each replayed iteration against the traced
// span. DLRM's 8 ranks were traced with skew (their spans run from 11.4 to 19.0 ms inside a
// 19.8 ms whole), so its steady iteration must lie between the longest rank's span and the whole.
TEST(SimReplay, IterationTakesAsLongAsTheRealTrace) {
  const char* workloads = std::getenv("EMO_WORKLOADS");
  const char* traces = std::getenv("EMO_TRACES");
  if (!workloads || !traces) GTEST_SKIP() << "EMO_WORKLOADS/EMO_TRACES not set";
  struct Case {
    const char* workload;
    const char* trace;
  };
  for (const Case& c : {Case{"replay-alexnet-a100.json", "HolisticTraceAnalysis/critical_path/alexnet"},
                        Case{"replay-dlrm-8rank-a100.json", "param/dlrm_kineto"}}) {
    SCOPED_TRACE(c.workload);
    Trace real;
    std::string err;
    std::vector<std::string> files;
    ASSERT_TRUE(ExpandTracePaths({std::string(traces) + "/" + c.trace}, &files, &err)) << err;
    ASSERT_TRUE(LoadTraces(files, &real, &err)) << err;
    Graph g;
    BuildReport rep;
    ASSERT_TRUE(BuildGraph(real, &g, &rep, &err)) << err;
    const Analysis a = Analyze(real, g);
    double longest_rank_ms = 0;
    for (const SpanStats& r : a.ranks) longest_rank_ms = std::max(longest_rank_ms, r.observed_ms);

    Program p;
    ASSERT_TRUE(LoadWorkload(std::string(workloads) + "/" + c.workload, &p, &err)) << err;
    EngineOptions o;
    o.iterations = 3;
    o.noise = 0;
    o.record_trace = false;
    Engine e(p, o);
    ASSERT_TRUE(e.Run(&err)) << err;
    const double simulated_ms = (e.iteration_starts()[2] - e.iteration_starts()[1]) / 1e6;
    std::printf("%s: simulated %.3f ms per iteration; traced: longest rank %.3f ms, all ranks %.3f ms\n", c.workload,
                simulated_ms, longest_rank_ms, a.total.observed_ms);
    EXPECT_GE(simulated_ms, 0.97 * longest_rank_ms);
    EXPECT_LE(simulated_ms, 1.03 * a.total.observed_ms);
  }
}

// The real traces with several CPU threads, replayed by the simulator with one simulated thread
// per traced thread (hand-offs, stream and collective order as host flags): at the default clocks
// and without noise, the first replayed iteration (the whole trace) lasts the graph's strict
// replay of the trace within 1 %. (That replay is the trace's span on df_index_resolver and
// ns_resolution_trace; negative_queue_length's is 11.7 % shorter, its SendRecv kernels waiting for
// peers not in the file: docs/replay.md.)
TEST(SimReplay, MultiThreadedTracesReplayWithinOnePercent) {
  const char* traces = std::getenv("EMO_TRACES");
  if (!traces) GTEST_SKIP() << "EMO_TRACES not set";
  for (const char* path : {"HolisticTraceAnalysis/df_index_resolver", "HolisticTraceAnalysis/ns_resolution_trace",
                           "HolisticTraceAnalysis/negative_queue_length_values_check"}) {
    SCOPED_TRACE(path);
    Trace real;
    std::string err;
    std::vector<std::string> files;
    ASSERT_TRUE(ExpandTracePaths({std::string(traces) + "/" + path}, &files, &err)) << err;
    ASSERT_TRUE(LoadTraces(files, &real, &err)) << err;
    Graph g;
    BuildReport rep;
    ASSERT_TRUE(BuildGraph(real, &g, &rep, &err)) << err;
    const Analysis a = Analyze(real, g);
    size_t traced_threads = 0;
    for (size_t th = 0; th < real.ranks[0].threads.size(); ++th) {
      bool calls = false;
      for (const CpuCall& c : real.ranks[0].calls) calls |= c.thread == th;
      traced_threads += calls;
    }
    Program p;
    ASSERT_TRUE(BuildReplayWorkload(real, g, "a100", &p, &err)) << err;
    EXPECT_EQ(p.ranks[0].threads.size(), traced_threads);
    EXPECT_GT(traced_threads, 1u);
    EngineOptions o;
    o.iterations = 2;
    o.noise = 0;
    o.record_trace = false;
    Engine e(p, o);
    ASSERT_TRUE(e.Run(&err)) << err;
    const double simulated_ms = (e.iteration_starts()[1] - e.iteration_starts()[0]) / 1e6;
    std::printf(
        "%s: %zu threads, %lld hand-offs; simulated %.3f ms, graph replay %.3f ms (%+.2f %%), traced %.3f ms "
        "(%+.2f %%)\n",
        path, traced_threads, static_cast<long long>(rep.ranks[0].handoffs_inferred), simulated_ms, a.total.replayed_ms,
        100 * (simulated_ms / a.total.replayed_ms - 1), a.total.observed_ms,
        100 * (simulated_ms / a.total.observed_ms - 1));
    EXPECT_NEAR(simulated_ms, a.total.replayed_ms, 0.01 * a.total.replayed_ms);
  }
}

// Replayed kernels get the archetype their name suggests. Real names from the traces in
// ../shared/traces (AlexNet, DLRM, the HTA test traces; long template argument lists cut), each
// with the class a reader of the name would give it. None of those traces has a fused attention
// kernel: the two attention names are PyTorch's FlashAttention and memory-efficient kernels as
// they appear in PyTorch 2 profiles.
TEST(SimReplay, KernelNamesGetTheirArchetype) {
  using C = ReplayKernelClass;
  const std::vector<std::pair<std::string, C>> table = {
      {"volta_sgemm_128x64_nn", C::kFp32Gemm},
      {"ampere_sgemm_32x32_sliced1x4_tn", C::kFp32Gemm},
      {"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", C::kFp32Gemm},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, "
       "cublasGemvParams<cublasGemvTensorStridedBatched<float const>",
       C::kFp32Gemm},
      {"void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, int, int, int, int, "
       "int, cudnn::reduced_divisor, bool, int2, int, int)",
       C::kFp32Gemm},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_"
       "256x128_32x3_nn_align4::Params)",
       C::kTensorGemm},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize256x64x32_stage3_warpsize4x2x1_"
       "g1_tensor16x8x8_execute_kernel_cudnn_infer",
       C::kTensorGemm},
      {"_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMulti"
       "stageINS_4gemm9GemmShapeILi128ELi128ELi32EEE",
       C::kTensorGemm},
      {"void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams<float>, float "
       "const*, float const*, float*",
       C::kReduction},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
       "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, float, "
       "4>)",
       C::kReduction},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, "
       "int, int, int, bool const*, int, bool)",
       C::kReduction},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
       "float const*, float const*, float*, float*, float*)",
       C::kReduction},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct, float const*",
       C::kReduction},
      {"void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long, "
       "long, int, int, int, int, int, int, int, int, int, int, float*, long*)",
       C::kReduction},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, "
       "3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
       C::kElementwise},
      {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{"
       "lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}",
       C::kElementwise},
      {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, "
       "float, adamMode_t, float, int, int>(int, int volatile*, TensorListMetadata<4>, AdamFunctor<float>",
       C::kElementwise},
      {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, "
       "bool>(at::cuda::detail::TensorInfo<float, unsigned int>",
       C::kElementwise},
      {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, "
       "at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>",
       C::kElementwise},
      {"void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, float*, cublasLtEpilogue_t",
       C::kElementwise},
      {"void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<"
       "at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)",
       C::kGather},
      {"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, int, unsigned int, 1, 1, -2, "
       "true>(at::cuda::detail::TensorInfo<float, unsigned int>",
       C::kGather},
      {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 2ul>(at::"
       "GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>",
       C::kGather},
      {"void at::native::_scatter_gather_elementwise_kernel<128, 4, at::native::_cuda_scatter_gather_internal_kernel<"
       "true, float>::operator()<at::native::ReduceAdd>(at::TensorIterator&, long, long, long",
       C::kGather},
      {"void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)", C::kGather},
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", C::kCommunication},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", C::kCommunication},
      {"triton__0d1d2d", C::kUnknown},
      {"at::cuda::(anonymous namespace)::spin_kernel(long)", C::kUnknown},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
       "cutlass::bfloat16_t",
       C::kAttention},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, "
       "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
       C::kAttention},
  };
  for (const auto& [name, expected] : table)
    EXPECT_STREQ(ReplayKernelClassName(ClassifyReplayKernel(name)), ReplayKernelClassName(expected)) << name;
}

// Time at 705 MHz over time at the A100's default 1410 MHz, and the time at the default clock.
struct ClockSensitivity {
  double slowdown = 0, default_s = 0;
};
ClockSensitivity SensitivityOf(const KernelTraits& k) {
  const DeviceSpec& spec = *FindDevice("a100");
  const double t0 = EvaluateKernel(spec, k, spec.default_sm_clock_mhz).time_s;
  return {EvaluateKernel(spec, k, 705).time_s / t0, t0};
}

// Replayed with the same traced duration, a GEMM of large tiles is compute-bound (its time nearly
// doubles at half the clock), one of small tiles with split-K less so, a gemv memory-bound; each
// still takes its traced time at the default clock. (The 64x64 split-K name is the traced 64x64x64
// wgrad kernel's with the split-K suffix of its traced 128x128 sibling.)
TEST(SimReplay, GemmTilesSetClockSensitivity) {
  const DeviceSpec& spec = *FindDevice("a100");
  const double traced_s = 200e-6;
  const ClockSensitivity big = SensitivityOf(ReplayKernelTraits(
      "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_"
      "256x128_32x3_nn_align4::Params)",
      traced_s, spec));
  const ClockSensitivity split = SensitivityOf(ReplayKernelTraits(
      "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_warpsize2x2x1_"
      "g1_tensor16x8x8_execute_split_k_kernel_cudnn_train",
      traced_s, spec));
  const ClockSensitivity gemv = SensitivityOf(
      ReplayKernelTraits("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, "
                         "cublasGemvParams<cublasGemvTensorStridedBatched<float const>",
                         traced_s, spec));
  std::printf("slowdown at 705 MHz: 256x128 %.3f, 64x64 split-K %.3f, gemv %.3f\n", big.slowdown, split.slowdown,
              gemv.slowdown);
  for (const ClockSensitivity& c : {big, split, gemv}) EXPECT_NEAR(c.default_s, traced_s, 1e-3 * traced_s);
  EXPECT_GT(big.slowdown, 1.8);
  EXPECT_GT(big.slowdown, split.slowdown + 0.2);
  EXPECT_GT(split.slowdown, gemv.slowdown);
  EXPECT_LT(gemv.slowdown, 1.15);
}

bool SameTraits(const KernelTraits& a, const KernelTraits& b) {
  return a.tensor_flop == b.tensor_flop && a.fp32_flop == b.fp32_flop && a.fp64_flop == b.fp64_flop &&
         a.int_ops == b.int_ops && a.sfu_ops == b.sfu_ops && a.lsu_ops == b.lsu_ops &&
         a.dram_read_bytes == b.dram_read_bytes && a.dram_write_bytes == b.dram_write_bytes &&
         a.l2_bytes == b.l2_bytes && a.l1_bytes == b.l1_bytes && a.shared_bytes == b.shared_bytes &&
         a.link_bytes == b.link_bytes && a.occupancy == b.occupancy && a.overhead_s == b.overhead_s;
}

// Two elementwise names get different characteristics (tanh uses the SFU, an add does not); one
// name gets the same ones every time, and twice the traced time is twice the work.
TEST(SimReplay, KernelCharacteristicsAreDrawnPerName) {
  const DeviceSpec& spec = *FindDevice("a100");
  const std::string add =
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, "
      "3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
  const std::string tanh =
      "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::tanh_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}>";
  const KernelTraits a = ReplayKernelTraits(add, 50e-6, spec), t = ReplayKernelTraits(tanh, 50e-6, spec);
  EXPECT_FALSE(SameTraits(a, t));
  EXPECT_EQ(a.sfu_ops, 0);
  EXPECT_GT(t.sfu_ops, 0);
  EXPECT_NE(a.occupancy, t.occupancy);
  EXPECT_TRUE(SameTraits(a, ReplayKernelTraits(add, 50e-6, spec)));
  const KernelTraits a2 = ReplayKernelTraits(add, 100e-6, spec);
  EXPECT_NEAR(a2.dram_read_bytes, 2 * a.dram_read_bytes, 1e-6 * a2.dram_read_bytes);
  EXPECT_EQ(a2.occupancy, a.occupancy);
}

}  // namespace
}  // namespace emo::sim
