// kernel_model.h — a kernel's hidden characteristics and its time and power at an SM clock.
// Only the simulator reads KernelTraits; the rest of EMO sees traces, counters and energy.
//
// Time at SM clock f: every SM-side part (each pipe, shared/L1, L2) takes work/(peak·f·occupancy)
// and the DRAM and GPU-link parts take bytes/bandwidth, independent of f. The parts
// overlap imperfectly, combined by Lp norms:
//   t_sm = ‖t_tensor, t_fp32, t_fp64, t_int, t_sfu, t_lsu, t_shared, t_l1, t_l2‖_6
//   t_mem = ‖t_dram, t_dram·(1 + f_max/f)/(2·1.6)‖_6  (DRAM bandwidth needs requests in flight,
//                                                    whose latency grows as the SM clock falls)
//   t    = ‖t_sm, t_mem, t_link‖_p + overhead           (p = DeviceSpec::overlap_p)
// with t_sm and t_dram scaled by the kernel's hidden factors (HiddenFactors below).
// so a GEMM's time goes as ~1/f and a copy's is nearly flat down to about half the boost clock. Each part's utilisation
// is its busy time over t, and power follows device_spec.h: static(V(f)) + Σ C·V(f)²·f·utilisation + DRAM.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/device_spec.h"

namespace emo::sim {

struct KernelTraits {
  double tensor_flop = 0;  // FP16/BF16 tensor-core FLOP
  double fp32_flop = 0;    // FP32 FLOP (FMA = 2)
  double fp64_flop = 0;
  double int_ops = 0;  // INT32 ALU operations
  double sfu_ops = 0;  // special-function operations
  double lsu_ops = 0;  // thread-level load/store instructions
  double dram_read_bytes = 0;
  double dram_write_bytes = 0;
  double l2_bytes = 0;  // L2 traffic (reads + writes)
  double l1_bytes = 0;
  double shared_bytes = 0;
  double link_bytes = 0;  // bytes sent to other GPUs (NVLink/PCIe), e.g. by NCCL
  double occupancy = 1;   // (0, 1]: fraction of every peak the kernel's parallelism can use
  double overhead_s = 0;  // launch and tail, independent of the clock
  // What no counter reveals (HiddenFactors): the SM-side time and the DRAM time are multiplied by
  // these, the dynamic power by power_scale.
  double sm_time_scale = 1, dram_time_scale = 1, power_scale = 1;
};

// A kernel's efficiency as its code has it, beyond the work its counters count: how well it keeps
// the SM pipes fed (stalls, bank conflicts, tail waves), how well its access pattern uses DRAM,
// and how much power its switching draws per unit of work (operand values, the mix within a pipe).
// Drawn per kernel name and seed, each uniformly within 1 ± spread; spread 0 gives 1, 1, 1.
struct HiddenFactors {
  double sm_time = 1, dram_time = 1, power = 1;
};
HiddenFactors DrawHiddenFactors(std::string_view name, uint64_t seed, double spread);
// The i-th of a name's independent uniform draws in [0, 1) under `seed` (FNV-1a of the name keyed
// by the seed, then splitmix64): the same name and seed, the same draws. DrawHiddenFactors takes
// draws 0-2.
double NameUniform(std::string_view name, uint64_t seed, uint64_t i);
void ApplyHiddenFactors(const HiddenFactors& f, KernelTraits* k);

// Scales a kernel's work (every count and byte, not its overhead) so that it takes `seconds` at
// `sm_clock_mhz`: a kernel of a given shape that a trace timed.
void ScaleToTime(const DeviceSpec& spec, double seconds, double sm_clock_mhz, KernelTraits* k);

struct KernelCost {
  double time_s = 0;
  double power_w = 0;  // average over the kernel
  double energy_j = 0;
  double sm_clock_mhz = 0;
  double voltage = 0;  // normalised
  // Utilisation over the kernel's time, as fractions of the device's peak.
  double tensor_util = 0, fp32_util = 0, fp64_util = 0, int_util = 0, sfu_util = 0;
  double lsu_util = 0, shared_util = 0, l1_util = 0, l2_util = 0, dram_util = 0;
  double sm_busy = 0;      // fraction of SM capacity held by the kernel
  double clock_bound = 0;  // t_sm / (t_sm + t_dram): 1 = all time scales with 1/f
};

// At `mem_clock_mhz` (0: the default memory clock).
KernelCost EvaluateKernel(const DeviceSpec& spec, const KernelTraits& k, double sm_clock_mhz, double mem_clock_mhz = 0);

// The highest supported clock <= requested whose power for this kernel fits power_limit_w; the
// lowest supported clock when none does.
double ThrottledClock(const DeviceSpec& spec, const KernelTraits& k, double requested_mhz, double power_limit_w);
// The same for kernels run back to back: the power controller averages over a window of tens of
// milliseconds, so it is their average power (total energy over total time) that must fit.
double ThrottledClock(const DeviceSpec& spec, std::span<const KernelTraits> kernels, double requested_mhz,
                      double power_limit_w);

// Power (W) of the idle GPU held at an SM clock (and a memory clock, 0: the default).
double IdlePower(const DeviceSpec& spec, double sm_clock_mhz, double mem_clock_mhz = 0);

// Typical kernels built from shapes; the workload generator composes these. Sizes are element
// counts, dtype_bytes the bytes per element (2 for FP16/BF16).
//
// C[m×n] = A[m×k]·B[k×n], `batch` independent products (batched GEMM).
KernelTraits GemmKernel(double m, double n, double k, double dtype_bytes, bool tensor_cores, double batch = 1);
// Self-attention of one layer: fused (one FlashAttention-style kernel) or unfused (Q·Kᵀ GEMM,
// scale+mask+softmax, dropout, P·V GEMM).
std::vector<KernelTraits> AttentionKernels(double batch, double heads, double seq, double head_dim, double dtype_bytes,
                                           bool fused);
// Streaming kernel: bytes read and written and FP32 FLOP per element.
KernelTraits ElementwiseKernel(double elements, double read_bytes_per_element, double write_bytes_per_element,
                               double flops_per_element);
KernelTraits LayerNormKernel(double rows, double cols, double dtype_bytes);
// Sum of `elements` values into a few outputs.
KernelTraits ReductionKernel(double elements, double dtype_bytes);
// Device-to-device copy.
KernelTraits MemcpyKernel(double bytes);
// NCCL ring all-reduce of `bytes` across `ranks` GPUs (the GPU's share: 2(n−1)/n of the bytes
// cross its link), on a few SMs.
KernelTraits AllReduceKernel(double bytes, double ranks, double dtype_bytes);

}  // namespace emo::sim
