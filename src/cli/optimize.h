// optimize.h — `emo optimize`: EMO's whole pipeline on a simulated device (trace at default
// clocks, graph, packing, pack profiling, model, search), the policy it finds, and with --measure
// that policy measured beside the default clocks and the best static clock on fresh seeds; the
// same from a real job's saved measurements (--trace), or from a command it runs (-- CMD).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emo {

struct OptimizeOptions {
  std::string workload;  // workload spec JSON
  // Or a real job's measurements: its traces (emo trace), its packs' metrics (emo profile) and each
  // GPU's average power at default clocks (emo run --measure); the device profile is then the one
  // `emo calibrate --device cuda:N` made (--profile, or found by the GPU's name).
  std::vector<std::string> traces;
  std::string packs;
  std::vector<double> power_w;
  std::vector<double> clock_mhz;  // per GPU, the SM clock it ran at (below the default under a power limit)
  // A second traced run with every GPU locked at low_mhz (LowClockRun): with --trace, its traces
  // (low_mhz > 0 then); simulated, run by EMO (PipelineOptions::low_mhz: -1 LowClock, 0 none).
  std::vector<std::string> low_traces;
  int low_mhz = -1;
  std::vector<double> low_power_w;     // with --low-trace: each GPU's average power at that clock
  bool low_optional = false;           // -- CMD's own: low traces that do not match are left out (TraceInputs)
  std::string save_trace, save_packs;  // the simulated path's trace and pack metrics, for --trace
  std::string device;                  // simulated device name; "": the workload's
  std::string profile;                 // device profile JSON; "": the shipped one for the device (profiles/)
  double budget = 0.05;                // slowdown budget, fraction of the default iteration time
  double grid_ms = 20;                 // change points
  double min_interval_ms = 20;
  double step_ms = 0;  // budget discretisation; 0: automatic
  double dvfs_latency_ms = 10;
  double dvfs_jitter_ms = 5;
  int max_clocks = 12;              // candidate clocks of the search
  int max_states = 8;               // states kept per change point
  bool local_search = false;        // SearchOptions::local_search
  bool pairs = false;               // SearchOptions::pairs
  bool no_backward = false;         // SearchOptions::backward off
  bool no_gpu_delays = false;       // SearchOptions::gpu_delays off
  bool gpu_delays_by_work = false;  // SearchOptions::gpu_delays_by_work
  bool above_held = false;          // SearchOptions::above_held
  int search_threads = 0;           // SearchOptions::threads (0: every core)
  double pack_ms = 5;               // packing's Δmax
  int trace_iterations = 4;         // iterations traced at default clocks
  uint64_t seed = 1;                // of the traced run; measurements use the next seeds
  bool measure = false;
  int seeds = 3;       // measurement seeds
  int iterations = 0;  // per measured run, the first a warm-up; 0: enough for an 8 s window
  bool check = true;   // check each searched policy in a measured run (see optimize.cc)
  std::string out;     // policy JSON to write
  std::string json;    // results JSON to write ("-": stdout)
  // Or a command to run on this machine's GPUs: measured at default clocks (emo run), traced (emo
  // trace; --trace-warmup M keeps --trace-iterations steps after M), its packs profiled (emo
  // profile), optimized as with --trace and, with --measure, run under the policy. The steps'
  // files go to OUT.d (emo-policy.json.d without -o).
  std::vector<std::string> command;
  int trace_warmup = -1;         // -1: trace the whole run
  std::string backend = "nvml";  // of the runs: "nvml" or "zeusd"
  std::string gpus;              // of the runs: indices or UUIDs, as emo run --gpus
};

int RunOptimize(const OptimizeOptions& opt);

}  // namespace emo
