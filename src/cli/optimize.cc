// optimize.cc — the `emo optimize` command: hosts the simulator as the device and runs EMO's
// pipeline through the device interfaces only (trace, energy counters, range profiling), with
// measured checks; or, with --trace, runs it on a real job's saved measurements, predicted only;
// or, given a command, runs that job through emo run, trace and profile to get them.
#include "cli/optimize.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "cli/model_pipeline.h"
#include "cli/profile.h"
#include "cli/run.h"
#include "cli/sim_pipeline.h"
#include "cli/trace.h"
#include "search/dp_search.h"
#include "trace/kineto_writer.h"
#include "trace/load.h"
#include "util/file.h"

namespace emo {
namespace {

SearchOptions SearchOptionsOf(const OptimizeOptions& opt, const Graph& g, int gpus) {
  SearchOptions so;
  so.budget = opt.budget;
  so.grid_ms = opt.grid_ms;
  so.min_interval_ms = opt.min_interval_ms;
  so.step_ms = opt.step_ms;
  so.dvfs_latency_ms = opt.dvfs_latency_ms;
  so.dvfs_jitter_ms = opt.dvfs_jitter_ms;
  so.group = ReplicaGroups(g, gpus);
  so.max_candidates = opt.max_clocks;
  so.max_states = opt.max_states;
  so.local_search = opt.local_search;
  so.pairs = opt.pairs;
  so.backward = !opt.no_backward;
  so.gpu_delays = !opt.no_gpu_delays;
  so.gpu_delays_by_work = opt.gpu_delays_by_work;
  so.above_held = opt.above_held;
  so.threads = opt.search_threads;
  return so;
}

// The kept policy as `emo optimize` hands it over, on either path: the budget and the predicted
// default iteration time go into the policy file (`emo run`'s guard checks the measured iterations
// against them); the predicted lines are printed and returned as the JSON's "predicted".
bool HandOver(const OptimizeOptions& opt, const Predictor& predictor, const SearchResult& sr, FrequencyPolicy* policy,
              nlohmann::ordered_json* predicted, std::string* err) {
  const Predictor::Result& base = predictor.base();
  const double iters = static_cast<double>(std::max(1, predictor.iterations()));
  policy->budget = opt.budget;
  policy->default_iteration_ms = base.end_ns / 1e6 / iters;
  if (!opt.out.empty()) {
    std::ofstream f(opt.out);
    f << PolicyJson(*policy);
    if (!f) {
      *err = opt.out + ": cannot write";
      return false;
    }
  }
  const double slowdown = sr.predicted.end_ns / base.end_ns - 1, saving = 1 - sr.predicted.energy_j / base.energy_j;
  size_t changes = 0;
  for (const auto& gp : policy->gpus) changes += gp.changes.size();
  fmt::print("  predicted: {:.3f} -> {:.3f} ms per iteration ({:+.2f} %), {:.2f} -> {:.2f} J ({:.2f} % saved)\n",
             base.end_ns / 1e6 / iters, sr.predicted.end_ns / 1e6 / iters, slowdown * 100, base.energy_j / iters,
             sr.predicted.energy_j / iters, saving * 100);
  fmt::print("  policy: {} clock changes per iteration{}\n", changes, opt.out.empty() ? "" : " -> " + opt.out);
  if (!opt.out.empty() && !opt.workload.empty())
    fmt::print("  (its clocks beside the kernels, for Perfetto: emo sim --workload {} --policy {} --trace DIR)\n",
               opt.workload, opt.out);
  *predicted = {{"default_iteration_ms", base.end_ns / 1e6 / iters},
                {"default_energy_j", base.energy_j / iters},
                {"iteration_ms", sr.predicted.end_ns / 1e6 / iters},
                {"energy_j", sr.predicted.energy_j / iters},
                {"slowdown", slowdown},
                {"energy_saving", saving}};
  return true;
}

// --json: to the file, or to stdout for "-".
bool WriteJson(const std::string& path, const nlohmann::ordered_json& j, std::string* err) {
  if (path.empty()) return true;
  if (path == "-") {
    fmt::print("{}\n", j.dump(2));
    return true;
  }
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) *err = path + ": cannot write";
  return static_cast<bool>(f);
}

// The groups the search kept at or below the clock they ran at (SearchResult::held_ceiling): a
// line, and per group the ceiling in MHz (null: none) for the JSON.
nlohmann::ordered_json ReportHeld(const SearchResult& sr, const std::vector<int>& clocks_mhz) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  std::string line;
  for (size_t g = 0; g < sr.held_ceiling.size(); ++g) {
    const int c = sr.held_ceiling[g];
    j.push_back(c >= 0 ? nlohmann::ordered_json(clocks_mhz[c]) : nlohmann::ordered_json(nullptr));
    if (c >= 0) line += fmt::format("{}group {} at or below {} MHz", line.empty() ? "" : ", ", g, clocks_mhz[c]);
  }
  if (!line.empty())
    fmt::print("  held below the default clock at default clocks (power limit), so kept locked: {}\n", line);
  return j;
}

