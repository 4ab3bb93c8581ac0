// dp_search.h — the search of DESIGN.md §5 (the paper's Algorithm 2): a dynamic program over clock
// change points that finds the clock schedule with the least predicted energy whose predicted
// slowdown stays within a budget.
//
// Change points lie on a grid of the iteration (every grid_ms from its start), one per policy
// group at each grid time; GPUs of one group (replicas running the same program) share a schedule.
// Points are decided in time order. A state is a choice of clock at every point decided so far,
// with every later point at the default clock; its value is the prediction pass's (end, energy)
// for that schedule. Deciding point j extends each state by every candidate clock (a change only
// where the group's previous change is at least min_interval_ms earlier), evaluates the new
// schedule, and files it under its delay discretised by step_ms; per delay bucket the
// least-energy state survives, a state is dropped when a bucket of less delay has less energy
// (dominated), or when its delay exceeds budget × the default run's time, and at most max_states
// survive (spread evenly over the delay range, the extremes kept), with as many more kept by each
// GPU's delay (below). The answer is the surviving
// state of least energy after the last point. The program runs twice: with undecided points at the
// default clock, and at the best single clock within the budget (by prediction), where it then
// looks for the stretches to run faster or slower; the better answer is kept. Then it runs again
// with each undecided point at the best answer's clock there (dp_rounds times at most, while that
// saves energy), so that a point is judged with the later points where the answer put them: on
// the exact program's small instances (bench/search_gap.cc) that took the mean gap to the optimum
// from 0.81 to 0.47 % and the instances over 3 % from 3 of 32 to 1 (3.15 %); on the shipped
// workloads it finds 0-0.2 points more predicted saving, for one more DP (+50-100 % search time).
// Before that round, the DP runs once backward (SearchOptions::backward): the points decided from
// the last, the earlier ones at the best single clock (or the default). A state is then judged
// with the work before its points at one clock instead of the work after, so the two directions
// drop different states: where the forward DP loses a point that spends slack only a later point
// pays for, the backward one sees the later point first. On bench/search_gap.cc's 128 instances
// the mean gap to the optimum goes 0.55 → 0.36 % and the instances over 3 % 8 → 4, for one DP
// more (search_bench's TP-4 graph: 6 276 → 8 312 passes, the same answer).
// A state is filed under each GPU's delay (its latest finish) too (SearchOptions::gpu_delays):
// beside the front over the run's delay, up to max_states more survive among the states that no
// state beats in energy and in every delay (spread over the run's delay, then the GPUs' total).
// States that delay the run's end alike may have spent different amounts of a GPU's slack: a GPU
// off the critical path delays nothing until its slack is gone, so at a zero budget the front over
// the run's delay keeps one state, the one that spent the most slack at the first point, and the
// later points find none left (Search.StatesKeptByEachGpusDelaySpendASlackGpusTimeEvenly). On
// bench/search_gap.cc's 128 instances with kernels split at landings (emo optimize's pass) the
// mean gap goes 0.40 → 0.22 %, the worst 4.90 → 2.42 % and the instances over 3 % 3 → 0 (16
// states by the run's delay alone: 0.30 %, 2 over); unsplit 0.40 → 0.26 %, 5 → 3 over. Cost: up to
// twice the states, where GPUs' delays differ: on PP-4 at 0 % 141 690 → 236 892 passes (117 →
// 233 s on two threads) for 0.01 points of predicted saving; search_bench's TP-4, whose replicas
// move together, 8 356 → 8 466.
// With gpu_delays_by_work (off by default; emo optimize --gpu-delays-by-work) a GPU's delay is
// instead the most any of its work (kernels, collectives, copies) finishes later than at the
// default clocks. The latest finish misses slack spent before a wait: where a GPU waits for
// another before its last kernels, states that spent its slack before the wait and states that
// kept it end alike, and the cheaper (the one that spent it) is kept (bench/search_gap.cc's seed
// 47 at 0 %: 4.62 % above the optimum, at it by work). On search_gap's 256 instances with kernels
// split at landings it takes the mean gap 0.26 → 0.22 % and those over 3 % 2 → 1 (3.23 %), but it
// keeps more states: PP-4's search at 0 % in emo bench 302 → 524 s, measured savings unchanged
// within the seeds' spread (docs/search.md).
// A sweep over pairs of points, one clock up and the other down, can then repair what the DP's
// pruning lost where no single change can (SearchOptions::pairs; dp_search.cc: RefinePairs).
//
// Cost: a child's schedule differs from its parent's only from its point's landing on, so its pass
// starts from the parent's (Predictor::RunFrom) at the first pack whose clock changes and keeps
// every node before it. What that saves is the share of the traced run before the change: about
// half on a one-iteration trace, but 1/(2K) on K iterations (the schedule repeats in each, so a
// change at offset t affects iteration 0 from t on and every later iteration, shifted by the delay
// it adds), and the survivors' passes are computed once more to be kept (a child's would take a
// graph's worth of memory each). Measured against whole passes by the same build, one thread:
// on PP-4's 4 traced iterations 15 % fewer nodes computed and 3-9 % less time; on search_bench's
// TP-4 7.5 % fewer nodes and no less time (the copies and the survivors' passes take it back).
// A child whose run cannot end within the budget is dropped, so its pass stops at the first node
// whose finish plus the least time after it (every later node at its fastest clock) passes the
// budget's end (Predictor::RunFrom's end_limit_ns): a clock lowered on the critical path shows
// where it starts. On PP-4 at emo bench's 0 % (0.125 %), one thread, the two builds at once: 26.5
// → 18.0 G nodes computed and 360 → 223 s (the build before alone on the machine for its last
// 137 s), the same policy file to the byte; on TP-2 at 5 % 7 % fewer nodes and no less time.
// A point's children are predicted on `threads` threads, each with its own pass state, and filed in
// one fixed order, so the answer is the same for any number of threads (1.85x on search_bench with
// two threads when the machine's second core is free).
//
// Pipeline stages are not searched as separate problems: the stages of one pipeline wait for each
// other (send/recv), so a clock on one stage moves the others' work, and every GPU shares the one
// budget on the run's end; the merged graph's pass is what sees both. Replicas of a stage (data
// parallel pipelines) already share one policy group. Only pipelines with no edge between them
// could be split, and a job's pipelines meet at least at the gradient all-reduce.
//
// A GPU held below the default clock in the traced run (its power limit or a boost ceiling:
// PredictorInput::held_mhz) takes in the search only clocks at or below the clock it was held at
// (per group, the highest supported clock at or under its GPUs' least held clock), every stretch
// locked. The model takes each pack's clock at the default as the one it ran at, but under a
// schedule that leaves some stretches at the default, the lower ones elsewhere cut the power the
// limit sees, and the power controller lets the clock climb above it: on the simulated TP-8 job
// (power-capped at 400 W, 1320-1380 MHz) a policy at 1245 MHz for 270 ms and the default for the
// rest measured a point less slowdown and two points less saving than predicted, while 1245 MHz
// throughout was predicted within 0.1 point of slowdown and 0.6 of saving (docs/results.md).
// Locked below it, the clock is the one set, and the model's own regime. When no schedule so kept
// fits the budget or saves energy (a held stage on a pipeline's critical path at a zero budget),
// the search runs again with every clock. SearchOptions::above_held turns the rule off.
//
// A clock command takes dvfs_latency_ms ± dvfs_jitter_ms to land, so a point's clock takes effect
// at max(point time, latency): the command is issued at point time − latency, never before the
// iteration start. The prediction pass sees each landing at its worse end for time: a lower clock
// jitter early, a higher one jitter late; `predicted` is that pessimistic prediction and
// `schedule` holds the nominal landings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/frequency_policy.h"
#include "model/predict.h"

