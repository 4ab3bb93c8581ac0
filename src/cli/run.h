// run.h — `emo run`: run a command on this machine's GPUs under an online method or a frequency
// policy (through NVML or the Zeus daemon), measure its time and energy from the GPUs' counters, and restore the
// clocks afterwards.
#pragma once

#include <string>
#include <vector>

namespace emo {

struct RunOptions {
  std::vector<std::string> command;  // program and arguments
  std::string controller;            // "" or an online method, e.g. "geepafs:p=0.9"
  std::string policy;                // frequency policy JSON, optional
  std::string measure_out;           // measurement JSON, optional
  std::string backend = "nvml";      // "nvml" or "zeusd"
  std::string gpus;  // --gpus: indices or UUIDs; "": $CUDA_VISIBLE_DEVICES, else all (apply/gpu_selection.h)
  // The performance guard of --policy (apply/performance_guard.h): on when a budget is known.
  double guard_budget_pct = -1;          // allowed slowdown, %; < 0: the policy's recorded budget
  std::string guard_reference = "auto";  // "policy", "measured", or "auto": policy when it records one
  bool guard = true;                     // false: --no-guard
  // --adapt PCT: EMO's online loop (cli/run_adapt.h) at a PCT % budget, from the packs of an earlier
  // `emo profile` of the same program (--packs) and a device profile (--profile, else found).
  double adapt_pct = -1;
  std::string packs, profile;
  // --lock-mhz F: every job GPU locked at F from before the job starts until it ends (a static
  // clock's run, e.g. for the model's run at a low clock: cli/model_pipeline.h); 0: none.
  int lock_mhz = 0;
};

// Returns the command's exit status (or 1 when EMO itself failed; 128+N when a signal N ended it).
int RunCommand(const RunOptions& opt);

}  // namespace emo
