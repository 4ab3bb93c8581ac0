// kernel_model.cc — time and power of one kernel at an SM clock, power-limit throttling, and the
// shape-based kernel builders.
#include "sim/kernel_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace emo::sim {
namespace {

// ‖x‖_p of non-negative parts.
double LpNorm(std::initializer_list<double> parts, double p) {
  double biggest = 0;
  for (double x : parts) biggest = std::max(biggest, x);
  if (biggest <= 0) return 0;
  double sum = 0;
  for (double x : parts) sum += std::pow(x / biggest, p);
  return biggest * std::pow(sum, 1.0 / p);
}

double Time(double work, double peak_per_s) { return work > 0 ? work / peak_per_s : 0; }

// The memory clock over the default one (exactly 1 at the default, so that a run that never moves
// the memory clock computes as before).
double MemoryClockRatio(const DeviceSpec& spec, double mem_clock_mhz) {
  return mem_clock_mhz > 0 ? mem_clock_mhz / spec.mem_clock_mhz : 1.0;
}

constexpr double kSmOverlapP = 6;  // the SM's pipes and its shared/L1/L2 paths work concurrently
constexpr double kLaunchS = 4e-6;  // launch plus tail of a typical kernel
constexpr double kTile = 128;      // GEMM output tile edge (elements)
constexpr double kL2Panel = 2048;  // output block whose operands stay resident in L2
// DRAM bandwidth needs enough requests in flight (Little's law: bandwidth = bytes in flight /
// latency). Of the load latency at the boost clock, about half is DRAM (fixed) and half SM, crossbar
// and L2 cycles (∝ 1/f), so the latency at clock f is (1 + f_max/f)/2 of that at f_max; the SMs keep
// kDramMlpHeadroom times the bytes in flight the peak needs at f_max. A streaming kernel thus loses
// ~1 % at f_max, ~4 % at 60 % of it, ~10 % at 47 % (660 MHz on the A100) and ~2.4x at 210 MHz.
// The split and the headroom are assumptions (no measured A100/H100 curve at hand; the GTX Titan X
// memory-bound kernels of ../shared/dvfs-data/gpuPTXModel lose far more: 1.4x at 61 % of the clock).
constexpr double kDramMlpHeadroom = 1.6;

}  // namespace

