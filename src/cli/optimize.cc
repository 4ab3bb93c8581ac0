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

// How far over the budget a check run may land before the policy is refused: run-to-run noise of
// one short run (the final measurement averages several seeds).
constexpr double kCheckTolerance = 0.0025;

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
  if (!(opt.budget >= 0) || opt.trace_iterations < 3 || opt.seeds < 1 || opt.iterations == 1 || opt.iterations < 0)
    return fail("--budget must be >= 0, --trace-iterations >= 3, --iterations 0 (automatic) or >= 2, --seeds >= 1");
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
  // Search, then check the policy in a short measured run on a seed of its own (on hardware: a few
  // iterations of the job) against the default clocks on the same seed. The model can be off: when
  // the run is slower than the budget allows, search again with the budget scaled down by the
  // overshoot and the latency taken wider; when it leaves much of the budget unused, search again
  // with the budget scaled up. At most three searches; the best checked policy within the budget is
  // kept, and the default clocks when none is.
  const uint64_t check_seed = opt.seed + 500;
  const int runs = opt.iterations > 0 ? opt.iterations : MeasureWindowIterations(predictor.period_ns() / 1e6, 6);
  Measurement check_default;
  if (opt.check && !MeasureRun(program, check_seed, runs, 1, nullptr, "", &check_default, &err)) return fail(err);
  SearchResult sr;
  FrequencyPolicy policy;
  double search_seconds = 0;
  int64_t evaluations = 0;
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  bool have = false;
  double best_saving = 0;
  for (int round = 0; round < 3; ++round) {
    SearchResult r;
    if (!Search(predictor, so, &r, &err)) return fail(err);
    search_seconds += r.seconds;
    evaluations += r.evaluations;
    const FrequencyPolicy p = PolicyFromSchedule(r.schedule, profile.clocks_mhz, opt.dvfs_latency_ms);
    if (!opt.check) {
      sr = r, policy = p, have = true;
      break;
    }
    Measurement m;
    if (!MeasureRun(program, check_seed, runs, 1, &p, "", &m, &err)) return fail(err);
    const double slow = m.iteration_ms() / check_default.iteration_ms() - 1;
    const double save = 1 - m.iteration_energy_j() / check_default.iteration_energy_j();
    const bool within = slow <= opt.budget + kCheckTolerance;
    rounds.push_back({{"search_budget", so.budget},
                      {"jitter_ms", so.dvfs_jitter_ms},
                      {"predicted_slowdown", r.predicted.end_ns / predictor.base().end_ns - 1},
                      {"measured_slowdown", slow},
                      {"measured_energy_saving", save}});
    fmt::print("  check {}: searched at budget {:.2f} %, measured {:+.2f} % time, {:.2f} % energy saved{}\n", round + 1,
               so.budget * 100, slow * 100, save * 100, within ? "" : " (over budget)");
    if (within && (!have || save > best_saving)) sr = r, policy = p, have = true, best_saving = save;
    if (within && (opt.budget == 0 || slow >= 0.8 * opt.budget)) break;
    if (within) {
      so.budget = std::min(so.budget * 1.5, so.budget * opt.budget / std::max(slow, 0.1 * opt.budget));
    } else {
      so.budget = slow > 0 ? so.budget * opt.budget / slow * 0.9 : so.budget;
      so.dvfs_jitter_ms *= 2;
    }
  }
  if (!have) {
    fmt::print("  no checked policy kept within the budget: the default clocks are kept\n");
    sr = SearchResult();
    sr.predicted = predictor.base();
    sr.schedule = Schedule(predictor.gpus());
    policy = FrequencyPolicy();
  }
  sr.seconds = search_seconds;
  sr.evaluations = evaluations;
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
  j["checks"] = rounds;
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
      if (!MeasureRun(program, seeds[i], runs, 1, nullptr, "", &def[i], &err)) return fail(err);
    auto outcome = [&](const FrequencyPolicy& p, Outcome* o) {
      std::vector<double> slow, save;
      *o = Outcome();
      for (size_t i = 0; i < seeds.size(); ++i) {
        Measurement m;
        if (!MeasureRun(program, seeds[i], runs, 1, &p, "", &m, &err)) return false;
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
    // The best single static clock within the same budget, from a measured sweep of the profiled
    // clocks, from the top down until two clocks in a row are 2 points over the budget (slower
    // clocks only get slower).
    int best_mhz = 0, over = 0;
    Outcome best;
    nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
    for (auto it = profile.clocks_mhz.rbegin(); it != profile.clocks_mhz.rend() && over < 2; ++it) {
      const int mhz = *it;
      Outcome o;
      if (!outcome(StaticPolicy(predictor.gpus(), mhz), &o)) return fail(err);
      const int c = profile.ClockIndex(mhz);
      const Predictor::Result pr = predictor.Run(Schedule(predictor.gpus(), {{opt.dvfs_latency_ms * 1e6, c}}));
      sweep.push_back({{"mhz", mhz},
                       {"slowdown", o.slowdown.mean},
                       {"energy_saving", o.saving.mean},
                       {"predicted_slowdown", pr.end_ns / base.end_ns - 1},
                       {"predicted_energy_saving", 1 - pr.energy_j / base.energy_j}});
      over = o.slowdown.mean > opt.budget + 0.02 ? over + 1 : 0;
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
        seeds.size(), runs, def_ms, def_j);
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
