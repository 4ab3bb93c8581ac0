// counters.cc — summing counter ranges, and a time window's counters as NVML's activity.
#include "sim/counters.h"

#include <algorithm>

namespace emo::sim {

void CounterValues::Add(const CounterValues& o) {
  double cycles = sm_cycles_active + o.sm_cycles_active;
  if (cycles > 0)
    warps_per_active_cycle =
        (warps_per_active_cycle * sm_cycles_active + o.warps_per_active_cycle * o.sm_cycles_active) / cycles;
  sm_cycles_active = cycles;
  dram_read_bytes += o.dram_read_bytes;
  dram_write_bytes += o.dram_write_bytes;
  l1_bytes += o.l1_bytes;
  l2_bytes += o.l2_bytes;
  inst_alu += o.inst_alu;
  inst_fma += o.inst_fma;
  inst_fp64 += o.inst_fp64;
  inst_lsu += o.inst_lsu;
  inst_tensor += o.inst_tensor;
  kernels += o.kernels;
  time_ns += o.time_ns;
  elapsed_s += o.elapsed_s;
  elapsed_sm_cycles += o.elapsed_sm_cycles;
}

Activity ActivityOf(const DeviceSpec& spec, const CounterValues& w) {
  const double cycles = std::max(w.elapsed_sm_cycles, 1.0);
  auto frac = [](double x) { return std::clamp(x, 0.0, 1.0); };
  Activity a;
  a.sm_util = frac(w.sm_cycles_active / cycles);
  a.sm_occupancy = frac(w.sm_cycles_active * w.warps_per_active_cycle / (cycles * kMaxWarpsPerSm));
  a.integer_util = frac(w.inst_alu * kWarp / (cycles * spec.int_op_per_sm_cycle));
  a.fp32_util = frac(w.inst_fma * 2 * kWarp / (cycles * spec.fp32_flop_per_sm_cycle));
  a.fp64_util = frac(w.inst_fp64 * 2 * kWarp / (cycles * spec.fp64_flop_per_sm_cycle));
  a.tensor_util = frac(w.inst_tensor * kFlopPerTensorInst / (cycles * spec.tensor_flop_per_sm_cycle));
  a.dram_bw_util =
      frac((w.dram_read_bytes + w.dram_write_bytes) / (std::max(w.elapsed_s, 1e-9) * spec.mem_bandwidth_bps));
  return a;
}

}  // namespace emo::sim
