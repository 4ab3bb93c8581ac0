// engine_test.cc — the simulator's event engine on small hand-made programs: exact times of
// launches, syncs, events and collectives, DVFS and power limits, telemetry with NVML's semantics,
// run-to-run and GPU-to-GPU variation, determinism, and that its traces replay through EMO's own
// graph within 1 %.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/analysis.h"
#include "graph/builder.h"
#include "sim/device_spec.h"
#include "sim/engine_constants.h"
#include "sim/sim_gpu_control.h"

namespace emo::sim {
namespace {

// The 500 W HGX configuration: its limit is above the test GEMM's draw (~460 W at 1410 MHz).
constexpr const char* kA100 = "A100-SXM4-80GB-500W";

Instr Cpu(double ns) {
  Instr i;
  i.op = Op::kCpu;
  i.cpu_ns = ns;
  return i;
}
Instr Launch(int kernel, int stream = 0) {
  Instr i;
  i.op = Op::kLaunch;
  i.kernel = kernel;
  i.stream = stream;
  return i;
}
Instr Make(Op op, int stream = -1, int event = -1) {
  Instr i;
  i.op = op;
  i.stream = stream;
  i.event = event;
  return i;
}
Instr Collective(int kernel, int group, double bytes, int stream = 1) {
  Instr i;
  i.op = Op::kCollective;
  i.kernel = kernel;
  i.group = group;
  i.bytes = bytes;
  i.stream = stream;
  return i;
}

// `n` launches of `kernel` on stream 0, then cudaStreamSynchronize.
std::vector<Instr> LaunchesThenSync(int kernel, int n) {
  std::vector<Instr> code(static_cast<size_t>(n), Launch(kernel));
  code.push_back(Make(Op::kStreamSync, 0));
  return code;
}

Program OneRank(std::vector<Instr> code, int streams = 1, int events = 0) {
  Program p;
  p.name = "test";
  p.device = kA100;
  p.link_bytes_per_s = 200e9;
  p.kernels.push_back({"gemm", GemmKernel(2048, 2048, 8192, 2, true)});  // ~460 W at 1410 MHz
  p.kernels.push_back({"vectorized_elementwise_kernel", ElementwiseKernel(64e6, 2, 2, 1)});
  p.ranks.resize(1);
  p.ranks[0].threads.resize(1);
  p.ranks[0].threads[0].code = std::move(code);
  p.ranks[0].streams = streams;
  p.ranks[0].events = events;
  return p;
}

// Tests of other mechanisms than power capping set every GPU's limit to its maximum (500 W, the
// default of this SKU) so that the GEMM above runs at the clock set.
void Uncapped(Engine& e) {
  for (int g = 0; g < e.gpus(); ++g) e.SetPowerLimit(g, FindDevice(kA100)->power_limit_max_w);
}

EngineOptions Exact(int iterations = 1) {
  EngineOptions o;
  o.iterations = iterations;
  o.noise = 0;
  return o;
}

double KernelNs(const Program& p, int kernel, int mhz) {
  return EvaluateKernel(*FindDevice(p.device), p.kernels[static_cast<size_t>(kernel)].traits, mhz).time_s * 1e9;
}

// Launch [0, 4 µs] -> the GEMM may start 3 µs after the call returns; cudaStreamSynchronize
// from 4 µs returns 2 µs after the GEMM ends.
TEST(Engine, LaunchAndStreamSyncTimes) {
  Program p = OneRank({Launch(0), Make(Op::kStreamSync, 0)});
  Engine e(p, Exact());
  Uncapped(e);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.calls.size(), 2u);
  ASSERT_EQ(r.ops.size(), 1u);
  double t = KernelNs(p, 0, 1410);
  EXPECT_EQ(r.calls[0].start_ns, 0);
  EXPECT_EQ(r.calls[0].end_ns, 4000);
  EXPECT_EQ(r.ops[0].start_ns, 7000);
  EXPECT_NEAR(static_cast<double>(r.ops[0].end_ns), 7000 + t, 1);
  EXPECT_EQ(r.calls[1].kind, CallKind::kStreamSync);
  EXPECT_EQ(r.calls[1].start_ns, 4000);
  EXPECT_NEAR(static_cast<double>(r.calls[1].end_ns), 7000 + t + 2000, 1);
  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].kind, SyncKind::kStreamSync);
  EXPECT_EQ(r.syncs[0].correlation, r.calls[1].correlation);
  EXPECT_EQ(r.ops[0].correlation, r.calls[0].correlation);
}

// Two GEMMs on two streams share the GPU: each progresses at half speed while both run.
// Ranges: push at 0 and after 1 µs of CPU work; the pop after the launch call [1, 5 µs]. A hook
// hears each where the thread reaches it; without a hook the run is the same to the nanosecond.
TEST(Engine, RangesReachHooksAtTheirTimesAndCostNothing) {
  Instr push = Make(Op::kRangePush), pop = Make(Op::kRangePop);
  push.range = pop.range = 0;
  Program p = OneRank({push, Cpu(1000), push, Launch(0), pop, pop, Make(Op::kStreamSync, 0)});
  p.ranges = {"forward"};
  std::string err;
  ASSERT_TRUE(Validate(p, &err)) << err;
  Engine plain(p, Exact());
  ASSERT_TRUE(plain.Run(&err)) << err;
  Engine e(p, Exact());
  std::vector<std::pair<bool, double>> seen;
  e.OnRange([&](int rank, const std::string& name, bool is_push, double now) {
    EXPECT_EQ(rank, 0);
    EXPECT_EQ(name, "forward");
    seen.push_back({is_push, now});
  });
  ASSERT_TRUE(e.Run(&err)) << err;
  const std::vector<std::pair<bool, double>> want = {{true, 0}, {true, 1000}, {false, 5000}, {false, 5000}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(e.end_ns(), plain.end_ns());
  p.ranks[0].threads[0].code[0].range = 1;
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("range 1 out of range"), std::string::npos) << err;
}

Instr Flag(Op op, int flag) {
  Instr i;
  i.op = op;
  i.flag = flag;
  return i;
}

// cudaStreamQuery polls: the call [4, 6 µs] returns while the GEMM it asks about has not even
// started (7 µs), and the sync after it waits as before.
TEST(Engine, StreamQueryReturnsAtOnce) {
  Instr query = Make(Op::kStreamQuery, 0);
  Program p = OneRank({Launch(0), query, Make(Op::kStreamSync, 0)});
  Engine e(p, Exact());
  Uncapped(e);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.calls.size(), 3u);
  EXPECT_EQ(e.trace().names.Get(r.calls[1].name), "cudaStreamQuery");
  EXPECT_EQ(r.calls[1].kind, CallKind::kOther);
  EXPECT_EQ(r.calls[1].start_ns, 4000);
  EXPECT_EQ(r.calls[1].end_ns, 6000);
  EXPECT_EQ(r.ops[0].start_ns, 7000);
  EXPECT_NEAR(static_cast<double>(r.calls[2].end_ns), 7000 + KernelNs(p, 0, 1410) + 2000, 1);
}

