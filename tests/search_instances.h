// search_instances.h — small search problems for the search's tests and its optimality-gap report:
// a tiny hand-built instance, random two-GPU instances (fixed seeds), and exhaustive enumeration of
// every clock assignment to the change points (the exact optimum where it is affordable).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/predict.h"
#include "packed_graph.h"
#include "search/dp_search.h"

namespace emo {

// One GPU's packs at in->clocks_mhz (the default 1500 MHz): pack p at clock f takes
// T = t0 (1500 / f)^a[p] and draws P = 40 + 260 (f / 1500)^2 W; the measured energy is the
// default's.
inline void PowerLawTables(const Packing& packing, const std::vector<double>& a, PredictorInput* in) {
  double e0 = 0;
  for (size_t p = 0; p < a.size(); ++p)
    for (int f : in->clocks_mhz) {
      const double r = f / 1500.0, t = packing.busy_ns[p] * 1e-9 * std::pow(1 / r, a[p]);
      in->pack_time_s.push_back(t);
      in->pack_energy_j.push_back((40 + 260 * r * r) * t);
      if (f == 1500) e0 += (40 + 260 * r * r) * t;
    }
  in->measured_energy_j = {e0};
}

// Stream 1: kernels 1 (30 ms) then 2 (30 ms); stream 2: kernels 3 (20 ms) then 4 (15 ms), beside
// them. Pack p at clock f: T = t0 (1500 / f)^a_p, P = 40 + 260 (f / 1500)^2 W. Idle 40-50 W.
struct TinyInstance {
  PackedGraph pg = Packed({1e3, 30e6, 30e6, 20e6, 15e6}, {-1, 1, 1, 2, 2}, {{1, 2}, {3, 4}});
  Predictor pred;
  std::string err;  // Init's, when it failed
  TinyInstance() {
    PredictorInput in;
    in.graph = &pg.g;
    in.packing = &pg.p;
    in.clocks_mhz = {600, 900, 1200, 1500};
    in.default_clock = 3;
    PowerLawTables(pg.p, {0.9, 0.6, 0.9, 0.3}, &in);
    in.idle_power_w = {40, 42, 45, 50};
    if (!pred.Init(in, &err) && err.empty()) err = "Init failed";
  }
};

// The predictor's input for a two-GPU packed graph: clocks 600-1500 MHz (the default), idle
// 40-50 W; pack p at clock f takes T = t0 (1500 / f)^a[p] and draws P = idle(f) + w[p] (f / 1500)^2
// W; each GPU's measured energy is its packs' at the default clock times `measured_factor`.
inline PredictorInput TwoGpuInput(const PackedGraph& pg, const std::vector<double>& a, const std::vector<double>& w,
                                  double measured_factor, bool split) {
  PredictorInput in;
  in.graph = &pg.g;
  in.packing = &pg.p;
  in.clocks_mhz = {600, 900, 1200, 1500};
  in.default_clock = 3;
  in.idle_power_w = {40, 42, 45, 50};
  in.split_at_landings = split;
  in.measured_energy_j.assign(2, 0);
  for (size_t p = 0; p < pg.p.packs(); ++p)
    for (size_t c = 0; c < in.clocks_mhz.size(); ++c) {
      const double r = in.clocks_mhz[c] / 1500.0, t = pg.p.busy_ns[p] * 1e-9 * std::pow(1 / r, a[p]);
      in.pack_time_s.push_back(t);
      in.pack_energy_j.push_back((in.idle_power_w[c] + w[p] * r * r) * t);
      if (static_cast<int>(c) == in.default_clock)
        in.measured_energy_j[pg.p.rank[p]] += measured_factor * in.pack_energy_j.back();
    }
  return in;
}

// Two GPUs, `kernels` kernels (each a pack of 5-30 ms) on one stream per GPU, some waiting for a
// kernel of the other GPU (as at a collective). Pack p at clock f: T = t0 (1500 / f)^a_p with
// a_p in [0.1, 1], P = idle(f) + w_p (f / 1500)^2 W with w_p in [120, 320]; clocks 600-1500 MHz.
// `split`: the predictor switches a kernel's remaining work at a landing inside it
// (PredictorInput::split_at_landings).
struct RandomInstance {
  PackedGraph pg;
  Predictor pred;
  std::string err;
  RandomInstance(uint32_t seed, int kernels, bool split = false) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u01(0, 1);
    std::vector<double> dur{1e3};
    std::vector<int64_t> stream{-1};
    std::vector<int32_t> rank{0};
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    uint32_t last[2] = {0, 0};  // per GPU: its latest kernel (0: none)
    for (int i = 0; i < kernels; ++i) {
      const uint32_t v = static_cast<uint32_t>(dur.size());
      const int r = i < 2 ? i : u01(rng) < 0.5 ? 0 : 1;  // both GPUs busy
      dur.push_back((5 + 25 * u01(rng)) * 1e6);
      stream.push_back(1 + r);
      rank.push_back(r);
      if (last[r] != 0) edges.emplace_back(last[r], v);
      if (last[1 - r] != 0 && u01(rng) < 0.3) edges.emplace_back(last[1 - r], v);
      last[r] = v;
    }
    pg = Packed(dur, stream, edges, rank);
    std::vector<double> a, w;
    for (size_t p = 0; p < pg.p.packs(); ++p) {
      a.push_back(0.1 + 0.9 * u01(rng));
      w.push_back(120 + 200 * u01(rng));
    }
    // Measured: the packs at the default clock, plus 5 % (the factor on dynamic energy is then above 1).
    PredictorInput in = TwoGpuInput(pg, a, w, 1.05, split);
    if (!pred.Init(in, &err) && err.empty()) err = "Init failed";
  }
};

// Every assignment of clocks to the change points (every grid_ns from 0, per GPU), landing at
// max(point, latency) where the clock changes: the least predicted energy whose end is within the
// budget, its end in *end. Clocks ^ (points x GPUs) passes.
inline double Exhaustive(Predictor& pred, double grid_ns, double budget, double latency_ns, double* end) {
  std::vector<double> points;
  for (double t = 0; t < pred.period_ns(); t += grid_ns) points.push_back(t);
  const int nc = pred.clocks(), gpus = pred.gpus();
  size_t combos = 1;
  for (size_t i = 0; i < points.size() * gpus; ++i) combos *= nc;
  double best = 1e300;
  for (size_t k = 0; k < combos; ++k) {
    Schedule s(gpus);
    size_t x = k;
    for (int gpu = 0; gpu < gpus; ++gpu)
      for (double t : points) {
        const int c = static_cast<int>(x % nc);
        x /= nc;
        if (s[gpu].empty() || s[gpu].back().clock != c) s[gpu].push_back({std::max(t, latency_ns), c});
      }
    const Predictor::Result r = pred.Run(s);
    if (r.end_ns <= pred.base().end_ns * (1 + budget) && r.energy_j < best) {
      best = r.energy_j;
      *end = r.end_ns;
    }
  }
  return best;
}

// Search options under which the exact methods (enumeration, the MIP reference) and the DP solve
// the same problem: no jitter, changes allowed at every point.
inline SearchOptions ExactOptions(double budget, double grid_ms, double latency_ms) {
  SearchOptions o;
  o.budget = budget;
  o.grid_ms = grid_ms;
  o.min_interval_ms = 0;
  o.dvfs_latency_ms = latency_ms;
  o.dvfs_jitter_ms = 0;
  return o;
}

}  // namespace emo
