// microbench.h — the 12 microbenchmarks of DESIGN.md §4, defined once: a table of what one thread
// of each does per trip of its inner loop, which both back ends follow (the simulator's kernels in
// sim/microbench.cc and the CUDA kernels in cuda/microbench.cu), and BenchDevice, the interface
// through which calibration (model/calibrate.h) runs them on a device.
//
// Plain constants only above the interface, so that nvcc can include this header too.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/gpu_control.h"
#include "device/metric_source.h"

namespace emo {

// The microbenchmarks, in the order of DeviceProfile::bench (and of the pack model's columns).
enum Microbench : int {
  kBenchIntAlu,     // integer ALU
  kBenchFp32Fma,    // FP32 FMA
  kBenchFp64,       // FP64
  kBenchSfu,        // special functions
  kBenchShared,     // shared memory
  kBenchL1,         // L1 hits
  kBenchL2,         // L2 hits
  kBenchDramRead,   // DRAM read
  kBenchDramWrite,  // DRAM write
  kBenchHmma,       // FP16 tensor
  kBenchImma,       // INT8 tensor
  kBenchIdle,       // idle/control: a near-empty kernel; its power is the power of gaps
  kMicrobenches
};

// Not a column of the model: an empty kernel (the idle benchmark's one warp per SM, no trips),
// whose duration at each clock is the floor every kernel pays for its launch and drain, however
// little it does (DeviceProfile::kernel_floor_s).
inline constexpr Microbench kBenchEmpty = static_cast<Microbench>(kMicrobenches);
// A run of empty kernels waits behind a gate: one warp per SM sleeping this long, during which the
// host queues every launch and the clock lands. The kernels then run back to back, so that events
// around each time the kernel and not the host's launch call. The gate is not one of the launches.
inline constexpr double kEmptyGateS = 0.05;

// One benchmark: a grid of blocks_per_sm blocks of threads_per_block threads on every SM, each
// thread running `trips` trips of a loop whose body does the work below (per thread, per trip).
// Tensor work counts FP16-equivalent FLOP (an INT8 op is half an FP16 FLOP's time on the tensor
// pipe, so IMMA's 2·16·8·32 ops per m16n8k32 count as 4096). The idle benchmark does no work: one
// warp per SM sleeps sleep_ns per trip.
struct MicrobenchDef {
  Microbench id;
  const char* name;  // JSON key of the profile
  const char* what;
  int threads_per_block, blocks_per_sm, trips;
  double int_ops, fp32_flop, fp64_flop, sfu_ops, lsu_ops;
  double shared_bytes, l1_bytes, l2_bytes, dram_read_bytes, dram_write_bytes, tensor_flop;
  double sleep_ns;
};

// clang-format off
inline constexpr MicrobenchDef kMicrobenchTable[kMicrobenches + 1] = {
  // id, name, what, threads/block, blocks/SM, trips; per thread-trip: int fp32 fp64 sfu lsu shared l1 l2 dramR dramW
  // tensor sleep_ns
  {kBenchIntAlu,    "int_alu",   "IADD3/LOP3 chains",   256,8, 1024,64, 0,   0,  0,  0,  0,  0,  0,  0,  0,  0,     0},
  {kBenchFp32Fma,   "fp32_fma",  "8 FFMA chains",       256,8, 1024,0,  128, 0,  0,  0,  0,  0,  0,  0,  0,  0,     0},
  {kBenchFp64,      "fp64",      "4 DFMA chains",       256,8, 512, 0,  0,   32, 0,  0,  0,  0,  0,  0,  0,  0,     0},
  {kBenchSfu,       "sfu",       "__expf/__sinf/rsqrtf",256,8, 512, 0,  16,  0,  16, 0,  0,  0,  0,  0,  0,  0,     0},
  {kBenchShared,    "shared_mem","LDS/STS, 16 KiB/block",256,8, 512, 16, 0,   0,  0,  16, 64, 0,  0,  0,  0,  0,     0},
  {kBenchL1,        "l1",        "LDG.128, 32 KiB/SM",  256,8, 256, 8,  0,   0,  0,  16, 0,  256,0,  0,  0,  0,     0},
  {kBenchL2,        "l2",        "LDG.128, 16 MiB",     256,8, 128, 8,  0,   0,  0,  8,  0,  128,128,0,  0,  0,     0},
  {kBenchDramRead,  "dram_read", "LDG.128, 4 GiB",      256,8, 64,  4,  0,   0,  0,  4,  0,  64, 64, 64, 0,  0,     0},
  {kBenchDramWrite, "dram_write","STG.128, 4 GiB",      256,8, 64,  4,  0,   0,  0,  4,  0,  0,  64, 0,  64, 0,     0},
  {kBenchHmma,      "hmma",      "8 HMMA.16816 per warp",256,8, 512, 0,  0,   0,  0,  0,  0,  0,  0,  0,  0,  1024,  0},
  {kBenchImma,      "imma",      "8 IMMA.16832 per warp",256,8, 512, 16, 0,   0,  0,  0,  0,  0,  0,  0,  0,  1024,  0},
  {kBenchIdle,      "idle",      "1 warp/SM __nanosleep",32, 1, 100, 0,  0,   0,  0,  0,  0,  0,  0,  0,  0,  0,  1e4},
  {kBenchEmpty,     "empty",     "1 warp/SM, no trips", 32, 1, 0,   0,  0,   0,  0,  0,  0,  0,  0,  0,  0,  0,  1e4},
};
// clang-format on

inline const char* MicrobenchName(Microbench b) { return b >= 0 && b <= kBenchEmpty ? kMicrobenchTable[b].name : "?"; }

// A run of one microbenchmark, launched back to back: when each launch started and ended, on the
// device's clock (ns), as CUDA events before and after every launch would say.
struct BenchRun {
  std::vector<double> launch_start_ns, launch_end_ns;
};

// A periodic job built of microbenchmark kernels, as `emo gpoeo train` runs its corpus on a device
// without a job of its own: each iteration launches, in order, `count` launches of each benchmark
// in `launches` back to back, then the host waits for the GPU and idles `host_gap_ms` (the GPU
// idle, as at a data loader or a checkpoint).
struct MixJob {
  std::vector<std::pair<Microbench, int>> launches;
  double host_gap_ms = 0;
};

// A run of a MixJob: when each iteration ended, its host gap included, on the clock the polls see
// (ns).
struct JobRun {
  std::vector<double> iteration_end_ns;
};

// A device that runs microbenchmarks on its GPU 0 (the simulator, or CUDA beside NVML).
class BenchDevice {
 public:
  virtual ~BenchDevice() = default;
  virtual std::string Name() const = 0;
  virtual std::vector<int> SupportedClocks() const = 0;  // ascending; the last is the default
  // Memory clocks a lock may choose, ascending, the last the default (one, or none, on HBM parts).
  virtual std::vector<int> SupportedMemoryClocks() const = 0;
  // Launches benchmark b (one of the 12, or kBenchEmpty) `launches` times back to back. `start(gpus)` runs before the
  // first launch (lock the clock there); `poll(gpus, now_ns)` every poll_ms of device time while the run lasts (read
  // the energy counter and the clock there). The clock is reset after the run.
  virtual bool Run(Microbench b, int launches, double poll_ms, const std::function<void(GpuControl&)>& start,
                   const std::function<void(GpuControl&, double now_ns)>& poll, BenchRun* out, std::string* err) = 0;
  // Runs `iterations` iterations of a MixJob, with start and poll as in Run (the clock, and the
  // memory clock where there is a choice, are reset after the run).
  virtual bool RunJob(const MixJob& job, int iterations, double poll_ms, const std::function<void(GpuControl&)>& start,
                      const std::function<void(GpuControl&, double now_ns)>& poll, JobRun* out, std::string* err) = 0;
  // Range counters of a run of `launches` launches of b at the default clock (ranges by launch
  // ordinal, as MetricSource takes them).
  virtual bool Profile(Microbench b, int launches, const std::vector<KernelRange>& ranges,
                       std::vector<PackMetrics>* out, ProfileCost* cost, std::string* err) = 0;
  // Runs `launches` all-reduces of `bytes` bytes back to back between two GPUs of this device's kind (as nccl-tests
  // does), so that calibration can time a collective at each clock; `start(gpus)` runs before the first (lock the
  // clock of every GPU there), and out gets each collective's start and end (ns). False with *err where the device
  // cannot run one (the default: it needs two GPUs and NCCL).
  virtual bool RunCollective(double /*bytes*/, int /*launches*/, const std::function<void(GpuControl&)>& /*start*/,
                             BenchRun* /*out*/, std::string* err) {
    *err = "this device does not run collectives (they need two GPUs and NCCL)";
    return false;
  }
};

}  // namespace emo
