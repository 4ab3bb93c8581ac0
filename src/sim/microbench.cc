// microbench.cc — simulated microbenchmark kernels and the device that runs them.
#include "sim/microbench.h"

#include <algorithm>

#include "sim/sim_gpu_control.h"
#include "sim/sim_metric_source.h"

namespace emo::sim {

namespace {
constexpr double kMaxThreadsPerSm = 2048;  // 64 warps, the counters' full occupancy
constexpr double kLaunchGapNs = 5000;      // CPU time before each launch

// `count` launches of `kernel` on stream 0, each after kLaunchGapNs of CPU time.
void AddLaunches(int32_t kernel, int count, Thread* t) {
  for (int i = 0; i < count; ++i) {
    Instr gap;
    gap.op = Op::kCpu;
    gap.cpu_ns = kLaunchGapNs;
    t->code.push_back(gap);
    Instr launch;
    launch.op = Op::kLaunch;
    launch.stream = 0;
    launch.kernel = kernel;
    t->code.push_back(launch);
  }
}

// Rank 0's communication kernels, or its other kernels, as events recorded before and after each
// would time them.
void KernelSpans(const Engine& engine, bool comm, BenchRun* out) {
  out->launch_start_ns.clear();
  out->launch_end_ns.clear();
  for (const GpuOp& op : engine.trace().ranks[0].ops)
    if (op.kind == GpuOpKind::kKernel && op.is_comm == comm) {
      out->launch_start_ns.push_back(static_cast<double>(op.start_ns));
      out->launch_end_ns.push_back(static_cast<double>(op.end_ns));
    }
  std::sort(out->launch_start_ns.begin(), out->launch_start_ns.end());
  std::sort(out->launch_end_ns.begin(), out->launch_end_ns.end());
}

}  // namespace

KernelTraits MicrobenchTraits(const DeviceSpec& spec, Microbench b) {
  const MicrobenchDef& d = kMicrobenchTable[b];
  const double per_sm = static_cast<double>(d.threads_per_block) * d.blocks_per_sm;
  const double n = per_sm * spec.sm_count * d.trips;  // thread-trips
  KernelTraits k;
  k.int_ops = n * d.int_ops;
  k.fp32_flop = n * d.fp32_flop;
  k.fp64_flop = n * d.fp64_flop;
  k.sfu_ops = n * d.sfu_ops;
  k.lsu_ops = n * d.lsu_ops;
  k.shared_bytes = n * d.shared_bytes;
  k.l1_bytes = n * d.l1_bytes;
  k.l2_bytes = n * d.l2_bytes;
  k.dram_read_bytes = n * d.dram_read_bytes;
  k.dram_write_bytes = n * d.dram_write_bytes;
  k.tensor_flop = n * d.tensor_flop;
  k.occupancy = std::min(1.0, per_sm / kMaxThreadsPerSm);
  k.overhead_s = 3e-6 + d.trips * d.sleep_ns * 1e-9;  // launch and tail, plus the idle kernel's sleep
  return k;
}

Program MicrobenchProgram(const DeviceSpec& spec, Microbench b, int launches) {
  Program p;
  p.name = std::string("microbench-") + MicrobenchName(b);
  p.device = spec.name;
  p.link_bytes_per_s = spec.link_bandwidth_bps;
  p.kernels.push_back({std::string("emo_bench_") + MicrobenchName(b), MicrobenchTraits(spec, b)});
  RankProgram rank;
  Thread t;
  if (b == kBenchEmpty) {  // the gate (kEmptyGateS), launched first
    KernelTraits gate = MicrobenchTraits(spec, kBenchEmpty);
    gate.overhead_s += kEmptyGateS;
    p.kernels.push_back({"emo_bench_gate", gate});
    Instr launch;
    launch.op = Op::kLaunch;
    launch.stream = 0;
    launch.kernel = 1;
    t.code.push_back(launch);
  }
  AddLaunches(0, launches, &t);
  Instr sync;
  sync.op = Op::kStreamSync;
  sync.stream = 0;
  t.code.push_back(sync);
  rank.threads.push_back(t);
  p.ranks.push_back(rank);
  return p;
}

Program CollectiveProgram(const DeviceSpec& spec, double bytes, int launches) {
  Program p;
  p.name = "microbench-allreduce";
  p.device = spec.name;
  p.link_bytes_per_s = spec.link_bandwidth_bps;
  p.kernels.push_back({"ncclKernel_AllReduce_RING_SIMPLE_Sum_float", AllReduceKernel(bytes, 2, 4)});
  KernelTraits gate = MicrobenchTraits(spec, kBenchEmpty);
  gate.overhead_s += kEmptyGateS;
  p.kernels.push_back({"emo_bench_gate", gate});
  Group group;
  group.ranks = {0, 1};
  group.kind = CollectiveKind::kAllReduce;
  group.name = "allreduce";
  p.groups.push_back(group);
  RankProgram rank;
  Thread t;
  Instr launch;
  launch.op = Op::kLaunch;
  launch.stream = 0;
  launch.kernel = 1;
  t.code.push_back(launch);
  for (int i = 0; i < launches; ++i) {
    Instr gap;
    gap.op = Op::kCpu;
    gap.cpu_ns = kLaunchGapNs;
    t.code.push_back(gap);
    Instr all_reduce;
    all_reduce.op = Op::kCollective;
    all_reduce.stream = 0;
    all_reduce.kernel = 0;
    all_reduce.group = 0;
    all_reduce.bytes = bytes;
    t.code.push_back(all_reduce);
  }
  Instr sync;
  sync.op = Op::kStreamSync;
  sync.stream = 0;
  t.code.push_back(sync);
  rank.threads.push_back(t);
  p.ranks.assign(2, rank);
  return p;
}

Program MixJobProgram(const DeviceSpec& spec, const MixJob& job) {
  Program p;
  p.name = "mixjob";
  p.device = spec.name;
  p.link_bytes_per_s = spec.link_bandwidth_bps;
  RankProgram rank;
  Thread t;
  for (const auto& [b, count] : job.launches) {
    p.kernels.push_back({std::string("emo_bench_") + MicrobenchName(b), MicrobenchTraits(spec, b)});
    AddLaunches(static_cast<int32_t>(p.kernels.size()) - 1, count, &t);
  }
  Instr sync;
  sync.op = Op::kStreamSync;
  sync.stream = 0;
  t.code.push_back(sync);
  if (job.host_gap_ms > 0) {
    Instr idle;
    idle.op = Op::kCpu;
    idle.cpu_ns = job.host_gap_ms * 1e6;
    t.code.push_back(idle);
  }
  rank.threads.push_back(t);
  p.ranks.push_back(rank);
  return p;
}

EngineOptions SimBenchDevice::NextRun(int iterations, bool record_trace) {
  EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed_++;
  eo.record_trace = record_trace;
  return eo;
}

bool SimBenchDevice::RunJob(const MixJob& job, int iterations, double poll_ms,
                            const std::function<void(GpuControl&)>& start,
                            const std::function<void(GpuControl&, double now_ns)>& poll, JobRun* out,
                            std::string* err) {
  const Program program = MixJobProgram(spec_, job);
  Engine engine(program, NextRun(iterations, false));
  SimGpuControl gpus(&engine);
  start(gpus);
  engine.Every(poll_ms, [&](double now) { poll(gpus, now); });
  if (!engine.Run(err)) return false;
  const std::vector<double>& starts = engine.iteration_starts();
  out->iteration_end_ns.assign(starts.begin() + (starts.empty() ? 0 : 1), starts.end());
  out->iteration_end_ns.push_back(engine.end_ns());
  return true;
}

bool SimBenchDevice::Run(Microbench b, int launches, double poll_ms, const std::function<void(GpuControl&)>& start,
                         const std::function<void(GpuControl&, double now_ns)>& poll, BenchRun* out, std::string* err) {
  const Program program = MicrobenchProgram(spec_, b, launches);
  Engine engine(program, NextRun(1, true));
  SimGpuControl gpus(&engine);
  start(gpus);
  engine.Every(poll_ms, [&](double now) { poll(gpus, now); });
  if (!engine.Run(err)) return false;
  KernelSpans(engine, false, out);
  if (b == kBenchEmpty && !out->launch_end_ns.empty()) {  // the gate ran first
    out->launch_start_ns.erase(out->launch_start_ns.begin());
    out->launch_end_ns.erase(out->launch_end_ns.begin());
  }
  if (static_cast<int>(out->launch_end_ns.size()) != launches) {
    *err = "the simulated run traced " + std::to_string(out->launch_end_ns.size()) + " of " + std::to_string(launches) +
           " launches";
    return false;
  }
  return true;
}

bool SimBenchDevice::RunCollective(double bytes, int launches, const std::function<void(GpuControl&)>& start,
                                   BenchRun* out, std::string* err) {
  const Program program = CollectiveProgram(spec_, bytes, launches);
  Engine engine(program, NextRun(1, true));
  SimGpuControl gpus(&engine);
  start(gpus);
  if (!engine.Run(err)) return false;
  KernelSpans(engine, true, out);
  if (static_cast<int>(out->launch_end_ns.size()) != launches) {
    *err = "the simulated run traced " + std::to_string(out->launch_end_ns.size()) + " of " + std::to_string(launches) +
           " all-reduces";
    return false;
  }
  return true;
}

bool SimBenchDevice::Profile(Microbench b, int launches, const std::vector<KernelRange>& ranges,
                             std::vector<PackMetrics>* out, ProfileCost* cost, std::string* err) {
  const Program program = MicrobenchProgram(spec_, b, launches);
  SimMetricSource source(program, NextRun(1, false));
  return source.Profile(ranges, out, cost, err);
}

}  // namespace emo::sim
