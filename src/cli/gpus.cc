// gpus.cc — the `emo gpus` command: each GPU's name, clocks, power, limits, energy counter and
// utilisation through the NVML back end, as a check that EMO can see and would control them.
#include "cli/gpus.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "apply/nvml_gpu_control.h"

namespace emo {

int RunGpus(const GpusOptions& opt) {
  std::string err;
  std::unique_ptr<NvmlGpuControl> nvml = NvmlGpuControl::Open(&err);
  if (!nvml) {
    fmt::print(stderr, "emo gpus: {}\n", err);
    return 1;
  }
  if (opt.reset) {
    int failed = 0;
    for (int g = 0; g < nvml->Count(); ++g) {
      if (nvml->ResetToDefaults(g, &err)) {
        fmt::print("GPU {}: clocks unlocked, power limit {:.0f} W\n", g, nvml->PowerLimitW(g));
      } else {
        fmt::print(stderr, "emo gpus: {}\n", err);
        ++failed;
      }
    }
    return failed ? 1 : 0;
  }
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (int g = 0; g < nvml->Count(); ++g) {
    const std::vector<int> clocks = nvml->SupportedClocks(g);
    double lo = 0, hi = 0;
    nvml->PowerLimitRange(g, &lo, &hi);
    nlohmann::ordered_json j = {{"gpu", g},
                                {"name", nvml->Name(g)},
                                {"sm_clock_mhz", nvml->ClockMhz(g)},
                                {"supported_sm_clocks_mhz", clocks},
                                {"power_w", nvml->PowerW(g)},
                                {"power_limit_w", nvml->PowerLimitW(g)},
                                {"power_limit_range_w", {lo, hi}},
                                {"energy_j", nvml->EnergyJ(g)},
                                {"utilization", nvml->Utilization(g)},
                                {"memory_utilization", nvml->MemoryUtilization(g)}};
    if (!opt.json)
      fmt::print("GPU {}: {}; SM {:.0f} MHz ({} clocks, {}-{} MHz); {:.1f} W, limit {:.0f} W ({:.0f}-{:.0f} W); "
                 "energy counter {:.1f} J; utilisation {:.0f} %, memory {:.0f} %\n",
                 g, nvml->Name(g), j["sm_clock_mhz"].get<double>(), clocks.size(), clocks.empty() ? 0 : clocks.front(),
                 clocks.empty() ? 0 : clocks.back(), j["power_w"].get<double>(), j["power_limit_w"].get<double>(), lo,
                 hi, j["energy_j"].get<double>(), 100 * j["utilization"].get<double>(),
                 100 * j["memory_utilization"].get<double>());
    all.push_back(j);
  }
  if (!nvml->error().empty()) {
    fmt::print(stderr, "emo gpus: {}\n", nvml->error());
    return 1;
  }
  if (opt.json) fmt::print("{}\n", all.dump(2));
  return 0;
}

}  // namespace emo
