// kernel_model_test.cc — physics sanity of the simulated devices and the kernel time/power model:
// clock tables, 1/f compute, flat DRAM-bound kernels, an interior energy optimum, throttling.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/device_spec.h"
#include "sim/kernel_model.h"

namespace emo::sim {
namespace {

const DeviceSpec& Device(const char* name) {
  const DeviceSpec* spec = FindDevice(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

std::vector<const DeviceSpec*> AllDevices() {
  std::vector<const DeviceSpec*> all;
  for (const std::string& name : DeviceNames()) all.push_back(FindDevice(name));
  return all;
}

KernelTraits BigGemm() { return GemmKernel(8192, 8192, 8192, 2, true); }
KernelTraits BigElementwise() { return ElementwiseKernel(1 << 28, 4, 2, 2); }  // add, BF16

TEST(DeviceSpec, ClockTables) {
  const DeviceSpec& a100 = Device("A100-SXM4-80GB");
  ASSERT_EQ(a100.sm_clocks_mhz.size(), 81u);
  EXPECT_EQ(a100.sm_clocks_mhz.front(), 210);
  EXPECT_EQ(a100.sm_clocks_mhz.back(), 1410);
  struct Expected {
    const char* name;
    int max_mhz, sms;
    double limit_w;
  };
  // Default power limits are what each SKU ships with; the data-centre cards' default is also their
  // maximum. The RTX 3080 Ti lists clocks to 2100 MHz but boosts to its V/f ceiling, 1950 MHz.
  for (const Expected& e :
       {Expected{"a100", 1410, 108, 400}, Expected{"a100-500w", 1410, 108, 500}, Expected{"h100", 1980, 132, 700},
        Expected{"3080ti", 2100, 80, 350}, Expected{"a40", 1740, 84, 300}}) {
    SCOPED_TRACE(e.name);
    const DeviceSpec& d = Device(e.name);
    EXPECT_EQ(d.sm_clocks_mhz.front(), 210);
    EXPECT_EQ(d.max_clock_mhz(), e.max_mhz);
    EXPECT_EQ(d.default_sm_clock_mhz, d.pcie && d.name != "A40" ? 1950 : e.max_mhz);
    if (!d.pcie) {
      EXPECT_EQ(d.power_limit_default_w, d.power_limit_max_w);
    }
    EXPECT_EQ(d.sm_clocks_mhz.size(), static_cast<size_t>((e.max_mhz - 210) / 15 + 1));
    for (size_t i = 1; i < d.sm_clocks_mhz.size(); ++i) EXPECT_EQ(d.sm_clocks_mhz[i] - d.sm_clocks_mhz[i - 1], 15);
    EXPECT_EQ(d.sm_count, e.sms);
    EXPECT_EQ(d.power_limit_default_w, e.limit_w);
    EXPECT_LE(d.power_limit_min_w, d.power_limit_default_w);
    EXPECT_LE(d.power_limit_default_w, d.power_limit_max_w);
    EXPECT_GE(d.dvfs_latency_min_s, 0.005);
    EXPECT_LE(d.dvfs_latency_max_s, 0.015);
  }
}

TEST(DeviceSpec, FindByNameOrAlias) {
  EXPECT_EQ(FindDevice("a100"), FindDevice("A100-SXM4-80GB"));
  EXPECT_EQ(FindDevice("H100"), FindDevice("h100-sxm"));
  EXPECT_EQ(FindDevice("3080Ti"), FindDevice("RTX3080Ti"));
  EXPECT_EQ(FindDevice("A40")->name, "A40");
  EXPECT_EQ(FindDevice("v100"), nullptr);
  EXPECT_EQ(FindDevice("a100-500w")->power_limit_default_w, 500);
  EXPECT_EQ(DeviceNames().size(), 5u);
}

TEST(DeviceSpec, VoltageFloorThenRising) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    EXPECT_DOUBLE_EQ(Voltage(*d, d->min_clock_mhz()), d->v_floor);
    EXPECT_DOUBLE_EQ(Voltage(*d, d->max_clock_mhz()), 1.0);
    for (size_t i = 1; i < d->sm_clocks_mhz.size(); ++i)
      EXPECT_LE(Voltage(*d, d->sm_clocks_mhz[i - 1]), Voltage(*d, d->sm_clocks_mhz[i]));
    EXPECT_LT(IdlePower(*d, d->min_clock_mhz()), IdlePower(*d, d->max_clock_mhz()));
  }
}

TEST(KernelModel, GemmTimeScalesAsInverseClock) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    const double f = d->max_clock_mhz();
    const KernelCost fast = EvaluateKernel(*d, BigGemm(), f);
    const KernelCost slow = EvaluateKernel(*d, BigGemm(), f / 2);
    EXPECT_GE(slow.time_s / fast.time_s, 1.8);
    EXPECT_GT(fast.tensor_util, 0.5);
  }
}