// A background thread (a poller: cpu 5 µs, cudaStreamQuery [2 µs]) repeats until the steps end and
// does not hold the run: the main thread's 3 iterations of 10 µs end it at 30 µs, after 4 polls
// (at 5, 12, 19 and 26 µs; the next would start at 33 µs), not after 3 as a step-bound thread.
TEST(Engine, BackgroundThreadRepeatsUntilTheStepsEnd) {
  Program p = OneRank({Cpu(10000)});
  p.ranks[0].threads.resize(2);
  p.ranks[0].threads[1].code = {Cpu(5000), Make(Op::kStreamQuery, 0)};
  p.ranks[0].threads[1].background = true;
  std::string err;
  ASSERT_TRUE(Validate(p, &err)) << err;
  Engine e(p, Exact(3));
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_EQ(r.iterations.back().end_ns, 30000);
  ASSERT_EQ(r.calls.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.calls[i].start_ns, 5000 + 7000 * static_cast<int64_t>(i));
}

// What a background thread may not be: thread 0 (it marks the iterations), a user of host flags
// or collectives, or code without CPU time (it would repeat forever at one instant).
TEST(Engine, BackgroundThreadsAreChecked) {
  Program p = OneRank({Cpu(10000)});
  p.ranks[0].threads[0].background = true;
  std::string err;
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("thread 0 marks the iterations"), std::string::npos) << err;
  p.ranks[0].threads[0].background = false;
  p.ranks[0].flags = 1;
  p.ranks[0].threads[0].code = {Cpu(10000), Flag(Op::kWait, 0)};
  p.ranks[0].threads.resize(2);
  p.ranks[0].threads[1].code = {Cpu(5000), Flag(Op::kSignal, 0)};
  p.ranks[0].threads[1].background = true;
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("background thread 1: signal"), std::string::npos) << err;
  p.ranks[0].flags = 0;
  p.ranks[0].threads[0].code = {Cpu(10000)};
  p.ranks[0].threads[1].code = {Make(Op::kStreamQuery, 0)};
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("background thread 1: its code takes no CPU time"), std::string::npos) << err;
}

// Two threads hand work to each other through host flags, 3 iterations:
//   thread 0: cpu 10 µs, signal 0, wait 1
//   thread 1: wait 0, launch [4 µs], cpu 6 µs, signal 1
// Thread 1 launches when thread 0 signals (10 µs), signals back at 10 + 4 + 6 = 20 µs, and thread
// 0's next iteration starts then: iterations at 0, 20, 40 µs, launches at 10, 30, 50 µs. The flags
// cost nothing and leave no call in the trace.
TEST(Engine, HostFlagsHandWorkBetweenThreads) {
  Program p = OneRank({Cpu(10000), Flag(Op::kSignal, 0), Flag(Op::kWait, 1)});
  p.ranks[0].flags = 2;
  p.ranks[0].threads.resize(2);
  p.ranks[0].threads[1].code = {Flag(Op::kWait, 0), Launch(1), Cpu(6000), Flag(Op::kSignal, 1)};
  std::string err;
  ASSERT_TRUE(Validate(p, &err)) << err;
  Engine e(p, Exact(3));
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_EQ(e.iteration_starts(), (std::vector<double>{0, 20000, 40000}));
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.calls.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.calls[i].thread, 1u);
    EXPECT_EQ(r.calls[i].start_ns, 10000 + 20000 * static_cast<int64_t>(i));
    EXPECT_EQ(r.calls[i].end_ns, 14000 + 20000 * static_cast<int64_t>(i));
  }
}

// A signal given before anyone waits is kept: thread 1 reaches its wait at 5 µs, after thread 0
// signalled at 0, and launches at once.
TEST(Engine, HostFlagSignalIsKeptForALaterWait) {
  Program p = OneRank({Flag(Op::kSignal, 0), Cpu(1000)});
  p.ranks[0].flags = 1;
  p.ranks[0].threads.resize(2);
  p.ranks[0].threads[1].code = {Cpu(5000), Flag(Op::kWait, 0), Launch(1)};
  Engine e(p, Exact());
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].start_ns, 5000);
}

// Flags are checked: in range, and each signal matched by one wait per iteration. Two threads
// that each wait for the other's signal first deadlock, and the engine says on what.
TEST(Engine, HostFlagsAreCheckedAndCrossedWaitsDeadlock) {
  Program p = OneRank({Flag(Op::kSignal, 1), Flag(Op::kWait, 0)});
  p.ranks[0].flags = 1;
  std::string err;
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("rank 0 thread 0 instr 0 (signal): flag 1 out of range (1 flags)"), std::string::npos) << err;
  p.ranks[0].threads[0].code = {Flag(Op::kSignal, 0), Flag(Op::kWait, 0), Flag(Op::kWait, 0)};
  EXPECT_FALSE(Validate(p, &err));
  EXPECT_NE(err.find("rank 0: flag 0 is signalled 1 times per iteration and awaited 2 times"), std::string::npos)
      << err;
  p.ranks[0].flags = 2;
  p.ranks[0].threads[0].code = {Flag(Op::kWait, 0), Flag(Op::kSignal, 1)};
  p.ranks[0].threads.resize(2);
  p.ranks[0].threads[1].code = {Flag(Op::kWait, 1), Flag(Op::kSignal, 0)};
  ASSERT_TRUE(Validate(p, &err)) << err;
  Engine e(p, Exact());
  EXPECT_FALSE(e.Run(&err));
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 0 thread 1 blocked at instruction 0 (waits for host flag 1)"), std::string::npos) << err;
}

TEST(Engine, ConcurrentKernelsShareTheGpu) {
  Program p = OneRank({Launch(0, 0), Launch(0, 1), Make(Op::kDeviceSync)}, 2);
  Engine e(p, Exact());
  Uncapped(e);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.ops.size(), 2u);
  double t = KernelNs(p, 0, 1410);
  // First starts at 7 µs, second at 11 µs: 4 µs alone, then both at half speed.
  // First ends at 7 + 4 + 2(t - 4) µs; the second then finishes its rest alone.
  double first_end = 7000 + 4000 + 2 * (t - 4000);
  EXPECT_NEAR(static_cast<double>(r.ops[0].end_ns), first_end, 2);
  double second_done_before = (first_end - 11000) / 2;  // work (ns at full speed) done while shared
  EXPECT_NEAR(static_cast<double>(r.ops[1].end_ns), first_end + (t - second_done_before), 2);
}

