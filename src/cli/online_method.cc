// online_method.cc — building and reporting the command line's online method.
#include "cli/online_method.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "online/method_options.h"

namespace emo {

bool OnlineMethod::Parse(const std::string& spec, std::string* err) {
  name_.clear();
  if (spec.empty()) return true;
  MethodOptions m;
  if (!SplitMethodSpec(spec, &m, err)) return false;
  if (m.name == "zeus-power-limit" && !ParseZeusPowerLimitOptions(m, &zeus_options_, err)) return false;
  if (m.name == "geepafs" && !ParseGeepafsOptions(m, &geepafs_options_, err)) return false;
  if (m.name != "zeus-power-limit" && m.name != "geepafs") {
    *err = "unknown method '" + m.name + "' (zeus-power-limit, geepafs)";
    return false;
  }
  name_ = m.name;
  return true;
}

bool OnlineMethod::Build(GpuControl* gpus, std::string* err) {
  if (name_ == "zeus-power-limit") zeus_ = std::make_unique<ZeusPowerLimitOptimizer>(gpus, zeus_options_);
  if (name_ == "geepafs") geepafs_ = std::make_unique<Geepafs>(gpus, geepafs_options_);
  if (controller() && !controller()->error().empty()) {
    *err = name_ + ": " + controller()->error();
    return false;
  }
  return true;
}

Controller* OnlineMethod::controller() const {
  if (zeus_) return zeus_.get();
  if (geepafs_) return geepafs_.get();
  return nullptr;
}

void OnlineMethod::Report(int gpus, nlohmann::ordered_json* measure) const {
  if (zeus_) {
    nlohmann::ordered_json profiled = nlohmann::ordered_json::array();
    for (const auto& x : zeus_->measurements())
      profiled.push_back({{"limit_w", x.limit_w}, {"energy_j", x.energy_j}, {"time_s", x.time_s}});
    const bool done = zeus_->state() == ZeusPowerLimitOptimizer::State::kDone;
    (*measure)["zeus_power_limit"] = {{"done", done},
                                      {"optimum_w", done ? nlohmann::ordered_json(zeus_->optimum_w()) : nullptr},
                                      {"candidates", zeus_->candidates_w().size()},
                                      {"profiled", profiled}};
    if (done)
      fmt::print("zeus-power-limit: profiled {} limits, chose {:.0f} W\n", profiled.size(), zeus_->optimum_w());
    else
      fmt::print("zeus-power-limit: profiled {} of {} limits before the run ended (each takes {} iterations)\n",
                 profiled.size(), zeus_->candidates_w().size(), zeus_options_.warmup_steps + zeus_options_.profile_steps);
  }
  if (geepafs_) {
    nlohmann::ordered_json per_gpu = nlohmann::ordered_json::array();
    for (int g = 0; g < gpus; ++g) {
      per_gpu.push_back({{"gpu", g}, {"probes_mhz", geepafs_->probes_mhz(g)}, {"choices_mhz", geepafs_->choices(g)}});
      fmt::print("geepafs: GPU {} probed {} and chose {}\n", g, fmt::join(geepafs_->probes_mhz(g), "/"),
                 geepafs_->choices(g).empty() ? std::string("nothing yet")
                                              : fmt::format("{}", fmt::join(geepafs_->choices(g), ", ")));
    }
    (*measure)["geepafs"] = per_gpu;
  }
}

}  // namespace emo
