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
        fmt::print("GPU {}: clocks unlocked, power limit {:.0f} W\n", g, nvml->PowerLimitW(g).value_or(0));
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
    const bool range = nvml->PowerLimitRange(g, &lo, &hi);
    // A reading the driver refused is null in JSON and "?" in text, never a made-up number.
    auto json = [](std::optional<double> v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(); };
    auto text = [](std::optional<double> v, double scale, const char* f) {
      return v ? fmt::format(fmt::runtime(f), *v * scale) : std::string("?");
    };
    const std::optional<double> clock = nvml->ClockMhz(g), power = nvml->PowerW(g), limit = nvml->PowerLimitW(g),
                                energy = nvml->EnergyJ(g), util = nvml->Utilization(g),
                                mem = nvml->MemoryUtilization(g);
    nlohmann::ordered_json j = {{"gpu", g},
                                {"name", nvml->Name(g)},
                                {"sm_clock_mhz", json(clock)},
                                {"supported_sm_clocks_mhz", clocks},
                                {"power_w", json(power)},
                                {"power_limit_w", json(limit)},
                                {"power_limit_range_w", range ? nlohmann::ordered_json{lo, hi} : nlohmann::ordered_json()},
                                {"energy_j", json(energy)},
                                {"utilization", json(util)},
                                {"memory_utilization", json(mem)}};
    if (!opt.json)
      fmt::print("GPU {}: {}; SM {} MHz ({} clocks, {}-{} MHz); {} W, limit {} W ({}); energy counter {} J; "
                 "utilisation {} %, memory {} %\n",
                 g, nvml->Name(g), text(clock, 1, "{:.0f}"), clocks.size(), clocks.empty() ? 0 : clocks.front(),
                 clocks.empty() ? 0 : clocks.back(), text(power, 1, "{:.1f}"), text(limit, 1, "{:.0f}"),
                 range ? fmt::format("{:.0f}-{:.0f} W", lo, hi) : "?", text(energy, 1, "{:.1f}"),
                 text(util, 100, "{:.0f}"), text(mem, 100, "{:.0f}"));
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
