// online_method.h — the online method the command line runs (--controller): parsed from its
// "name:key=value,..." spec, built on any GpuControl (simulated or NVML), and reported in the
// measurement JSON. Shared by `emo sim` and `emo run`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "apply/controller.h"
#include "apply/gpu_control.h"
#include "online/geepafs.h"
#include "online/zeus_power_limit.h"

namespace emo {

class OnlineMethod {
 public:
  // "" selects none. False with *err naming the bad part or the unknown method.
  bool Parse(const std::string& spec, std::string* err);
  // Builds the parsed method on `gpus` (it may act at once, e.g. reset clocks); false with *err
  // when the back end refused.
  bool Build(GpuControl* gpus, std::string* err);
  Controller* controller() const;  // null when none
  bool iteration_driven() const { return name_ == "zeus-power-limit"; }
  // Prints a line per GPU or result and adds the method's findings to `measure`.
  void Report(int gpus, nlohmann::ordered_json* measure) const;

 private:
  std::string name_;
  ZeusPowerLimitOptions zeus_options_;
  GeepafsOptions geepafs_options_;
  std::unique_ptr<ZeusPowerLimitOptimizer> zeus_;
  std::unique_ptr<Geepafs> geepafs_;
};

}  // namespace emo
