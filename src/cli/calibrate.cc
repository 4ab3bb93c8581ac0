// calibrate.cc — the `emo calibrate` command: hosts a microbenchmark device (the simulator's, or
// with --device cuda:N the CUDA one in libemo_cuda.so beside NVML) and runs the calibration.
#include "cli/calibrate.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>

#include "apply/gpu_selection.h"
#include "apply/nvml_gpu_control.h"
#include "apply/watchdog.h"
#include "cli/child.h"
#include "model/calibrate.h"
#include "sim/device_spec.h"
#include "sim/microbench.h"

namespace emo {
namespace {

// What --device cuda:N needs alive while it calibrates: the watchdog (first: it forks), NVML, the
// CUDA library and its device. Destroyed in reverse: the device, then NVML restores the clocks.
struct CudaHost {
  Watchdog watchdog;
  std::unique_ptr<NvmlGpuControl> nvml;
  std::unique_ptr<GpuView> gpu;  // the one GPU calibrated, as GPU 0
  void* library = nullptr;
  std::unique_ptr<BenchDevice> device;
  ~CudaHost() {
    device.reset();
    std::string err;
    if (nvml && nvml->RestoreAll(&err)) watchdog.Done();
    // The library stays loaded: the CUDA runtime inside it tears down at exit.
  }
};

bool OpenCuda(const std::string& spec, CudaHost* host, std::string* err) {
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
    fmt::print(stderr, "emo calibrate: cuda:{} is the machine's GPU {} ({} {})\n", index, base, host->nvml->Name(base),
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

}  // namespace

int RunCalibrate(const CalibrateCliOptions& opt) {
  std::unique_ptr<sim::SimBenchDevice> sim_device;
  CudaHost cuda;
  BenchDevice* device_ptr = nullptr;
  std::string err;
  if (opt.device.rfind("cuda:", 0) == 0) {
    if (!OpenCuda(opt.device, &cuda, &err)) {
      fmt::print(stderr, "emo calibrate: {}\n", err);
      return 1;
    }
    device_ptr = cuda.device.get();
  } else if (opt.device.rfind("sim:", 0) == 0) {
    const sim::DeviceSpec* spec = sim::FindDevice(opt.device.substr(4));
    if (!spec) {
      std::string known;
      for (const std::string& n : sim::DeviceNames()) known += " " + n;
      fmt::print(stderr, "emo calibrate: unknown device '{}' (known:{})\n", opt.device, known);
      return 1;
    }
    sim_device = std::make_unique<sim::SimBenchDevice>(*spec, opt.seed);
    device_ptr = sim_device.get();
  } else {
    fmt::print(stderr,
               "emo calibrate: --device {}: expected sim:NAME (sim:a100, sim:h100, sim:a40, sim:3080ti) "
               "or cuda:N\n",
               opt.device);
    return 1;
  }
  BenchDevice& device = *device_ptr;
  CalibrateOptions co;
  if (!ParseClocks(opt.clocks, device.SupportedClocks(), &co.clocks_mhz, &err)) {
    fmt::print(stderr, "emo calibrate: {}\n", err);
    return 1;
  }
  co.partial_path = opt.out + ".partial";
  co.command = opt.command;
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  co.date = date;
  if (opt.progress)
    co.progress = [](int done, int total) {
      const int width = 40, filled = width * done / total;
      fmt::print(stderr, "\r[{}{}] {}/{}", std::string(static_cast<size_t>(filled), '#'),
                 std::string(static_cast<size_t>(width - filled), ' '), done, total);
      if (done == total) fmt::print(stderr, "\n");
      std::fflush(stderr);
    };
  DeviceProfile profile;
  if (!Calibrate(device, co, &profile, &err)) {
    fmt::print(stderr, "\nemo calibrate: {} (finished measurements are kept in {})\n", err, co.partial_path);
    return 1;
  }
  if (!SaveProfile(opt.out, profile, &err)) {
    fmt::print(stderr, "emo calibrate: {}\n", err);
    return 1;
  }
  std::error_code ec;
  std::filesystem::remove(co.partial_path, ec);
  fmt::print("{}: {} microbenchmarks at {} clocks ({}..{} MHz) written to {}\n", profile.device, kMicrobenches,
             profile.clocks(), profile.clocks_mhz.front(), profile.clocks_mhz.back(), opt.out);
  fmt::print("  kernel floor (an empty kernel's time): {:.2f} us at {} MHz, {:.2f} us at {} MHz\n",
             profile.kernel_floor_s.front() * 1e6, profile.clocks_mhz.front(), profile.kernel_floor_s.back() * 1e6,
             profile.clocks_mhz.back());
  // The cells where the GPU held a lower clock than the one locked (its power limit): the profile
  // keeps what it did there, as a pack at that setting would meet it, and marks them.
  for (int b = 0; b < kMicrobenches; ++b) {
    std::string held;
    const std::vector<double>& t = profile.bench[b].throttled_mhz;
    for (size_t c = 0; c < t.size(); ++c)
      if (t[c] > 0) held += fmt::format("{}{} → {:.0f}", held.empty() ? "" : ", ", profile.clocks_mhz[c], t[c]);
    if (!held.empty())
      fmt::print("  {}: ran below the locked clock (MHz, locked → held): {}\n",
                 MicrobenchName(static_cast<Microbench>(b)), held);
  }
  return 0;
}

}  // namespace emo