KernelCost EvaluateKernel(const DeviceSpec& spec, const KernelTraits& k, double sm_clock_mhz, double mem_clock_mhz) {
  KernelCost c;
  const double f_mhz = std::clamp(sm_clock_mhz, static_cast<double>(spec.min_clock_mhz()),
                                  static_cast<double>(spec.boost_ceiling_mhz()));
  const double hz = f_mhz * 1e6;
  const double occ = std::clamp(k.occupancy, 1e-3, 1.0);
  const double sm_hz = spec.sm_count * hz * occ;  // SM cycles per second the kernel can use

  const double t_tensor = Time(k.tensor_flop, spec.tensor_flop_per_sm_cycle * sm_hz);
  const double t_fp32 = Time(k.fp32_flop, spec.fp32_flop_per_sm_cycle * sm_hz);
  const double t_fp64 = Time(k.fp64_flop, spec.fp64_flop_per_sm_cycle * sm_hz);
  const double t_int = Time(k.int_ops, spec.int_op_per_sm_cycle * sm_hz);
  const double t_sfu = Time(k.sfu_ops, spec.sfu_op_per_sm_cycle * sm_hz);
  const double t_lsu = Time(k.lsu_ops, spec.lsu_op_per_sm_cycle * sm_hz);
  const double t_shared = Time(k.shared_bytes, spec.shared_bytes_per_sm_cycle * sm_hz);
  const double t_l1 = Time(k.l1_bytes, spec.l1_bytes_per_sm_cycle * sm_hz);
  const double t_l2 = Time(k.l2_bytes, spec.l2_bytes_per_cycle * hz * occ);
  const double dram_bytes = k.dram_read_bytes + k.dram_write_bytes;
  const double mem_bps = spec.mem_bandwidth_bps * MemoryClockRatio(spec, mem_clock_mhz);
  const double t_dram = Time(dram_bytes, mem_bps * spec.dram_efficiency * occ) * k.dram_time_scale;

  const double t_link = Time(k.link_bytes, spec.link_bandwidth_bps);
  const double t_sm =
      LpNorm({t_tensor, t_fp32, t_fp64, t_int, t_sfu, t_lsu, t_shared, t_l1, t_l2}, kSmOverlapP) * k.sm_time_scale;
  const double f_max = spec.boost_ceiling_mhz();
  const double t_mlp = t_dram * 0.5 * (1 + f_max / f_mhz) / kDramMlpHeadroom;  // requests in flight
  const double t_mem = LpNorm({t_dram, t_mlp}, kSmOverlapP);
  const double body = LpNorm({t_sm, t_mem, t_link}, spec.overlap_p);
  c.time_s = std::max(body + k.overhead_s, 1e-9);
  c.sm_clock_mhz = f_mhz;
  c.voltage = Voltage(spec, f_mhz);
  c.clock_bound = t_sm + t_dram + t_link > 0 ? t_sm / (t_sm + t_dram + t_link) : 1;

  // Utilisation: work over what the device's full peak could do in the kernel's time.
  const double u = occ / c.time_s;
  c.tensor_util = t_tensor * u;
  c.fp32_util = t_fp32 * u;
  c.fp64_util = t_fp64 * u;
  c.int_util = t_int * u;
  c.sfu_util = t_sfu * u;
  c.lsu_util = t_lsu * u;
  c.shared_util = t_shared * u;
  c.l1_util = t_l1 * u;
  c.l2_util = t_l2 * u;
  c.dram_util = dram_bytes / (mem_bps * c.time_s);
  c.sm_busy = occ * body / c.time_s;

  const double v2f = c.voltage * c.voltage * f_mhz * 1e-3;  // V² · GHz
  const double dynamic = spec.sm_active_w * c.sm_busy + spec.tensor_w * c.tensor_util + spec.fp32_w * c.fp32_util +
                         spec.fp64_w * c.fp64_util + spec.int_w * c.int_util + spec.sfu_w * c.sfu_util +
                         spec.lsu_w * c.lsu_util + spec.shared_w * 0.5 * (c.shared_util + c.l1_util) +
                         spec.l2_w * c.l2_util;
  c.power_w = IdlePower(spec, f_mhz, mem_clock_mhz) + v2f * dynamic * k.power_scale +
              spec.dram_j_per_byte * dram_bytes / c.time_s;
  c.energy_j = c.power_w * c.time_s;
  return c;
}

double NameUniform(std::string_view name, uint64_t seed, uint64_t i) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  uint64_t z = h + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

HiddenFactors DrawHiddenFactors(std::string_view name, uint64_t seed, double spread) {
  HiddenFactors f;
  if (spread <= 0) return f;
  f.sm_time = 1 + spread * (2 * NameUniform(name, seed, 0) - 1);
  f.dram_time = 1 + spread * (2 * NameUniform(name, seed, 1) - 1);
  f.power = 1 + spread * (2 * NameUniform(name, seed, 2) - 1);
  return f;
}

void ApplyHiddenFactors(const HiddenFactors& f, KernelTraits* k) {
  k->sm_time_scale *= f.sm_time;
  k->dram_time_scale *= f.dram_time;
  k->power_scale *= f.power;
}

void ScaleToTime(const DeviceSpec& spec, double seconds, double sm_clock_mhz, KernelTraits* k) {
  seconds = std::max(seconds, 1e-7);
  for (int i = 0; i < 3; ++i) {  // the Lp norms make time nearly, not exactly, linear in the work
    const double now = EvaluateKernel(spec, *k, sm_clock_mhz).time_s - k->overhead_s;
    if (now <= 0) break;
    const double f = std::max(seconds - k->overhead_s, 1e-9) / now;
    for (double* x :
         {&k->tensor_flop, &k->fp32_flop, &k->fp64_flop, &k->int_ops, &k->sfu_ops, &k->lsu_ops, &k->dram_read_bytes,
          &k->dram_write_bytes, &k->l2_bytes, &k->l1_bytes, &k->shared_bytes, &k->link_bytes})
      *x *= f;
  }
}

