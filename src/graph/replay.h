// replay.h — the what-if engine (Algorithm 1 of the EMO paper) and the passes built on it.
//
// Forward pass: in node-id (topological) order,
//   C_v = t_v + max(anchor_v, max over preds k of C_k + latency_kv)
// and the predecessor attaining the max is v's critical predecessor. The end-to-end time is
// max_v C_v. Backward pass: the latest completion L_v that keeps the end time, whose difference
// to C_v is v's slack. Both are O(V+E) and allocate nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace emo {

inline constexpr uint32_t kNoPred = UINT32_MAX;  // critical predecessor of a node started by its anchor

// Forward pass with the given durations (size nodes()). Writes completion times into `finish`
// and, when `crit_pred` is non-empty, critical predecessors. Returns max completion time.
double Replay(const Graph& g, std::span<const double> duration, std::span<double> finish,
              std::span<uint32_t> crit_pred = {});

// Backward pass: latest completion times that keep the end time `end`.
void LatestFinish(const Graph& g, std::span<const double> duration, double end, std::span<double> latest);

// Nodes of the critical path, first to last: from the node that finishes last, follow critical
// predecessors.
std::vector<uint32_t> CriticalPath(std::span<const double> finish, std::span<const uint32_t> crit_pred);
// The same from a given last node.
std::vector<uint32_t> CriticalPathTo(uint32_t last, std::span<const uint32_t> crit_pred);

// The node whose work ends last: the latest-finishing node not on a background thread
// (Graph::background), or of all nodes when every node is background. kNoPred for an empty graph.
uint32_t LastWorkNode(const Graph& g, std::span<const double> finish);

// Both passes at the graph's measured durations: what analysis and packing read, computed once.
// The critical path, the latest completions and so the slack are taken against the end of the
// work (`work_end`), not the end of background threads that may run on after it.
struct ReplayResult {
  double end = 0;                   // ns, max completion time
  double work_end = 0;              // ns, completion of `work_last`
  uint32_t work_last = kNoPred;     // LastWorkNode
  std::vector<double> finish;       // per node: earliest completion (forward pass)
  std::vector<uint32_t> crit_pred;  // per node: critical predecessor, or kNoPred
  std::vector<double> latest;       // per node: latest completion that keeps `end` (backward pass)
};
ReplayResult ReplayMeasured(const Graph& g);

// Repeated what-if evaluation on one graph: given new durations and energies for a subset of
// nodes, the end-to-end time and the total energy. Steady state allocates nothing.
class WhatIf {
 public:
  struct Change {
    uint32_t node;
    double duration;  // ns
    double energy;    // J
  };
  struct Result {
    double end;       // ns, relative to the graph origin
    double energy;    // J, sum over nodes
    double work_end;  // ns, the end of the work (background threads left out; see LastWorkNode)
  };

  // `energy` gives each node's energy at the base durations (may be all zeros).
  WhatIf(const Graph& g, std::vector<double> energy);
  Result Evaluate(std::span<const Change> changes);
  std::span<const double> finish() const { return finish_; }

 private:
  const Graph& g_;
  std::vector<double> duration_;
  std::vector<double> energy_;
  std::vector<double> finish_;
  double base_energy_ = 0;
};

}  // namespace emo
