// run_adapt.h — the planner of EMO's online loop (apply/adaptive_player.h) on real GPUs, `emo run
// --adapt`: the job runs traced on demand (trace/trace_control.h), and each plan asks it for a few
// iterations at default clocks, packs their trace, gives the packs the metrics of an earlier
// `emo profile` of the same program (by hash: the job cannot be profiled again while it runs, so a
// pack that profile never saw takes the job's mix as a whole), fits the pack model to the power the
// loop measured over its window and searches, as `emo optimize --trace` does offline. Rank r of the
// job's traces runs on the job's GPU r.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "apply/adaptive_player.h"
#include "apply/clock_sampler.h"
#include "graph/graph.h"
#include "model/device_profile.h"
#include "model/pack_profile.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "trace/trace.h"

namespace emo {

struct RunPlannerOptions {
  std::string control_dir;  // where the job's processes are traced on demand
  std::string profile;      // the device profile; "": found for the trace's GPU
  double pack_ms = 5;       // the packing's Δmax, as the known packs were profiled
  int trace_iterations = 3;
  double trace_timeout_s = 120;
  double max_unknown_share = 0.5;  // of the window's kernel time in packs no profile saw: more, no plan
};

class RunPlanner {
 public:
  // `known`: the packs of `emo profile`'s file (ReadKnownPacks); `clocks` samples the job's GPUs
  // while busy. `so` is searched with every plan, its replica groups taken from each window's graph.
  RunPlanner(const RunPlannerOptions& o, std::vector<KnownPack> known, const SearchOptions& so,
             const ClockSampler* clocks);
  bool Plan(const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err);
  // Thread-safe: the job has ended, so a plan waiting for its trace gives up at once.
  void Cancel() { cancelled_ = true; }

 private:
  bool Model(const PlanWindow& w, std::string* err);

  // The last window's model, kept for the searches at other budgets.
  struct WindowModel {
    int first = -1;
    Trace trace;
    Graph g;
    Packing packing;
    PackProfile pp;
    PackTables tables;
    DeviceProfile profile;
    Predictor predictor;
  };
  std::unique_ptr<WindowModel> model_;

  RunPlannerOptions o_;
  std::vector<KnownPack> known_;
  SearchOptions so_;
  const ClockSampler* clocks_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace emo
