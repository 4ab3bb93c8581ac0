// calibrate.cc — the `emo calibrate` command: hosts the simulator's microbenchmark device (the only
// back end so far; a CUDA+NVML one would plug in as another BenchDevice) and runs the calibration.
#include "cli/calibrate.h"

#include <fmt/core.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "model/calibrate.h"
#include "sim/device_spec.h"
#include "sim/microbench.h"

namespace emo {

int RunCalibrate(const CalibrateCliOptions& opt) {
  if (opt.device.rfind("sim:", 0) != 0) {
    fmt::print(stderr,
               "emo calibrate: --device {}: only simulated devices (sim:a100, sim:h100, sim:a40, sim:3080ti) "
               "are supported so far\n",
               opt.device);
    return 1;
  }
  const sim::DeviceSpec* spec = sim::FindDevice(opt.device.substr(4));
  if (!spec) {
    std::string known;
    for (const std::string& n : sim::DeviceNames()) known += " " + n;
    fmt::print(stderr, "emo calibrate: unknown device '{}' (known:{})\n", opt.device, known);
    return 1;
  }
  sim::SimBenchDevice device(*spec, opt.seed);
  std::string err;
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
  return 0;
}

}  // namespace emo
