// metric_source.h — performance counters over ranges of kernels: the pack-metric vector of
// DESIGN.md's metrics table, and MetricSource, the interface through which the pipeline asks a
// device for it. Implemented by the simulator (sim/sim_metric_source.h), by a fake in tests, and on
// hardware by CUPTI range profiling (one user range per pack, replayed once per pass).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace emo {

// The metrics, in the order of PackMetrics::v. CUPTI names are GA100/GH100's.
enum Metric : int {
  kSmCyclesActive,       // sm__cycles_active.sum
  kWarpsPerActiveCycle,  // sm__warps_active.avg.per_cycle_active (an average, not a sum)
  kDramReadBytes,        // dram__bytes_read.sum
  kDramWriteBytes,       // dram__bytes_write.sum
  kL1Bytes,              // l1tex__t_bytes.sum
  kL2Bytes,              // lts__t_bytes.sum
  kInstAlu,              // smsp__inst_executed_pipe_alu.sum
  kInstFma,              // smsp__inst_executed_pipe_fma.sum
  kInstFp64,             // smsp__inst_executed_pipe_fp64.sum
  kInstLsu,              // smsp__inst_executed_pipe_lsu.sum
  kInstTensor,           // sm__inst_executed_pipe_tensor_op_{hmma,imma}.sum (+ _gmma on GH100)
  kMetrics
};

const char* MetricName(Metric m);       // short name, e.g. "dram_read_bytes"
const char* MetricCuptiName(Metric m);  // e.g. "dram__bytes_read.sum"

struct PackMetrics {
  std::array<double, kMetrics> v{};
  int64_t kernels = 0;  // kernels in the range
  double time_ns = 0;   // their summed duration while profiled (replay passes perturb it)
  double sm_mhz = 0;    // the SM clock the range was profiled at

  // Adds another range: sums, with warps per active cycle averaged over active cycles.
  void Add(const PackMetrics& o);
};

// A range: the kernels launched on `gpu` with launch ordinals first..last (inclusive), counting
// compute kernels from 0 in launch order over the whole profiled run. A pack's first occurrence
// is one range.
struct KernelRange {
  int gpu = 0;
  int64_t first = 0, last = 0;
};

// What profiling cost, for the report beside the paper's "packing makes profiling cheaper".
struct ProfileCost {
  int64_t ranges = 0;            // ranges profiled
  int64_t passes = 0;            // replay passes of each range, summed over ranges (0 where not reported)
  int64_t kernels_profiled = 0;  // kernels in the profiled ranges (each runs once per pass)
  double overhead_s = 0;         // run time the profiling added
};

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  // Counters of each range, in the order given (ranges may not overlap on one GPU). False with
  // *err when a range does not exist in the run or the device refused.
  virtual bool Profile(const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out, ProfileCost* cost,
                       std::string* err) = 0;
};

}  // namespace emo
