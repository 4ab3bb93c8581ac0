// metric_source.cc — metric names and summing ranges.
#include "device/metric_source.h"

namespace emo {

const char* MetricName(Metric m) {
  static const char* const names[kMetrics] = {"sm_cycles_active", "warps_per_active_cycle",
                                              "dram_read_bytes",  "dram_write_bytes",
                                              "l1_bytes",         "l2_bytes",
                                              "inst_alu",         "inst_fma",
                                              "inst_fp64",        "inst_lsu",
                                              "inst_tensor"};
  return m >= 0 && m < kMetrics ? names[m] : "?";
}

const char* MetricCuptiName(Metric m) {
  static const char* const names[kMetrics] = {"sm__cycles_active.sum",
                                              "sm__warps_active.avg.per_cycle_active",
                                              "dram__bytes_read.sum",
                                              "dram__bytes_write.sum",
                                              "l1tex__t_bytes.sum",
                                              "lts__t_bytes.sum",
                                              "smsp__inst_executed_pipe_alu.sum",
                                              "smsp__inst_executed_pipe_fma.sum",
                                              "smsp__inst_executed_pipe_fp64.sum",
                                              "smsp__inst_executed_pipe_lsu.sum",
                                              "sm__inst_executed_pipe_tensor_op_hmma.sum"};
  return m >= 0 && m < kMetrics ? names[m] : "?";
}

void PackMetrics::Add(const PackMetrics& o) {
  const double cycles = v[kSmCyclesActive] + o.v[kSmCyclesActive];
  const double warps =
      cycles > 0
          ? (v[kWarpsPerActiveCycle] * v[kSmCyclesActive] + o.v[kWarpsPerActiveCycle] * o.v[kSmCyclesActive]) / cycles
          : 0;
  for (int m = 0; m < kMetrics; ++m) v[m] += o.v[m];
  v[kWarpsPerActiveCycle] = warps;
  kernels += o.kernels;
  time_ns += o.time_ns;
  if (sm_mhz == 0) sm_mhz = o.sm_mhz;
}

}  // namespace emo
