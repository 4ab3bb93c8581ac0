// sim.cc — the `emo sim` command.
#include "cli/sim.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apply/measurement.h"
#include "apply/policy_player.h"
#include "cli/model_pipeline.h"
#include "cli/sim_adapt.h"
#include "cli/sim_pipeline.h"
#include "online/registry.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/static_sweep.h"
#include "sim/workload.h"
#include "trace/kineto_writer.h"

namespace emo {
namespace {

// One run (one seed) of the workload and what it measured.
struct SeedRun {
  uint64_t seed = 0;
  Measurement m;
  std::vector<std::string> lines;  // the method's report
  nlohmann::ordered_json findings;
  double counter_period_s = 0;  // of GPU 0's energy counter
  int gpus = 0;
};

// Runs the workload once with `seed`; writes the trace when `trace_out` is set. Errors carry the
// "emo sim: " context-free text, ready to print after it.
bool RunSeed(const sim::Program& program, const SimOptions& opt, const FrequencyPolicy& policy,
             const MethodSpec& method_spec, int warmup, uint64_t seed, const std::string& trace_out, SeedRun* out,
             std::string* err) {
  sim::EngineOptions eo;
  eo.iterations = opt.iterations;
  eo.seed = seed;
  eo.gpu_seed = opt.gpu_seed;
  eo.kernel_seed = opt.kernel_seed;
  eo.record_trace = !trace_out.empty() || opt.adapt_pct >= 0;
  sim::Engine engine(program, eo);
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  PolicyPlayer player(policy, &gpus);
  std::unique_ptr<OnlineMethod> method = BuildMethod(method_spec, &gpus, err);
  if (method_spec.entry && !method) return false;
  std::unique_ptr<SimAdaptive> adapt;
  if (opt.adapt_pct >= 0) {
    DeviceProfile profile;
    if (!FindProfile("", program.device, &profile, err)) return false;
    AdaptiveOptions ao;
    ao.budget = opt.adapt_pct / 100;
    SearchOptions so;
    so.budget = ao.budget;
    adapt =
        std::make_unique<SimAdaptive>(&engine, program, &gpus, profile, ao, so, PipelineOptions().pack_ms,
                                      seed + 0x9e37, [out](const std::string& line) { out->lines.push_back(line); });
  }
  Meter meter(&gpus, warmup);
  host.Add(&player);
  if (method) host.Add(method.get());
  if (adapt) adapt->AddTo(&host);
  host.Add(&meter);
  const bool ran = engine.Run(err);
  player.Finish();
  if (method) method->Finish();
  if (adapt) adapt->player().Finish();
  if (!ran) {
    *err = opt.workload + ": " + *err;
    return false;
  }
  if (!player.error().empty()) {
    *err = "policy: " + player.error();
    return false;
  }
  if (adapt && !adapt->player().error().empty()) {
    *err = "--adapt: " + adapt->player().error();
    return false;
  }
  if (adapt) out->findings = adapt->player().Json();
  if (method && !method->error().empty()) {
    *err = opt.controller + ": " + method->error();
    return false;
  }
  out->seed = seed;
  out->gpus = engine.gpus();
  out->counter_period_s = engine.EnergyCounterPeriodS(0);
  if (!meter.Close(engine.end_ns(), &out->m, err)) return false;
  if (method) method->Report(&out->lines, &out->findings);
  if (!trace_out.empty() && !WriteKinetoTraces(engine.trace(), trace_out, err)) return false;
  return true;
}

// `emo sim --sweep-clocks`: the workload at each static clock over the seeds, and the best static
// clock within each budget.
int RunSweep(const sim::Program& program, const SimOptions& opt, int warmup) {
  std::string err;
  std::vector<int> clocks;
  const std::string arg = opt.sweep_clocks == "default" ? "" : opt.sweep_clocks;
  if (!sim::SweepClockList(program.device, arg, &clocks, &err)) {
    fmt::print(stderr, "emo sim: --sweep-clocks: {}\n", err);
    return 1;
  }
  std::vector<uint64_t> seeds;
  for (int i = 0; i < opt.seeds; ++i) seeds.push_back(opt.seed + static_cast<uint64_t>(i));
  std::vector<sim::StaticPoint> points;
  if (!sim::SweepStaticClocks(program, clocks, seeds, opt.iterations, warmup, &points, &err)) {
    fmt::print(stderr, "emo sim: {}: {}\n", opt.workload, err);
    return 1;
  }
  fmt::print("{} on {} x {}: static clocks, {} iterations ({} measured) x {} seeds each\n", program.name,
             program.ranks.size(), program.device, opt.iterations, opt.iterations - warmup, seeds.size());
  fmt::print("{:>8} {:>13} {:>7} {:>14} {:>7} {:>10} {:>9}\n", "clock", "iteration ms", "±%", "J/iteration", "±%",
             "slowdown%", "saving%");
  for (const sim::StaticPoint& p : points)
    fmt::print("{:>8} {:>13.3f} {:>7.2f} {:>14.2f} {:>7.2f} {:>10.2f} {:>9.2f}\n",
               p.mhz > 0 ? std::to_string(p.mhz) : std::string("default"), p.iteration_ms.mean,
               100 * p.iteration_ms.rel_stdev(), p.iteration_energy_j.mean, 100 * p.iteration_energy_j.rel_stdev(),
               100 * p.slowdown.mean, 100 * p.saving.mean);
  nlohmann::ordered_json best = nlohmann::ordered_json::array();
  for (double budget : opt.budgets) {
    const sim::StaticPoint* b = sim::BestStaticClock(points, budget / 100);
    fmt::print("best static clock within {:g} %: {} (saving {:.2f} % ± {:.2f}, slowdown {:.2f} % ± {:.2f})\n", budget,
               b->mhz > 0 ? std::to_string(b->mhz) + " MHz" : std::string("default"), 100 * b->saving.mean,
               100 * b->saving.stdev, 100 * b->slowdown.mean, 100 * b->slowdown.stdev);
    best.push_back({{"budget_pct", budget},
                    {"mhz", b->mhz > 0 ? nlohmann::ordered_json(b->mhz) : nlohmann::ordered_json(nullptr)},
                    {"saving", b->saving.mean},
                    {"slowdown", b->slowdown.mean}});
  }
  double counter_error = 0;
  for (const sim::StaticPoint& p : points) counter_error = std::max(counter_error, p.counter_error);
  if (counter_error > 0.01)
    fmt::print(stderr,
               "emo sim: warning: the measured windows are short for the energy counter's steps: a run's energy is "
               "typically off by up to {:.1f} %; measure more iterations\n",
               100 * counter_error);
  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json j;
    j["workload"] = program.name;
    j["device"] = program.device;
    j["gpus"] = program.ranks.size();
    j["seeds"] = seeds;
    j["run_iterations"] = opt.iterations;
    j["warmup_iterations"] = warmup;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const sim::StaticPoint& p : points)
      rows.push_back({{"mhz", p.mhz > 0 ? nlohmann::ordered_json(p.mhz) : nlohmann::ordered_json(nullptr)},
                      {"iteration_ms", SpreadJson(p.iteration_ms)},
                      {"iteration_energy_j", SpreadJson(p.iteration_energy_j)},
                      {"slowdown", SpreadJson(p.slowdown)},
                      {"saving", SpreadJson(p.saving)},
                      {"window_s", p.window_s}});
    j["static_clocks"] = rows;
    j["best"] = best;
    std::ofstream f(opt.measure_out);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo sim: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int RunSim(const SimOptions& opt) {
  std::string err;
  sim::Program program;
  if (!sim::LoadWorkload(opt.workload, &program, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  if (!opt.device.empty()) {
    const sim::DeviceSpec* spec = sim::FindDevice(opt.device);
    if (!spec) {
      std::string known;
      for (const std::string& n : sim::DeviceNames()) known += " " + n;
      fmt::print(stderr, "emo sim: unknown device '{}' (known:{})\n", opt.device, known);
      return 1;
    }
    program.device = spec->name;
  }
  FrequencyPolicy policy;
  if (!opt.policy.empty() && !LoadPolicy(opt.policy, &policy, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  MethodSpec method_spec;
  if (!ParseMethodSpec(opt.controller, &method_spec, &err)) {
    fmt::print(stderr, "emo sim: --controller: {}\n", err);
    return 1;
  }
  // By default the first iteration warms up (and lets a policy's first clock change land);
  // measurement covers the rest, read from the energy counters as a user would read NVML.
  const int warmup = opt.warmup >= 0 ? opt.warmup : (opt.iterations > 1 ? 1 : 0);
  if (opt.iterations < 1 || warmup >= opt.iterations) {
    fmt::print(stderr, "emo sim: --iterations ({}) must exceed --warmup ({})\n", opt.iterations, warmup);
    return 1;
  }
  if (opt.seeds < 1) {
    fmt::print(stderr, "emo sim: --seeds ({}) must be at least 1\n", opt.seeds);
    return 1;
  }
  if (opt.adapt_pct >= 0 && (!opt.policy.empty() || !opt.controller.empty())) {
    fmt::print(stderr, "emo sim: --adapt plays its own policies: no --policy or --controller\n");
    return 1;
  }
  if (!opt.sweep_clocks.empty()) {
    if (!opt.policy.empty() || !opt.controller.empty() || !opt.trace_out.empty() || opt.adapt_pct >= 0) {
      fmt::print(stderr,
                 "emo sim: --sweep-clocks locks every clock itself: no --policy, --controller, --adapt or --trace\n");
      return 1;
    }
    return RunSweep(program, opt, warmup);
  }

  // Each seed is a fresh run on the same simulated GPUs (--gpu-seed); the first writes the trace.
  std::vector<SeedRun> runs(static_cast<size_t>(opt.seeds));
  for (size_t i = 0; i < runs.size(); ++i)
    if (!RunSeed(program, opt, policy, method_spec, warmup, opt.seed + i, i == 0 ? opt.trace_out : "", &runs[i],
                 &err)) {
      fmt::print(stderr, "emo sim: {}\n", err);
      return 1;
    }
  const SeedRun& first = runs[0];
  const Measurement& m = first.m;
  fmt::print("{} on {} x {}: {} iterations ({} measured), {:.3f} ms and {:.2f} J per iteration\n", program.name,
             first.gpus, program.device, opt.iterations, m.iterations, m.iteration_ms(), m.iteration_energy_j());
  std::vector<double> times, energies, powers;
  for (const SeedRun& r : runs) {
    times.push_back(r.m.iteration_ms());
    energies.push_back(r.m.iteration_energy_j());
    powers.push_back(r.m.avg_power_w());
  }
  const Spread time_spread = SpreadOf(times), energy_spread = SpreadOf(energies);
  if (runs.size() > 1)
    fmt::print(
        "{} seeds ({}..{}): iteration {:.3f} ms ± {:.2f} % (min {:.3f}, max {:.3f}), energy {:.2f} J ± {:.2f} % "
        "(min {:.2f}, max {:.2f}) per iteration (mean ± sample stdev)\n",
        runs.size(), opt.seed, opt.seed + runs.size() - 1, time_spread.mean, 100 * time_spread.rel_stdev(),
        time_spread.min, time_spread.max, energy_spread.mean, 100 * energy_spread.rel_stdev(), energy_spread.min,
        energy_spread.max);
  for (const std::string& line : first.lines) fmt::print("{}\n", line);
  // The energy counter advances in steps (one every update interval P), so each end of the window
  // reads it up to P late: the window's energy is off by up to 2P/window, typically (rms)
  // P/(√6·window). Warn when the typical error exceeds 1 %.
  const double window_s = m.window_s, period_s = first.counter_period_s;
  const double typical = window_s > 0 ? period_s / std::sqrt(6.0) / window_s : 1;
  if (typical > 0.01)
    fmt::print(stderr,
               "emo sim: warning: the measured window ({:.3f} s) spans about {:.0f} energy-counter updates (one every "
               "~{:.0f} ms): its energy can be off by up to {:.1f} % (typically {:.1f} %); measure more iterations (a "
               "window of {:.1f} s or more keeps the typical error under 1 %)\n",
               window_s, window_s / period_s, period_s * 1e3, 200 * period_s / std::max(window_s, 1e-9), 100 * typical,
               period_s / std::sqrt(6.0) / 0.01);

  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json j;
    j["workload"] = program.name;
    j["device"] = program.device;
    j["gpus"] = first.gpus;
    j["seed"] = opt.seed;
    j["gpu_seed"] = opt.gpu_seed;
    j["kernel_seed"] = opt.kernel_seed;
    j["policy"] = opt.policy.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.policy);
    j["controller"] = opt.controller.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.controller);
    j["run_iterations"] = opt.iterations;
    j["warmup_iterations"] = warmup;
    AddMeasurementJson(m, &j);  // the first seed's run, as with one seed
    if (method_spec.entry) j[method_spec.entry->json_key] = first.findings;
    if (opt.adapt_pct >= 0) j["adapt"] = first.findings;
    if (runs.size() > 1) {
      nlohmann::ordered_json seeds = nlohmann::ordered_json::array();
      for (const SeedRun& r : runs) {
        nlohmann::ordered_json s;
        s["seed"] = r.seed;
        AddMeasurementJson(r.m, &s);
        s.erase("per_gpu");
        seeds.push_back(s);
      }
      j["seeds"] = seeds;
      j["spread"] = {{"runs", runs.size()},
                     {"iteration_ms", SpreadJson(time_spread)},
                     {"iteration_energy_j", SpreadJson(energy_spread)},
                     {"avg_power_w", SpreadJson(SpreadOf(powers))}};
    }
    std::ofstream f(opt.measure_out);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo sim: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace emo
