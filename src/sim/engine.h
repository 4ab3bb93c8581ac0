// engine.h — the simulator's discrete-event engine: runs a Program on simulated GPUs, event by
// event (CPU threads, streams, events and synchronisation, copies, NCCL collectives with
// rendezvous across GPUs), with per-GPU SM clocks that change mid-run after a DVFS latency and
// power limits enforced by a control loop on windowed average power that moves the clock, and,
// without a lock, the driver's default governor (clocks drop after a longer idle period).
//
// Only the engine reads kernels' hidden characteristics. What leaves it is what hardware gives:
// the trace (a Kineto-like record of API calls and GPU ops), and per GPU a cumulative energy
// counter updated every ~100 ms, sampled power and utilisation with NVML's semantics, and the clock.
// Times are nanoseconds from the start of the run. Run-to-run noise is seeded and deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/counters.h"
#include "sim/program.h"
#include "trace/trace.h"

namespace emo::sim {

// Variation between runs and between GPUs of one model, as relative standard deviations (see the
// docs/simulator.md's table for the sources). Each run draws, per GPU, a factor on its kernels' durations and
// one on its power (thermal state, clock and memory-timing jitter: run to run), and per rank one on
// its host's CPU work. Each GPU carries, for the whole cluster (`gpu_seed`), a factor on its power
// (manufacturing variation of leakage and voltage: under a power limit it becomes a clock
// difference) and a small one on kernel time.
struct Variation {
  double run_time = 0.005;   // per run and GPU, kernel durations
  double run_power = 0.005;  // per run and GPU, power
  double run_cpu = 0.005;    // per run and rank, the host's CPU work between API calls (clock boost, OS jitter)
  double gpu_time = 0.003;   // per GPU of the cluster, kernel durations at a given clock
  double gpu_power = 0.03;   // per GPU of the cluster, power
  // Per kernel name (EngineOptions::kernel_seed): each kernel's hidden factors on its SM-side time,
  // its DRAM time and its dynamic power (HiddenFactors, sim/kernel_model.h), within 1 ± this.
  double kernel = 0.15;
};

struct EngineOptions {
  int iterations = 10;
  uint64_t seed = 1;         // the run: per-op noise and the per-run factors
  uint64_t gpu_seed = 0;     // the cluster: which physical GPUs (their per-GPU factors)
  uint64_t kernel_seed = 0;  // the kernels' code: their hidden per-name factors (Variation::kernel)
  double noise = 0.01;       // relative standard deviation of GPU-op and CPU durations; 0 turns every
                             // random variation off (per-op, per-run, per-GPU and per-name: tests of
                             // the model)
  Variation variation;
  bool record_trace = true;
  // Telemetry follows the device's NVML semantics (DeviceSpec: sensor period and window, power
  // averaging, utilisation period). A positive value overrides them for tests: every reading then
  // updates at this period from the whole period, and power is the latest sample.
  double telemetry_period_ms = 0;
  // A run fails (Run's error says so) when an iteration, or the time before the first, passes this
  // much simulated time: a workload whose iterations take days (a launch gap or a link speed off by
  // orders of magnitude) is an input error, and simulating its telemetry ticks would hang.
  double max_iteration_s = 3600;
};

class Engine {
 public:
  Engine(const Program& program, const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs every iteration to completion. False with *err on deadlock or a bad program.
  bool Run(std::string* err);

  // Calls `tick(now_ns)` every `period_ms` of simulated time while the run lasts (online
  // controllers). Register before Run().
  void Every(double period_ms, std::function<void(double now_ns)> tick);
  // Calls `fn(now_ns)` once at simulated time t_ns (timers of a policy player).
  void At(double t_ns, std::function<void(double now_ns)> fn);
  // Calls `fn(iteration, now_ns)` whenever rank 0 begins an iteration (the training loop's hook);
  // several may be registered, and run in registration order.
  void OnIterationStart(std::function<void(int iteration, double now_ns)> fn);
  // Calls `fn(rank, name, push, now_ns)` when a thread of `rank` opens (push) or closes a host-side
  // range (Op::kRangePush/kRangePop), at the time the thread reaches it: what an NVTX callback or a
  // framework hook sees. Register before Run(). Without one, ranges cost nothing at all.
  void OnRange(std::function<void(int rank, const std::string& name, bool push, double now_ns)> fn);

  // Clock control and telemetry of one GPU (= rank), as NVML offers them.
  int gpus() const;
  const std::string& DeviceName(int gpu) const;
  const DeviceSpec& Spec(int gpu) const;  // the product's public figures (peaks, clocks, telemetry)
  const std::vector<int>& SupportedClocks(int gpu) const;
  void SetLockedClock(int gpu, int mhz);  // takes effect after the DVFS latency, in issue order
  void ResetClock(int gpu);               // back to the default governor (boost clock), after the latency
  // Memory clocks (GDDR parts list several, HBM parts one): a lock takes effect after the DVFS
  // latency, in issue order; a reset returns to the default (highest) memory clock.
  const std::vector<int>& SupportedMemoryClocks(int gpu) const;
  void SetMemoryClock(int gpu, int mhz);
  void ResetMemoryClock(int gpu);
  double MemoryClockMhz(int gpu) const;
  void SetPowerLimit(int gpu, double watts);  // enforced by the power controller from its next window
  double PowerLimit(int gpu) const;
  void PowerLimitRange(int gpu, double* min_w, double* max_w) const;
  double EnergyCounterJ(int gpu) const;     // cumulative; advances only at sensor updates (every ~100 ms)
  double PowerW(int gpu) const;             // as nvmlDeviceGetPowerUsage: the latest sensor sample (GA100) or
                                            // the mean of the last second's samples; a sample averages only
                                            // the sensor's window (A100/H100: 25 ms of every 100 ms)
  double Utilization(int gpu) const;        // fraction of the last sample period with a kernel resident (an
                                            // NCCL kernel waiting for its peers counts; copies do not)
  double MemoryUtilization(int gpu) const;  // fraction of the last period DRAM was busy (bandwidth-weighted)
  double ClockMhz(int gpu) const;           // the SM clock in effect now
  // Mean interval between updates of the energy counter (and power/utilisation samples), s: a
  // measurement window must span many of them for its energy to mean anything.
  double EnergyCounterPeriodS(int gpu) const;
  // This GPU's hidden per-GPU times per-run factors (kernel time, power): for tests only.
  double TimeFactor(int gpu) const;
  double PowerFactor(int gpu) const;
  // Range profiling, as CUPTI's: counters of the compute kernels that end on `gpu` between
  // StartCounters and StopCounters, with about 1 % measurement noise, and the window's length and
  // elapsed SM cycles (NVML's activity windows, sim_gpu_control.h).
  void StartCounters(int gpu);
  CounterValues StopCounters(int gpu);
  // Range profiling by launch ordinal (sim_metric_source.h): counters of the compute kernels
  // launched on `gpu` with ordinals in each [first, last] (disjoint), in ascending order of first.
  // Register before Run(); read after.
  void ProfileRanges(int gpu, std::vector<std::pair<int64_t, int64_t>> ranges);
  // (Each kernel of a profiled range runs kRangeProfilerPasses times, as kernel replay runs it;
  // its counters are one pass's.)
  const std::vector<CounterValues>& RangeCounters(int gpu) const;
  double ProfilingOverheadNs(int gpu) const;  // kernel time the replay passes added on `gpu`
  int64_t kernels_launched(int gpu) const;    // compute kernels launched on `gpu` so far
  double now_ns() const;

  // ProfilerStep boundaries of rank 0's first thread: iteration i spans
  // [iteration_start(i), iteration_start(i+1)); the last ends at end_ns().
  const std::vector<double>& iteration_starts() const;
  double end_ns() const;
  // Kernel executions simulated so far (for the speed benchmark).
  int64_t gpu_ops_executed() const;

  // The recorded trace (when EngineOptions::record_trace), one rank per GPU.
  const Trace& trace() const;
  // A copy of it as far as the run has come (from a controller, mid-run): the ops and calls that
  // have ended, the iterations begun, the last one ending now.
  Trace TraceSoFar() const;

 private:
  void FinishRank(size_t r, double end_ns, RankTrace* rt) const;
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace emo::sim
