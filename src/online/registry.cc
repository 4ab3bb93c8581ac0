// registry.cc — the table of online methods.
#include "online/registry.h"

#include <algorithm>

#include "online/geepafs.h"
#include "online/gpoeo.h"
#include "online/zeus_power_limit.h"

namespace emo {
namespace {

// An entry for a method class built from (GpuControl*, Options) with its option parser.
template <class Method, class Options>
MethodEntry Entry(std::string name, std::string options, bool iteration_driven, std::vector<Reading> needs,
                  bool (*parse)(const MethodOptions&, Options*, std::string*)) {
  MethodEntry e;
  e.name = std::move(name);
  e.json_key = e.name;
  std::replace(e.json_key.begin(), e.json_key.end(), '-', '_');
  e.options = std::move(options);
  e.iteration_driven = iteration_driven;
  e.needs = std::move(needs);
  e.check = [parse](const MethodOptions& m, std::string* err) {
    Options o;
    return parse(m, &o, err);
  };
  e.make = [parse](const MethodOptions& m, GpuControl* gpus, std::string* err) -> std::unique_ptr<OnlineMethod> {
    Options o;
    if (!parse(m, &o, err)) return nullptr;
    return std::make_unique<Method>(gpus, o);
  };
  return e;
}

}  // namespace

const std::vector<MethodEntry>& OnlineMethods() {
  static const std::vector<MethodEntry> methods = {
      Entry<ZeusPowerLimitOptimizer, ZeusPowerLimitOptions>(
          "zeus-power-limit",
          "eta=0.5|selector=energy|time|zeus-cost|max-slowdown=1.1,wait=1,warmup=10,profile=40,step-w=25", true,
          {Reading::kEnergy, Reading::kPowerLimit}, ParseZeusPowerLimitOptions),
      Entry<Geepafs, GeepafsOptions>(
          "geepafs", "p=0.9,min-mhz=F,period-ms=200,reprobe-s=15", false,
          {Reading::kUtilization, Reading::kMemoryUtilization, Reading::kClock, Reading::kPower}, ParseGeepafsOptions),
      Entry<Gpoeo, GpoeoOptions>(
          "gpoeo",
          "objective=energy|edp|ed2p,slowdown=0.05,models=DIR,sample-ms=20,probes=8,step=3,"
          "probe-periods=10,drift=0.15,memory=0|1,memory-probes=3,guard=0|1",
          false,
          {Reading::kPower, Reading::kUtilization, Reading::kMemoryUtilization, Reading::kClock, Reading::kPowerLimit},
          ParseGpoeoOptions),
  };
  return methods;
}

bool ParseMethodSpec(const std::string& spec, MethodSpec* out, std::string* err) {
  *out = MethodSpec{};
  if (spec.empty()) return true;
  if (!SplitMethodSpec(spec, &out->options, err)) return false;
  for (const MethodEntry& e : OnlineMethods())
    if (e.name == out->options.name) {
      out->entry = &e;
      return e.check(out->options, err);
    }
  std::string known;
  for (const MethodEntry& e : OnlineMethods()) known += (known.empty() ? "" : ", ") + e.name;
  *err = "unknown method '" + out->options.name + "' (" + known + ")";
  return false;
}

std::unique_ptr<OnlineMethod> BuildMethod(const MethodSpec& spec, GpuControl* gpus, std::string* err) {
  if (!spec.entry) return nullptr;
  if (!CheckOffers(*gpus, spec.entry->needs, err)) {
    *err = spec.entry->name + ": " + *err;
    return nullptr;
  }
  std::unique_ptr<OnlineMethod> m = spec.entry->make(spec.options, gpus, err);
  if (m && !m->error().empty()) {
    *err = spec.entry->name + ": " + m->error();
    return nullptr;
  }
  return m;
}

std::string MethodUsage() {
  std::string s;
  for (const MethodEntry& e : OnlineMethods()) s += (s.empty() ? "" : " or ") + e.name + "[:" + e.options + "]";
  return s;
}

}  // namespace emo