TEST(KernelModel, DramBoundKernelIsNearlyFlat) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    const double f = d->max_clock_mhz();
    const KernelCost fast = EvaluateKernel(*d, BigElementwise(), f);
    const KernelCost slow = EvaluateKernel(*d, BigElementwise(), 0.6 * f);
    EXPECT_LT(slow.time_s / fast.time_s, 1.10);
    EXPECT_GT(fast.dram_util, 0.6);
    const KernelCost copy = EvaluateKernel(*d, MemcpyKernel(1e9), 0.6 * f);
    EXPECT_LT(copy.time_s / EvaluateKernel(*d, MemcpyKernel(1e9), f).time_s, 1.10);
  }
}

// DRAM bandwidth needs requests in flight, whose latency grows as the SM clock falls: a streaming
// kernel is flat near the top clock, loses some bandwidth by half of it and much at the lowest.
TEST(KernelModel, DramBoundKernelLosesBandwidthAtLowClocks) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    const double f = d->boost_ceiling_mhz();
    const double top = EvaluateKernel(*d, BigElementwise(), f).time_s;
    EXPECT_LT(EvaluateKernel(*d, BigElementwise(), 0.9 * f).time_s / top, 1.02);
    const double half = EvaluateKernel(*d, BigElementwise(), 0.47 * f).time_s / top;
    EXPECT_GT(half, 1.05);
    EXPECT_LT(half, 1.20);
    EXPECT_GT(EvaluateKernel(*d, BigElementwise(), d->min_clock_mhz()).time_s / top, 1.5);
  }
}

// A lower memory clock, as the GTX Titan X measurements in ../shared/dvfs-data/gpuPTXModel show it
// (3505 → 810 MHz at a 1164 MHz core clock): streaming kernels slow by 0.86-0.96 of the clocks'
// ratio (reduction, fdtd2d, blackscholes), compute-bound ones hardly at all (md5hash 1.00, hotspot
// 1.03), and the power of a compute-bound kernel falls by what the idle GPU's does (32 W of 196 and
// 36 W), the memory clock's share of the board power. HBM parts list one memory clock.
TEST(KernelModel, MemoryClockScalesBandwidthAndTheMemorysBoardPower) {
  const DeviceSpec& ti = Device("RTX3080Ti");
  ASSERT_EQ(ti.mem_clocks_mhz.back(), ti.mem_clock_mhz);
  const double f = ti.default_sm_clock_mhz, low = 5001, ratio = ti.mem_clock_mhz / low;
  const double stream =
      EvaluateKernel(ti, BigElementwise(), f, low).time_s / EvaluateKernel(ti, BigElementwise(), f).time_s;
  EXPECT_GT(stream, 0.85 * ratio);
  EXPECT_LE(stream, ratio * 1.0001);
  const KernelCost gemm = EvaluateKernel(ti, BigGemm(), f), gemm_low = EvaluateKernel(ti, BigGemm(), f, low);
  EXPECT_LT(gemm_low.time_s / gemm.time_s, 1.03);
  const double idle_drop = IdlePower(ti, f) - IdlePower(ti, f, low);
  EXPECT_NEAR(idle_drop, ti.mem_w * (1 - low / ti.mem_clock_mhz), 1e-9);
  EXPECT_GT(idle_drop, 5);
  // The GEMM's power falls by the idle drop and by its DRAM traffic's lower rate, at most.
  EXPECT_GE(gemm.power_w - gemm_low.power_w, idle_drop - 1e-9);
  // At the default memory clock, the same figures as without one.
  EXPECT_EQ(EvaluateKernel(ti, BigGemm(), f, ti.mem_clock_mhz).power_w, gemm.power_w);
  for (const char* hbm : {"A100-SXM4-80GB", "H100-SXM", "A40"})
    EXPECT_EQ(Device(hbm).mem_clocks_mhz, std::vector<int>{Device(hbm).mem_clock_mhz}) << hbm;
}

TEST(KernelModel, ComputeBoundEnergyHasInteriorOptimum) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    size_t best = 0;
    std::vector<double> energy;
    for (int f : d->sm_clocks_mhz) energy.push_back(EvaluateKernel(*d, BigGemm(), f).energy_j);
    for (size_t i = 0; i < energy.size(); ++i)
      if (energy[i] < energy[best]) best = i;
    EXPECT_GT(best, 0u);
    EXPECT_LT(best, energy.size() - 1);
    EXPECT_LT(energy[best], 0.9 * energy.back());  // worth lowering the clock for
  }
}

