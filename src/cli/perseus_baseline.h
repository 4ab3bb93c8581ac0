// perseus_baseline.h — the Perseus baseline on the simulator, end to end: profile every stage's
// forward and backward computation at a sweep of locked clocks (per-instruction windows of time and
// energy counter, as zeus's profiler takes them), plan with the Phillips–Dessouky trade-off
// (search/perseus.h), and play the plan per instruction (apply/instruction_clocks.h). Pipeline
// workloads only: the program must mark its computations as "forward" and "backward" ranges.
#pragma once

#include <string>
#include <vector>

#include "apply/instruction_clocks.h"
#include "search/perseus.h"
#include "sim/program.h"

namespace emo {

// The clocks Perseus profiles on `device`: every supported clock from the boost ceiling down to
// 855 MHz, in 15 MHz steps on the A100 (the range of the Perseus artifact's A100 and A40 profiles),
// highest first. False with *err for an unknown device.
inline constexpr int kPerseusMinMhz = 855;
bool PerseusClocks(const std::string& device, std::vector<int>* out, std::string* err);

struct PerseusProfile {
  std::vector<perseus::ProfileRow> rows;
  int stages = 0, microbatches = 0;
  std::vector<std::vector<std::string>> order;  // per GPU, the range names of one iteration in order
  std::vector<int> clocks;                      // profiled, highest first
  double cost_s = 0;                            // simulated time of the profiling runs
};

// Runs `program` (synchronised at each range's open and close, as ZeusMonitor's sync_execution) on
// every clock of `clocks` locked on all GPUs, `iterations` each, the first not measured. False with
// *err when the program marks no ranges or a run fails. kPerseusProfileIterations: enough counter
// steps (~250 at 2.5 s per iteration) for the per-range power fit to be steady on every stage; at
// 6 iterations the last stage of PP-8, whose forward and backward alternate in lockstep, gave
// forward energies off by half.
inline constexpr int kPerseusProfileIterations = 12;
bool ProfilePerseus(const sim::Program& program, const std::vector<int>& clocks, int iterations, uint64_t seed,
                    PerseusProfile* out, std::string* err);

struct PerseusPlan {
  std::vector<std::vector<InstructionClockPlayer::Step>> steps;  // per GPU
  int points = 0;                                                // on the trade-off curve
  int64_t t_min = 0;
  perseus::PlanPoint chosen;
};

// Options and fits per (stage, forward|backward), the 1F1B DAG, the trade-off curve, and the plan
// at `budget` by the benchmark convention (perseus::PickPlan). False with *err.
bool PlanPerseus(const PerseusProfile& prof, const perseus::PerseusOptions& opt, double budget, PerseusPlan* out,
                 std::string* err);

}  // namespace emo
