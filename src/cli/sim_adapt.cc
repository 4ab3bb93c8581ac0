// sim_adapt.cc — the planner of EMO's online loop on the simulated device.
#include "cli/sim_adapt.h"

#include "cli/model_pipeline.h"

#include <algorithm>

#include "cli/sim_pipeline.h"
#include "model/pack_profile.h"
#include "sim/sim_metric_source.h"
#include "trace/iteration_window.h"

namespace emo {

SimAdaptive::SimAdaptive(sim::Engine* engine, const sim::Program& program, sim::SimGpuControl* gpus,
                         const DeviceProfile& profile, const AdaptiveOptions& ao, const SearchOptions& so,
                         double pack_ms, uint64_t seed, std::function<void(const std::string&)> say)
    : engine_(engine),
      program_(program),
      profile_(profile),
      so_(so),
      pack_ms_(pack_ms),
      seed_(seed),
      clocks_(gpus, 1.0),
      player_(
          ao, gpus,
          [this](const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err) {
            return Plan(w, budget, out, err);
          },
          std::move(say)) {}

void SimAdaptive::AddTo(sim::SimHost* host) {
  host->Add(&clocks_);
  host->Add(&player_);
}

bool SimAdaptive::Model(const PlanWindow& w, std::string* err) {
  if (model_ && model_->first == w.first && model_->iterations == w.iterations) return true;
  model_.reset();
  if (w.energy_j.empty()) {
    *err = "the window has no energy readings";
    return false;
  }
  auto m = std::make_unique<WindowModel>();
  m->first = w.first;
  m->iterations = w.iterations;
  // The graph from the window's last few iterations (a window long enough for the energy counter
  // holds many: the model needs a few); the power from all of it.
  const int traced = std::min(w.iterations, PipelineOptions().trace_iterations);
  m->trace = engine_->TraceSoFar();
  for (RankTrace& r : m->trace.ranks)
    if (!KeepIterationWindow(&r, w.first + w.iterations - traced, traced, err)) return false;
  BuildReport report;
  if (!GraphAndPacks(m->trace, pack_ms_, &m->g, &report, &m->packing, err)) return false;
  sim::EngineOptions po;
  po.iterations = w.first + w.iterations;  // the program up to the window's end (its phases by iteration)
  po.seed = seed_ + models_++;
  po.record_trace = false;
  sim::SimMetricSource source(program_, po);
  if (!ProfilePacks(m->trace, m->g, m->packing, source, &m->pp, err)) return false;
  // What the window measured at default clocks: its clock samples, and each GPU's mean power.
  DefaultRun run;
  const double origin = static_cast<double>(m->g.origin_ns);
  for (const auto& gpu : clocks_.samples()) {
    run.clock_samples.emplace_back();
    for (const auto& [t, mhz] : gpu)
      if (t >= origin && t <= w.end_ns) run.clock_samples.back().emplace_back(t - origin, mhz);
  }
  for (double e : w.energy_j) run.power_w.push_back(e / ((w.end_ns - w.start_ns) / 1e9));
  run.span_ns = w.end_ns - origin;
  if (!BuildPredictor(m->trace, m->g, m->packing, m->pp, profile_, run, &m->predictor, &m->tables, err)) return false;
  model_ = std::move(m);
  return true;
}

bool SimAdaptive::Plan(const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err) {
  if (!Model(w, err)) return false;
  return SearchPolicy(model_->predictor, model_->g, profile_, so_, budget, out, err);
}

}  // namespace emo
