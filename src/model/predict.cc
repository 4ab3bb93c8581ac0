// predict.cc — the prediction pass over the packed graph for a clock schedule.
#include "model/predict.h"

#include <algorithm>
#include <cmath>

#include "graph/replay.h"

namespace emo {

bool Predictor::Init(PredictorInput in, std::string* err) {
  if (!in.graph || !in.packing) {
    *err = "no graph or packing";
    return false;
  }
  const Graph& g = *in.graph;
  const Packing& pk = *in.packing;
  const size_t n = g.nodes(), np = pk.packs(), nc = in.clocks_mhz.size();
  if (nc == 0 || in.default_clock < 0 || static_cast<size_t>(in.default_clock) >= nc) {
    *err = "no clocks, or the default clock is not among them";
    return false;
  }
  if (in.pack_time_s.size() != np * nc || in.pack_energy_j.size() != np * nc || in.idle_power_w.size() != nc) {
    *err = "pack tables do not match " + std::to_string(np) + " packs x " + std::to_string(nc) + " clocks";
    return false;
  }
  for (size_t i = 0; i < np * nc; ++i)
    if (!(in.pack_time_s[i] > 0) || !(in.pack_energy_j[i] >= 0) || !std::isfinite(in.pack_energy_j[i])) {
      *err = "pack " + std::to_string(i / nc) + " has no positive time or finite energy at " +
             std::to_string(in.clocks_mhz[i % nc]) + " MHz";
      return false;
    }
  for (double w : in.idle_power_w)
    if (!(w > 0)) {
      *err = "idle power is not positive";
      return false;
    }
  gpus_ = 0;
  for (size_t v = 0; v < n; ++v) gpus_ = std::max(gpus_, g.rank[v] + 1);
  if (in.measured_energy_j.size() != static_cast<size_t>(gpus_)) {
    *err = "measured energy given for " + std::to_string(in.measured_energy_j.size()) + " GPUs, the graph has " +
           std::to_string(gpus_);
    return false;
  }
  in_ = std::move(in);
  if (in_.iteration_start_ns.empty()) in_.iteration_start_ns.push_back(0);  // one iteration: the whole run

  // Iterations: rank 0's markers, each tied to the first CPU node of rank 0 at or after it.
  const std::vector<double>& starts = in_.iteration_start_ns;
  std::vector<uint32_t> cpu0;
  for (size_t v = 0; v < n; ++v)
    if (g.rank[v] == 0 && IsCpu(g.kind[v])) cpu0.push_back(static_cast<uint32_t>(v));
  std::sort(cpu0.begin(), cpu0.end(),
            [&](uint32_t a, uint32_t b) { return g.observed_start[a] < g.observed_start[b]; });
  marker_node_.clear();
  marker_offset_ns_.clear();
  for (double s : starts) {
    auto it =
        std::lower_bound(cpu0.begin(), cpu0.end(), s, [&](uint32_t v, double t) { return g.observed_start[v] < t; });
    marker_node_.push_back(it == cpu0.end() ? kNoPred : *it);
    marker_offset_ns_.push_back(it == cpu0.end() ? 0 : g.observed_start[*it] - s);
  }
  node_iteration_.assign(n, -1);
  for (size_t v = 0; v < n; ++v) {
    const auto it = std::upper_bound(starts.begin(), starts.end(), g.observed_start[v]);
    node_iteration_[v] = static_cast<int32_t>(it - starts.begin()) - 1;
  }
  first_member_.resize(np);
  for (size_t p = 0; p < np; ++p) first_member_[p] = pk.members[pk.member_begin[p]];

  finish_.assign(n, 0);
  pack_clock_.assign(np, in_.default_clock);
  iter_start_.assign(starts.size(), 0);
  iter_known_.assign(starts.size(), 0);

  // Per GPU: the union of its packs' spans and their time at default clocks.
  pack_union_ns_.assign(gpus_, 0);
  pack_time0_s_.assign(gpus_, 0);
  std::vector<std::vector<std::pair<double, double>>> spans(gpus_);
  for (size_t p = 0; p < np; ++p) {
    spans[pk.rank[p]].emplace_back(pk.start_ns[p], pk.end_ns[p]);
    pack_time0_s_[pk.rank[p]] += in_.pack_time_s[p * nc + in_.default_clock];
  }
  for (int r = 0; r < gpus_; ++r) {
    std::sort(spans[r].begin(), spans[r].end());
    double reach = -1e300;
    for (const auto& [a, b] : spans[r]) {
      pack_union_ns_[r] += std::max(0.0, b - std::max(a, reach));
      reach = std::max(reach, b);
    }
  }
  // The default schedule with unscaled pack energies, then the factors that match the measurement.
  energy_scale_.assign(gpus_, 1);
  scale_clamped_.assign(gpus_, 0);
  base_ = Run({});
  period_ns_ =
      starts.size() >= 2 ? (starts.back() - starts.front()) / static_cast<double>(starts.size() - 1) : base_.end_ns;
  for (int r = 0; r < gpus_; ++r) {
    // With k = 1 the prediction is fixed + dynamic; the measurement fixes k.
    const double dynamic_j = dynamic_j_[r], fixed_j = base_.gpu_energy_j[r] - dynamic_j;
    double k = dynamic_j > 0 ? (in_.measured_energy_j[r] - fixed_j) / dynamic_j : 1;
    if (!(k >= kMinEnergyScale && k <= kMaxEnergyScale)) {
      k = std::clamp(std::isfinite(k) ? k : 1.0, kMinEnergyScale, kMaxEnergyScale);
      scale_clamped_[r] = 1;
    }
    energy_scale_[r] = k;
  }
  base_ = Run({});
  return true;
}

int Predictor::LowestUsefulClock() const {
  const int nc = clocks();
  int lowest = in_.default_clock;
  for (size_t p = 0; p < in_.packing->packs(); ++p) {
    const double* e = &in_.pack_energy_j[p * nc];
    lowest = std::min(lowest, static_cast<int>(std::min_element(e, e + nc) - e));
  }
  return lowest;
}

int Predictor::ClockAt(int gpu, int iteration, double start_ns, const Schedule& s) const {
  if (iteration < 0 || static_cast<size_t>(gpu) >= s.size() || s[gpu].empty()) return in_.default_clock;
  const std::vector<Landing>& l = s[gpu];
  const double x = start_ns - iter_start_[iteration];
  for (size_t i = l.size(); i-- > 0;)
    if (l[i].t_ns <= x) return l[i].clock;
  return iteration == 0 ? in_.default_clock : l.back().clock;
}

Predictor::Result Predictor::Run(const Schedule& s) {
  const Graph& g = *in_.graph;
  const Packing& pk = *in_.packing;
  const size_t n = g.nodes();
  const int nc = clocks(), c0 = in_.default_clock;
  std::fill(iter_known_.begin(), iter_known_.end(), 0);
  // Until its marker node is reached, an iteration's start is taken as observed, shifted by the
  // delay of the node asking (markers normally come first in topological order).
  for (size_t k = 0; k < iter_start_.size(); ++k) iter_start_[k] = in_.iteration_start_ns[k];
  size_t next_marker = 0;
  double end = 0;
  for (size_t v = 0; v < n; ++v) {
    double start = g.anchor[v];
    for (uint32_t e = g.pred_begin[v]; e < g.pred_begin[v + 1]; ++e)
      start = std::max(start, finish_[g.pred[e]] + g.pred_latency[e]);
    if (start == kNoAnchor) start = 0;
    double d = g.duration[v];
    const uint32_t p = pk.pack_of.empty() ? kNoPack : pk.pack_of[v];
    if (p != kNoPack) {
      if (first_member_[p] == v) {
        const int k = node_iteration_[v];
        if (k >= 0 && !iter_known_[k]) iter_start_[k] = in_.iteration_start_ns[k] + (start - g.observed_start[v]);
        pack_clock_[p] = ClockAt(g.rank[v], k, start, s);
      }
      const size_t row = static_cast<size_t>(p) * nc;
      d *= in_.pack_time_s[row + pack_clock_[p]] / in_.pack_time_s[row + c0];
    }
    finish_[v] = start + d;
    end = std::max(end, finish_[v]);
    // Markers are few: check the next ones against this node.
    for (size_t k = next_marker; k < marker_node_.size(); ++k)
      if (marker_node_[k] == v) {
        iter_start_[k] = start - marker_offset_ns_[k];
        iter_known_[k] = 1;
        if (k == next_marker) ++next_marker;
      }
    while (next_marker < marker_node_.size() && iter_known_[next_marker]) ++next_marker;
  }

  Result r;
  r.end_ns = end;
  r.gpu_energy_j.assign(gpus_, 0);
  std::vector<double> pack_t(gpus_, 0);
  // Each pack's energy: idle power over its time, plus the rest (its dynamic energy), which the
  // fitted factor scales.
  dynamic_j_.assign(gpus_, 0);
  for (size_t p = 0; p < pk.packs(); ++p) {
    const size_t i = p * nc + pack_clock_[p];
    const double idle_j = in_.idle_power_w[pack_clock_[p]] * in_.pack_time_s[i];
    r.gpu_energy_j[pk.rank[p]] += idle_j;
    dynamic_j_[pk.rank[p]] += in_.pack_energy_j[i] - idle_j;
    pack_t[pk.rank[p]] += in_.pack_time_s[i];
  }
  const double idle0 = in_.idle_power_w[c0];
  for (int gpu = 0; gpu < gpus_; ++gpu) {
    r.gpu_energy_j[gpu] += energy_scale_[gpu] * dynamic_j_[gpu];
    // The schedule's time-weighted idle power over one period, relative to the default clock's.
    double ratio = 1;
    if (static_cast<size_t>(gpu) < s.size() && !s[gpu].empty() && period_ns_ > 0) {
      const std::vector<Landing>& l = s[gpu];
      double acc = 0, t = 0;
      int c = l.back().clock;
      for (const Landing& x : l) {
        const double until = std::clamp(x.t_ns, 0.0, period_ns_);
        acc += (until - t) * in_.idle_power_w[c];
        t = std::max(t, until);
        c = x.clock;
      }
      acc += (period_ns_ - t) * in_.idle_power_w[c];
      ratio = acc / period_ns_ / idle0;
    }
    const double busy_ns = pack_time0_s_[gpu] > 0 ? pack_union_ns_[gpu] * pack_t[gpu] / pack_time0_s_[gpu] : 0;
    r.gpu_energy_j[gpu] += idle0 * ratio * std::max(0.0, end - busy_ns) * 1e-9;
    r.energy_j += r.gpu_energy_j[gpu];
  }
  return r;
}

}  // namespace emo