namespace emo {

struct SearchOptions {
  double budget = 0.05;         // allowed slowdown, fraction of the default run's time
  double grid_ms = 20;          // change points every grid_ms of the iteration
  double step_ms = 0;           // budget discretisation; 0: min(1 ms, the default iteration / 1000)
  double min_interval_ms = 20;  // ε: least time between two changes of one group
  double dvfs_latency_ms = 10;  // command to effect, nominal
  double dvfs_jitter_ms = 5;    // ± around it (DESIGN.md: 5-15 ms), plus any drift of the work's phase
  int max_states = 8;           // states kept per point (and as many more by GPU delays)
  int dp_rounds = 1;            // DPs more, undecided points at the best schedule so far, while they gain
  bool backward = true;         // one DP more, deciding the points from the last (see above)
  bool gpu_delays = true;       // states kept by each GPU's delay too (see above)
  // With gpu_delays, a GPU's delay is the most any of its work finishes late (see above).
  bool gpu_delays_by_work = false;
  std::vector<int> group;       // per GPU: its policy group; empty: every GPU its own
  std::vector<int> candidates;  // clock indices tried; empty: see max_candidates
  // Without candidates: the clocks from the predictor's LowestUsefulClock up, thinned evenly to
  // at most this many (the default clock always among them).
  int max_candidates = 12;
  // After the DP, one sweep of local search (dp_search.cc: Refine): closer to the model's optimum
  // (bench/search_gap.cc), but off by default, since on `emo bench` its schedules measured worse
  // (they spend the predicted slack to the last bit, and the model's error then shows).
  bool local_search = false;
  // Then pairs of points, one clock up and the other down (dp_search.cc: RefinePairs), within half
  // as many passes as the DP took. Off by default, like local_search: closer to the model's optimum
  // (bench/search_gap.cc), but on `emo bench` PP-4 at 5 % measured over its budget with it (docs/search.md).
  bool pairs = false;
  // Let groups held below the default clock in the traced run take clocks above the one they were
  // held at (see above); off by default.
  bool above_held = false;
  bool incremental = true;  // passes from the parent's first change on (Predictor::RunFrom), else whole
  int threads = 0;          // threads predicting candidate schedules; 0: the hardware's concurrency
};

struct SearchResult {
  Schedule schedule;  // landings per GPU
  Predictor::Result predicted;
  int best_static = -1;  // the single clock (index) of least predicted energy within the budget; -1: the default
  int points = 0;
  // Per policy group: the highest clock (index) its points were kept to, as held below the default
  // in the traced run; -1: none (not held, or no schedule so kept fitted the budget).
  std::vector<int> held_ceiling;
  int64_t evaluations = 0;     // prediction passes of candidate schedules (whole or from a change on)
  int64_t nodes_computed = 0;  // graph nodes those passes computed, plus the passes kept for the next point
  int threads = 1;             // threads the search ran on
  double seconds = 0;
};

// False with *err when the options are unusable (negative budget, grid not positive, a group
// vector of the wrong size).
bool Search(Predictor& predictor, const SearchOptions& opt, SearchResult* out, std::string* err);

// The policy file's commands for a schedule: each landing issued dvfs_latency_ms earlier, in MHz.
FrequencyPolicy PolicyFromSchedule(const Schedule& s, const std::vector<int>& clocks_mhz, double dvfs_latency_ms);

// The inverse, for predicting a policy file: each command lands dvfs_latency_ms later; every clock
// must be one of clocks_mhz and every GPU below `gpus`. False with *err naming the GPU and clock.
bool ScheduleFromPolicy(const FrequencyPolicy& p, const std::vector<int>& clocks_mhz, int gpus, double dvfs_latency_ms,
                        Schedule* out, std::string* err);

// Policy groups: GPUs that ran the same sequence of compute kernels (by name) share a group
// (tensor- and data-parallel replicas); the rest are groups of their own.
std::vector<int> ReplicaGroups(const Graph& g, int gpus);

}  // namespace emo