// The search's policy groups, and its figures in the results JSON: its cost, its threads, and what it
// kept held.
int PolicyGroups(const SearchOptions& so) {
  return so.group.empty() ? 0 : *std::max_element(so.group.begin(), so.group.end()) + 1;
}

nlohmann::ordered_json SearchJson(const SearchResult& sr, const SearchOptions& so, nlohmann::ordered_json held) {
  return {{"seconds", sr.seconds},
          {"evaluations", sr.evaluations},
          {"nodes_computed", sr.nodes_computed},
          {"threads", sr.threads},
          {"points", sr.points},
          {"groups", PolicyGroups(so)},
          {"held_ceiling_mhz", std::move(held)}};
}

// `emo optimize --trace`: the pipeline on a real job's measurements, without measured checks (the
// job is not at hand): the policy of least predicted energy within the budget. The results JSON
// goes to *result when given, else to --json.
int OptimizeTrace(const OptimizeOptions& opt, nlohmann::ordered_json* result = nullptr) {
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo optimize: {}\n", e);
    return 1;
  };
  TracePipeline tp;
  std::string err;
  if (!BuildTracePipeline({opt.traces, opt.packs, opt.power_w, opt.clock_mhz, opt.profile, opt.pack_ms, opt.low_traces,
                           opt.low_mhz, opt.low_power_w, opt.low_optional},
                          &tp, &err))
    return fail(err);
  for (const std::string& note : tp.notes) fmt::print(stderr, "emo optimize: note: {}\n", note);
  const SearchOptions so = SearchOptionsOf(opt, tp.g, tp.predictor.gpus());
  SearchResult sr;
  if (!Search(tp.predictor, so, &sr, &err)) return fail(err);
  FrequencyPolicy policy = PolicyFromSchedule(sr.schedule, tp.profile.clocks_mhz, so.dvfs_latency_ms);
  fmt::print("{} on {} x {}, budget {:.1f} %{}\n", tp.files[0], tp.predictor.gpus(), tp.profile.device,
             opt.budget * 100, result ? "" : " (predicted only: run the policy with emo run --policy to measure)");
  fmt::print("  {} nodes, {} kernels in {} packs ({} unique, metrics from {})\n", tp.g.nodes(), tp.pp.kernels_in_run,
             tp.packing.packs(), tp.pp.packs.size(), opt.packs);
  nlohmann::ordered_json j = {{"traces", tp.files},
                              {"device", tp.profile.device},
                              {"gpus", tp.predictor.gpus()},
                              {"budget", opt.budget},
                              {"energy_scale", tp.predictor.energy_scale()},
                              {"low_clock_mhz", tp.low_mhz},
                              {"default_power_w", tp.power_w}};
  j["search"] = SearchJson(sr, so, ReportHeld(sr, tp.profile.clocks_mhz));
  if (!HandOver(opt, tp.predictor, sr, &policy, &j["predicted"], &err)) return fail(err);
  j["policy"] = nlohmann::ordered_json::parse(PolicyJson(policy));
  if (result) {
    *result = std::move(j);
    return 0;
  }
  if (!WriteJson(opt.json, j, &err)) return fail(err);
  return 0;
}

