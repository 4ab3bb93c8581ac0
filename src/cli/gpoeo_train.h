// gpoeo_train.h — `emo gpoeo train`: GPOEO's energy and time models (online/gpoeo_model.h) from a
// corpus run at a spread of SM clocks (and where the GPU lists several memory clocks, at a few of
// those at each lower memory clock: the memory models), checked on a disjoint held-out corpus
// (model MAPE, and in the simulator the gpoeo controller itself against the best static clock).
// The corpus: generated workload specs on a simulated GPU, or, on any device and the only one on a
// real GPU, generated periodic jobs of microbenchmark kernels (device/microbench.h's MixJob) run
// through BenchDevice.
#pragma once

#include <cstdint>
#include <string>

namespace emo {

struct GpoeoTrainOptions {
  std::string device = "sim:a100";  // sim:NAME or cuda:N
  std::string corpus;               // "workloads" (generated workload specs, the simulator only) or "mix"
                                    // (kernel-mix jobs, any device); "": workloads in the simulator, mix on a GPU
  std::string eval_corpus;          // the held-out corpus's kind; "": the same as corpus
  std::string features;             // "telemetry", "activity" (telemetry and NVML GPM activity) or "counters"
                                    // (telemetry and the metrics table per period); "": activity where the
                                    // device offers it
  std::string out;                  // MODEL_DIR
  int train_workloads = 48;         // generated workload specs in the training corpus
  int eval_workloads = 16;          // in the held-out corpus (generated from another seed, disjoint)
  int clocks = 28;                  // SM clocks per workload, spread over the range (the default included)
  int controller_eval = 8;          // held-out workloads the gpoeo controller is run on (0: none)
  std::string controller_options;   // its options, as after `gpoeo:` (e.g. "memory=1"); "": the defaults
  uint64_t seed = 1;
  std::string command;  // the command line, for meta.json
};

int RunGpoeoTrain(const GpoeoTrainOptions& opt);

}  // namespace emo
