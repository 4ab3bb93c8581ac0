// counters.h — the performance counters a profiler reads over a range of kernels (DESIGN.md's
// metrics table: CUPTI sm__cycles_active.sum, sm__warps_active.avg.per_cycle_active,
// dram__bytes_read/write.sum, l1tex__t_bytes.sum, lts__t_bytes.sum,
// smsp__inst_executed_pipe_{alu,fma,fp64,lsu}.sum, sm__inst_executed_pipe_tensor_op_*.sum),
// derived from a kernel's hidden characteristics with small measurement noise. This is all of a
// kernel that the simulator lets the rest of EMO see, besides its time in the trace.
#pragma once

#include <cstdint>

#include "device/gpu_control.h"
#include "sim/device_spec.h"
#include "sim/kernel_model.h"

namespace emo::sim {

struct CounterValues {
  double sm_cycles_active = 0;  // summed over SMs
  double warps_per_active_cycle = 0;
  double dram_read_bytes = 0;
  double dram_write_bytes = 0;
  double l1_bytes = 0;
  double l2_bytes = 0;
  double inst_alu = 0;  // warp-level instructions per pipe
  double inst_fma = 0;
  double inst_fp64 = 0;
  double inst_lsu = 0;
  double inst_tensor = 0;
  int64_t kernels = 0;
  double time_ns = 0;  // summed kernel time
  // A time window's (Engine::StartCounters), not a range's: its length and the SM cycles that
  // elapsed in it, summed over the SMs.
  double elapsed_s = 0;
  double elapsed_sm_cycles = 0;

  // Adds another range (warps averaged over active cycles).
  void Add(const CounterValues& o);
};

inline constexpr double kWarp = 32;
inline constexpr double kFlopPerTensorInst = 4096;  // one m16n8k16 HMMA per warp
inline constexpr double kMaxWarpsPerSm = 64;

// A time window's counters as NVML's activity (GPM) reports them: fractions of the window's
// elapsed SM cycles and of the device's peak rates over them.
Activity ActivityOf(const DeviceSpec& spec, const CounterValues& window);

// Counters of one kernel that ran `time_s` at `sm_clock_mhz`; `noise(i)` returns the i-th
// multiplicative noise factor (about 1).
template <class Noise>
CounterValues KernelCounters(const DeviceSpec& spec, const KernelTraits& k, const KernelCost& cost, double time_s,
                             Noise&& noise) {
  CounterValues c;
  c.sm_cycles_active = time_s * cost.sm_clock_mhz * 1e6 * spec.sm_count * cost.sm_busy * noise(0);
  c.warps_per_active_cycle = kMaxWarpsPerSm * k.occupancy * noise(1);
  c.dram_read_bytes = k.dram_read_bytes * noise(2);
  c.dram_write_bytes = k.dram_write_bytes * noise(3);
  c.l1_bytes = (k.l1_bytes + k.shared_bytes) * noise(4);
  c.l2_bytes = k.l2_bytes * noise(5);
  c.inst_alu = k.int_ops / kWarp * noise(6);
  c.inst_fma = k.fp32_flop / 2 / kWarp * noise(7);
  c.inst_fp64 = k.fp64_flop / 2 / kWarp * noise(8);
  c.inst_lsu = k.lsu_ops / kWarp * noise(9);
  c.inst_tensor = k.tensor_flop / kFlopPerTensorInst * noise(10);
  c.kernels = 1;
  c.time_ns = time_s * 1e9;
  return c;
}

}  // namespace emo::sim
