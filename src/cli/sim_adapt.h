// sim_adapt.h — EMO's online loop (apply/adaptive_player.h) on the simulated device: its planner
// cuts the window out of the running engine's trace, packs it, profiles the new packs in a run of
// its own (as CUPTI's range profiler would), fits the pack model and searches, as `emo optimize`
// does offline. The planning costs no simulated time: on hardware it would run beside the job while
// the default clocks stay.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apply/adaptive_player.h"
#include "apply/clock_sampler.h"
#include "graph/graph.h"
#include "model/device_profile.h"
#include "model/pack_model.h"
#include "model/pack_profile.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "sim/engine.h"
#include "sim/program.h"
#include "sim/sim_gpu_control.h"
#include "trace/trace.h"

namespace emo {

class SimAdaptive {
 public:
  // The engine records its trace (EngineOptions::record_trace). `so` is searched with every
  // plan, its replica groups taken from each window's graph; `seed` seeds the profiling runs.
  SimAdaptive(sim::Engine* engine, const sim::Program& program, sim::SimGpuControl* gpus, const DeviceProfile& profile,
              const AdaptiveOptions& ao, const SearchOptions& so, double pack_ms, uint64_t seed,
              std::function<void(const std::string&)> say);
  void AddTo(sim::SimHost* host);
  AdaptivePlayer& player() { return player_; }

 private:
  bool Plan(const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err);
  bool Model(const PlanWindow& w, std::string* err);  // the window's predictor, into model_

  // The last window's model, kept for the searches at other budgets.
  struct WindowModel {
    int first = -1, iterations = 0;
    Trace trace;
    Graph g;
    Packing packing;
    PackProfile pp;
    PackTables tables;
    Predictor predictor;
  };
  std::unique_ptr<WindowModel> model_;

  sim::Engine* engine_;
  const sim::Program& program_;
  DeviceProfile profile_;
  SearchOptions so_;
  double pack_ms_;
  uint64_t seed_;
  uint64_t models_ = 0;  // windows modelled so far (each profiles on a seed of its own)
  ClockSampler clocks_;
  AdaptivePlayer player_;
};

}  // namespace emo
