// calibrate.cc — the `emo calibrate` command: hosts a microbenchmark device (the simulator's, or
// with --device cuda:N the CUDA one in libemo_cuda.so beside NVML) and runs the calibration.
#include "cli/calibrate.h"

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>

#include "cli/cuda_bench_host.h"
#include "model/calibrate.h"
#include "sim/device_spec.h"
#include "sim/microbench.h"

namespace emo {

int RunCalibrate(const CalibrateCliOptions& opt) {
  std::unique_ptr<sim::SimBenchDevice> sim_device;
  CudaHost cuda;
  BenchDevice* device_ptr = nullptr;
  std::string err;
  if (opt.device.rfind("cuda:", 0) == 0) {
    if (!OpenCuda(opt.device, "emo calibrate", &cuda, &err)) {
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
  co.note = [&](const std::string& what) {
    fmt::print(stderr, "{}emo calibrate: {}\n", opt.progress ? "\n" : "", what);
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
  // The collective curve: how much slower an all-reduce is at the lowest clock, and up to which
  // clock the SM clock still slows it (by more than 2 %).
  const std::vector<double>& ratio = profile.collective_time_ratio;
  if (!ratio.empty()) {
    size_t knee = ratio.size();
    for (size_t c = 0; c < ratio.size(); ++c)
      if (ratio[c] > 1.02) knee = c;
    fmt::print("  all-reduce time over its time at {} MHz: {:.3f} at {} MHz; {}\n", profile.default_mhz, ratio.front(),
               profile.clocks_mhz.front(),
               knee == ratio.size() ? std::string("within 2 % of 1 at every clock")
                                    : fmt::format("above 1.02 up to {} MHz", profile.clocks_mhz[knee]));
  }
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
