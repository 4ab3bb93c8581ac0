// mip_reference.h — the search's problem (DESIGN.md §5) restated as a mixed-integer program over
// the Predictor's own model and solved exactly by GLPK: the optimum the search is measured against
// on small instances (its optimality gap). Built only where GLPK (libglpk-dev) is found.
//
// Decided: per policy group and change point j (t_j = j · grid_ms, as in Search), one clock X_gj
// (a binary per clock, every profiled clock, not only the search's candidates). What follows
// restates Predictor::Run for the schedule Search would make of those clocks (no jitter):
// - point j lands at b_j = max(t_j, latency) after the iteration start I_k (the marker node's start
//   less its offset; a pack whose first kernel precedes the marker in the pass sees a fixed offset
//   from its observed start instead, as the pass does);
// - a pack runs at the clock of the interval [b_j, b_j+1) holding its first kernel's start − I_k,
//   before b_0 at the default in the first iteration and at the last point's clock in later ones:
//   a binary Z per pack and interval, the start split over the intervals (their convex hull, so no
//   big-M blurs the boundaries), and the pack's clock U_pc = Σ_j Z_pj X_gjc (V_pjc ≤ X_gjc,
//   Σ_c V_pjc = Z_pj);
// - a node starts at max(anchor, each predecessor's finish + latency): at least each term, and at
//   most the one a binary picks, so that no node can wait to move a pack into a cheaper interval;
//   a kernel of pack p lasts d_v · Σ_c U_pc T_p(c) / T_p(c0);
// - end ≥ every finish, end ≤ (1 + budget) · the default end (the search's limit);
// - energy, per GPU: Σ_p Σ_c U_pc [P_idle(c) T_p(c) + k (E_p(c) − P_idle(c) T_p(c))]
//   + P̄ · max(0, end − U Σ_p T_p(c_p) / Σ_p T_p(c0)), where P̄ = Σ_j ω_j P_idle(X_gj) and ω_j is
//   the share of the period during which point j's clock is in force (the pass's time-weighted
//   idle power); per point, s = max(0, ·) splits over the clocks, each share at most M X_gjc, so
//   that all of it is priced at the point's clock.
// Exact when min_interval_ms ≤ grid_ms: the optimum is then the least predicted energy over every
// assignment of clocks to the points within the budget, the space Search picks from (its answer is
// such an assignment, evaluated by the same pass), so Search's energy / optimum − 1 is its
// optimality gap. Two relaxations make it a lower bound otherwise, never above the search:
// min_interval_ms > grid_ms, whose spacing of changes is dropped (the search's space is a subset),
// and a pack starting exactly on a landing (within the solver's tolerances, ~ns), which may take
// either neighbouring interval's clock. Jitter moves each landing by the direction of its change
// and is refused. `replayed` is the pass run on the optimum's schedule: equal to `energy_j` when
// no tie was used.
#pragma once

#include <string>

#include "model/predict.h"
#include "search/dp_search.h"

namespace emo {

struct MipResult {
  double energy_j = 0;         // the program's optimum
  bool exact = false;          // false: a lower bound (min_interval_ms > grid_ms)
  Schedule schedule;           // the optimum's landings, as Search writes them
  Predictor::Result replayed;  // Predictor::Run(schedule)
  int points = 0;              // change points (all groups)
  int binaries = 0, rows = 0;
  double seconds = 0;
};

// Solves the program for opt's budget, grid, latency, groups and minimum interval (candidates and
// the DP's own settings are ignored). False with *err when the options are unusable (as Search,
// and a jitter other than 0), when the predictor splits kernels at landings (not restated) or
// GLPK finds no proven optimum within time_limit_s (pseudocost branching, then GLPK's default
// branching in the time left where GLPK stops on an internal error).
bool SolveMip(Predictor& predictor, const SearchOptions& opt, double time_limit_s, MipResult* out, std::string* err);

}  // namespace emo