// cudaEventRecord after the GEMM on stream 0, cudaStreamWaitEvent on stream 1: the elementwise
// kernel on stream 1 starts only when the GEMM is done; the sync record names the event.
TEST(Engine, EventOrdersStreams) {
  Program p = OneRank(
      {Launch(0, 0), Make(Op::kRecord, 0, 0), Make(Op::kWaitEvent, 1, 0), Launch(1, 1), Make(Op::kDeviceSync)}, 2, 1);
  Engine e(p, Exact());
  Uncapped(e);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[1].start_ns, r.ops[0].end_ns);
  const SyncRecord* wait = nullptr;
  for (const SyncRecord& s : r.syncs)
    if (s.kind == SyncKind::kStreamWaitEvent) wait = &s;
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->stream, 8);          // local stream 1
  EXPECT_EQ(wait->wait_on_stream, 7);  // local stream 0
  EXPECT_EQ(wait->record_correlation, r.calls[1].correlation);
}

// A device sync right after a stream wait (the wait marker last on its stream) returns once the
// marker passes.
TEST(Engine, DeviceSyncAfterTrailingWait) {
  Program p = OneRank({Launch(0, 0), Make(Op::kRecord, 0, 0), Make(Op::kWaitEvent, 1, 0), Make(Op::kDeviceSync)}, 2, 1);
  Engine e(p, Exact());
  Uncapped(e);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  EXPECT_NEAR(static_cast<double>(r.calls.back().end_ns), static_cast<double>(r.ops[0].end_ns) + 2000, 1);
}

// A clock change takes effect 5-15 ms later and then slows the GEMMs by the model's factor.
TEST(Engine, LockedClockSlowsComputeAfterLatency) {
  Program p = OneRank(LaunchesThenSync(0, 200));
  Engine e(p, Exact());
  Uncapped(e);
  e.SetLockedClock(0, 705);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const RankTrace& r = e.trace().ranks[0];
  double fast = KernelNs(p, 0, 1410), slow = KernelNs(p, 0, 705);
  ASSERT_GT(slow, 1.8 * fast);
  int at_fast = 0, at_slow = 0;
  for (const GpuOp& o : r.ops) {
    double d = static_cast<double>(o.end_ns - o.start_ns);
    if (std::fabs(d - fast) < 2) {
      ++at_fast;
      EXPECT_LT(o.start_ns, 15'000'000);  // only before the change can have applied
    }
    if (std::fabs(d - slow) < 2) {
      ++at_slow;
      EXPECT_GT(o.end_ns, 5'000'000);
    }
  }
  EXPECT_GT(at_fast, 0);
  EXPECT_GT(at_slow, 100);
  EXPECT_EQ(e.ClockMhz(0), 705);
}

// Clock commands land in the order they were issued, whatever latency each draws: "900 MHz at
// 20 ms, then 1200 MHz at 21 ms" leaves the GPU at 1200 MHz for every seed.
TEST(Engine, LastClockCommandWins) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    Program p = OneRank(LaunchesThenSync(1, 1000));
    EngineOptions o = Exact();
    o.seed = seed;
    Engine e(p, o);
    e.At(20e6, [&](double) { e.SetLockedClock(0, 900); });
    e.At(21e6, [&](double) { e.SetLockedClock(0, 1200); });
    double at_end = 0;
    e.At(60e6, [&](double) { at_end = e.ClockMhz(0); });
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    ASSERT_GT(e.end_ns(), 60e6);
    EXPECT_EQ(at_end, 1200);
  }
}

// A memory clock command lands after the DVFS latency and slows streaming kernels from then on;
// a reset of a memory clock nobody locked changes nothing, not even the run's random latencies.
TEST(Engine, MemoryClockSlowsStreamingKernelsAfterLatency) {
  Program p = OneRank(LaunchesThenSync(1, 400));
  p.device = "RTX3080Ti";
  const DeviceSpec& ti = *FindDevice(p.device);
  Engine e(p, Exact());
  EXPECT_EQ(e.SupportedMemoryClocks(0), ti.mem_clocks_mhz);
  e.SetMemoryClock(0, 5200);  // not listed: the highest listed below it
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_EQ(e.MemoryClockMhz(0), 5001);
  const double fast = EvaluateKernel(ti, p.kernels[1].traits, ti.default_sm_clock_mhz).time_s * 1e9;
  const double slow = EvaluateKernel(ti, p.kernels[1].traits, ti.default_sm_clock_mhz, 5001).time_s * 1e9;
  ASSERT_GT(slow, 1.5 * fast);
  int at_fast = 0, at_slow = 0;
  for (const GpuOp& o : e.trace().ranks[0].ops) {
    const double d = static_cast<double>(o.end_ns - o.start_ns);
    if (std::fabs(d - fast) < 2) {
      ++at_fast;
      EXPECT_LT(o.start_ns, 15'000'000);
    }
    if (std::fabs(d - slow) < 2) ++at_slow;
  }
  EXPECT_GT(at_fast, 0);
  EXPECT_GT(at_slow, 300);

  Engine plain(p, Exact()), reset(p, Exact());
  reset.At(1e6, [&](double) { reset.ResetMemoryClock(0); });
  plain.SetLockedClock(0, 1200);
  reset.SetLockedClock(0, 1200);
  ASSERT_TRUE(plain.Run(&err)) << err;
  ASSERT_TRUE(reset.Run(&err)) << err;
  EXPECT_EQ(plain.end_ns(), reset.end_ns());
  EXPECT_EQ(plain.EnergyCounterJ(0), reset.EnergyCounterJ(0));
}

// A power limit below the GEMM's draw at the maximum clock lowers the clock. The controller acts on
// 100 ms windows, so the run lasts several of them (it used to be 12 ms, when the cap was applied
// per kernel at once).
TEST(Engine, PowerLimitThrottles) {
  Program p = OneRank(LaunchesThenSync(0, 2000));
  const DeviceSpec& spec = *FindDevice(kA100);
  double draw = EvaluateKernel(spec, p.kernels[0].traits, 1410).power_w;
  Engine e(p, Exact());
  e.SetPowerLimit(0, std::max(spec.power_limit_min_w, draw * 0.7));
  double seen = 1e9;
  e.Every(1, [&](double) { seen = std::min(seen, e.ClockMhz(0)); });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_LT(seen, 1410);
  EXPECT_LE(EvaluateKernel(spec, p.kernels[0].traits, seen).power_w, e.PowerLimit(0) + 1e-9);
}

