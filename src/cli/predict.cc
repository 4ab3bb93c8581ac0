// predict.cc — the `emo predict` command: traces and models the workload (cli/sim_pipeline.h), or
// models a real job's traces (cli/model_pipeline.h), then one prediction pass for the policy.
#include "cli/predict.h"

#include <fmt/core.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli/model_pipeline.h"
#include "cli/sim_pipeline.h"
#include "device/frequency_policy.h"
#include "search/dp_search.h"

namespace emo {

namespace {

// The policy's prediction beside the default clocks', printed or as JSON.
int Report(const PredictOptions& opt, Predictor& predictor, const FrequencyPolicy& policy,
           const std::vector<int>& clocks_mhz, const std::string& name, const std::string& device) {
  Schedule s;
  std::string err;
  if (!ScheduleFromPolicy(policy, clocks_mhz, predictor.gpus(), opt.dvfs_latency_ms, &s, &err)) {
    fmt::print(stderr, "emo predict: {}: {}\n", opt.policy, err);
    return 1;
  }
  const Predictor::Result& base = predictor.base();
  const Predictor::Result r = predictor.Run(s);
  const double iters = static_cast<double>(std::max(1, predictor.iterations()));
  nlohmann::ordered_json j = {
      {"workload", name},
      {"device", device},
      {"default", {{"iteration_ms", base.end_ns / 1e6 / iters}, {"energy_j", base.energy_j / iters}}},
      {"predicted", {{"iteration_ms", r.end_ns / 1e6 / iters}, {"energy_j", r.energy_j / iters}}},
      {"slowdown", r.end_ns / base.end_ns - 1},
      {"energy_saving", 1 - r.energy_j / base.energy_j}};
  if (opt.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} on {} x {}: {:.3f} -> {:.3f} ms per iteration ({:+.2f} %), {:.2f} -> {:.2f} J ({:.2f} % saved)\n",
               name, predictor.gpus(), device, base.end_ns / 1e6 / iters, r.end_ns / 1e6 / iters,
               (r.end_ns / base.end_ns - 1) * 100, base.energy_j / iters, r.energy_j / iters,
               (1 - r.energy_j / base.energy_j) * 100);
  }
  return 0;
}

}  // namespace

int RunPredict(const PredictOptions& opt) {
  std::string err;
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo predict: {}\n", e);
    return 1;
  };
  if (opt.workload.empty() == opt.traces.empty()) return fail("give a workload (--workload) or traces, not both");
  FrequencyPolicy policy;
  if (!LoadPolicy(opt.policy, &policy, &err)) return fail(err);
  if (!opt.traces.empty()) {
    TracePipeline tp;
    if (!BuildTracePipeline({opt.traces, opt.packs, opt.power_w, opt.clock_mhz, opt.profile, opt.pack_ms,
                             opt.low_traces, opt.low_mhz, opt.low_power_w},
                            &tp, &err))
      return fail(err);
    for (const std::string& note : tp.notes) fmt::print(stderr, "emo predict: note: {}\n", note);
    return Report(opt, tp.predictor, policy, tp.profile.clocks_mhz, tp.files[0], tp.profile.device);
  }
  Pipeline pl;
  PipelineOptions po;
  po.profile = opt.profile;
  po.low_mhz = opt.low_mhz;
  if (!opt.low_traces.empty())
    return fail("--low-trace goes with traces; a workload's run at --low-clock is simulated");
  if (!BuildPipeline(opt.workload, opt.device, po, &pl, &err)) return fail(err);
  return Report(opt, pl.predictor, policy, pl.profile.clocks_mhz, pl.program.name, pl.program.device);
}

}  // namespace emo