// What emo run --measure wrote: per iteration when the job announced its steps, else for the run.
struct JobRun {
  nlohmann::json j;
  double time_s = 0, energy_j = 0;  // per iteration, or of the whole window
  bool per_iteration = false;
};
bool ReadJobRun(const std::string& path, JobRun* out, std::string* err) {
  std::string text;
  if (!ReadFileMaybeGz(path, &text, err)) return false;
  out->j = nlohmann::json::parse(text, nullptr, false);
  const nlohmann::json& j = out->j;
  if (j.is_discarded() || !j.contains("energy_j") || !j.contains("per_gpu")) {
    *err = path + ": no energy measurement (see emo run's message above)";
    return false;
  }
  const int64_t its = j.value("iterations", int64_t{0});
  out->per_iteration = its > 0 && j["iteration_ms"].is_number();
  out->time_s = out->per_iteration ? j["iteration_ms"].get<double>() / 1e3 : j.value("window_s", 0.0);
  out->energy_j = out->per_iteration ? j["iteration_energy_j"].get<double>() : j.value("energy_j", 0.0);
  if (!(out->time_s > 0) || !(out->energy_j > 0)) {
    *err = path + ": the run measured no time or no energy";
    return false;
  }
  return true;
}

// The clock of `emo optimize -- CMD`'s run at a low clock: --low-clock, or LowClock of the device
// profile (--profile, else the one found for the traced GPU); 0: none.
bool LowClockOfJob(const OptimizeOptions& opt, const std::string& trace_dir, int* mhz, std::string* err) {
  *mhz = opt.low_mhz;
  if (opt.low_mhz >= 0) return true;
  DeviceProfile profile;
  std::vector<std::string> files;
  Trace trace;
  if (opt.profile.empty() ? !ExpandTracePaths({trace_dir}, &files, err) || !LoadTraces(files, &trace, err) ||
                                !FindProfile("", trace.ranks[0].gpu_name, &profile, err)
                          : !LoadProfile(opt.profile, &profile, err))
    return false;
  *mhz = LowClock(profile);
  return true;
}

