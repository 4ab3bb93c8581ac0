// model_pipeline.h — the steps of EMO's pipeline between a trace and the search, shared by the
// simulated device (sim_pipeline.h) and traces of real jobs (`emo optimize --trace`): the graph and
// its packs, the packs' metrics as `emo profile` writes them, and the prediction pass fitted to the
// measured power at default clocks.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "model/device_profile.h"
#include "model/pack_profile.h"
#include "model/predict.h"
#include "pack/packer.h"
#include "search/dp_search.h"
#include "trace/trace.h"

namespace emo {

// The device profile for a device: `given`, else the first JSON in $EMO_PROFILES, ./profiles or
// the source tree's profiles/ whose "device" is this device.
bool FindProfile(const std::string& given, const std::string& device, DeviceProfile* out, std::string* err);

// The clock of the second traced run (LowClockRun): the profiled clock nearest kLowClockShare of the
// default. Far enough below it that most packs' predicted change is well above their noise, and
// within the range that budgets of a few percent and the idle phases of pipelines reach.
inline constexpr double kLowClockShare = 0.7;
int LowClock(const DeviceProfile& profile);

// Builds the execution graph and packs it (Δmax pack_ms) after replaying the measured run.
bool GraphAndPacks(const Trace& trace, double pack_ms, Graph* g, BuildReport* report, Packing* packing,
                   std::string* err);

// What was measured beside the trace at default clocks.
struct DefaultRun {
  // Per GPU (graph rank): SM-clock samples (graph ns, MHz), ascending; none: every pack ran at the
  // profile's default clock.
  std::vector<std::vector<std::pair<double, double>>> clock_samples;
  std::vector<double> power_w;      // per GPU: average power over a long run
  double span_ns = 0;               // the traced run's length from the graph's origin; 0: its last node's end
  LowClockRun low;                  // the packs at a lower locked clock, when measured (PackTimeEnergy)
  std::vector<double> low_power_w;  // per GPU: average power over a long run locked at low.mhz; empty: none
};

// Per GPU, the power of the traced run's gaps at default clocks: the profile's idle power at each
// SM-clock sample taken while none of the GPU's packs ran, time-weighted (the driver lowers an idle
// GPU's clock after a while, which a lock would prevent); 0 for a GPU without such samples.
std::vector<double> DefaultIdlePower(const Packing& packing,
                                     const std::vector<std::vector<std::pair<double, double>>>& samples,
                                     const std::vector<int>& clocks_mhz, const std::vector<double>& idle_power_w);

// Per GPU, the time-weighted mean of its packs' clocks in the traced run where it is below the
// default (PredictorInput::held_mhz), else 0.
std::vector<double> HeldClocks(const Packing& packing, const std::vector<double>& pack_mhz, int gpus,
                               double default_mhz);

// The prediction pass over the traced run: every pack's time and energy at every clock from the
// pack model, anchored to its traced time at the clock it ran at, and one energy factor per GPU
// fitted to run.power_w over the traced span. `tables` receives the model's output for the
// profiled packs.
//
// With a run at a low clock (run.low): each pack's change with the clock is scaled to what that
// run's trace showed (PackTimeEnergy); and with its power (run.low_power_w), the static schedule
// at the low clock is predicted and, per GPU, its packs' dynamic energy (beyond the idle power)
// takes the factor m1 that makes it draw the measured power over its predicted span; at clock f
// the factor is 1 + (m1 − 1)(f0 − f)/(f0 − f1), f0 the default, held to [0.5, 2] (1 at f0, where
// the per-GPU factor above was fitted).
//
// Collectives follow the clock by the profile's collective_time_ratio (CollectiveRatio).
bool BuildPredictor(const Trace& trace, const Graph& g, const Packing& packing, const PackProfile& pp,
                    const DeviceProfile& profile, const DefaultRun& run, Predictor* predictor, PackTables* tables,
                    std::string* err);

// The profile's collective time ratios as the pass takes them (PredictorInput::comm_time_ratio):
// a lower clock never speeds a collective up, so the measured ratios are fitted by the closest
// curve (least squares) that never falls as the clock drops, pooling the measurement's noise
// rather than keeping its peaks, and held to at least 1 (1 above the default clock); empty where
// the profile has none.
std::vector<double> CollectiveRatio(const DeviceProfile& profile);

// The policy the search finds on a model at `budget` (so's other options; replica groups from g),
// with its budget and predicted default iteration time: a plan of EMO's online loop.
bool SearchPolicy(Predictor& predictor, const Graph& g, const DeviceProfile& profile, SearchOptions so, double budget,
                  FrequencyPolicy* out, std::string* err);

// A real job's measurements, as `emo optimize --trace` and `emo predict TRACE...` take them: its
// traces (`emo trace`: files or directories), its packs' metrics (`emo profile`), and per GPU its
// average power and the SM clock it ran at (`emo run --measure`) at default clocks.
struct TraceInputs {
  std::vector<std::string> traces;
  std::string packs;
  std::vector<double> power_w, clock_mhz;  // clock_mhz: empty, or one per GPU (0: never busy)
  std::string profile;                     // "": the one found for the trace's GPU (FindProfile)
  double pack_ms = 5;                      // the packing's Δmax, as the pack metrics were profiled
  // Optional: the same iterations traced with every GPU locked at low_mhz (LowClockRun); without
  // them low_mhz must not be a clock (> 0).
  std::vector<std::string> low_traces;
  int low_mhz = 0;
  std::vector<double> low_power_w;  // per GPU, its average power locked at low_mhz (emo run --measure); empty: unknown
  bool low_optional = false;        // low traces that do not match the traced run are left out (a note), not an error
};

// Everything from those inputs to the prediction pass.
struct TracePipeline {
  std::vector<std::string> files;
  Trace trace;
  Graph g;
  BuildReport report;
  Packing packing;
  PackProfile pp;
  DeviceProfile profile;
  Predictor predictor;
  PackTables tables;
  int low_mhz = 0;                 // the low clock the model took (0: none)
  std::vector<double> power_w;     // per GPU: its power at default clocks, given or from the counters
  std::vector<std::string> notes;  // what the user should know: a profile of another GPU, low traces left out
};
// Per rank, its GPU's mean power over the trace's span from the rank's counter tracks of the GPU
// its work ran on: the energy counter's rise between its samples, else the power readings' mean.
// *what says which (and over how long). False with *err naming the first rank with neither.
bool PowerFromCounters(const Trace& trace, std::vector<double>* power_w, std::string* what, std::string* err);

// Loads and checks the inputs and builds the predictor; false with *err saying what is missing
// or wrong (its options named as the commands spell them). Without power_w (clock_mhz, the low
// run's power), each GPU's comes from the traces' counter tracks (PowerFromCounters; the SM-clock
// samples), where they have them.
bool BuildTracePipeline(const TraceInputs& in, TracePipeline* out, std::string* err);

// The metrics file of `emo profile`: {"packs": [{"pack": P, "kernels": K, "metrics": {...}}], ...}.
nlohmann::ordered_json PackMetricsJson(const PackProfile& pp, const Packing& packing, const Graph& g,
                                       const StringTable& names);
// Reads it for this packing: the profiled packs must be its unique packs (the same trace, packed
// with the same Δmax). False with *err naming the first difference.
bool ReadPackMetrics(const std::string& path, const Packing& packing, PackProfile* out, std::string* err);
// Reads its packs by hash, for traces of other windows of the same program (PackProfileFromKnown).
bool ReadKnownPacks(const std::string& path, std::vector<KnownPack>* out, std::string* err);

}  // namespace emo
