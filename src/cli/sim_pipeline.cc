// sim_pipeline.cc — EMO's pipeline on the simulated device, and measured runs.
#include "cli/sim_pipeline.h"

#include "cli/model_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/core.h>

#include "apply/adaptive_player.h"
#include "apply/clock_sampler.h"
#include "apply/policy_player.h"
#include "graph/replay.h"
#include "online/registry.h"
#include "sim/device_spec.h"
#include "sim/sim_gpu_control.h"
#include "sim/sim_metric_source.h"
#include "sim/workload.h"
#include "util/parallel.h"

namespace emo {

bool BuildPipeline(const std::string& workload, const std::string& device, const PipelineOptions& opt, Pipeline* out,
                   std::string* err) {
  sim::Program& program = out->program;
  if (!sim::LoadWorkload(workload, &program, err)) return false;
  if (!device.empty()) {
    const sim::DeviceSpec* spec = sim::FindDevice(device);
    if (!spec) {
      *err = "unknown device '" + device + "'";
      return false;
    }
    program.device = spec->name;
  }
  if (opt.trace_iterations < 3) {
    *err = "at least 3 traced iterations are needed (a warm-up and two steady ones)";
    return false;
  }
  if (!FindProfile(opt.profile, program.device, &out->profile, err)) return false;
  const DeviceProfile& profile = out->profile;

  // 1. Trace at default clocks, sampling each GPU's SM clock as NVML reports it.
  sim::EngineOptions eo;
  eo.iterations = opt.trace_iterations;
  eo.seed = opt.seed;
  eo.record_trace = true;
  out->engine = std::make_unique<sim::Engine>(program, eo);
  sim::Engine& engine = *out->engine;
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  ClockSampler clocks(&gpus, 1.0);
  host.Add(&clocks);
  if (!engine.Run(err)) {
    *err = workload + ": " + *err;
    return false;
  }
  const Trace& trace = engine.trace();

  // 2. Graph and packs.
  Graph& g = out->g;
  if (!GraphAndPacks(trace, opt.pack_ms, &g, &out->report, &out->packing, err)) return false;
  const Packing& packing = out->packing;

  // 3. Pack profiling through the device's range profiler (another run of the job).
  sim::EngineOptions po_run = eo;
  po_run.record_trace = false;
  po_run.seed = opt.seed + 0x9e37;
  sim::SimMetricSource source(program, po_run);
  if (!ProfilePacks(trace, g, packing, source, &out->pp, err)) return false;

  // 4. Model: per-pack time and energy at every profiled clock, with the clock each pack ran at
  // (below the default where the power limit held it), fitted to each GPU's average power at
  // default clocks from a run long enough for the energy counter's steps not to matter
  // (MeasureWindowIterations), over the span of the traced run (too short to read the counter).
  DefaultRun run;
  run.clock_samples = clocks.samples();
  for (auto& gpu : run.clock_samples)
    for (auto& [t, mhz] : gpu) t -= static_cast<double>(g.origin_ns);
  out->mean_clock_mhz = clocks.MeanMhz();
  run.span_ns = engine.end_ns() - static_cast<double>(g.origin_ns);
  const std::vector<Iteration>& its = trace.ranks[0].iterations;
  const double iteration_ms = its.size() >= 2 ? static_cast<double>(its.back().start_ns - its.front().start_ns) / 1e6 /
                                                    static_cast<double>(its.size() - 1)
                                              : run.span_ns / 1e6;
  Measurement power;
  if (!MeasureRun(program, opt.seed + 1, MeasureWindowIterations(iteration_ms, 2), 1, nullptr, "", &power, err))
    return false;
  for (double e : power.gpu_energy_j) run.power_w.push_back(e / power.window_s);
  out->default_power_w = run.power_w;

  // 5. The same iterations traced with every GPU locked at the low clock, and its power.
  const int low_mhz = opt.low_mhz < 0 ? LowClock(profile) : opt.low_mhz;
  if (low_mhz > 0) {
    sim::EngineOptions lo = eo;
    lo.seed = opt.seed + 2;
    sim::Engine low(program, lo);
    sim::SimGpuControl low_gpus(&low);
    for (int gpu = 0; gpu < low_gpus.Count(); ++gpu)
      if (!low_gpus.SetLockedClock(gpu, low_mhz, err)) return false;
    if (!low.Run(err) || !PackBusyInOtherRun(trace, g, packing, low.trace(), &run.low.busy_ns, err)) {
      *err = workload + " at " + std::to_string(low_mhz) + " MHz: " + *err;
      return false;
    }
    run.low.mhz = out->low_mhz = low_mhz;
    // And its power over a run long enough for the energy counter, as at default clocks.
    const FrequencyPolicy at_low = StaticPolicy(low_gpus.Count(), low_mhz);
    Measurement lp;
    if (!MeasureRun(program, opt.seed + 3, MeasureWindowIterations(iteration_ms / kLowClockShare, 2), 1, &at_low, "",
                    &lp, err))
      return false;
    for (double e : lp.gpu_energy_j) run.low_power_w.push_back(e / lp.window_s);
  }
  return BuildPredictor(trace, g, packing, out->pp, profile, run, &out->predictor, &out->tables, err);
}

bool MeasureRun(const sim::Program& program, uint64_t seed, int iterations, int warmup, const FrequencyPolicy* policy,
                const std::string& controller, Measurement* m, std::string* err, const ControllerFactory& extra) {
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed;
  sim::Engine engine(program, eo);
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  PolicyPlayer player(policy ? *policy : FrequencyPolicy(), &gpus);
  MethodSpec spec;
  if (!ParseMethodSpec(controller, &spec, err)) return false;
  std::unique_ptr<OnlineMethod> method = BuildMethod(spec, &gpus, err);
  if (spec.entry && !method) return false;
  std::unique_ptr<Controller> more = extra ? extra(&gpus) : nullptr;
  Meter meter(&gpus, warmup);
  host.Add(&player);
  if (method) host.Add(method.get());
  if (more) host.Add(more.get());
  host.Add(&meter);
  const bool ran = engine.Run(err);
  player.Finish();
  if (method) method->Finish();
  if (more) more->Finish();
  if (!ran) return false;
  for (const Controller* c : {static_cast<const Controller*>(&player), static_cast<const Controller*>(method.get()),
                              static_cast<const Controller*>(more.get())})
    if (c && !c->error().empty()) {
      *err = c->error();
      return false;
    }
  return meter.Close(engine.end_ns(), m, err);
}

int MeasureWindowIterations(double iteration_ms, int at_least) {
  return std::max(at_least, 1 + static_cast<int>(std::ceil(kMinMeasureWindowS * 1e3 / std::max(iteration_ms, 1e-3))));
}

FrequencyPolicy StaticPolicy(int gpus, int mhz) {
  FrequencyPolicy p;
  for (int g = 0; g < gpus; ++g) p.gpus.push_back({g, {{0, mhz}}});
  return p;
}

double Defaults::iteration_ms() const {
  double ms = 0;
  for (const Measurement& m : runs) ms += m.iteration_ms() / static_cast<double>(runs.size());
  return ms;
}
double Defaults::energy_j() const {
  double j = 0;
  for (const Measurement& m : runs) j += m.iteration_energy_j() / static_cast<double>(runs.size());
  return j;
}

namespace {

// Runs f(i, err) for every seed i, the seeds on separate cores (each run is its own simulation);
// false with the error of the first seed that failed.
template <class F>
bool OnEverySeed(size_t seeds, std::string* err, const F& f) {
  std::vector<std::string> errors(seeds);
  std::vector<char> ok(seeds, 0);
  ParallelFor(HardwareThreads(), seeds, [&](size_t i, int) { ok[i] = f(i, &errors[i]); });
  for (size_t i = 0; i < seeds; ++i)
    if (!ok[i]) {
      *err = errors[i];
      return false;
    }
  return true;
}

}  // namespace

bool MeasureDefaults(const sim::Program& program, const std::vector<uint64_t>& seeds, int iterations, Defaults* out,
                     std::string* err) {
  out->seeds = seeds;
  out->iterations = iterations;
  out->runs.assign(seeds.size(), Measurement());
  return OnEverySeed(seeds.size(), err, [&](size_t i, std::string* e) {
    return MeasureRun(program, seeds[i], iterations, 1, nullptr, "", &out->runs[i], e);
  });
}

bool MeasureOutcome(const sim::Program& program, const Defaults& d, const FrequencyPolicy* policy,
                    const std::string& controller, int warmup, Outcome* out, std::string* err,
                    const ControllerFactory& extra) {
  std::vector<double> slow, save;
  *out = Outcome();
  std::vector<Measurement> runs(d.seeds.size());
  if (!OnEverySeed(d.seeds.size(), err, [&](size_t i, std::string* e) {
        return MeasureRun(program, d.seeds[i], warmup + d.iterations - 1, warmup, policy, controller, &runs[i], e,
                          extra);
      }))
    return false;
  for (size_t i = 0; i < d.seeds.size(); ++i) {
    const Measurement& m = runs[i];
    slow.push_back(m.iteration_ms() / d.runs[i].iteration_ms() - 1);
    save.push_back(1 - m.iteration_energy_j() / d.runs[i].iteration_energy_j());
    out->iteration_ms += m.iteration_ms() / static_cast<double>(d.seeds.size());
    out->energy_j += m.iteration_energy_j() / static_cast<double>(d.seeds.size());
  }
  out->slowdown = SpreadOf(slow);
  out->saving = SpreadOf(save);
  return true;
}

bool SweepStatic(Pipeline& pl, const Defaults& d, double max_budget, double dvfs_latency_ms,
                 std::vector<StaticPoint>* out, std::string* err) {
  out->clear();
  const Predictor::Result& base = pl.predictor.base();
  int over = 0;
  for (auto it = pl.profile.clocks_mhz.rbegin(); it != pl.profile.clocks_mhz.rend() && over < 2; ++it) {
    StaticPoint p;
    p.mhz = *it;
    const FrequencyPolicy policy = StaticPolicy(pl.predictor.gpus(), p.mhz);
    if (!MeasureOutcome(pl.program, d, &policy, "", 1, &p.measured, err)) return false;
    const Predictor::Result r =
        pl.predictor.Run(Schedule(pl.predictor.gpus(), {{dvfs_latency_ms * 1e6, pl.profile.ClockIndex(p.mhz)}}));
    p.predicted_slowdown = r.end_ns / base.end_ns - 1;
    p.predicted_saving = 1 - r.energy_j / base.energy_j;
    over = p.measured.slowdown.mean > max_budget + 0.02 ? over + 1 : 0;
    out->push_back(p);
  }
  return true;
}

const StaticPoint* BestStatic(const std::vector<StaticPoint>& points, double budget) {
  const StaticPoint* best = nullptr;
  for (const StaticPoint& p : points)
    if (p.measured.slowdown.mean <= budget + kCheckTolerance &&
        (!best || p.measured.saving.mean > best->measured.saving.mean))
      best = &p;
  return best;
}

std::optional<double> StaticFrontier(const std::vector<StaticPoint>& points, double slowdown) {
  std::vector<std::pair<double, double>> p{{0, 0}};  // (slowdown, saving), the default first
  for (const StaticPoint& s : points) p.emplace_back(s.measured.slowdown.mean, s.measured.saving.mean);
  std::optional<double> best;
  auto take = [&](double saving) { best = std::max(best.value_or(saving), saving); };
  for (const auto& [sa, ea] : p) {
    if (sa <= slowdown) take(ea);
    for (const auto& [sb, eb] : p)  // a share of a (faster) and b (slower) that lands on `slowdown`
      if (sa < slowdown && slowdown < sb) take(ea + (eb - ea) * (slowdown - sa) / (sb - sa));
  }
  return best;
}

bool SearchChecked(Pipeline& pl, SearchOptions so, bool check, int iterations, uint64_t check_seed, CheckedSearch* out,
                   std::string* err) {
  *out = CheckedSearch();
  Predictor& predictor = pl.predictor;
  const double budget = so.budget;
  // No slowdown at all is out of reach of any clock change (every lower clock costs something,
  // if only microseconds); a zero budget is searched as half the allowance measured runs get.
  if (budget == 0) so.budget = kCheckTolerance / 2;
  Defaults d;
  if (check && !MeasureDefaults(pl.program, {check_seed, check_seed + 1}, iterations, &d, err)) return false;
  double seconds = 0, best_saving = 0;
  BudgetBracket bracket;
  int64_t evaluations = 0, nodes_computed = 0;
  bool have = false;
  int static_clock = -1;  // the model's best single clock at the budget asked for
  int points = 0;
  for (int round = 0; round < kMaxSearches; ++round) {
    SearchResult r;
    if (!Search(predictor, so, &r, err)) return false;
    if (round == 0) static_clock = r.best_static;
    points = r.points;
    seconds += r.seconds;
    evaluations += r.evaluations;
    nodes_computed += r.nodes_computed;
    const FrequencyPolicy p = PolicyFromSchedule(r.schedule, pl.profile.clocks_mhz, so.dvfs_latency_ms);
    if (!check) {
      out->result = r, out->policy = p, have = true;
      break;
    }
    Outcome o;
    if (!MeasureOutcome(pl.program, d, &p, "", 1, &o, err)) return false;
    const double slow = o.slowdown.mean, save = o.saving.mean;
    const bool within = slow <= budget + kCheckTolerance;
    out->checks.push_back({{"search_budget", so.budget},
                           {"jitter_ms", so.dvfs_jitter_ms},
                           {"predicted_slowdown", r.predicted.end_ns / predictor.base().end_ns - 1},
                           {"measured_slowdown", slow},
                           {"measured_energy_saving", save}});
    out->lines.push_back(
        fmt::format("check {}: searched at budget {:.2f} %, measured {:+.2f} % time, {:.2f} % energy "
                    "saved{}",
                    round + 1, so.budget * 100, slow * 100, save * 100, within ? "" : " (over budget)"));
    if (within && (!have || save > best_saving)) out->result = r, out->policy = p, have = true, best_saving = save;
    if (within && (budget == 0 || slow >= 0.9 * budget)) break;
    // The measured slowdown jumps with the search budget (the schedule changes in steps), so
    // bracket it (NextSearchBudget); without any policy within, the latency is also taken wider.
    so.budget = NextSearchBudget(budget, so.budget, slow, within, &bracket);
    if (!have) so.dvfs_jitter_ms *= 2;  // (none within: the bracket has no lower end)
  }
  // The model's best single clock is a candidate too, measured on the same check seeds: where the
  // schedule's predicted gain over it is within the model's error, the measurement decides. The
  // measurements then search the clock table as the schedule's checks search the budget: once a
  // clock was over budget, by bisection between the highest clock known over and the lowest known
  // within (at first the default); before that, from a clock that leaves more than a tenth of the
  // budget unused and saved more than the one before, down 1, 2, 4... clocks. kMaxStaticChecks
  // runs in all.
  const double target = budget == 0 ? kCheckTolerance / 2 : budget;
  int known_over = -1, known_within = predictor.default_clock(), down = 1;
  for (int c = static_clock, k = 0; check && c >= 0 && k < kMaxStaticChecks; ++k) {
    const int mhz = pl.profile.clocks_mhz[static_cast<size_t>(c)];
    const FrequencyPolicy p = StaticPolicy(predictor.gpus(), mhz);
    Outcome o;
    if (!MeasureOutcome(pl.program, d, &p, "", 1, &o, err)) return false;
    const double slow = o.slowdown.mean, save = o.saving.mean;
    const bool within = slow <= budget + kCheckTolerance, better = within && (!have || save > best_saving);
    out->checks.push_back({{"static_mhz", mhz}, {"measured_slowdown", slow}, {"measured_energy_saving", save}});
    out->lines.push_back(
        fmt::format("check of {} single clock, {} MHz: measured {:+.2f} % time, {:.2f} % energy saved{}",
                    k == 0 ? "the model's best" : "another", mhz, slow * 100, save * 100,
                    better   ? " (kept)"
                    : within ? ""
                             : " (over budget)"));
    if (better) {
      out->result = SearchResult();
      if (!ScheduleFromPolicy(p, pl.profile.clocks_mhz, predictor.gpus(), so.dvfs_latency_ms, &out->result.schedule,
                              err))
        return false;
      out->result.predicted = predictor.Run(out->result.schedule);
      out->policy = p, have = true, best_saving = save;
    }
    int next = -1;
    if (!within) {
      known_over = c;
      next = (c + known_within + 1) / 2;
    } else {
      known_within = c;
      if (known_over >= 0) {
        next = (known_over + c) / 2;
      } else if (slow < 0.9 * target && (k == 0 || better)) {
        next = c - down;
        down *= 2;
      }
    }
    if (next <= known_over || next >= known_within || next < 0) break;
    c = next;
  }
  if (!have) {
    out->kept_default = true;
    out->result = SearchResult();
    out->result.predicted = predictor.base();
    out->result.schedule = Schedule(predictor.gpus());
    out->policy = FrequencyPolicy();
  }
  out->result.seconds = seconds;
  out->result.evaluations = evaluations;
  out->result.nodes_computed = nodes_computed;
  out->result.points = points;
  return true;
}

}  // namespace emo