// `emo optimize -- CMD`: the hardware workflow of the README as one command. Each step is the
// command of its own (emo run, trace, profile, optimize --trace, run --policy), called in turn
// with the files of the one before; the job runs four times (three with --low-clock none), once
// more with --measure.
int OptimizeCommand(const OptimizeOptions& opt) {
  namespace fs = std::filesystem;
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo optimize: {}\n", e);
    return 1;
  };
  const std::string policy_path = opt.out.empty() ? "emo-policy.json" : opt.out;
  const fs::path dir = policy_path + ".d";
  std::error_code ec;
  if (fs::create_directories(dir, ec), ec) return fail(dir.string() + ": cannot create the directory: " + ec.message());
  auto step = [&](const char* what) { fmt::print(stderr, "emo optimize: {}\n", what); };
  auto job_failed = [&](const char* what, int code) {
    return fail(
        fmt::format("{} ended with status {} (the job's, or 1 where EMO failed: see above); the files so far are in {}",
                    what, code, dir.string()));
  };

  // emo trace and emo profile set these for their runs of the job; the runs after them get the
  // environment the user gave.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  for (const char* var : {"CUDA_INJECTION64_PATH", "EMO_TRACE_DIR", "EMO_TRACE_WARMUP", "EMO_TRACE_ITERATIONS",
                          "NCCL_PROFILER_PLUGIN", "EMO_PROFILE_RANGES", "EMO_PROFILE_OUT"}) {
    const char* v = std::getenv(var);
    env.emplace_back(var, v ? std::optional<std::string>(v) : std::nullopt);
  }
  auto restore_env = [&] {
    for (const auto& [var, v] : env) v ? setenv(var.c_str(), v->c_str(), 1) : unsetenv(var.c_str());
  };

  RunOptions run;
  run.command = opt.command;
  run.backend = opt.backend;
  run.gpus = opt.gpus;
  run.measure_out = (dir / "default-run.json").string();
  step("1/5 the job at default clocks (emo run --measure)");
  if (const int code = RunCommand(run); code != 0) return job_failed("the default run", code);
  JobRun def;
  std::string err;
  if (!ReadJobRun(run.measure_out, &def, &err)) return fail(err);

  TraceOptions trace;
  trace.command = opt.command;
  trace.out_dir = (dir / "trace").string();
  if (opt.trace_warmup >= 0) trace.warmup = opt.trace_warmup, trace.iterations = opt.trace_iterations;
  step("2/5 the job traced (emo trace)");
  const int traced = RunTrace(trace);
  restore_env();
  if (traced != 0) return job_failed("the traced run", traced);

  // The same steps with every GPU locked at a low clock: one run, emo trace under emo run.
  int low_mhz = 0;
  if (!LowClockOfJob(opt, trace.out_dir, &low_mhz, &err)) return fail(err);
  JobRun low;
  const std::string low_trace_dir = (dir / "trace-low").string();
  if (low_mhz > 0) {
    RunOptions low_run = run;
    std::error_code exe_ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", exe_ec);
    if (exe_ec) return fail("cannot find emo's own executable: " + exe_ec.message());
    low_run.lock_mhz = low_mhz;
    low_run.measure_out = (dir / "low-run.json").string();
    low_run.command = {self.string(), "trace", "-o", low_trace_dir};
    if (opt.trace_warmup >= 0)
      for (const std::string& a : {std::string("--warmup"), std::to_string(opt.trace_warmup),
                                   std::string("--iterations"), std::to_string(opt.trace_iterations)})
        low_run.command.push_back(a);
    low_run.command.push_back("--");
    low_run.command.insert(low_run.command.end(), opt.command.begin(), opt.command.end());
    step(fmt::format("3/5 the job traced and measured with its GPUs locked at {} MHz (emo run --lock-mhz -- emo trace)",
                     low_mhz)
             .c_str());
    if (const int code = RunCommand(low_run); code != 0) return job_failed("the run at the low clock", code);
    if (!ReadJobRun(low_run.measure_out, &low, &err)) return fail(err);
  } else {
    step("3/5 skipped (--low-clock none)");
  }

  ProfileOptions prof;
  prof.command = opt.command;
  prof.traces = {trace.out_dir};
  prof.out = (dir / "packs.json").string();
  prof.pack_ms = opt.pack_ms;
  step("4/5 its unique packs profiled (emo profile)");
  const int profiled = RunProfile(prof);
  restore_env();
  if (profiled != 0) return job_failed("the profiled run", profiled);

  OptimizeOptions o = opt;
  o.command.clear();
  o.traces = {trace.out_dir};
  o.packs = prof.out;
  o.out = policy_path;
  o.power_w.clear();
  o.clock_mhz.clear();
  for (const auto& g : def.j["per_gpu"]) o.power_w.push_back(g.value("avg_power_w", 0.0));
  o.low_mhz = low_mhz;
  o.low_optional = true;  // a job that launched other kernels at the low clock still gets a policy
  o.low_power_w.clear();
  o.low_traces.clear();
  if (low_mhz > 0) {
    o.low_traces = {low_trace_dir};
    for (const auto& g : low.j["per_gpu"]) o.low_power_w.push_back(g.value("avg_power_w", 0.0));
  }
  bool clocks_known = def.j.contains("busy_clock_mhz");
  if (clocks_known)
    for (const auto& mhz : def.j["busy_clock_mhz"]) {
      clocks_known &= mhz.is_number() && mhz.get<double>() > 0;
      if (clocks_known) o.clock_mhz.push_back(mhz.get<double>());
    }
  if (!clocks_known) {
    o.clock_mhz.clear();
    fmt::print(stderr, "emo optimize: note: a GPU's busy clock is unknown; packs are taken to run at the default\n");
  }
  step("5/5 the model and the search (emo optimize --trace)");
  nlohmann::ordered_json j;
  if (const int code = OptimizeTrace(o, &j); code != 0) return code;
  j["command"] = opt.command;
  j["files"] = dir.string();
  j["default_run"] = {{"time_s", def.time_s}, {"energy_j", def.energy_j}, {"per_iteration", def.per_iteration}};

  if (opt.measure) {
    RunOptions measured = run;
    measured.policy = policy_path;
    measured.measure_out = (dir / "policy-run.json").string();
    step("and the job under the policy (emo run --policy --measure)");
    if (const int code = RunCommand(measured); code != 0) return job_failed("the run under the policy", code);
    JobRun got;
    if (!ReadJobRun(measured.measure_out, &got, &err)) return fail(err);
    if (got.per_iteration != def.per_iteration)
      return fail("one run announced its steps and the other did not: no comparison");
    const double slowdown = got.time_s / def.time_s - 1, saving = 1 - got.energy_j / def.energy_j;
    fmt::print("  measured ({}, one run each): {:+.2f} % time, {:.2f} % energy saved\n",
               def.per_iteration ? "per iteration" : "whole runs", slowdown * 100, saving * 100);
    j["measured"] = {{"time_s", got.time_s},
                     {"energy_j", got.energy_j},
                     {"slowdown", slowdown},
                     {"energy_saving", saving},
                     {"guard", got.j.value("guard", nlohmann::json())}};
  }
  if (!WriteJson(opt.json, j, &err)) return fail(err);
  return 0;
}

}  // namespace

