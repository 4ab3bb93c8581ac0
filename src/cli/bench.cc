// bench.cc — the `emo bench` command: every method on every workload, measured the same way.
//
// Per workload: EMO's pipeline once (trace, packs, profiling, model); default runs on the seeds;
// the static sweep once (the best static clock per budget from it); then per budget EMO's checked
// search and its measured policy, and each online baseline started from the card's defaults and
// measured after it settles (warm-up iterations: Zeus's whole profiling schedule, GPOEO's search,
// GEEPAFS's first probes), and on pipelines Perseus: its per-instruction profile once, then per
// budget its plan played per instruction. All measured windows are at least 8 s. Beside each
// method's row, the static frontier (StaticFrontier) at the slowdown it measured.
#include "cli/bench.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/perseus_baseline.h"
#include "cli/sim_pipeline.h"
#include "online/gpoeo.h"
#include "util/file.h"

namespace emo {

namespace {

// The default set: one of each kind that runs in a few minutes in all on 2 cores.
const char* const kDefaultWorkloads[] = {"tp2-gpt3-6.7b-a100.json",
                                         "tp8-gpt3-6.7b-a100.json",
                                         "dp2-gpt3-1.3b-a100.json",
                                         "pp4-qwen2-7b-uniform-a100.json",
                                         "offload-deepseek-v2-lite-a100.json",
                                         "tp2-llama2-0.5b-3080ti.json"};
const char* const kMethods[] = {"emo", "static", "zeus", "geepafs", "gpoeo", "perseus"};

struct Row {
  std::string workload, method, detail;
  double budget = 0;
  bool ok = false;
  std::string why;  // when !ok
  Outcome o;
  double search_s = 0, profile_overhead_s = 0;
  int64_t profiled_ranges = -1;
  std::optional<double> frontier;  // the static frontier's saving at this row's mean slowdown
};

std::string Pct(const Spread& s) {
  return fmt::format("{:.1f} [{:.1f}, {:.1f}]", s.mean * 100, s.min * 100, s.max * 100);
}

}  // namespace

int RunBench(const BenchOptions& opt) {
  auto fail = [](const std::string& e) {
    fmt::print(stderr, "emo bench: {}\n", e);
    return 1;
  };
  std::vector<std::string> workloads = opt.workloads;
  if (workloads.empty())
    for (const char* w : kDefaultWorkloads) workloads.push_back(std::string(EMO_SOURCE_DIR) + "/workloads/" + w);
  std::vector<std::string> methods = opt.methods;
  if (methods.empty()) methods.assign(std::begin(kMethods), std::end(kMethods));
  for (const std::string& m : methods)
    if (std::find(std::begin(kMethods), std::end(kMethods), m) == std::end(kMethods))
      return fail("unknown method '" + m + "' (emo, static, zeus, geepafs, gpoeo, perseus)");
  if (opt.seeds < 1) return fail("--seeds must be at least 1");

  std::vector<Row> rows;
  size_t done = 0;
  const size_t total = workloads.size() * methods.size();
  auto progress = [&](const std::string& what) {
    if (!opt.progress) return;
    const int width = 30, filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
    fmt::print(stderr, "\r[{}{}] {}/{} {:<60}", std::string(static_cast<size_t>(filled), '#'),
               std::string(static_cast<size_t>(width - filled), ' '), done, total, what.substr(0, 60));
    std::fflush(stderr);
  };
  for (const std::string& path : workloads) {
    std::string err, text;
    if (!ReadFileMaybeGz(path, &text, &err)) return fail(err);
    std::string kind;
    try {
      kind = nlohmann::json::parse(text).value("kind", "");
    } catch (const std::exception&) {
    }
    std::vector<double> budgets = opt.budgets;
    if (budgets.empty())
      budgets = kind == "pp" || kind == "offload" ? std::vector<double>{0} : std::vector<double>{0.02, 0.05};
    const double max_budget = *std::max_element(budgets.begin(), budgets.end());

    Pipeline pl;
    progress(path + ": tracing and modelling");
    PipelineOptions pipeline;
    pipeline.low_mhz = opt.low_mhz;
    if (!BuildPipeline(path, "", pipeline, &pl, &err)) return fail(path + ": " + err);
    const std::string name = pl.program.name;
    const double iteration_ms = pl.predictor.period_ns() / 1e6;
    const int runs = MeasureWindowIterations(iteration_ms, 6);
    std::vector<uint64_t> seeds;
    for (int i = 0; i < opt.seeds; ++i) seeds.push_back(1000 + static_cast<uint64_t>(i));
    Defaults def;
    if (!MeasureDefaults(pl.program, seeds, runs, &def, &err)) return fail(name + ": " + err);
    std::vector<StaticPoint> sweep;
    PerseusProfile perseus_profile;  // profiled once per workload, on its first budget
    const size_t first_row = rows.size();

    for (const std::string& method : methods) {
      progress(name + ": " + method);
      if (method == "static" && sweep.empty() &&
          !SweepStatic(pl, def, max_budget, SearchOptions().dvfs_latency_ms, &sweep, &err))
        return fail(name + ": " + err);
      for (double budget : budgets) {
        Row r;
        r.workload = name;
        r.method = method;
        r.budget = budget;
        if (method == "emo") {
          SearchOptions so;
          so.budget = budget;
          so.group = ReplicaGroups(pl.g, pl.predictor.gpus());
          CheckedSearch cs;
          if (!SearchChecked(pl, so, true, runs, 500, &cs, &err)) return fail(name + ": " + err);
          r.ok = MeasureOutcome(pl.program, def, &cs.policy, "", 1, &r.o, &err);
          r.search_s = cs.result.seconds;
          r.profile_overhead_s = pl.pp.cost.overhead_s;
          r.profiled_ranges = pl.pp.cost.ranges;
          r.detail = cs.kept_default ? "default clocks kept" : fmt::format("{} checks", cs.checks.size());
        } else if (method == "static") {
          const StaticPoint* best = BestStatic(sweep, budget);
          r.ok = best != nullptr;
          if (best) r.o = best->measured, r.detail = fmt::format("{} MHz", best->mhz);
          err = "no static clock within the budget";
        } else if (method == "perseus") {
          // Profile each stage's forward and backward once (every clock down to 855 MHz),
          // then per budget plan and play one clock per computation, measured like a policy.
          const perseus::PerseusOptions po;
          if (kind != "pp") {
            err = "skipped: pipeline workloads only";
          } else {
            if (perseus_profile.clocks.empty()) {
              std::vector<int> clocks;
              if (!PerseusClocks(pl.program.device, &clocks, &err)) return fail(name + ": " + err);
              if (!ProfilePerseus(pl.program, clocks, kPerseusProfileIterations, 2000, &perseus_profile, &err))
                return fail(name + ": perseus: " + err);
            }
            PerseusPlan plan;
            if (!PlanPerseus(perseus_profile, po, budget, &plan, &err)) return fail(name + ": perseus: " + err);
            auto player = [&plan](GpuControl* g) { return std::make_unique<InstructionClockPlayer>(plan.steps, g); };
            r.ok = MeasureOutcome(pl.program, def, nullptr, "", 1, &r.o, &err, player);
            r.profile_overhead_s = perseus_profile.cost_s;
            r.detail = fmt::format("{} clocks profiled ({:.0f} s), plan {:.3f} s of T_min {:.3f} s, {} points",
                                   perseus_profile.clocks.size(), perseus_profile.cost_s, plan.chosen.real_time_s,
                                   static_cast<double>(plan.t_min) * po.unit_time_s, plan.points);
          }
        } else {
          // Online methods, from the card's defaults, measured after they settle.
          std::string spec;
          int warmup = 0;
          if (method == "zeus") {
            spec = fmt::format("zeus-power-limit:selector=max-slowdown,max-slowdown={:.3f}", 1 + budget);
            warmup = 20 + 13 * 50;  // wait, then warm-up + profile steps for each limit from max to min
          } else if (method == "geepafs") {
            spec = "geepafs";
            warmup = MeasureWindowIterations(iteration_ms, 6);  // its first probes, about 8 s
          } else {
            spec = fmt::format("gpoeo:slowdown={:.3f}", budget);
            warmup = GpoeoSearchBoundIterations(GpoeoOptions(), iteration_ms / 1e3);  // its search
          }
          r.ok = MeasureOutcome(pl.program, def, nullptr, spec, warmup, &r.o, &err);
          r.detail = spec;
          if (method == "geepafs" && budgets.size() > 1) r.detail += " (no budget)";
        }
        if (!r.ok) r.why = err;
        rows.push_back(r);
      }
      ++done;
    }
    // Every method beside the static clocks at its own slowdown (when the sweep ran).
    for (size_t i = first_row; i < rows.size(); ++i)
      if (rows[i].ok && rows[i].method != "static" && !sweep.empty())
        rows[i].frontier = StaticFrontier(sweep, rows[i].o.slowdown.mean);
  }
  if (opt.progress) fmt::print(stderr, "\n");

  // Text, markdown and JSON.
  std::string md =
      "| workload | budget | method | energy saving % [min, max] | slowdown % [min, max] | static clocks at that "
      "slowdown, saving % | search s | note |\n"
      "|---|---|---|---|---|---|---|---|\n";
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    const std::string saving = r.ok ? Pct(r.o.saving) : "n/a";
    const std::string slow = r.ok ? Pct(r.o.slowdown) : "n/a";
    const std::string note = r.ok ? r.detail : r.why;
    const std::string frontier = r.frontier ? fmt::format("{:.1f}", *r.frontier * 100) : "";
    fmt::print("{:<36} {:>4.0f} % {:<8} saving {:<22} slowdown {:<22} {}{}\n", r.workload, r.budget * 100, r.method,
               saving, slow, note, r.frontier ? "; static clocks at that slowdown: " + frontier + " %" : "");
    md += fmt::format("| {} | {:.0f} % | {} | {} | {} | {} | {} | {} |\n", r.workload, r.budget * 100, r.method, saving,
                      slow, frontier, r.method == "emo" ? fmt::format("{:.1f}", r.search_s) : "", note);
    nlohmann::ordered_json e = {{"workload", r.workload}, {"budget", r.budget}, {"method", r.method}, {"ok", r.ok}};
    if (r.ok) {
      e["energy_saving"] = SpreadJson(r.o.saving);
      e["slowdown"] = SpreadJson(r.o.slowdown);
      if (r.frontier) e["static_frontier_saving"] = *r.frontier;
    } else {
      e["why"] = r.why;
    }
    if (r.method == "emo") {
      e["search_s"] = r.search_s;
      e["profiled_ranges"] = r.profiled_ranges;
      e["profile_overhead_s"] = r.profile_overhead_s;
    }
    if (r.method == "perseus" && r.ok) e["profile_overhead_s"] = r.profile_overhead_s;
    e["detail"] = r.detail;
    j.push_back(e);
  }
  if (!opt.md.empty()) {
    std::ofstream f(opt.md);
    f << md;
    if (!f) return fail(opt.md + ": cannot write");
  }
  if (!opt.json.empty()) {
    std::ofstream f(opt.json);
    f << j.dump(2) << "\n";
    if (!f) return fail(opt.json + ": cannot write");
  }
  return 0;
}

}  // namespace emo