double ThrottledClock(const DeviceSpec& spec, const KernelTraits& k, double requested_mhz, double power_limit_w) {
  return ThrottledClock(spec, std::span<const KernelTraits>(&k, 1), requested_mhz, power_limit_w);
}

double ThrottledClock(const DeviceSpec& spec, std::span<const KernelTraits> kernels, double requested_mhz,
                      double power_limit_w) {
  const std::vector<int>& clocks = spec.sm_clocks_mhz;
  auto fits = [&](double mhz) {
    double time_s = 0, energy_j = 0;
    for (const KernelTraits& k : kernels) {
      const KernelCost c = EvaluateKernel(spec, k, mhz);
      time_s += c.time_s;
      energy_j += c.energy_j;
    }
    return energy_j <= power_limit_w * time_s;
  };
  // Highest supported clock <= requested (the lowest when requested is below all of them).
  requested_mhz = std::min(requested_mhz, static_cast<double>(spec.boost_ceiling_mhz()));
  auto it = std::upper_bound(clocks.begin(), clocks.end(), requested_mhz);
  size_t i = it == clocks.begin() ? 0 : static_cast<size_t>(it - clocks.begin()) - 1;
  while (i > 0 && !fits(clocks[i])) --i;
  return clocks[i];
}

double IdlePower(const DeviceSpec& spec, double sm_clock_mhz, double mem_clock_mhz) {
  const double v = Voltage(spec, sm_clock_mhz);
  const double board = spec.board_w - spec.mem_w * (1 - MemoryClockRatio(spec, mem_clock_mhz));
  return board + spec.leakage_w * v * v + spec.clock_w * v * v * sm_clock_mhz * 1e-3;
}

KernelTraits GemmKernel(double m, double n, double k, double dtype_bytes, bool tensor_cores, double batch) {
  KernelTraits g;
  const double flop = 2 * m * n * k * batch;
  (tensor_cores ? g.tensor_flop : g.fp32_flop) = flop;
  g.fp32_flop += 2 * m * n * batch;  // epilogue: scale and convert
  // Operands stream from DRAM once per L2-resident output panel, and into every output tile
  // through L2; each tile is staged in shared memory and read by its warps.
  const double a = m * k * dtype_bytes, b = k * n * dtype_bytes, out = m * n * dtype_bytes;
  g.dram_read_bytes = batch * (a * std::max(1.0, n / kL2Panel) + b * std::max(1.0, m / kL2Panel));
  g.dram_write_bytes = batch * out;
  g.l2_bytes = batch * (a * std::ceil(n / kTile) + b * std::ceil(m / kTile) + out);
  g.l1_bytes = g.l2_bytes;
  g.shared_bytes = g.l2_bytes + flop * dtype_bytes / 64;  // 64×64 warp tiles
  g.lsu_ops = g.shared_bytes / 16;
  g.int_ops = 2 * g.lsu_ops;
  // Achieved fraction of peak: saturates with the number of output tiles (waves), and a short
  // K loop cannot hide the pipeline fill of each tile.
  const double tiles = batch * std::ceil(m / kTile) * std::ceil(n / kTile);
  g.occupancy = (tensor_cores ? 0.90 : 0.75) * tiles / (tiles + 48) * k / (k + 64);
  g.overhead_s = kLaunchS;
  return g;
}

