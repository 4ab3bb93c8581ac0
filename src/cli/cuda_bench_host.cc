// cuda_bench_host.cc — opening the CUDA microbenchmark device (see cuda_bench_host.h).
#include "cli/cuda_bench_host.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <cstdlib>

#include "cli/child.h"

namespace emo {

CudaHost::~CudaHost() {
  device.reset();
  std::string err;
  if (nvml && nvml->RestoreAll(&err)) watchdog.Done();
  // The library stays loaded: the CUDA runtime inside it tears down at exit.
}

bool OpenCuda(const std::string& spec, const std::string& who, CudaHost* host, std::string* err) {
  char* end = nullptr;
  const long index = std::strtol(spec.c_str() + 5, &end, 10);
  if (spec.size() <= 5 || *end != '\0' || index < 0) {
    *err = "--device " + spec +
           ": expected cuda:N (N the GPU's index as nvidia-smi lists it, or within CUDA_VISIBLE_DEVICES)";
    return false;
  }
  // CUDA's device N is NVML's GPU N in PCI bus order; under CUDA_VISIBLE_DEVICES (a scheduler's
  // allocation), cuda:N is the Nth GPU it names, as the job would see it.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  if (!host->watchdog.Start(err)) return false;
  host->nvml = NvmlGpuControl::Open(err);
  if (!host->nvml) return false;
  GpuSelection visible;
  if (!SelectJobGpus("", std::getenv(kCudaVisibleDevicesEnv), "PCI_BUS_ID", InventoryOf(*host->nvml), &visible, err))
    return false;
  if (index >= static_cast<long>(visible.gpus.size())) {
    *err = "--device " + spec + ": no GPU " + std::to_string(index) + " (" +
           (visible.source == "all" ? "NVML lists " : visible.source + " names ") +
           std::to_string(visible.gpus.size()) + ")";
    return false;
  }
  const int base = visible.gpus[static_cast<size_t>(index)];
  if (visible.source != "all")
    fmt::print(stderr, "{}: cuda:{} is the machine's GPU {} ({} {})\n", who, index, base, host->nvml->Name(base),
               host->nvml->Uuid(base));
  host->nvml->Watch(&host->watchdog);
  const std::string path = LibraryBesideEmo("EMO_CUDA_LIBRARY", "libemo_cuda.so");
  host->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!host->library) {
    *err = std::string("loading the CUDA microbenchmarks: ") + dlerror() +
           " (libemo_cuda.so needs the NVIDIA driver's libcuda.so.1 and CUPTI's libcupti.so; EMO_CUDA_LIBRARY "
           "names another copy)";
    return false;
  }
  using Open = BenchDevice* (*)(GpuControl*, int, std::string*);
  const auto open = reinterpret_cast<Open>(dlsym(host->library, "EmoOpenCudaBenchDevice"));
  if (!open) {
    *err = path + ": no EmoOpenCudaBenchDevice";
    return false;
  }
  host->gpu = std::make_unique<GpuView>(host->nvml.get(), std::vector<int>{base});
  host->device.reset(open(host->gpu.get(), static_cast<int>(index), err));
  return host->device != nullptr;
}

}  // namespace emo
