// optimize.cc — the `emo optimize` command: hosts the simulator as the device and runs EMO's
// pipeline through the device interfaces only (trace, energy counters, range profiling).
#include "cli/optimize.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apply/clock_sampler.h"
#include "apply/measurement.h"
#include "apply/policy_player.h"
#include "graph/builder.h"
#include "graph/replay.h"
#include "model/pack_model.h"
#include "model/pack_profile.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/sim_metric_source.h"
#include "sim/workload.h"

namespace emo {

namespace {

// The profile for a device: --profile, else the first JSON in $EMO_PROFILES, ./profiles or the
// profiles directory beside the binary's source tree whose "device" is this device.
bool FindProfile(const std::string& given, const std::string& device, DeviceProfile* out, std::string* err) {
  if (!given.empty()) {
    if (!LoadProfile(given, out, err)) return false;
    if (out->device != device) {
      *err = given + ": a profile of " + out->device + ", not of " + device;
      return false;
    }
    return true;
  }
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("EMO_PROFILES")) dirs.emplace_back(env);
  dirs.emplace_back("profiles");
  dirs.emplace_back(std::filesystem::path(EMO_SOURCE_DIR) / "profiles");
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      DeviceProfile p;
      std::string why;
      if (LoadProfile(f.string(), &p, &why) && p.device == device) {
        *out = std::move(p);
        return true;
      }
    }
  }
  *err = "no device profile of " + device + " found (give --profile, or make one with emo calibrate)";
  return false;
}

// One measured run in the simulator with an optional policy.
bool Measure(const sim::Program& program, uint64_t seed, int iterations, const FrequencyPolicy* policy, Measurement* m,
             std::string* err) {
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed;
  sim::Engine engine(program, eo);
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  PolicyPlayer player(policy ? *policy : FrequencyPolicy(), &gpus);
  Meter meter(&gpus, 1);
  host.Add(&player);
  host.Add(&meter);
  if (!engine.Run(err)) return false;
  player.Finish();
  if (!player.error().empty()) {
    *err = player.error();
    return false;
  }
  return meter.Close(engine.end_ns(), m, err);
}

FrequencyPolicy StaticPolicy(int gpus, int mhz) {
  FrequencyPolicy p;
  for (int g = 0; g < gpus; ++g) p.gpus.push_back({g, {{0, mhz}}});
  return p;
}

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
  sim::Program program;
  if (!sim::LoadWorkload(opt.workload, &program, &err)) return fail(err);
  if (!opt.device.empty()) {
    const sim::DeviceSpec* spec = sim::FindDevice(opt.device);
    if (!spec) return fail("unknown device '" + opt.device + "'");
    program.device = spec->name;
  }
  if (!(opt.budget >= 0) || opt.trace_iterations < 3 || opt.seeds < 1 || opt.iterations < 2)
    return fail("--budget must be >= 0, --trace-iterations and --iterations >= 2, --seeds >= 1");
  DeviceProfile profile;
  if (!FindProfile(opt.profile, program.device, &profile, &err)) return fail(err);

  // 1. Trace at default clocks, reading each GPU's energy counter over the run.
  sim::EngineOptions eo;
  eo.iterations = opt.trace_iterations;
  eo.seed = opt.seed;
  eo.record_trace = true;
  sim::Engine engine(program, eo);
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  Meter meter(&gpus, -1);
  ClockSampler clocks(&gpus, 1.0);
  host.Add(&meter);
  host.Add(&clocks);
  meter.Open(0);
  if (!engine.Run(&err)) return fail(opt.workload + ": " + err);
  Measurement traced;
  if (!meter.Close(engine.end_ns(), &traced, &err)) return fail(err);
  const Trace& trace = engine.trace();

  // 2. Graph and packs.
  Graph g;
  BuildReport report;
  if (!BuildGraph(trace, &g, &report, &err)) return fail(err);
  const ReplayResult replay = ReplayMeasured(g);
  PackOptions po;
  po.max_ns = opt.pack_ms * 1e6;
  const Packing packing = PackKernels(g, trace.names, replay, po);

  // 3. Pack profiling through the device's range profiler (another run of the job).
  sim::EngineOptions po_run = eo;
  po_run.record_trace = false;
  po_run.seed = opt.seed + 0x9e37;
  sim::SimMetricSource source(program, po_run);
  PackProfile pp;
  if (!ProfilePacks(trace, g, packing, source, &pp, &err)) return fail(err);

  // 4. Model: per-pack time and energy at every profiled clock.
  PackModel model(profile);
  PredictorInput in;
  PackTables tables;
  // The clock each pack ran at: below the default where the power limit held it.
  std::vector<std::vector<std::pair<double, double>>> samples = clocks.samples();
  for (auto& gpu : samples)
    for (auto& [t, mhz] : gpu) t -= static_cast<double>(g.origin_ns);
  const std::vector<double> pack_mhz = PackClocks(packing, samples, profile.default_mhz);
  if (!PackTimeEnergy(model, packing, pp, pack_mhz, &in.pack_time_s, &in.pack_energy_j, &tables, &err))
    return fail(err);
  in.graph = &g;
  in.packing = &packing;
  in.clocks_mhz = profile.clocks_mhz;
  in.default_clock = profile.ClockIndex(profile.default_mhz);
  in.idle_power_w = model.idle_power_w();
  for (const Iteration& it : trace.ranks[0].iterations)
    in.iteration_start_ns.push_back(static_cast<double>(it.start_ns - g.origin_ns));
  in.measured_energy_j = traced.gpu_energy_j;
  Predictor predictor;
  if (!predictor.Init(std::move(in), &err)) return fail(err);

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
      if (!Measure(program, seeds[i], opt.iterations, nullptr, &def[i], &err)) return fail(err);
    auto outcome = [&](const FrequencyPolicy& p, Outcome* o) {
      std::vector<double> slow, save;
      *o = Outcome();
      for (size_t i = 0; i < seeds.size(); ++i) {
        Measurement m;
        if (!Measure(program, seeds[i], opt.iterations, &p, &m, &err)) return false;
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
