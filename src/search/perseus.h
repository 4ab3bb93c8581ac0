// perseus.h — the Perseus baseline's planner (Chung et al., SOSP'24), as upstream implements it:
// zeus examples/pipeline_frequency_optimizer/run_optimization.py and lowtime's Phillips–Dessouky
// solver (reference/BASELINES.md §3). From per-(stage, forward|backward) time and energy at each
// profiled SM clock it builds Pareto-optimal options and an exponential cost model per computation
// type, lays out the synchronous 1F1B pipeline as a DAG of forward and backward computations, and
// walks the time–cost trade-off from the slowest schedule down one time unit per iteration, each
// iteration shortening a minimum cut of the critical DAG. Every iteration gives a plan: one SM
// clock per computation.
//
// Units: times in seconds, quantised times in unit_time_s, energy and cost in joules.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace emo::perseus {

struct PerseusOptions {
  double p2p_power_w = 70;     // power drawn while blocked in a p2p receive (upstream profile_p2p.py)
  double unit_time_s = 1e-3;   // time quantum
  double noise_factor = 0.95;  // Pareto filter's factor on its rerun
};

// One profiled computation type at one clock: mean time and energy of one forward (backward) of
// one microbatch on one stage.
struct ProfileRow {
  int stage = 0;
  bool backward = false;
  int mhz = 0;
  double time_s = 0, energy_j = 0;
};

// An execution option: a clock, its quantised time q = floor(time / unit) and its cost
// energy − p2p_power · q · unit.
struct Option {
  int mhz = 0;
  double real_s = 0;
  int64_t q = 0;
  double cost = 0;
};

// cost(q) = a·e^{b·q} + c; ok false when no start converged to an accepted fit.
struct CostFit {
  double a = 0, b = 0, c = 0;
  double mse = std::numeric_limits<double>::infinity();
  bool ok = false;
  double operator()(double q) const;
};

// A computation type's candidate options (q descending) and its cost model.
struct OpSpec {
  std::vector<Option> options;
  CostFit fit;
  int64_t min_q() const { return options.back().q; }
  int64_t max_q() const { return options.front().q; }
  // The slowest option with q <= d, or the fastest when none is.
  int MhzFor(int64_t d) const;
  double Cost(int64_t d) const { return fit(static_cast<double>(d)); }
};

// Options from one type's profile rows: quantise, Pareto-filter (drop an option when another has
// time < nf·t and cost < nf·c; nf = 1, rerun on all rows with noise_factor when 3 or fewer
// survive), keep the costliest option per q, sort by q descending.
std::vector<Option> CandidateOptions(const std::vector<ProfileRow>& rows, const PerseusOptions& opt);

// Least-squares fit of a·e^{b·q} + c from every upstream start (a, c ∈ {10, 100, 1000},
// b ∈ {−0.01 … −0.05, −0.1} · unit_time/1 ms), Levenberg–Marquardt from each; fits with a < 0 or a
// singular covariance (also: no more points than parameters) are dropped; the least MSE is kept.
CostFit FitExponential(const std::vector<double>& q, const std::vector<double>& cost, double unit_time_s);

// Candidate options plus the fit; false with *err when fewer than one option or no fit.
bool BuildOpSpec(const std::vector<ProfileRow>& rows, const PerseusOptions& opt, OpSpec* out, std::string* err);

// An activity-on-node DAG. Node `source` and `sink` are zero-length dummies (spec −1).
struct Dag {
  std::vector<int> spec;  // per node: index into the specs, −1 for a dummy
  std::vector<int> stage, micro;
  std::vector<bool> backward;
  std::vector<int> from, to;  // edges
  int source = 0, sink = 0;
  int nodes() const { return static_cast<int>(spec.size()); }
};

// The synchronous 1F1B schedule of `stages` stages and `microbatches` microbatches: stage s runs
// min(M, N−s) forwards, alternates backward and forward, then drains backwards. Edges: consecutive
// computations of a stage, F(s,j)→F(s+1,j), B(s+1,j)→B(s,j), source→F(0,0), B(0,M−1)→sink.
// Node 0 is the source, then each stage's computations in order, the sink last. Spec index:
// 2·stage + (backward ? 1 : 0).
Dag OneFOneBDag(int stages, int microbatches);

// Each node's instruction order within its stage (the 1F1B order above), per stage: node ids.
std::vector<std::vector<int>> StageOrder(const Dag& dag);

// One plan of the trade-off curve.
struct PlanPoint {
  int64_t quant_time = 0;         // critical path, units
  double real_time_s = 0;         // quant_time · unit
  double cost = 0;                // Σ model cost
  double energy_j = 0;            // cost + stages · real_time · p2p_power
  std::vector<int64_t> duration;  // per node (0 for dummies)
  std::vector<int> mhz;           // per node (0 for dummies)
};

// The critical path length (units) with these per-node durations.
int64_t CriticalPath(const Dag& dag, const std::vector<int64_t>& duration);

// One Phillips–Dessouky iteration at `duration` (per node, dummies 0): the critical DAG in
// activity-on-arc form, flow bounds from the cost model, a minimum cut through a feasible flow
// under the lower bounds, arcs across the cut forward one unit shorter, backward one unit longer.
// False (duration unchanged) when the algorithm stops: no feasible flow, a cut arc that cannot
// move, no forward arc, or a net cost change below 1e-6. *cost_change: the change applied.
bool PdIteration(const Dag& dag, const std::vector<OpSpec>& specs, std::vector<int64_t>* duration, double* cost_change);

// The whole curve from every op at its slowest option: one point per iteration (the starting
// point not included, as upstream). *t_min: the critical path with every op at its fastest.
// False with *err when the DAG is not a DAG with one source and one sink.
bool SolveTradeoff(const Dag& dag, const std::vector<OpSpec>& specs, const PerseusOptions& opt,
                   std::vector<PlanPoint>* points, int64_t* t_min, std::string* err);

// The benchmark convention (not upstream): T_ref = T_min · unit; at budget s the lowest-cost point
// with real_time <= (1+s)·T_ref; at s = 0 the first point with quant_time == T_min. Falls back to
// the fastest point. −1 when there are none.
int PickPlan(const std::vector<PlanPoint>& points, int64_t t_min, double unit_time_s, double budget);

}  // namespace emo::perseus
