// cuda_bench_host.h — hosting the CUDA microbenchmark device for a command (`emo calibrate`,
// `emo gpoeo train` with --device cuda:N): the watchdog, NVML, libemo_cuda.so loaded with dlopen,
// and its BenchDevice on the one GPU named.
#pragma once

#include <memory>
#include <string>

#include "apply/gpu_selection.h"
#include "apply/nvml_gpu_control.h"
#include "apply/watchdog.h"
#include "device/microbench.h"

namespace emo {

// What --device cuda:N needs alive while the command runs: the watchdog (first: it forks), NVML, the
// CUDA library and its device. Destroyed in reverse: the device, then NVML restores the clocks.
struct CudaHost {
  Watchdog watchdog;
  std::unique_ptr<NvmlGpuControl> nvml;
  std::unique_ptr<GpuView> gpu;  // the one GPU named, as GPU 0
  void* library = nullptr;
  std::unique_ptr<BenchDevice> device;
  ~CudaHost();
};

// Opens `spec` (cuda:N: N the GPU's index as nvidia-smi lists it, or within CUDA_VISIBLE_DEVICES)
// into *host. `who` prefixes what it tells on stderr. False with *err when NVML, the library or the
// GPU is missing.
bool OpenCuda(const std::string& spec, const std::string& who, CudaHost* host, std::string* err);

}  // namespace emo