std::vector<KernelTraits> AttentionKernels(double batch, double heads, double seq, double head_dim, double dtype_bytes,
                                           bool fused) {
  const double bh = batch * heads, scores = bh * seq * seq;
  if (fused) {
    KernelTraits f;
    f.tensor_flop = 4 * scores * head_dim;
    f.fp32_flop = 6 * scores;  // scale, running max, sum, rescale
    f.sfu_ops = scores;        // exp
    const double qkvo = bh * seq * head_dim * dtype_bytes;
    f.dram_read_bytes = 3 * qkvo;
    f.dram_write_bytes = qkvo + bh * seq * 4;
    f.l2_bytes = 2 * qkvo * seq / kTile + 4 * qkvo;  // K and V re-read per query block
    f.l1_bytes = f.l2_bytes;
    f.shared_bytes = f.l2_bytes + f.tensor_flop * dtype_bytes / 64;
    f.lsu_ops = f.shared_bytes / 16;
    f.int_ops = 2 * f.lsu_ops + scores / 8;
    f.occupancy = 0.70 * std::min(1.0, bh * seq / kTile / 200);
    f.overhead_s = kLaunchS;
    return {f};
  }
  KernelTraits softmax = ElementwiseKernel(scores, dtype_bytes, dtype_bytes, 12);
  softmax.sfu_ops = scores;
  softmax.int_ops += scores;  // row max/sum shuffles, mask index
  return {GemmKernel(seq, seq, head_dim, dtype_bytes, true, bh), softmax,
          ElementwiseKernel(scores, dtype_bytes, dtype_bytes + 1, 4),  // dropout (+ byte mask)
          GemmKernel(seq, head_dim, seq, dtype_bytes, true, bh)};
}

KernelTraits ElementwiseKernel(double elements, double read_bytes_per_element, double write_bytes_per_element,
                               double flops_per_element) {
  KernelTraits e;
  e.dram_read_bytes = elements * read_bytes_per_element;
  e.dram_write_bytes = elements * write_bytes_per_element;
  e.l2_bytes = e.dram_read_bytes + e.dram_write_bytes;
  e.l1_bytes = e.l2_bytes;
  e.lsu_ops = e.l2_bytes / 16;  // 16-byte vector accesses
  e.int_ops = 4 * e.lsu_ops + elements;
  e.fp32_flop = elements * flops_per_element;
  e.occupancy = 0.95;
  e.overhead_s = kLaunchS;
  return e;
}

KernelTraits LayerNormKernel(double rows, double cols, double dtype_bytes) {
  KernelTraits ln = ElementwiseKernel(rows * cols, dtype_bytes, dtype_bytes, 8);
  ln.sfu_ops = rows;                // rsqrt per row
  ln.int_ops += rows * cols / 4;    // warp shuffles of the two row reductions
  ln.dram_write_bytes += rows * 8;  // mean and rstd
  ln.occupancy = 0.85;
  return ln;
}

KernelTraits ReductionKernel(double elements, double dtype_bytes) {
  KernelTraits r = ElementwiseKernel(elements, dtype_bytes, 0, 1);
  r.int_ops += elements / 4;
  r.occupancy = 0.85;
  return r;
}

KernelTraits MemcpyKernel(double bytes) {
  KernelTraits m = ElementwiseKernel(bytes, 1, 1, 0);
  m.int_ops = m.lsu_ops;
  m.occupancy = 1.0;
  m.overhead_s = 3e-6;
  return m;
}

KernelTraits AllReduceKernel(double bytes, double ranks, double dtype_bytes) {
  KernelTraits a;
  const double moved = ranks > 1 ? 2 * (ranks - 1) / ranks * bytes : 0;
  a.link_bytes = moved;
  a.dram_read_bytes = moved;  // send buffers and the local operand of each reduction
  a.dram_write_bytes = moved / 2 + bytes;
  a.l2_bytes = a.dram_read_bytes + a.dram_write_bytes;
  a.l1_bytes = a.l2_bytes;
  a.lsu_ops = a.l2_bytes / 16;
  a.int_ops = 4 * a.lsu_ops;
  a.fp32_flop = (ranks - 1) / ranks * bytes / dtype_bytes;
  a.occupancy = 0.25;  // NCCL runs one block per channel
  a.overhead_s = 15e-6;
  return a;
}

}  // namespace emo::sim
