// gpus.cc — the `emo gpus` command: each GPU's name, clocks, power, limits, energy counter and
// utilisation through the NVML or zeusd back end, as a check that EMO can see and would control them.
#include "cli/gpus.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "cli/gpu_backend.h"

namespace emo {

int RunGpus(const GpusOptions& opt) {
  std::string err;
  GpuBackend backend;
  if (!backend.Open(opt.backend, &err)) {
    fmt::print(stderr, "emo gpus: {}\n", err);
    return 1;
  }
  GpuControl* gpus = backend.gpus;  // either back end
  if (opt.reset) {
    int failed = 0;
    for (int g = 0; g < gpus->Count(); ++g) {
      if (backend.zeusd) {
        // zeusd has no route for the default power limit, so only the clocks are reset.
        if (backend.zeusd->ResetClock(g, &err)) {
          fmt::print("GPU {}: clocks unlocked; power limit left at {:.0f} W (zeusd cannot restore the default)\n", g,
                     gpus->PowerLimitW(g).value_or(0));
        } else {
          fmt::print(stderr, "emo gpus: {}\n", err);
          ++failed;
        }
        continue;
      }
      if (backend.nvml->ResetToDefaults(g, &err)) {
        fmt::print("GPU {}: clocks unlocked, power limit {:.0f} W\n", g, gpus->PowerLimitW(g).value_or(0));
      } else {
        fmt::print(stderr, "emo gpus: {}\n", err);
        ++failed;
      }
    }
    return failed ? 1 : 0;
  }
  // Readings the back end does not offer (zeusd: clock, utilisation) are null / "?", not errors.
  auto offered = [&](Reading r, std::optional<double> v) { return gpus->Offers(r) ? v : std::nullopt; };
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (int g = 0; g < gpus->Count(); ++g) {
    const std::vector<int> clocks = gpus->SupportedClocks(g);
    const std::vector<int> mem_clocks = gpus->SupportedMemoryClocks(g);  // empty where none can be locked
    double lo = 0, hi = 0;
    const bool range = gpus->PowerLimitRange(g, &lo, &hi);
    // A reading the driver refused is null in JSON and "?" in text, never a made-up number.
    auto json = [](std::optional<double> v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(); };
    auto text = [](std::optional<double> v, double scale, const char* f) {
      return v ? fmt::format(fmt::runtime(f), *v * scale) : std::string("?");
    };
    const std::optional<double> clock = offered(Reading::kClock, gpus->ClockMhz(g)), power = gpus->PowerW(g),
                                limit = gpus->PowerLimitW(g), energy = gpus->EnergyJ(g),
                                util = offered(Reading::kUtilization, gpus->Utilization(g)),
                                mem = offered(Reading::kMemoryUtilization, gpus->MemoryUtilization(g));
    const std::string name = gpus->Name(g).empty() ? "?" : gpus->Name(g);
    const std::string uuid = gpus->Uuid(g);  // "" on zeusd
    nlohmann::ordered_json j = {
        {"gpu", g},
        {"name", name == "?" ? nlohmann::ordered_json() : nlohmann::ordered_json(name)},
        {"uuid", uuid.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(uuid)},
        {"sm_clock_mhz", json(clock)},
        {"supported_sm_clocks_mhz", clocks},
        {"supported_memory_clocks_mhz", mem_clocks},
        {"power_w", json(power)},
        {"power_limit_w", json(limit)},
        {"power_limit_range_w", range ? nlohmann::ordered_json{lo, hi} : nlohmann::ordered_json()},
        {"energy_j", json(energy)},
        {"utilization", json(util)},
        {"memory_utilization", json(mem)},
        {"activity", gpus->Offers(Reading::kActivity)}};
    if (!opt.json)
      fmt::print(
          "GPU {}: {}{}; SM {} MHz ({} clocks, {}-{} MHz); {} W, limit {} W ({}); energy counter {} J; "
          "utilisation {} %, memory {} %; activity counters (GPM) {}\n",
          g, name, uuid.empty() ? "" : " (" + uuid + ")", text(clock, 1, "{:.0f}"), clocks.size(),
          clocks.empty() ? 0 : clocks.front(), clocks.empty() ? 0 : clocks.back(), text(power, 1, "{:.1f}"),
          text(limit, 1, "{:.0f}"), range ? fmt::format("{:.0f}-{:.0f} W", lo, hi) : "?", text(energy, 1, "{:.1f}"),
          text(util, 100, "{:.0f}"), text(mem, 100, "{:.0f}"), gpus->Offers(Reading::kActivity) ? "yes" : "no");
    if (!opt.json && mem_clocks.size() > 1)
      fmt::print("GPU {}: memory clocks {} MHz (a lock may choose one: `--controller gpoeo:memory=1`)\n", g,
                 fmt::join(mem_clocks, ", "));
    all.push_back(j);
  }
  if (!gpus->error().empty()) {
    fmt::print(stderr, "emo gpus: {}\n", gpus->error());
    return 1;
  }
  if (opt.json) fmt::print("{}\n", all.dump(2));
  return 0;
}

}  // namespace emo
