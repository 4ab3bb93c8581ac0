// predict.cc — the `emo predict` command: traces and models the workload (cli/sim_pipeline.h),
// then one prediction pass for the policy.
#include "cli/predict.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/sim_pipeline.h"
#include "device/frequency_policy.h"
#include "search/dp_search.h"

namespace emo {

int RunPredict(const PredictOptions& opt) {
  std::string err;
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo predict: {}\n", e);
    return 1;
  };
  FrequencyPolicy policy;
  if (!LoadPolicy(opt.policy, &policy, &err)) return fail(err);
  Pipeline pl;
  PipelineOptions po;
  po.profile = opt.profile;
  if (!BuildPipeline(opt.workload, opt.device, po, &pl, &err)) return fail(err);
  Schedule s;
  if (!ScheduleFromPolicy(policy, pl.profile.clocks_mhz, pl.predictor.gpus(), opt.dvfs_latency_ms, &s, &err))
    return fail(opt.policy + ": " + err);
  const Predictor::Result& base = pl.predictor.base();
  const Predictor::Result r = pl.predictor.Run(s);
  const double iters = static_cast<double>(std::max(1, pl.predictor.iterations()));
  nlohmann::ordered_json j = {
      {"workload", pl.program.name},
      {"device", pl.program.device},
      {"default", {{"iteration_ms", base.end_ns / 1e6 / iters}, {"energy_j", base.energy_j / iters}}},
      {"predicted", {{"iteration_ms", r.end_ns / 1e6 / iters}, {"energy_j", r.energy_j / iters}}},
      {"slowdown", r.end_ns / base.end_ns - 1},
      {"energy_saving", 1 - r.energy_j / base.energy_j}};
  if (opt.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} on {} x {}: {:.3f} -> {:.3f} ms per iteration ({:+.2f} %), {:.2f} -> {:.2f} J ({:.2f} % saved)\n",
               pl.program.name, pl.predictor.gpus(), pl.program.device, base.end_ns / 1e6 / iters,
               r.end_ns / 1e6 / iters, (r.end_ns / base.end_ns - 1) * 100, base.energy_j / iters, r.energy_j / iters,
               (1 - r.energy_j / base.energy_j) * 100);
  }
  return 0;
}

}  // namespace emo
