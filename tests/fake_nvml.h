// fake_nvml.h — the state of the fake NVML library (fake_nvml.cc, built as a shared library that
// the NVML back end loads with dlopen in tests): what the "driver" reports and what it was told.
#pragma once

#include <string>
#include <vector>

namespace emo::test {

struct FakeNvmlGpu {
  std::string name = "NVIDIA A100-SXM4-80GB";
  std::string uuid;                                     // "": GPU-fa4e0000-0000-0000-0000-00000000000<index>
  unsigned int locked_min = 0, locked_max = 0;          // 0: not locked
  std::vector<unsigned int> mem_clocks = {1593};        // ascending; the A100's one
  unsigned int mem_locked_min = 0, mem_locked_max = 0;  // 0: not locked
  unsigned int limit_mw = 400000, default_mw = 400000, min_mw = 100000, max_mw = 500000;
  unsigned long long energy_mj = 123456789;
  unsigned int power_mw = 250500, util_gpu = 87, util_mem = 41, sm_mhz = 1410;
  bool lost = false;  // every call returns NVML_ERROR_GPU_IS_LOST
  bool gpm = false;   // supports GPM; its metrics are gpm_percent[id] between any two samples
  double gpm_percent[16] = {};
};

struct FakeNvml {
  std::vector<FakeNvmlGpu> gpus = std::vector<FakeNvmlGpu>(2);
  bool deny = false;  // setters return NVML_ERROR_NO_PERMISSION
  int inits = 0, shutdowns = 0;
  int gpm_samples_allocated = 0, gpm_samples_freed = 0;
};

}  // namespace emo::test

// Exported by the fake library: its one state (find it with dlsym).
extern "C" emo::test::FakeNvml* fake_nvml_state();
