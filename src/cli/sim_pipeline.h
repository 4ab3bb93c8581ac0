// sim_pipeline.h — EMO's pipeline up to the prediction pass, with the simulator as the device:
// trace a workload at default clocks (energy counters and clock samples read as on hardware),
// build the graph, pack, profile the unique packs through the range profiler, and fit the pack
// model. `emo optimize`, `emo validate` and `emo bench` start from it. Measurement helpers too.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apply/controller.h"
#include "apply/measurement.h"
#include "cli/model_pipeline.h"
#include "device/frequency_policy.h"
#include "device/gpu_control.h"
#include "graph/builder.h"
#include "graph/graph.h"
#include "model/device_profile.h"
#include "model/pack_model.h"
#include "model/pack_profile.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "sim/engine.h"
#include "sim/program.h"

namespace emo {

struct PipelineOptions {
  std::string profile;       // device profile JSON; "": the shipped one for the device (profiles/)
  double pack_ms = 5;        // packing's Δmax
  int trace_iterations = 4;  // iterations traced at default clocks (>= 3)
  uint64_t seed = 1;         // of the traced run (the profiling run uses another)
  // A second traced run with every GPU locked at this clock, and its power over a long run, tell
  // the model how much of each pack's time follows the clock and what the packs draw there
  // (LowClockRun, BuildPredictor); -1: LowClock(profile); 0: none.
  int low_mhz = -1;
};

// Everything the pipeline built; holds the graph the predictor points into, so it stays put.
struct Pipeline {
  sim::Program program;
  DeviceProfile profile;
  std::unique_ptr<sim::Engine> engine;  // the traced run; its trace()
  std::vector<double> default_power_w;  // per GPU, from a long run at default clocks
  std::vector<double> mean_clock_mhz;   // per GPU, the mean SM-clock sample of the traced run
  int low_mhz = 0;                      // the clock of the second traced run (PipelineOptions), 0: none
  Graph g;
  BuildReport report;
  Packing packing;
  PackProfile pp;
  PackTables tables;  // the model's output for the profiled packs
  Predictor predictor;

  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
};

// Loads the workload (device overridden unless empty) and runs the pipeline. False with *err.
bool BuildPipeline(const std::string& workload, const std::string& device, const PipelineOptions& opt, Pipeline* out,
                   std::string* err);

// Builds one more controller on a run's GPUs (e.g. Perseus's per-instruction clock player).
using ControllerFactory = std::function<std::unique_ptr<Controller>(GpuControl* gpus)>;

// One run in the simulator with an optional policy and/or online method ("" for none) and an
// optional extra controller, measured after `warmup` iterations.
bool MeasureRun(const sim::Program& program, uint64_t seed, int iterations, int warmup, const FrequencyPolicy* policy,
                const std::string& controller, Measurement* m, std::string* err,
                const ControllerFactory& extra = nullptr);

// Measured windows at least this long: the energy counter advances every ~100 ms, and each end of
// a window reads it up to a step late (typically ~0.5 % of the energy over 8 s).
inline constexpr double kMinMeasureWindowS = 8;
// Iterations for a measured run (one warm-up included) of a job with this iteration time.
int MeasureWindowIterations(double iteration_ms, int at_least);

// Every GPU locked to one clock from the iteration start.
FrequencyPolicy StaticPolicy(int gpus, int mhz);

// What a policy or an online method did, over seeds, each run paired with the default run of the
// same seed: per-iteration means, and the spread of slowdown and saving over the seeds.
struct Outcome {
  double iteration_ms = 0, energy_j = 0;
  Spread slowdown, saving;
};

// The default runs the outcomes are paired with: one per seed, `iterations` each (one warm-up).
// Here and in MeasureOutcome the seeds run at once, one per core; each gives what it gives alone.
struct Defaults {
  std::vector<uint64_t> seeds;
  std::vector<Measurement> runs;
  int iterations = 0;
  double iteration_ms() const;
  double energy_j() const;
};
bool MeasureDefaults(const sim::Program& program, const std::vector<uint64_t>& seeds, int iterations, Defaults* out,
                     std::string* err);

// Runs a policy and/or an online method ("" for none) on every seed of `d`, `warmup` iterations
// before the measured window of d.iterations - 1.
bool MeasureOutcome(const sim::Program& program, const Defaults& d, const FrequencyPolicy* policy,
                    const std::string& controller, int warmup, Outcome* out, std::string* err,
                    const ControllerFactory& extra = nullptr);

// The measured static sweep behind "the best static clock": every profiled clock from the top
// down, until two clocks in a row are 2 points slower than max_budget (lower clocks only get
// slower), each beside its prediction.
struct StaticPoint {
  int mhz = 0;
  Outcome measured;
  double predicted_slowdown = 0, predicted_saving = 0;
};
bool SweepStatic(Pipeline& pl, const Defaults& d, double max_budget, double dvfs_latency_ms,
                 std::vector<StaticPoint>* out, std::string* err);
// The point saving the most energy with a mean slowdown within the budget (give or take
// kCheckTolerance, the same allowance EMO's checks get); nullptr when none is.
const StaticPoint* BestStatic(const std::vector<StaticPoint>& points, double budget);
// The static frontier at a mean slowdown: the most energy that static clocks of the sweep save at
// that slowdown or less, one clock or a time share of two (iterations at one, the rest at the
// other: their slowdowns and savings mix linearly), the default clocks (0, 0) among them. What a
// method's saving is fairly compared with at its own slowdown. Empty below every point's slowdown.
std::optional<double> StaticFrontier(const std::vector<StaticPoint>& points, double slowdown);

// EMO's search followed by measured checks: the searched policy runs on two seeds of its own (on
// hardware: a few iterations of the job) beside the default clocks on the same seed. The model can
// be off: when the run is slower than the budget allows (beyond kCheckTolerance), search again with
// the budget scaled down by the overshoot and the latency taken wider; when it leaves more than a
// tenth of the budget unused, search again with the budget scaled up. At most kMaxSearches; the
// best checked policy within the budget is kept, or the default clocks when none is.
// The model's best single clock is then measured too, and other single clocks as the measurements
// point (at most kMaxStaticChecks runs); the best within the budget is kept.
// A budget of 0 is searched at kCheckTolerance / 2.
inline constexpr double kCheckTolerance = 0.0025;
inline constexpr int kMaxSearches = 4;
inline constexpr int kMaxStaticChecks = 4;
struct CheckedSearch {
  SearchResult result;  // of the kept policy; seconds, evaluations and nodes computed summed over the searches
  FrequencyPolicy policy;
  std::vector<std::string> lines;  // one per check, for the report
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  bool kept_default = false;
};
bool SearchChecked(Pipeline& pl, SearchOptions so, bool check, int iterations, uint64_t check_seed, CheckedSearch* out,
                   std::string* err);

}  // namespace emo
