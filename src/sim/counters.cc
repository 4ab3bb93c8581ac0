// counters.cc — summing counter ranges.
#include "sim/counters.h"

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
}

}  // namespace emo::sim