// The power controller acts on power averaged over its window and moves the clock: under a limit
// below the draw, GEMMs alternating with elementwise kernels settle at one clock (within a couple
// of bins), the average power stays near the limit, and the elementwise kernels between GEMMs do
// not run at full clock (the cap is not a per-kernel choice).
TEST(Engine, PowerCapIsAControlLoopOnAveragePower) {
  std::vector<Instr> code;
  for (int i = 0; i < 5000; ++i) {
    code.push_back(Launch(0));
    code.push_back(Launch(1));
  }
  code.push_back(Make(Op::kStreamSync, 0));
  Program p = OneRank(code);
  Engine e(p, Exact());
  const double limit = 300;
  e.SetPowerLimit(0, limit);
  std::vector<double> settled;
  double t0 = 0, e0 = 0, t1 = 0, e1 = 0;
  e.Every(1, [&](double now) {
    if (now < 1e9) return;
    settled.push_back(e.ClockMhz(0));
    if (t0 == 0) t0 = now, e0 = e.EnergyCounterJ(0);
    t1 = now, e1 = e.EnergyCounterJ(0);
  });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  ASSERT_GT(e.end_ns(), 1.5e9);
  ASSERT_GT(settled.size(), 400u);
  const auto [lo, hi] = std::minmax_element(settled.begin(), settled.end());
  EXPECT_LT(*hi, 1410);  // at every sample, elementwise kernels included
  EXPECT_LE(*hi - *lo, 45);
  const double avg_w = (e1 - e0) / ((t1 - t0) * 1e-9);
  EXPECT_NEAR(avg_w, limit, 0.05 * limit);
}

// A short lock to a low clock at the end of a power-control window that drew too much must not
// drag the controller's ceiling down with it: the excess was drawn at the higher clock, and a
// ceiling stepped down from the locked 210 MHz would take seconds (15 MHz per 100 ms window) to
// climb back. The controller steps every 100 ms from 0; the limit is set at 990 ms, so the window
// ending at 1000 ms drew more than it (at 1410 MHz) while the lock (from 980 ms, landing 5-15 ms
// later) holds 210 MHz at the step. Within 0.3 s of the unlock the clock is back within a
// few steps of where the cap held it before the lock.
TEST(Engine, PowerCapCeilingSurvivesAShortLowLock) {
  Program p = OneRank(LaunchesThenSync(0, 20000));
  const DeviceSpec& spec = *FindDevice(kA100);
  const double draw = EvaluateKernel(spec, p.kernels[0].traits, 1410).power_w;
  Engine e(p, Exact());
  double after = 0;
  e.At(990e6, [&](double) { e.SetPowerLimit(0, std::max(spec.power_limit_min_w, draw * 0.85)); });
  e.At(980e6, [&](double) { e.SetLockedClock(0, 210); });
  e.At(1010e6, [&](double) { e.SetLockedClock(0, 1410); });
  std::vector<double> late;
  e.Every(1, [&](double now) {
    if (now > 1400e6 && now < 1500e6) late.push_back(e.ClockMhz(0));
  });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  ASSERT_GT(e.end_ns(), 1.6e9);
  ASSERT_FALSE(late.empty());
  after = *std::min_element(late.begin(), late.end());

  EXPECT_GT(after, 1000);
  EXPECT_LT(after, 1410);  // still capped
}

// Without a lock the default governor keeps the clock up through a short wait and drops it after a
// longer idle period; the next kernel finds it low. A locked clock stays where it was set.
TEST(Engine, DefaultGovernorDropsTheClockWhenIdle) {
  for (bool lock : {false, true}) {
    SCOPED_TRACE(lock);
    Program p = OneRank({Launch(0), Make(Op::kStreamSync, 0), Cpu(50e6), Launch(0), Make(Op::kStreamSync, 0), Cpu(1e9),
                         Launch(0), Make(Op::kStreamSync, 0)});
    Engine e(p, Exact());
    if (lock) e.SetLockedClock(0, 1200);
    double short_wait = 0, long_wait = 0;
    e.At(40e6, [&](double) { short_wait = e.ClockMhz(0); });
    e.At(700e6, [&](double) { long_wait = e.ClockMhz(0); });
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    const std::vector<GpuOp>& ops = e.trace().ranks[0].ops;
    ASSERT_EQ(ops.size(), 3u);
    const auto dur = [&](size_t i) { return static_cast<double>(ops[i].end_ns - ops[i].start_ns); };
    if (!lock) {
      EXPECT_EQ(short_wait, 1410);
      EXPECT_EQ(long_wait, 210);
      EXPECT_NEAR(dur(1), dur(0), 2);
      EXPECT_GT(dur(2), 2 * dur(1));  // started at the idle clock
    } else {
      EXPECT_EQ(short_wait, 1200);
      EXPECT_EQ(long_wait, 1200);
      EXPECT_NEAR(dur(2), dur(1), 2);
    }
  }
}

// NVML's power reading per device: on the A100 (GA100) the latest sensor sample, which averages
// only the last 25 ms of every 100 ms, so bursts of GEMMs between idle gaps read anywhere from
// idle to full power; on the H100 the mean of a second of samples, which stays near the average.
TEST(Engine, PowerReadingFollowsNvmlPerDevice) {
  for (const char* device : {kA100, "H100-SXM"}) {
    SCOPED_TRACE(device);
    std::vector<Instr> code;
    for (int k = 0; k < 30; ++k) {
      for (int i = 0; i < 200; ++i) code.push_back(Launch(0));
      code.push_back(Make(Op::kStreamSync, 0));
      code.push_back(Cpu(60e6));
    }
    Program p = OneRank(code);
    p.device = device;
    Engine e(p, Exact());
    Uncapped(e);
    std::vector<double> readings;
    e.Every(5, [&](double now) {
      if (now > 1.2e9) readings.push_back(e.PowerW(0));
    });
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    ASSERT_GT(readings.size(), 150u);
    const auto [lo, hi] = std::minmax_element(readings.begin(), readings.end());
    const DeviceSpec& spec = *FindDevice(device);
    const double busy = EvaluateKernel(spec, p.kernels[0].traits, spec.default_sm_clock_mhz).power_w;
    const double idle = IdlePower(spec, spec.default_sm_clock_mhz);
    if (std::string(device) == kA100) {
      EXPECT_LT(*lo, idle + 0.2 * (busy - idle));  // a window that fell in an idle gap
      EXPECT_GT(*hi, busy - 0.2 * (busy - idle));  // one that fell in a burst
    } else {
      EXPECT_LT(*hi - *lo, 0.25 * (busy - idle));  // a one-second average
    }
  }
}

