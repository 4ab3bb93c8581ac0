// optimize.cc — the `emo optimize` command: hosts the simulator as the device and runs EMO's
// pipeline through the device interfaces only (trace, energy counters, range profiling).
#include "cli/optimize.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/sim_pipeline.h"
#include "search/dp_search.h"

namespace emo {

namespace {

struct Spread {
  double mean = 0, min = 0, max = 0;
};
Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  return s;
}
nlohmann::ordered_json SpreadJson(const Spread& s) { return {{"mean", s.mean}, {"min", s.min}, {"max", s.max}}; }

// A policy's measured effect over seeds, each run paired with the default run of the same seed.
struct Outcome {
  double iteration_ms = 0, energy_j = 0;  // means per iteration
  Spread slowdown, saving;
};

}  // namespace

int RunOptimize(const OptimizeOptions& opt) {
  std::string err;
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo optimize: {}\n", e);
    return 1;
  };
  if (!(opt.budget >= 0) || opt.trace_iterations < 3 || opt.seeds < 1 || opt.iterations < 2)
    return fail("--budget must be >= 0, --trace-iterations >= 3, --iterations >= 2, --seeds >= 1");
  Pipeline pl;
  PipelineOptions po;
  po.profile = opt.profile;
  po.pack_ms = opt.pack_ms;
  po.trace_iterations = opt.trace_iterations;
  po.seed = opt.seed;
  if (!BuildPipeline(opt.workload, opt.device, po, &pl, &err)) return fail(err);
  const sim::Program& program = pl.program;
  const DeviceProfile& profile = pl.profile;
  const Graph& g = pl.g;
  const Packing& packing = pl.packing;
  const PackProfile& pp = pl.pp;
  Predictor& predictor = pl.predictor;

  // 5. Search.
  SearchOptions so;
  so.budget = opt.budget;
  so.grid_ms = opt.grid_ms;
  so.min_interval_ms = opt.min_interval_ms;
  so.step_ms = opt.step_ms;
  so.dvfs_latency_ms = opt.dvfs_latency_ms;
  so.dvfs_jitter_ms = opt.dvfs_jitter_ms;
  so.group = ReplicaGroups(g, predictor.gpus());
  SearchResult sr;
  if (!Search(predictor, so, &sr, &err)) return fail(err);
  const FrequencyPolicy policy = PolicyFromSchedule(sr.schedule, profile.clocks_mhz, opt.dvfs_latency_ms);
  if (!opt.out.empty()) {
    std::ofstream f(opt.out);
    f << PolicyJson(policy);
    if (!f) return fail(opt.out + ": cannot write");
  }

  const Predictor::Result& base = predictor.base();
  const double iters = static_cast<double>(std::max(1, predictor.iterations()));
  const double pred_slowdown = sr.predicted.end_ns / base.end_ns - 1;
  const double pred_saving = 1 - sr.predicted.energy_j / base.energy_j;
  const int groups = so.group.empty() ? 0 : *std::max_element(so.group.begin(), so.group.end()) + 1;
  size_t changes = 0;
  for (const auto& gp : policy.gpus) changes += gp.changes.size();
  fmt::print("{} on {} x {}, budget {:.1f} %\n", program.name, predictor.gpus(), program.device, opt.budget * 100);
  fmt::print("  traced {} iterations: {} nodes, {} kernels in {} packs ({} unique, {} profiled ranges)\n",
             opt.trace_iterations, g.nodes(), pp.kernels_in_run, packing.packs(), pp.packs.size(), pp.cost.ranges);
  fmt::print(
      "  search: {} policy group(s), {} change points, landings taken {:.1f} ms early/late, {} predictions, "
      "{:.2f} s\n",
      groups, sr.points, so.dvfs_jitter_ms, sr.evaluations, sr.seconds);
  fmt::print("  predicted: {:.3f} -> {:.3f} ms per iteration ({:+.2f} %), {:.2f} -> {:.2f} J ({:.2f} % saved)\n",
             base.end_ns / 1e6 / iters, sr.predicted.end_ns / 1e6 / iters, pred_slowdown * 100, base.energy_j / iters,
             sr.predicted.energy_j / iters, pred_saving * 100);
  fmt::print("  policy: {} clock changes per iteration{}\n", changes, opt.out.empty() ? "" : " -> " + opt.out);

  nlohmann::ordered_json j;
  j["workload"] = program.name;
  j["device"] = program.device;
  j["gpus"] = predictor.gpus();
  j["budget"] = opt.budget;
  j["kernels"] = pp.kernels_in_run;
  j["packs"] = packing.packs();
  j["unique_packs"] = pp.packs.size();
  j["profiled_ranges"] = pp.cost.ranges;
  j["energy_scale"] = predictor.energy_scale();
  j["search"] = {{"seconds", sr.seconds}, {"evaluations", sr.evaluations}, {"points", sr.points}, {"groups", groups}};
  j["predicted"] = {{"default_iteration_ms", base.end_ns / 1e6 / iters},
                    {"default_energy_j", base.energy_j / iters},
                    {"iteration_ms", sr.predicted.end_ns / 1e6 / iters},
                    {"energy_j", sr.predicted.energy_j / iters},
                    {"slowdown", pred_slowdown},
                    {"energy_saving", pred_saving}};
  j["policy"] = nlohmann::ordered_json::parse(PolicyJson(policy));

  if (opt.measure) {
    // Fresh seeds: every policy is run on each, paired with the default run of the same seed.
    std::vector<uint64_t> seeds;
    for (int i = 0; i < opt.seeds; ++i) seeds.push_back(opt.seed + 1000 + static_cast<uint64_t>(i));
    std::vector<Measurement> def(seeds.size());
    for (size_t i = 0; i < seeds.size(); ++i)
      if (!MeasureRun(program, seeds[i], opt.iterations, 1, nullptr, "", &def[i], &err)) return fail(err);
    auto outcome = [&](const FrequencyPolicy& p, Outcome* o) {
      std::vector<double> slow, save;
      *o = Outcome();
      for (size_t i = 0; i < seeds.size(); ++i) {
        Measurement m;
        if (!MeasureRun(program, seeds[i], opt.iterations, 1, &p, "", &m, &err)) return false;
        slow.push_back(m.iteration_ms() / def[i].iteration_ms() - 1);
        save.push_back(1 - m.iteration_energy_j() / def[i].iteration_energy_j());
        o->iteration_ms += m.iteration_ms() / static_cast<double>(seeds.size());
        o->energy_j += m.iteration_energy_j() / static_cast<double>(seeds.size());
      }
      o->slowdown = SpreadOf(slow);
      o->saving = SpreadOf(save);
      return true;
    };
    Outcome emo;
    if (!outcome(policy, &emo)) return fail(err);
    // The best single static clock within the same budget, from a measured sweep of the profiled clocks.
    int best_mhz = 0;
    Outcome best;
    nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
    for (int mhz : profile.clocks_mhz) {
      Outcome o;
      if (!outcome(StaticPolicy(predictor.gpus(), mhz), &o)) return fail(err);
      const int c = profile.ClockIndex(mhz);
      const Predictor::Result pr = predictor.Run(Schedule(predictor.gpus(), {{opt.dvfs_latency_ms * 1e6, c}}));
      sweep.push_back({{"mhz", mhz},
                       {"slowdown", o.slowdown.mean},
                       {"energy_saving", o.saving.mean},
                       {"predicted_slowdown", pr.end_ns / base.end_ns - 1},
                       {"predicted_energy_saving", 1 - pr.energy_j / base.energy_j}});
      if (o.slowdown.mean <= opt.budget && (best_mhz == 0 || o.saving.mean > best.saving.mean)) {
        best = o;
        best_mhz = mhz;
      }
    }
    double def_ms = 0, def_j = 0;
    for (const Measurement& m : def) {
      def_ms += m.iteration_ms() / static_cast<double>(def.size());
      def_j += m.iteration_energy_j() / static_cast<double>(def.size());
    }
    fmt::print(
        "  measured over {} seeds ({} iterations each, first left out), against default clocks "
        "({:.3f} ms, {:.2f} J per iteration):\n",
        seeds.size(), opt.iterations, def_ms, def_j);
    auto line = [](const std::string& what, const Outcome& o) {
      fmt::print("    {:<22} saving {:6.2f} % [{:.2f}, {:.2f}]  slowdown {:+6.2f} % [{:+.2f}, {:+.2f}]\n", what,
                 o.saving.mean * 100, o.saving.min * 100, o.saving.max * 100, o.slowdown.mean * 100,
                 o.slowdown.min * 100, o.slowdown.max * 100);
    };
    line("EMO", emo);
    if (best_mhz > 0)
      line(fmt::format("best static ({} MHz)", best_mhz), best);
    else
      fmt::print("    no static clock keeps within the budget\n");
    j["default"] = {{"iteration_ms", def_ms}, {"energy_j", def_j}};
    j["measured"] = {{"iteration_ms", emo.iteration_ms},
                     {"energy_j", emo.energy_j},
                     {"slowdown", emo.slowdown.mean},
                     {"energy_saving", emo.saving.mean},
                     {"slowdown_spread", SpreadJson(emo.slowdown)},
                     {"energy_saving_spread", SpreadJson(emo.saving)},
                     {"seeds", seeds}};
    j["best_static"] = best_mhz > 0 ? nlohmann::ordered_json{{"mhz", best_mhz},
                                                             {"slowdown", best.slowdown.mean},
                                                             {"energy_saving", best.saving.mean},
                                                             {"slowdown_spread", SpreadJson(best.slowdown)},
                                                             {"energy_saving_spread", SpreadJson(best.saving)}}
                                    : nlohmann::ordered_json(nullptr);
    j["static_sweep"] = sweep;
  }
  if (!opt.json.empty()) {
    if (opt.json == "-") {
      fmt::print("{}\n", j.dump(2));
    } else {
      std::ofstream f(opt.json);
      f << j.dump(2) << "\n";
      if (!f) return fail(opt.json + ": cannot write");
    }
  }
  return 0;
}

}  // namespace emo
