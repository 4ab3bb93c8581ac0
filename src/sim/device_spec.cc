// device_spec.cc — the table of simulated GPUs and the voltage/frequency curve.
// Peak throughputs are the vendors' published figures divided by SM count and boost clock.
#include "sim/device_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace emo::sim {
namespace {

std::vector<int> ClockRange(int lo_mhz, int hi_mhz, int step_mhz) {
  std::vector<int> clocks;
  for (int f = lo_mhz; f <= hi_mhz; f += step_mhz) clocks.push_back(f);
  return clocks;
}

DeviceSpec A100() {
  DeviceSpec d;
  d.name = "A100-SXM4-80GB";
  d.sm_clocks_mhz = ClockRange(210, 1410, 15);
  d.default_sm_clock_mhz = 1410;
  d.mem_clock_mhz = 1593;
  d.mem_clocks_mhz = {d.mem_clock_mhz};
  d.mem_bandwidth_bps = 2.039e12;
  d.dram_efficiency = 0.95;
  d.sm_count = 108;
  d.link_bandwidth_bps = 300e9;       // NVLink 3, one direction
  d.tensor_flop_per_sm_cycle = 2048;  // 312 TFLOP/s BF16 dense
  d.fp32_flop_per_sm_cycle = 128;     // 19.5 TFLOP/s
  d.fp64_flop_per_sm_cycle = 64;      // 9.7 TFLOP/s
  d.int_op_per_sm_cycle = 64;
  d.sfu_op_per_sm_cycle = 16;
  d.lsu_op_per_sm_cycle = 32;
  d.shared_bytes_per_sm_cycle = 128;
  d.l1_bytes_per_sm_cycle = 128;
  d.l2_bytes_per_cycle = 5120;
  d.overlap_p = 6.0;
  d.v_floor = 0.76;
  d.v_knee_mhz = 1090;
  d.v_exponent = 1.14;
  d.board_w = 56;
  d.leakage_w = 10;
  d.clock_w = 5;
  d.sm_active_w = 48;
  d.tensor_w = 132;
  d.fp32_w = 100;
  d.fp64_w = 150;
  d.int_w = 40;
  d.sfu_w = 30;
  d.lsu_w = 30;
  d.shared_w = 146;
  d.l2_w = 150;
  d.dram_j_per_byte = 60e-12;
  // The SKU ships with default = maximum = 400 W (NVIDIA A100 datasheet: 400 W TDP for SXM4;
  // nvidia-smi -q on it: Default/Max Power Limit 400 W, Min 100 W).
  d.power_limit_min_w = 100;
  d.power_limit_max_w = 400;
  d.power_limit_default_w = 400;
  d.dvfs_latency_min_s = 0.005;
  d.dvfs_latency_max_s = 0.015;
  // NVML on GA100: nvmlDeviceGetPowerUsage returns the instantaneous reading; the sensor updates
  // every 100 ms from the last 25 ms of power (arXiv 2312.02741, SC24), and so does the energy
  // counter (~100 ms, ML.ENERGY's measurements).
  d.sensor_period_s = 0.1;
  d.sensor_window_s = 0.025;
  d.power_average_s = 0;
  d.util_period_s = 1.0 / 6;
  return d;
}

DeviceSpec A40() {
  DeviceSpec d;
  d.name = "A40";
  d.sm_clocks_mhz = ClockRange(210, 1740, 15);
  d.default_sm_clock_mhz = 1740;
  d.mem_clock_mhz = 7251;
  d.mem_clocks_mhz = {d.mem_clock_mhz};
  d.mem_bandwidth_bps = 696e9;
  d.dram_efficiency = 0.75;
  d.sm_count = 84;
  d.pcie = true;
  d.link_bandwidth_bps = 26e9;        // PCIe 4.0 x16
  d.tensor_flop_per_sm_cycle = 1024;  // 149.7 TFLOP/s BF16 dense
  d.fp32_flop_per_sm_cycle = 256;     // 37.4 TFLOP/s
  d.fp64_flop_per_sm_cycle = 4;
  d.int_op_per_sm_cycle = 64;
  d.sfu_op_per_sm_cycle = 16;
  d.lsu_op_per_sm_cycle = 32;
  d.shared_bytes_per_sm_cycle = 128;
  d.l1_bytes_per_sm_cycle = 128;
  d.l2_bytes_per_cycle = 2048;
  d.overlap_p = 2.0;
  d.v_floor = 0.80;
  d.v_knee_mhz = 1045;
  d.v_exponent = 0.76;
  d.board_w = 28;
  d.leakage_w = 11;
  d.clock_w = 17;
  d.sm_active_w = 50;
  d.tensor_w = 97;
  d.fp32_w = 50;
  d.fp64_w = 10;
  d.int_w = 25;
  d.sfu_w = 20;
  d.lsu_w = 25;
  d.shared_w = 10;
  d.l2_w = 119;
  d.dram_j_per_byte = 90e-12;
  d.power_limit_min_w = 100;
  d.power_limit_max_w = 300;
  d.power_limit_default_w = 300;
  d.dvfs_latency_min_s = 0.005;
  d.dvfs_latency_max_s = 0.015;
  // Ampere other than GA100: nvmlDeviceGetPowerUsage averages over 1 s (NVML reference). The
  // sensor is assumed to see the whole of each 100 ms period (the part-time sampling was measured
  // on A100 and H100).
  d.sensor_period_s = 0.1;
  d.sensor_window_s = 0.1;
  d.power_average_s = 1.0;
  d.util_period_s = 1.0 / 6;
  return d;
}

// The HGX A100 80GB boards configured for 500 W (NVIDIA A100 datasheet, footnote: "up to 500 W" on
// custom-thermal HGX systems): the same chip with default = maximum = 500 W. The Perseus (SOSP'24)
// A100 stage profiles were taken on such boards: they draw ~470 W at 1410 MHz, above 400 W.
DeviceSpec A100Hgx500W() {
  DeviceSpec d = A100();
  d.name = "A100-SXM4-80GB-500W";
  d.power_limit_max_w = 500;
  d.power_limit_default_w = 500;
  return d;
}

// H100 and RTX 3080 Ti: the A100/A40 power model scaled to their power limits.
DeviceSpec H100() {
  DeviceSpec d = A100();
  d.name = "H100-SXM";
  d.sm_clocks_mhz = ClockRange(210, 1980, 15);
  d.default_sm_clock_mhz = 1980;
  d.mem_clock_mhz = 2619;
  d.mem_clocks_mhz = {d.mem_clock_mhz};
  d.mem_bandwidth_bps = 3.35e12;
  d.sm_count = 132;
  d.link_bandwidth_bps = 370e9;       // NVLink 4
  d.tensor_flop_per_sm_cycle = 4096;  // 989 TFLOP/s BF16 dense at 1830 MHz
  d.fp32_flop_per_sm_cycle = 256;
  d.fp64_flop_per_sm_cycle = 128;
  d.shared_bytes_per_sm_cycle = 256;  // wgmma reads operands straight from shared memory
  d.l1_bytes_per_sm_cycle = 256;
  d.l2_bytes_per_cycle = 8192;  // incl. TMA multicast to thread-block clusters
  d.v_knee_mhz = 1400;
  const double scale = 700.0 / 500.0;
  for (double* w : {&d.board_w, &d.leakage_w}) *w *= scale;
  for (double* w : {&d.clock_w, &d.sm_active_w, &d.tensor_w, &d.fp32_w, &d.fp64_w, &d.int_w, &d.sfu_w, &d.lsu_w,
                    &d.shared_w, &d.l2_w})
    *w *= scale * 1410.0 / 1980.0;
  d.dram_j_per_byte = 25e-12;
  d.power_limit_min_w = 200;
  d.power_limit_max_w = 700;
  d.power_limit_default_w = 700;
  // Hopper: nvmlDeviceGetPowerUsage averages over 1 s (NVML reference), of samples that, as on the
  // A100, see 25 ms of every 100 ms (arXiv 2312.02741).
  d.power_average_s = 1.0;
  d.gpm = true;
  return d;
}

DeviceSpec Rtx3080Ti() {
  DeviceSpec d = A40();
  d.name = "RTX3080Ti";
  // NVML lists GeForce GA102 graphics clocks from 210 to 2100 MHz in 15 MHz steps (nvidia-smi -q -d
  // SUPPORTED_CLOCKS); the rated boost clock is 1665 MHz (NVIDIA spec sheet), and GPU Boost runs the
  // card up its V/f curve to ~1950 MHz at the 1.08 V limit under load (TechPowerUp GA102 reviews,
  // "3D Load" clock profile), then power and the limit pull it down. Locks above that ceiling are
  // accepted, as NVML accepts them, but the clock cannot pass the voltage limit.
  d.sm_clocks_mhz = ClockRange(210, 2100, 15);
  d.default_sm_clock_mhz = 1950;
  // Memory clocks as GPOEO's source lists them for this card (GPOEO.md §4); 405 and 810 are the
  // idle P-states' clocks.
  d.mem_clock_mhz = 9501;
  d.mem_clocks_mhz = {405, 810, 5001, 9251, 9501};
  d.mem_bandwidth_bps = 912e9;
  d.dram_efficiency = 0.85;
  d.sm_count = 80;
  d.link_bandwidth_bps = 10e9;       // PCIe 4.0, no peer-to-peer on GeForce: staged through the host
  d.tensor_flop_per_sm_cycle = 512;  // GeForce: half rate with FP32 accumulate
  d.fp32_flop_per_sm_cycle = 256;
  d.fp64_flop_per_sm_cycle = 4;
  d.v_knee_mhz = 1050;
  const double scale = 350.0 / 300.0;
  for (double* w : {&d.board_w, &d.leakage_w, &d.clock_w, &d.sm_active_w, &d.tensor_w, &d.fp32_w, &d.fp64_w, &d.int_w,
                    &d.sfu_w, &d.lsu_w, &d.shared_w, &d.l2_w})
    *w *= scale;
  d.dram_j_per_byte = 70e-12;  // GDDR6X
  // The GTX Titan X's power falls by 32 W (of 196) on a compute-bound kernel (md5hash, 1164 MHz)
  // and its idle power by 36 W when its GDDR5 drops from 3505 to 810 MHz (gpuPTXModel's
  // aggregated dataset and idle_pows): about 42 W at 3505, 17 % of its 250 W. That share of this
  // card's 350 W would exceed the whole board term the A40 fit leaves (33 W); three quarters of
  // that term is taken, which errs on the side of memory clocks saving less than they may.
  d.mem_w = 0.75 * d.board_w;
  d.power_limit_min_w = 100;  // Founders Edition: default 350 W (NVIDIA spec), slider to 400 W
  d.power_limit_max_w = 400;
  d.power_limit_default_w = 350;
  d.util_period_s = 1.0;  // the long end of NVML's "1 s to 1/6 s by product" (assumed for GeForce)
  return d;
}

struct Entry {
  DeviceSpec spec;
  std::vector<std::string> aliases;  // lower case
};

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = {
      {A100(), {"a100", "a100-sxm", "a100-sxm4", "a100-80gb", "a100_sxm"}},
      {A100Hgx500W(), {"a100-500w", "a100-hgx-500w", "a100_sxm_500w"}},
      {H100(), {"h100", "h100-sxm5", "h100-80gb", "h100_sxm"}},
      {Rtx3080Ti(), {"3080ti", "rtx-3080-ti", "rtx3080-ti", "rtx 3080 ti", "geforce rtx 3080 ti"}},
      {A40(), {"a40", "nvidia a40"}},
  };
  return table;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

double Voltage(const DeviceSpec& spec, double sm_clock_mhz) {
  const double f_max = spec.default_sm_clock_mhz;  // the top of the V/f curve (V = 1)
  const double f = std::clamp(sm_clock_mhz, static_cast<double>(spec.min_clock_mhz()), f_max);
  if (f <= spec.v_knee_mhz) return spec.v_floor;
  const double x = (f - spec.v_knee_mhz) / (f_max - spec.v_knee_mhz);
  return spec.v_floor + (1.0 - spec.v_floor) * std::pow(x, spec.v_exponent);
}

const DeviceSpec* FindDevice(std::string_view name) {
  const std::string key = Lower(name);
  for (const Entry& e : Table()) {
    if (Lower(e.spec.name) == key) return &e.spec;
    for (const std::string& alias : e.aliases)
      if (alias == key) return &e.spec;
  }
  return nullptr;
}

std::vector<std::string> DeviceNames() {
  std::vector<std::string> names;
  for (const Entry& e : Table()) names.push_back(e.spec.name);
  return names;
}

}  // namespace emo::sim
