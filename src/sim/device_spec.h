// device_spec.h — the simulated GPUs: clocks, per-pipe peak throughputs, voltage/frequency curve
// and power coefficients. Plain data; kernel_model.h turns it into time and power.
//
// Voltages are normalised: V(max SM clock) = 1. Below `v_knee_mhz` the voltage stays at
// `v_floor`; above it rises to 1 as ((f - knee) / (f_max - knee))^v_exponent. Power at SM clock f
// (GHz) and voltage V, with activities u in [0, 1]:
//   P = board_w + leakage_w·V² + V²·f·(clock_w + sm_active_w·busy + Σ pipe_w·u_pipe)
//       + dram_j_per_byte·(DRAM bytes/s) − mem_w·(1 − m/m_default)
// at memory clock m, which also scales the DRAM bandwidth by m/m_default (GDDR parts only; HBM
// parts list one memory clock).
// where the pipes are tensor, fp32, fp64, int, sfu, lsu, shared (u = mean of shared and L1) and
// l2. The A100 and A40 V/f and power parameters, overlap_p, DRAM efficiency and link bandwidth
// are fitted to the Perseus stage profiles (tests/sim_calibration_test.cc); H100 and RTX 3080 Ti
// reuse the fit of the same memory technology (HBM / GDDR), scaled to their power limits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace emo::sim {

struct DeviceSpec {
  std::string name;                 // canonical, e.g. "A100-SXM4-80GB"
  std::vector<int> sm_clocks_mhz;   // supported SM clocks, ascending
  int default_sm_clock_mhz = 0;     // the top of the V/f curve, where the driver boosts without a lock:
                                    // the highest supported clock, except on GeForce (boost ceiling)
  int mem_clock_mhz = 0;            // the default memory clock, the highest of mem_clocks_mhz
  std::vector<int> mem_clocks_mhz;  // memory clocks a lock may choose, ascending (one on HBM parts)
  double mem_bandwidth_bps = 0;     // DRAM peak, B/s
  double dram_efficiency = 0;       // fraction of the DRAM peak a streaming kernel attains
  int sm_count = 0;
  bool pcie = false;              // PCIe card (no NVLink/SXM)
  double link_bandwidth_bps = 0;  // GPU-to-GPU collective bus bandwidth (NVLink or PCIe), B/s

  // Peak throughput per SM per SM-clock cycle (L2: whole chip; the L2 clock follows the SM clock).
  double tensor_flop_per_sm_cycle = 0;  // FP16/BF16 tensor FLOP (dense, FP32 accumulate)
  double fp32_flop_per_sm_cycle = 0;    // FP32 FLOP (an FMA is 2)
  double fp64_flop_per_sm_cycle = 0;    // FP64 FLOP (non-tensor)
  double int_op_per_sm_cycle = 0;       // INT32 ALU operations
  double sfu_op_per_sm_cycle = 0;       // special-function operations (exp, rsqrt, ...)
  double lsu_op_per_sm_cycle = 0;       // thread-level load/store instructions
  double shared_bytes_per_sm_cycle = 0;
  double l1_bytes_per_sm_cycle = 0;
  double l2_bytes_per_cycle = 0;  // whole chip
  double overlap_p = 0;           // Lp-norm exponent combining overlapping times (∞ = perfect)

  // Voltage/frequency curve (normalised volts).
  double v_floor = 0;     // V at and below the knee
  double v_knee_mhz = 0;  // highest clock still at the floor voltage
  double v_exponent = 1;  // shape of the rise above the knee (1 = linear)

  // Power.
  double board_w = 0;      // SM-clock- and voltage-independent: fans, VRM, memory background, I/O
  double mem_w = 0;        // the part of board_w the memory clock drives (PHY, refresh), ∝ memory clock
  double leakage_w = 0;    // static leakage at V = 1, scales as V^2
  double clock_w = 0;      // clock tree, W per GHz at V = 1, drawn even when idle
  double sm_active_w = 0;  // schedulers/register files of busy SMs, W per GHz at V = 1
  double tensor_w = 0;     // per-pipe dynamic power at full utilisation, W per GHz at V = 1
  double fp32_w = 0;
  double fp64_w = 0;
  double int_w = 0;
  double sfu_w = 0;
  double lsu_w = 0;
  double shared_w = 0;  // shared memory and L1 (one SRAM)
  double l2_w = 0;
  double dram_j_per_byte = 0;
  double power_limit_min_w = 0;
  double power_limit_max_w = 0;
  double power_limit_default_w = 0;
  double dvfs_latency_min_s = 0;  // a clock change takes effect after 5–15 ms
  double dvfs_latency_max_s = 0;

  // Telemetry as NVML reports it on this product (docs/simulator.md's table names the sources).
  double sensor_period_s = 0.1;    // power-sensor and energy-counter update interval
  double sensor_window_s = 0.1;    // the part of each period whose power the sensor averages (the
                                   // period's last 25 ms on A100/H100: power outside it goes unseen)
  double power_average_s = 0;      // nvmlDeviceGetPowerUsage: 0 = the latest sensor sample
                                   // ("instantaneous", GA100), else the mean of the samples over this span
  double util_period_s = 1.0 / 6;  // nvmlDeviceGetUtilizationRates' sample period (1/6 s to 1 s by product)
  bool gpm = false;                // NVML's GPU performance monitoring (activity windows): Hopper and later

  int min_clock_mhz() const { return sm_clocks_mhz.front(); }
  int max_clock_mhz() const { return sm_clocks_mhz.back(); }
  int boost_ceiling_mhz() const { return default_sm_clock_mhz; }  // no clock runs above it
};

// Normalised voltage at an SM clock (MHz); clocks outside [min clock, boost ceiling] are clamped.
double Voltage(const DeviceSpec& spec, double sm_clock_mhz);

// The device with this name or alias, case-insensitive ("A100-SXM4-80GB", "a100", "h100",
// "3080ti", "a40", ...); nullptr when unknown.
const DeviceSpec* FindDevice(std::string_view name);

// Canonical names of every simulated device.
std::vector<std::string> DeviceNames();

}  // namespace emo::sim