// The energy counter moves only at sensor updates (every 100 ms) and agrees with sampled power.
TEST(Engine, EnergyCounterUpdatesEvery100Ms) {
  Program p = OneRank(LaunchesThenSync(0, 2000));
  Engine e(p, Exact());
  Uncapped(e);
  std::vector<double> counter;
  double max_power = 0;
  e.Every(1, [&](double) {
    counter.push_back(e.EnergyCounterJ(0));
    max_power = std::max(max_power, e.PowerW(0));
  });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_NEAR(e.EnergyCounterPeriodS(0), 0.1, 1e-12);
  const double draw = EvaluateKernel(*FindDevice(kA100), p.kernels[0].traits, 1410).power_w;
  EXPECT_NEAR(max_power, draw, 0.02 * draw);
  int changes = 0;
  for (size_t i = 1; i < counter.size(); ++i) changes += counter[i] != counter[i - 1];
  const double updates = static_cast<double>(counter.size()) / 100;  // read every 1 ms
  EXPECT_NEAR(changes, updates, 1.5);
}

// Utilisation is the share of the sample period with a kernel resident: an NCCL kernel waiting for
// a late peer counts as busy (it occupies the GPU), a long host-to-device copy does not.
TEST(Engine, UtilizationCountsResidentKernelsNotCopies) {
  Program p = OneRank({});
  p.kernels.push_back({"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(64e6, 2, 2)});
  p.groups.push_back({{0, 1}, CollectiveKind::kAllReduce, "0"});
  p.ranks.resize(2);
  Instr copy = Make(Op::kCopy, 0);
  copy.bytes = 24e9 * 0.6;  // 600 ms over the host link
  copy.dir = CopyDir::kHostToDevice;
  copy.pinned = true;
  p.ranks[0].threads[0].code = {Collective(2, 0, 64e6), Make(Op::kDeviceSync), copy, Make(Op::kDeviceSync)};
  p.ranks[1].threads.resize(1);
  p.ranks[1].threads[0].code = {Cpu(600e6), Collective(2, 0, 64e6), Make(Op::kDeviceSync)};
  p.ranks[0].streams = p.ranks[1].streams = 2;
  Engine e(p, Exact());
  double waiting = -1, copying = -1;
  e.At(450e6, [&](double) { waiting = e.Utilization(0); });
  e.At(1050e6, [&](double) { copying = e.Utilization(0); });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  EXPECT_NEAR(waiting, 1.0, 1e-6);
  EXPECT_NEAR(copying, 0.0, 1e-6);
}

// Rank 1 arrives 200 µs late at the all-reduce: both kernels end together, after the last
// arrival plus the transfer time.
TEST(Engine, CollectiveRendezvous) {
  Program p = OneRank({});
  p.kernels.push_back({"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(64e6, 2, 2)});
  p.groups.push_back({{0, 1}, CollectiveKind::kAllReduce, "0"});
  p.ranks.resize(2);
  p.ranks[0].threads[0].code = {Collective(2, 0, 64e6), Make(Op::kDeviceSync)};
  p.ranks[1].threads.resize(1);
  p.ranks[1].threads[0].code = {Cpu(200000), Collective(2, 0, 64e6), Make(Op::kDeviceSync)};
  p.ranks[0].streams = p.ranks[1].streams = 2;
  Engine e(p, Exact());
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const GpuOp& a = e.trace().ranks[0].ops[0];
  const GpuOp& b = e.trace().ranks[1].ops[0];
  EXPECT_EQ(a.start_ns, 7000);
  EXPECT_EQ(b.start_ns, 207000);
  EXPECT_EQ(a.end_ns, b.end_ns);
  double transfer = 64e6 * 2 * (2 - 1) / 2 / 200e9 * 1e9 + 8000;
  EXPECT_NEAR(static_cast<double>(b.end_ns - b.start_ns), transfer, 2);
  EXPECT_TRUE(a.is_comm);
  EXPECT_EQ(e.trace().names.Get(a.process_group), "0");
}

// An NCCL kernel that transfers holds some SMs: GEMMs overlapped with it run 1/0.9 as long as
// alone (the 5-15 % published for overlapped GEMMs), and their power above idle scales with it.
TEST(Engine, NcclKernelsSlowOverlappedCompute) {
  auto gemm_ns = [](bool with_collective) {
    Program p = OneRank({});
    p.kernels.push_back({"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(2e9, 2, 2)});
    p.groups.push_back({{0, 1}, CollectiveKind::kAllReduce, "0"});
    p.ranks.resize(2);
    std::vector<Instr> code;
    if (with_collective) code.push_back(Collective(2, 0, 2e9));  // ~10 ms on the link
    for (int i = 0; i < 20; ++i) code.push_back(Launch(0, 0));
    code.push_back(Make(Op::kDeviceSync));
    p.ranks[0].threads[0].code = code;
    p.ranks[1].threads.resize(1);
    p.ranks[1].threads[0].code = {Cpu(1000)};
    if (with_collective) p.ranks[1].threads[0].code = {Collective(2, 0, 2e9), Make(Op::kDeviceSync)};
    p.ranks[0].streams = p.ranks[1].streams = 2;
    Engine e(p, Exact());
    Uncapped(e);
    std::string err;
    EXPECT_TRUE(e.Run(&err)) << err;
    double total = 0, comm_end = 0;
    for (const GpuOp& op : e.trace().ranks[0].ops)
      if (op.is_comm) comm_end = static_cast<double>(op.end_ns);
    for (const GpuOp& op : e.trace().ranks[0].ops)
      if (!op.is_comm) {
        EXPECT_TRUE(!with_collective || op.end_ns < comm_end);  // every GEMM overlapped
        total += static_cast<double>(op.end_ns - op.start_ns);
      }
    return total;
  };
  EXPECT_NEAR(gemm_ns(true) / gemm_ns(false), 1 / 0.9, 1e-3);
}

// NCCL's copy loop runs at the SM clock: at or above half the boost clock the link bounds the
// transfer; below it the transfer slows as (boost/2)/f.
TEST(Engine, NcclSlowsBelowHalfTheBoostClock) {
  for (int mhz : {1005, 420}) {
    SCOPED_TRACE(mhz);
    Program p = OneRank({});
    p.kernels.push_back({"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(64e6, 2, 2)});
    p.groups.push_back({{0, 1}, CollectiveKind::kAllReduce, "0"});
    p.ranks.resize(2);
    p.ranks[0].threads[0].code = {Cpu(30e6), Collective(2, 0, 64e6), Make(Op::kDeviceSync)};
    p.ranks[1].threads.resize(1);
    p.ranks[1].threads[0].code = {Cpu(30e6), Collective(2, 0, 64e6), Make(Op::kDeviceSync)};
    p.ranks[0].streams = p.ranks[1].streams = 2;
    Engine e(p, Exact());
    for (int g = 0; g < 2; ++g) e.SetLockedClock(g, mhz);
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    const GpuOp& a = e.trace().ranks[0].ops[0];
    const double link_ns = 64e6 * 2 * (2 - 1) / 2 / 200e9 * 1e9;
    const double slow = std::max(1.0, 705.0 / mhz);
    EXPECT_NEAR(static_cast<double>(a.end_ns - a.start_ns), link_ns * slow + 8000, 2);
  }
}

TEST(Engine, MismatchedCollectivesDeadlock) {
  Program p = OneRank({});
  p.kernels.push_back({"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(1e6, 2, 2)});
  p.groups.push_back({{0, 1}, CollectiveKind::kAllReduce, "0"});
  p.ranks.resize(2);
  p.ranks[0].threads[0].code = {Collective(2, 0, 1e6, 0), Make(Op::kDeviceSync)};
  p.ranks[1].threads.resize(1);
  p.ranks[1].threads[0].code = {Make(Op::kDeviceSync)};  // never joins
  Engine e(p, Exact());
  std::string err;
  EXPECT_FALSE(e.Run(&err));
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("collective group 0"), std::string::npos) << err;
}

// Range profiling: the counters of the kernels in the range, derived from their hidden work with
// about 1 % noise: a GEMM shows tensor instructions, an elementwise kernel DRAM bytes and no
// tensor work.
TEST(Engine, CountersOverAKernelRange) {
  auto profile = [](int kernel, uint64_t seed) {
    Program p = OneRank(LaunchesThenSync(kernel, 10));
    EngineOptions o = Exact();
    o.seed = seed;
    Engine e(p, o);
    Uncapped(e);
    e.StartCounters(0);
    std::string err;
    EXPECT_TRUE(e.Run(&err)) << err;
    return std::make_pair(e.StopCounters(0), p.kernels[static_cast<size_t>(kernel)].traits);
  };
  auto [gemm, gt] = profile(0, 1);
  EXPECT_EQ(gemm.kernels, 10);
  EXPECT_NEAR(gemm.inst_tensor, 10 * gt.tensor_flop / 4096, 0.03 * 10 * gt.tensor_flop / 4096);
  EXPECT_GT(gemm.sm_cycles_active, 0);
  auto [ew, et] = profile(1, 1);
  EXPECT_EQ(ew.inst_tensor, 0);
  double bytes = 10 * (et.dram_read_bytes + et.dram_write_bytes);
  EXPECT_NEAR(ew.dram_read_bytes + ew.dram_write_bytes, bytes, 0.03 * bytes);
  auto [gemm2, unused] = profile(0, 2);
  EXPECT_NE(gemm2.inst_tensor, gemm.inst_tensor);  // measurement noise
  EXPECT_NEAR(gemm2.inst_tensor, gemm.inst_tensor, 0.03 * gemm.inst_tensor);
}

// Activity windows as NVML's GPM reports them (H100; the A100 has none): the work of the kernels
// that ended in the window over what the window's elapsed SM cycles at the locked clock, or its
// length at the DRAM's peak, could have done; a window under 100 ms is refused and stays open.
TEST(Engine, ActivityWindowsAreWorkOverTheWindowsPeak) {
  std::vector<Instr> code = {Cpu(30e6)};
  for (int i = 0; i < 20; ++i) code.push_back(Launch(0)), code.push_back(Launch(1));
  code.push_back(Make(Op::kStreamSync, 0));
  code.push_back(Cpu(120e6));  // idle: in the window, but no work
  Program p = OneRank(code);
  p.device = "H100-SXM";
  Engine e(p, Exact());
  SimGpuControl gpus(&e);
  const DeviceSpec& h100 = e.Spec(0);
  std::string err;
  ASSERT_TRUE(gpus.SetPowerLimit(0, h100.power_limit_max_w, &err));
  ASSERT_TRUE(gpus.SetLockedClock(0, 1500, &err));
  ASSERT_TRUE(gpus.Offers(Reading::kActivity));
  EXPECT_FALSE(gpus.ReadActivity(0).has_value()) << "no window open";
  const double start_ns = 20e6;  // the lock has landed (5-15 ms)
  e.At(start_ns, [&](double) { EXPECT_TRUE(gpus.StartActivity(0)); });
  e.At(start_ns + 90e6, [&](double) { EXPECT_FALSE(gpus.ReadActivity(0).has_value()) << "a window under 100 ms"; });
  ASSERT_TRUE(e.Run(&err)) << err;
  const std::optional<Activity> a = gpus.ReadActivity(0);
  ASSERT_TRUE(a.has_value());
  const double window_s = (e.now_ns() - start_ns) * 1e-9, cycles = window_s * 1500e6 * h100.sm_count;
  const KernelTraits &gemm = p.kernels[0].traits, &ew = p.kernels[1].traits;
  EXPECT_NEAR(a->tensor_util, 20 * gemm.tensor_flop / (cycles * h100.tensor_flop_per_sm_cycle), 0.03 * a->tensor_util);
  const double bytes = 20 * (gemm.dram_read_bytes + gemm.dram_write_bytes + ew.dram_read_bytes + ew.dram_write_bytes);
  EXPECT_NEAR(a->dram_bw_util, bytes / (window_s * h100.mem_bandwidth_bps), 0.03 * a->dram_bw_util);
  double busy_ns = 0;  // the SMs are active at most while a kernel runs
  for (const GpuOp& op : e.trace().ranks[0].ops) busy_ns += static_cast<double>(op.end_ns - op.start_ns);
  EXPECT_LE(a->sm_util, 1.03 * busy_ns * 1e-9 / window_s);
  EXPECT_GT(a->sm_util, 0.3 * busy_ns * 1e-9 / window_s);
  EXPECT_LE(a->sm_occupancy, a->sm_util);
  EXPECT_EQ(a->fp64_util, 0);

  Program a100 = OneRank(LaunchesThenSync(0, 1));
  Engine e2(a100, Exact());
  SimGpuControl no_gpm(&e2);
  EXPECT_FALSE(no_gpm.Offers(Reading::kActivity));
  EXPECT_FALSE(no_gpm.StartActivity(0));
}

// Counter windows, as a profiler inside the job reads them (GPOEO's features): the metrics table
// summed over the kernels that ended in each window, on every simulated device, consecutive
// windows adding up to the whole.
TEST(Engine, CounterWindowsSumTheKernelsThatEndedInThem) {
  std::vector<Instr> code = {Cpu(30e6)};
  for (int i = 0; i < 20; ++i) code.push_back(Launch(0)), code.push_back(Launch(1));
  code.push_back(Make(Op::kStreamSync, 0));
  const Program p = OneRank(code);
  Engine e(p, Exact());
  SimGpuControl gpus(&e);
  ASSERT_TRUE(gpus.Offers(Reading::kCounters));
  EXPECT_FALSE(gpus.ReadCounters(0).has_value()) << "no window open";
  PackMetrics sum;
  e.At(20e6, [&](double) { EXPECT_TRUE(gpus.StartCounters(0)); });  // before the first launch
  for (double t = 60e6; t < 400e6; t += 40e6)
    e.At(t, [&](double) {
      const std::optional<PackMetrics> k = gpus.ReadCounters(0);
      ASSERT_TRUE(k.has_value());
      sum.Add(*k);
    });
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  sum.Add(*gpus.ReadCounters(0));
  EXPECT_EQ(sum.kernels, 40);
  const KernelTraits &gemm = p.kernels[0].traits, &ew = p.kernels[1].traits;
  EXPECT_NEAR(sum.v[kInstTensor], 20 * gemm.tensor_flop / sim::kFlopPerTensorInst, 0.03 * sum.v[kInstTensor]);
  const double read = 20 * (gemm.dram_read_bytes + ew.dram_read_bytes);
  EXPECT_NEAR(sum.v[kDramReadBytes], read, 0.03 * read);
  EXPECT_FALSE(gpus.StartCounters(1)) << "no GPU 1";
}

// Same seed, same run; another seed, another run.
TEST(Engine, SeededNoiseIsDeterministic) {
  std::vector<Instr> code;
  for (int i = 0; i < 50; ++i) code.push_back(Launch(i % 2)), code.push_back(Cpu(3000));
  code.push_back(Make(Op::kDeviceSync));
  Program p = OneRank(code);
  auto run = [&](uint64_t seed) {
    EngineOptions o;
    o.iterations = 3;
    o.seed = seed;
    Engine e(p, o);
    std::string err;
    EXPECT_TRUE(e.Run(&err)) << err;
    std::vector<int64_t> ends;
    for (const GpuOp& op : e.trace().ranks[0].ops) ends.push_back(op.end_ns);
    return ends;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

// Per-GPU variation belongs to the cluster (gpu_seed), not the run: the same GPUs whatever the run's
// seed, others with another gpu_seed, a few percent of power between GPUs and about 0.5 % between
// runs; noise 0 turns it off.
TEST(Engine, GpuAndRunVariation) {
  Program p = OneRank({Launch(0), Make(Op::kStreamSync, 0)});
  auto factors = [&](uint64_t seed, uint64_t gpu_seed, double noise = 0.01) {
    EngineOptions o;
    o.seed = seed;
    o.gpu_seed = gpu_seed;
    o.noise = noise;
    Engine e(p, o);
    return std::make_pair(e.TimeFactor(0), e.PowerFactor(0));
  };
  EXPECT_EQ(factors(3, 4), factors(3, 4));
  EXPECT_EQ(factors(3, 4, 0), std::make_pair(1.0, 1.0));
  auto stdev = [](const std::vector<double>& v) {
    double m = 0, q = 0;
    for (double x : v) m += x / static_cast<double>(v.size());
    for (double x : v) q += (x - m) * (x - m) / static_cast<double>(v.size() - 1);
    return std::sqrt(q) / m;
  };
  std::vector<double> run_power, run_time, gpu_power, gpu_time;
  for (uint64_t i = 0; i < 400; ++i) {
    run_time.push_back(factors(i, 7).first), run_power.push_back(factors(i, 7).second);
    gpu_time.push_back(factors(7, i).first), gpu_power.push_back(factors(7, i).second);
  }
  const Variation v;
  EXPECT_NEAR(stdev(run_time), v.run_time, 0.2 * v.run_time);
  EXPECT_NEAR(stdev(run_power), v.run_power, 0.2 * v.run_power);
  EXPECT_NEAR(stdev(gpu_power), v.gpu_power, 0.2 * v.gpu_power);
  EXPECT_NEAR(stdev(gpu_time), v.gpu_time, 0.2 * v.gpu_time);
}

// Range profiling replays each kernel of a range once per pass: the kernel occupies the GPU for
// all of them, its counters are one pass's, and the added time is reported.
TEST(Engine, ProfiledKernelsRunOncePerPass) {
  Program p = OneRank({Launch(1), Launch(1), Launch(1), Make(Op::kStreamSync, 0)});
  EngineOptions o;
  o.iterations = 1;
  Engine e(p, o);
  Uncapped(e);
  e.ProfileRanges(0, {{1, 1}});
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  const std::vector<GpuOp>& ops = e.trace().ranks[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  const double plain = static_cast<double>(ops[0].end_ns - ops[0].start_ns);
  const double profiled = static_cast<double>(ops[1].end_ns - ops[1].start_ns);
  EXPECT_NEAR(profiled / plain, kRangeProfilerPasses, 0.05 * kRangeProfilerPasses);
  EXPECT_NEAR(static_cast<double>(ops[2].end_ns - ops[2].start_ns) / plain, 1, 0.05);
  EXPECT_NEAR(e.RangeCounters(0)[0].time_ns, profiled / kRangeProfilerPasses, 2);
  EXPECT_NEAR(e.ProfilingOverheadNs(0), profiled * (kRangeProfilerPasses - 1) / kRangeProfilerPasses, 2);
}

// Each kernel name draws its hidden factors once per kernel seed, uniformly within 1 ± spread:
// the same name and seed give the same factors, another seed others, spread 0 none.
TEST(Engine, HiddenFactorsPerNameAndSeed) {
  const double s = Variation().kernel;
  const HiddenFactors a = DrawHiddenFactors("ampere_sgemm_128x64_nn", 0, s);
  const HiddenFactors b = DrawHiddenFactors("ampere_sgemm_128x64_nn", 0, s);
  EXPECT_EQ(a.sm_time, b.sm_time);
  EXPECT_EQ(a.power, b.power);
  EXPECT_NE(a.sm_time, DrawHiddenFactors("ampere_sgemm_128x64_nn", 1, s).sm_time);
  EXPECT_EQ(DrawHiddenFactors("ampere_sgemm_128x64_nn", 0, 0).dram_time, 1);
  // Over many names: each within the spread, mean 1, standard deviation spread/√3 (uniform).
  std::vector<double> all;
  for (int i = 0; i < 600; ++i) {
    const HiddenFactors f = DrawHiddenFactors("kernel_" + std::to_string(i), 0, s);
    for (double x : {f.sm_time, f.dram_time, f.power}) {
      EXPECT_GE(x, 1 - s);
      EXPECT_LE(x, 1 + s);
      all.push_back(x);
    }
  }
  double m = 0, q = 0;
  for (double x : all) m += x / static_cast<double>(all.size());
  for (double x : all) q += (x - m) * (x - m) / static_cast<double>(all.size());
  EXPECT_NEAR(m, 1, 0.01);
  EXPECT_NEAR(std::sqrt(q), s / std::sqrt(3.0), 0.1 * s / std::sqrt(3.0));
}

// Two kernels with the same work and different names run for different times, as their names'
// factors say, while their counters agree (no counter reveals the factors); with noise 0 they run
// alike. A kernel with a measured time keeps it at the default clock and only its shape changes.
TEST(Engine, HiddenFactorsChangeTimeNotCounters) {
  Program p = OneRank({Launch(0), Launch(1), Make(Op::kStreamSync, 0)});
  p.kernels[1] = {"gemm_twin", p.kernels[0].traits};
  auto run = [&](double noise, uint64_t kernel_seed) {
    EngineOptions o;
    o.noise = noise;
    o.kernel_seed = kernel_seed;
    o.record_trace = true;
    Engine e(p, o);
    Uncapped(e);
    e.SetLockedClock(0, 1410);
    e.ProfileRanges(0, {{0, 0}, {1, 1}});
    std::string err;
    EXPECT_TRUE(e.Run(&err)) << err;
    return std::make_pair(e.trace().ranks[0].ops, e.RangeCounters(0));
  };
  const auto [ops0, counters0] = run(0, 0);
  EXPECT_NEAR(static_cast<double>(ops0[0].end_ns - ops0[0].start_ns),
              static_cast<double>(ops0[1].end_ns - ops0[1].start_ns), 1);
  for (uint64_t seed : {0, 1, 2}) {
    const auto [ops, counters] = run(0.01, seed);
    const double s = Variation().kernel;
    double expected[2];
    for (int k = 0; k < 2; ++k) {
      KernelTraits t = p.kernels[static_cast<size_t>(k)].traits;
      ApplyHiddenFactors(DrawHiddenFactors(p.kernels[static_cast<size_t>(k)].name, seed, s), &t);
      expected[k] = EvaluateKernel(*FindDevice(kA100), t, 1410).time_s * 1e9;
    }
    // Measured time ratio of the twins against the factors' (per-op noise 1 %).
    const double ratio =
        static_cast<double>(ops[1].end_ns - ops[1].start_ns) / static_cast<double>(ops[0].end_ns - ops[0].start_ns);
    EXPECT_NEAR(ratio, expected[1] / expected[0], 0.04) << "seed " << seed;
    EXPECT_NEAR(counters[1].inst_tensor / counters[0].inst_tensor, 1, 0.05);
    EXPECT_NEAR(counters[1].dram_read_bytes / counters[0].dram_read_bytes, 1, 0.05);
  }
  // Some seed makes the twins differ by more than the noise could.
  double widest = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    const HiddenFactors a = DrawHiddenFactors("gemm", seed, Variation().kernel);
    const HiddenFactors b = DrawHiddenFactors("gemm_twin", seed, Variation().kernel);
    widest = std::max(widest, std::abs(a.sm_time / b.sm_time - 1));
  }
  EXPECT_GT(widest, 0.08);

  // Measured: the time at 1410 MHz stays (within the per-op noise), the time at 705 MHz moves.
  Program m = OneRank({Launch(1), Make(Op::kStreamSync, 0)});
  const double measured_s = KernelNs(m, 1, 1410) * 1e-9;
  m.kernels[1].measured_s = measured_s;
  for (uint64_t seed : {0, 1, 2}) {
    KernelTraits t = m.kernels[1].traits;
    ApplyHiddenFactors(DrawHiddenFactors(m.kernels[1].name, seed, Variation().kernel), &t);
    ScaleToTime(*FindDevice(kA100), measured_s, 1410, &t);
    EXPECT_NEAR(EvaluateKernel(*FindDevice(kA100), t, 1410).time_s / measured_s, 1, 1e-3);
    EngineOptions o;
    o.kernel_seed = seed;
    Engine e(m, o);
    Uncapped(e);
    e.SetLockedClock(0, 1410);
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    const GpuOp& op = e.trace().ranks[0].ops[0];
    EXPECT_NEAR(static_cast<double>(op.end_ns - op.start_ns) * 1e-9 / measured_s, 1, 0.04) << "seed " << seed;
  }
}

// Iteration time and energy vary from run to run by about 0.5 % (the per-op noise alone averaged
// out to ~0.01 %).
TEST(Engine, RunToRunSpread) {
  std::vector<Instr> code;
  for (int i = 0; i < 40; ++i) code.push_back(Launch(i % 2)), code.push_back(Cpu(3000));
  code.push_back(Make(Op::kDeviceSync));
  Program p = OneRank(code);
  std::vector<double> times, energies;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    EngineOptions o;
    o.iterations = 3;
    o.seed = seed;
    o.telemetry_period_ms = 1;
    Engine e(p, o);
    Uncapped(e);
    std::string err;
    ASSERT_TRUE(e.Run(&err)) << err;
    times.push_back(e.end_ns());
    energies.push_back(e.EnergyCounterJ(0));
  }
  auto rel_stdev = [](const std::vector<double>& v) {
    double m = 0, q = 0;
    for (double x : v) m += x / static_cast<double>(v.size());
    for (double x : v) q += (x - m) * (x - m) / static_cast<double>(v.size() - 1);
    return std::sqrt(q) / m;
  };
  EXPECT_GT(rel_stdev(times), 0.002);
  EXPECT_LT(rel_stdev(times), 0.012);
  EXPECT_GT(rel_stdev(energies), 0.002);
  EXPECT_LT(rel_stdev(energies), 0.015);
}

// The simulator's trace goes through EMO's graph builder and replays within 1 %.
TEST(Engine, TraceReplaysThroughTheGraph) {
  std::vector<Instr> code;
  for (int i = 0; i < 30; ++i) {
    code.push_back(Launch(0, 0));
    code.push_back(Cpu(5000));
    if (i % 5 == 4) {
      code.push_back(Make(Op::kRecord, 0, 0));
      code.push_back(Make(Op::kWaitEvent, 1, 0));
      code.push_back(Launch(1, 1));
    }
  }
  code.push_back(Make(Op::kDeviceSync));
  Program p = OneRank(code, 2, 1);
  EngineOptions o;
  o.iterations = 4;
  Engine e(p, o);
  std::string err;
  ASSERT_TRUE(e.Run(&err)) << err;
  Graph g;
  BuildReport rep;
  ASSERT_TRUE(BuildGraph(e.trace(), &g, &rep, &err)) << err;
  EXPECT_EQ(rep.ranks[0].waits_inferred, 0);
  EXPECT_EQ(rep.ranks[0].waits_unresolved, 0);
  Analysis a = Analyze(e.trace(), g);
  EXPECT_LT(std::fabs(a.total.replay_error), 0.01);
  EXPECT_EQ(a.total.iterations, 4);
}

}  // namespace
}  // namespace emo::sim
