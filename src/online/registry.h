// registry.h — the online methods a user can run beside a workload (`--controller NAME[:k=v,...]`,
// in `emo sim` and `emo run`). Each method is one entry of the table in registry.cc: its options,
// whether it acts at iteration starts (and so needs the training loop's step hook on hardware), and
// the telemetry it needs from the GPU back end. Adding a method touches that table alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/method_options.h"
#include "online/online_method.h"

namespace emo {

struct MethodEntry {
  std::string name;
  std::string json_key;  // where the measurement JSON keeps its findings: the name with '_' for '-'
  std::string options;   // usage, e.g. "eta=0.5|selector=energy,...", with the defaults
  bool iteration_driven = false;
  std::vector<Reading> needs;
  // Checks the options without a GPU; false with *err naming the bad one.
  std::function<bool(const MethodOptions&, std::string* err)> check;
  // Builds the method on `gpus` (it may act at once, e.g. reset clocks); null with *err.
  std::function<std::unique_ptr<OnlineMethod>(const MethodOptions&, GpuControl* gpus, std::string* err)> make;
};

const std::vector<MethodEntry>& OnlineMethods();

// A parsed --controller spec.
struct MethodSpec {
  const MethodEntry* entry = nullptr;  // null: no method
  MethodOptions options;
};

// "" gives no method. False with *err for an unknown method or bad options.
bool ParseMethodSpec(const std::string& spec, MethodSpec* out, std::string* err);
// Builds the method on `gpus` after checking that they offer the readings it needs.
std::unique_ptr<OnlineMethod> BuildMethod(const MethodSpec& spec, GpuControl* gpus, std::string* err);
// "name[:options]" of every method, one per line, for --help.
std::string MethodUsage();

}  // namespace emo
