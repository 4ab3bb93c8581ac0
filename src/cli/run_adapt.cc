// run_adapt.cc — the planner of `emo run --adapt` (run_adapt.h).
#include "cli/run_adapt.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "cli/model_pipeline.h"
#include "trace/load.h"
#include "trace/trace_control.h"

namespace emo {

RunPlanner::RunPlanner(const RunPlannerOptions& o, std::vector<KnownPack> known, const SearchOptions& so,
                       const ClockSampler* clocks)
    : o_(o), known_(std::move(known)), so_(so), clocks_(clocks) {}

bool RunPlanner::Model(const PlanWindow& w, std::string* err) {
  if (model_ && model_->first == w.first) return true;
  model_.reset();
  if (w.energy_j.empty() || !(w.end_ns > w.start_ns)) {
    *err = "the window has no energy readings";
    return false;
  }
  // A few iterations more at default clocks, traced.
  TraceRequest request;
  WindowAnswers answers;
  if (!WriteTraceRequest(o_.control_dir, o_.trace_iterations, o_.trace_timeout_s, &request, err)) return false;
  if (!WaitForWindow(o_.control_dir, request.seq, o_.trace_timeout_s + 5, 0.05, &answers, err, &cancelled_))
    return false;
  if (!answers.errors.empty()) {
    *err = "no trace: " + answers.errors[0];
    return false;
  }
  std::vector<std::string> files = answers.files;
  std::sort(files.begin(), files.end());
  auto m = std::make_unique<WindowModel>();
  m->first = w.first;
  BuildReport report;
  if (!LoadTraces(files, &m->trace, err) || !GraphAndPacks(m->trace, o_.pack_ms, &m->g, &report, &m->packing, err))
    return false;
  if (m->trace.ranks.size() != w.energy_j.size()) {
    *err = fmt::format("the job's trace has {} ranks, where it runs on {} GPUs (one process per GPU, rank r on GPU r)",
                       m->trace.ranks.size(), w.energy_j.size());
    return false;
  }
  const double unknown_share = PackProfileFromKnown(m->packing, known_, &m->pp);
  if (unknown_share > o_.max_unknown_share) {
    *err = fmt::format(
        "{:.0f} % of the window's kernel time is in packs that --packs never saw: the job runs other work than it "
        "profiled (profile it in this phase: emo profile)",
        unknown_share * 100);
    return false;
  }
  if (unknown_share > 0)
    fmt::print(stderr,
               "emo run: adapt: {:.1f} % of the window's kernel time is in packs that --packs never saw; they take "
               "the job's mix\n",
               unknown_share * 100);
  if (!(o_.profile.empty() ? FindProfile("", m->trace.ranks[0].gpu_name, &m->profile, err)
                           : LoadProfile(o_.profile, &m->profile, err)))
    return false;
  // What the loop measured at default clocks: each GPU's power over its window, and the clock it ran
  // at while busy then (the traced iterations follow the window, at the same clocks).
  DefaultRun run;
  for (double e : w.energy_j) run.power_w.push_back(e / ((w.end_ns - w.start_ns) * 1e-9));
  for (const auto& gpu : clocks_->samples()) {
    double sum = 0;
    int n = 0;
    for (const auto& [t, mhz] : gpu)
      if (t >= w.start_ns && t <= w.end_ns) sum += mhz, ++n;
    run.clock_samples.push_back(n > 0 ? std::vector<std::pair<double, double>>{{0.0, sum / n}}
                                      : std::vector<std::pair<double, double>>{});
  }
  if (!BuildPredictor(m->trace, m->g, m->packing, m->pp, m->profile, run, &m->predictor, &m->tables, err)) return false;
  model_ = std::move(m);
  return true;
}

bool RunPlanner::Plan(const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err) {
  if (!Model(w, err)) return false;
  return SearchPolicy(model_->predictor, model_->g, model_->profile, so_, budget, out, err);
}

}  // namespace emo
