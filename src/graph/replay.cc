// replay.cc — forward/backward passes over the execution graph (see replay.h).
#include "graph/replay.h"

#include <algorithm>

namespace emo {

double Replay(const Graph& g, std::span<const double> duration, std::span<double> finish,
              std::span<uint32_t> crit_pred) {
  const size_t n = g.nodes();
  const uint32_t* begin = g.pred_begin.data();
  const uint32_t* pred = g.pred.data();
  const float* lat = g.pred_latency.data();
  const double* anchor = g.anchor.data();
  double* c = finish.data();
  double end = kNoAnchor;
  if (crit_pred.empty()) {
    for (size_t v = 0; v < n; ++v) {
      double ready = anchor[v];
      for (uint32_t k = begin[v]; k < begin[v + 1]; ++k) ready = std::max(ready, c[pred[k]] + lat[k]);
      c[v] = ready + duration[v];
      end = std::max(end, c[v]);
    }
    return end;
  }
  for (size_t v = 0; v < n; ++v) {
    double ready = anchor[v];
    uint32_t best = kNoPred;
    for (uint32_t k = begin[v]; k < begin[v + 1]; ++k) {
      double r = c[pred[k]] + lat[k];
      if (r > ready) ready = r, best = pred[k];
    }
    c[v] = ready + duration[v];
    crit_pred[v] = best;
    end = std::max(end, c[v]);
  }
  return end;
}

void LatestFinish(const Graph& g, std::span<const double> duration, double end, std::span<double> latest) {
  const size_t n = g.nodes();
  std::fill(latest.begin(), latest.begin() + static_cast<std::ptrdiff_t>(n), end);
  for (size_t v = n; v-- > 0;) {
    double latest_start = latest[v] - duration[v];
    for (uint32_t k = g.pred_begin[v]; k < g.pred_begin[v + 1]; ++k) {
      double& l = latest[g.pred[k]];
      l = std::min(l, latest_start - g.pred_latency[k]);
    }
  }
}

std::vector<uint32_t> CriticalPath(std::span<const double> finish, std::span<const uint32_t> crit_pred) {
  std::vector<uint32_t> path;
  if (finish.empty()) return path;
  uint32_t v = static_cast<uint32_t>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  for (; v != kNoPred; v = crit_pred[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<uint32_t> CriticalPathTo(uint32_t last, std::span<const uint32_t> crit_pred) {
  std::vector<uint32_t> path;
  for (uint32_t v = last; v != kNoPred; v = crit_pred[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

uint32_t LastWorkNode(const Graph& g, std::span<const double> finish) {
  uint32_t last = kNoPred, any = kNoPred;
  for (uint32_t v = 0; v < finish.size(); ++v) {
    if (any == kNoPred || finish[v] > finish[any]) any = v;
    if (!g.background.empty() && g.background[v]) continue;
    if (last == kNoPred || finish[v] > finish[last]) last = v;
  }
  return last != kNoPred ? last : any;
}

ReplayResult ReplayMeasured(const Graph& g) {
  ReplayResult r;
  r.finish.resize(g.nodes());
  r.crit_pred.resize(g.nodes());
  r.latest.resize(g.nodes());
  r.end = Replay(g, g.duration, r.finish, r.crit_pred);
  r.work_last = LastWorkNode(g, r.finish);
  r.work_end = r.work_last == kNoPred ? r.end : r.finish[r.work_last];
  LatestFinish(g, g.duration, r.work_end, r.latest);
  return r;
}

WhatIf::WhatIf(const Graph& g, std::vector<double> energy)
    : g_(g), duration_(g.duration), energy_(std::move(energy)), finish_(g.nodes()) {
  energy_.resize(g.nodes(), 0.0);
  for (double e : energy_) base_energy_ += e;
}

WhatIf::Result WhatIf::Evaluate(std::span<const Change> changes) {
  double energy = base_energy_;
  for (const Change& ch : changes) {
    energy += ch.energy - energy_[ch.node];
    duration_[ch.node] = ch.duration;
  }
  double end = Replay(g_, duration_, finish_);
  for (const Change& ch : changes) duration_[ch.node] = g_.duration[ch.node];
  uint32_t last = g_.background.empty() ? kNoPred : LastWorkNode(g_, finish_);
  return {end, energy, last == kNoPred ? end : finish_[last]};
}

}  // namespace emo