TEST(KernelModel, PowerRisesWithClock) {
  const std::vector<KernelTraits> kernels = {BigGemm(),
                                             BigElementwise(),
                                             LayerNormKernel(8192, 12288, 2),
                                             ReductionKernel(1e9, 2),
                                             MemcpyKernel(1e9),
                                             AllReduceKernel(1e8, 8, 2),
                                             AttentionKernels(4, 16, 2048, 128, 2, true)[0]};
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    for (size_t k = 0; k < kernels.size(); ++k) {
      double last = 0;
      for (int f : d->sm_clocks_mhz) {
        if (f > d->boost_ceiling_mhz()) break;  // no clock runs above the V/f curve's top
        const KernelCost c = EvaluateKernel(*d, kernels[k], f);
        EXPECT_GT(c.power_w, last) << "kernel " << k << " at " << f << " MHz";
        EXPECT_NEAR(c.energy_j, c.power_w * c.time_s, 1e-9 * c.energy_j);
        last = c.power_w;
      }
    }
  }
}

TEST(KernelModel, ThrottledClockRespectsPowerLimit) {
  for (const DeviceSpec* d : AllDevices()) {
    SCOPED_TRACE(d->name);
    const double f_max = d->boost_ceiling_mhz();
    const double draw = EvaluateKernel(*d, BigGemm(), f_max).power_w;
    // Above the draw: the requested clock stays, also one that is not supported (rounded down).
    EXPECT_EQ(ThrottledClock(*d, BigGemm(), f_max, draw + 1), f_max);
    EXPECT_EQ(ThrottledClock(*d, BigGemm(), 1000.5, draw + 1), 990);
    // Below it: the highest clock that fits.
    const double limit = 0.8 * draw;
    const double f = ThrottledClock(*d, BigGemm(), f_max, limit);
    EXPECT_LT(f, f_max);
    EXPECT_LE(EvaluateKernel(*d, BigGemm(), f).power_w, limit);
    EXPECT_GT(EvaluateKernel(*d, BigGemm(), f + 15).power_w, limit);
    // Never below the lowest clock.
    EXPECT_EQ(ThrottledClock(*d, BigGemm(), f_max, 1.0), d->min_clock_mhz());
    EXPECT_EQ(ThrottledClock(*d, BigGemm(), 100, draw), d->min_clock_mhz());
    // A sequence is throttled on its average power: a light kernel beside the GEMM lets the
    // clock stay higher than the GEMM alone would.
    const std::vector<KernelTraits> mixed = {BigGemm(), BigElementwise(), BigElementwise()};
    EXPECT_GE(ThrottledClock(*d, mixed, f_max, limit), f);
  }
}

TEST(KernelModel, BuildersScaleWithShape) {
  const DeviceSpec& a100 = Device("a100");
  const KernelTraits g = GemmKernel(4096, 4096, 4096, 2, true);
  EXPECT_DOUBLE_EQ(g.tensor_flop, 2.0 * 4096 * 4096 * 4096);
  EXPECT_GE(g.dram_read_bytes, 2.0 * 4096 * 4096 * 2);
  const KernelTraits fp32 = GemmKernel(4096, 4096, 4096, 4, false);
  EXPECT_EQ(fp32.tensor_flop, 0);
  EXPECT_GT(EvaluateKernel(a100, fp32, 1410).time_s, 5 * EvaluateKernel(a100, g, 1410).time_s);
  // Attention: unfused is four kernels and moves the score matrix through DRAM; fused is one.
  const std::vector<KernelTraits> unfused = AttentionKernels(1, 16, 4096, 128, 2, false);
  const std::vector<KernelTraits> fused = AttentionKernels(1, 16, 4096, 128, 2, true);
  ASSERT_EQ(unfused.size(), 4u);
  ASSERT_EQ(fused.size(), 1u);
  double unfused_s = 0, unfused_bytes = 0;
  for (const KernelTraits& k : unfused) {
    unfused_s += EvaluateKernel(a100, k, 1410).time_s;
    unfused_bytes += k.dram_read_bytes + k.dram_write_bytes;
  }
  EXPECT_GT(unfused_bytes, 10 * (fused[0].dram_read_bytes + fused[0].dram_write_bytes));
  EXPECT_LT(EvaluateKernel(a100, fused[0], 1410).time_s, unfused_s);
  // A copy at the DRAM peak: about 2·bytes / bandwidth.
  const double copy_s = EvaluateKernel(a100, MemcpyKernel(1e9), 1410).time_s;
  EXPECT_NEAR(copy_s, 2e9 / a100.mem_bandwidth_bps, 0.2 * copy_s);
  // An all-reduce over NVLink is far faster than over PCIe.
  const KernelTraits ar = AllReduceKernel(64e6, 8, 2);
  EXPECT_GT(EvaluateKernel(Device("a40"), ar, 1740).time_s, 5 * EvaluateKernel(a100, ar, 1410).time_s);
}

}  // namespace
}  // namespace emo::sim