int RunOptimize(const OptimizeOptions& opt) {
  if ((opt.traces.empty() ? 0 : 1) + (opt.workload.empty() ? 0 : 1) + (opt.command.empty() ? 0 : 1) != 1) {
    fmt::print(stderr,
               "emo optimize: give one of --workload (simulated), --trace (a real job's) or -- CMD (a job to run)\n");
    return 1;
  }
  if (!opt.low_traces.empty() && opt.traces.empty()) {
    fmt::print(stderr, "emo optimize: --low-trace goes with --trace\n");
    return 1;
  }
  if (!opt.traces.empty()) return OptimizeTrace(opt);
  if (!opt.command.empty()) return OptimizeCommand(opt);
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
  po.low_mhz = opt.low_mhz;
  if (!BuildPipeline(opt.workload, opt.device, po, &pl, &err)) return fail(err);
  const sim::Program& program = pl.program;
  const Graph& g = pl.g;
  const Packing& packing = pl.packing;
  const PackProfile& pp = pl.pp;
  Predictor& predictor = pl.predictor;

  if (!opt.save_trace.empty() && !WriteKinetoTraces(pl.engine->trace(), opt.save_trace, &err)) return fail(err);
  if (!opt.save_packs.empty()) {
    std::ofstream f(opt.save_packs);
    f << PackMetricsJson(pp, packing, g, pl.engine->trace().names).dump(1) << "\n";
    if (!f) return fail(opt.save_packs + ": cannot write");
  }
  // The search, with measured checks of what it finds.
  const SearchOptions so = SearchOptionsOf(opt, g, predictor.gpus());
  const int runs = opt.iterations > 0 ? opt.iterations : MeasureWindowIterations(predictor.period_ns() / 1e6, 6);
  CheckedSearch cs;
  if (!SearchChecked(pl, so, opt.check, runs, opt.seed + 500, &cs, &err)) return fail(err);
  for (const std::string& line : cs.lines) fmt::print("  {}\n", line);
  if (cs.kept_default) fmt::print("  no checked policy kept within the budget: the default clocks are kept\n");
  const SearchResult& sr = cs.result;
  FrequencyPolicy policy = cs.policy;
  fmt::print("{} on {} x {}, budget {:.1f} %\n", program.name, predictor.gpus(), program.device, opt.budget * 100);
  fmt::print("  traced {} iterations: {} nodes, {} kernels in {} packs ({} unique, {} profiled ranges)\n",
             opt.trace_iterations, g.nodes(), pp.kernels_in_run, packing.packs(), pp.packs.size(), pp.cost.ranges);
  if (pl.low_mhz > 0) fmt::print("  traced again at {} MHz: each pack's change with the clock measured\n", pl.low_mhz);
  fmt::print(
      "  search: {} policy group(s), {} change points, landings taken {:.1f} ms early/late, {} predictions, "
      "{:.2f} s\n",
      PolicyGroups(so), sr.points, so.dvfs_jitter_ms, sr.evaluations, sr.seconds);
  const nlohmann::ordered_json held = ReportHeld(sr, pl.profile.clocks_mhz);
  nlohmann::ordered_json predicted;
  if (!HandOver(opt, predictor, sr, &policy, &predicted, &err)) return fail(err);

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
  j["low_clock_mhz"] = pl.low_mhz;
  j["default_power_w"] = pl.default_power_w;
  j["mean_clock_mhz"] = pl.mean_clock_mhz;
  j["checks"] = cs.checks;
  j["search"] = SearchJson(sr, so, held);
  j["predicted"] = predicted;
  j["policy"] = nlohmann::ordered_json::parse(PolicyJson(policy));

  if (opt.measure) {
    // Fresh seeds: every policy is run on each, paired with the default run of the same seed.
    std::vector<uint64_t> seeds;
    for (int i = 0; i < opt.seeds; ++i) seeds.push_back(opt.seed + 1000 + static_cast<uint64_t>(i));
    Defaults def;
    if (!MeasureDefaults(program, seeds, runs, &def, &err)) return fail(err);
    Outcome emo;
    if (!MeasureOutcome(program, def, &policy, "", 1, &emo, &err)) return fail(err);
    std::vector<StaticPoint> points;
    if (!SweepStatic(pl, def, opt.budget, opt.dvfs_latency_ms, &points, &err)) return fail(err);
    const StaticPoint* best = BestStatic(points, opt.budget);
    nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
    for (const StaticPoint& p : points)
      sweep.push_back({{"mhz", p.mhz},
                       {"slowdown", p.measured.slowdown.mean},
                       {"energy_saving", p.measured.saving.mean},
                       {"predicted_slowdown", p.predicted_slowdown},
                       {"predicted_energy_saving", p.predicted_saving}});
    const double def_ms = def.iteration_ms(), def_j = def.energy_j();
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
    if (best)
      line(fmt::format("best static ({} MHz)", best->mhz), best->measured);
    else
      fmt::print("    no static clock keeps within the budget\n");
    // The fair comparison: what static clocks save at EMO's own measured slowdown (StaticFrontier).
    const std::optional<double> frontier = StaticFrontier(points, emo.slowdown.mean);
    if (frontier)
      fmt::print("    static clocks at EMO's slowdown (one clock or a time share of two): saving {:.2f} %\n",
                 *frontier * 100);
    j["default"] = {{"iteration_ms", def_ms}, {"energy_j", def_j}};
    j["measured"] = {{"iteration_ms", emo.iteration_ms},
                     {"energy_j", emo.energy_j},
                     {"slowdown", emo.slowdown.mean},
                     {"energy_saving", emo.saving.mean},
                     {"slowdown_spread", SpreadJson(emo.slowdown)},
                     {"energy_saving_spread", SpreadJson(emo.saving)},
                     {"seeds", seeds}};
    j["best_static"] = best ? nlohmann::ordered_json{{"mhz", best->mhz},
                                                     {"slowdown", best->measured.slowdown.mean},
                                                     {"energy_saving", best->measured.saving.mean},
                                                     {"slowdown_spread", SpreadJson(best->measured.slowdown)},
                                                     {"energy_saving_spread", SpreadJson(best->measured.saving)}}
                            : nlohmann::ordered_json(nullptr);
    j["static_frontier_saving"] = frontier ? nlohmann::ordered_json(*frontier) : nlohmann::ordered_json(nullptr);
    j["static_sweep"] = sweep;
  }
  if (!WriteJson(opt.json, j, &err)) return fail(err);
  return 0;
}

}  // namespace emo
