// model_fixtures.h — a synthetic device profile for the pack model's tests: 12 microbenchmarks with
// distinct metric vectors and known time and energy curves over 8 clocks.
#pragma once

#include "model/device_profile.h"

namespace emo::test {

// Benchmark b's time at clock f: a compute part that scales with 1/f plus a fixed (memory) part;
// its power: static plus a part growing with f². Both differ per benchmark.
inline double SyntheticTime(int b, int mhz) { return (1.0 + 0.1 * b) * (1000.0 / mhz) * 1e-3 + 0.05e-3 * (b % 4); }
inline double SyntheticPower(int b, int mhz) { return 60 + 5 * b + 150 * (mhz / 1410.0) * (mhz / 1410.0); }

// Metric vectors: each benchmark has cycles and warps, plus the counters its kind produces. Every
// benchmark has a counter that FP32 FMA and DRAM read both lack or, for the idle benchmark, is
// pinned down by those two (see pack_model_test.cc), so a mix of those two has one representation.
inline DeviceProfile SyntheticProfile() {
  DeviceProfile p;
  p.device = "synthetic";
  p.clocks_mhz = {210, 420, 630, 840, 1050, 1200, 1305, 1410};
  p.default_mhz = 1410;
  p.provenance = {"2025-01-31", "model_fixtures.h", "synthetic"};
  auto set = [&](Microbench b, std::initializer_list<std::pair<Metric, double>> ms) {
    for (auto [m, v] : ms) p.bench[b].metrics[m] = v;
  };
  set(kBenchIntAlu, {{kSmCyclesActive, 1.0e6}, {kWarpsPerActiveCycle, 48}, {kInstAlu, 4e7}});
  set(kBenchFp32Fma, {{kSmCyclesActive, 1.2e6}, {kWarpsPerActiveCycle, 40}, {kInstFma, 5e7}, {kInstLsu, 1e4}});
  set(kBenchFp64, {{kSmCyclesActive, 2.0e6}, {kWarpsPerActiveCycle, 32}, {kInstFp64, 1e7}});
  set(kBenchSfu, {{kSmCyclesActive, 1.5e6}, {kWarpsPerActiveCycle, 24}, {kInstAlu, 2e6}});
  set(kBenchShared, {{kSmCyclesActive, 1.1e6}, {kWarpsPerActiveCycle, 36}, {kInstLsu, 3e7}, {kInstAlu, 5e6}});
  set(kBenchL1,
      {{kSmCyclesActive, 0.9e6}, {kWarpsPerActiveCycle, 30}, {kL1Bytes, 4e9}, {kInstLsu, 2e7}, {kInstAlu, 3e6}});
  set(kBenchL2, {{kSmCyclesActive, 1.3e6},
                 {kWarpsPerActiveCycle, 28},
                 {kL2Bytes, 2e9},
                 {kL1Bytes, 2e9},
                 {kInstLsu, 1e7},
                 {kInstAlu, 2e6}});
  set(kBenchDramRead, {{kSmCyclesActive, 1.4e6},
                       {kWarpsPerActiveCycle, 20},
                       {kDramReadBytes, 1e9},
                       {kL2Bytes, 1e9},
                       {kL1Bytes, 1e9},
                       {kInstLsu, 5e6}});
  set(kBenchDramWrite,
      {{kSmCyclesActive, 1.4e6}, {kWarpsPerActiveCycle, 20}, {kDramWriteBytes, 1e9}, {kL2Bytes, 1e9}, {kInstLsu, 5e6}});
  set(kBenchHmma, {{kSmCyclesActive, 1.6e6}, {kWarpsPerActiveCycle, 16}, {kInstTensor, 8e6}, {kInstFma, 1e6}});
  set(kBenchImma, {{kSmCyclesActive, 1.6e6}, {kWarpsPerActiveCycle, 16}, {kInstTensor, 6e6}, {kInstAlu, 2e6}});
  set(kBenchIdle, {{kSmCyclesActive, 1e4}, {kWarpsPerActiveCycle, 1}});
  for (int b = 0; b < kMicrobenches; ++b) {
    for (int f : p.clocks_mhz) {
      p.bench[b].time_s.push_back(SyntheticTime(b, f));
      p.bench[b].energy_j.push_back(SyntheticTime(b, f) * SyntheticPower(b, f));
    }
  }
  return p;
}

}  // namespace emo::test
