// dp_search.cc — the dynamic program over clock change points.
#include "search/dp_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>

#include "util/parallel.h"

namespace emo {

namespace {

struct Point {
  double t_ns;  // grid time in the iteration
  int group;
};

using Candidates = std::vector<std::vector<int>>;  // per policy group: the clocks its points may take

struct State {
  std::vector<int> clock;  // per point, in time order (the undecided ones at the DP's base)
  Predictor::Result result;
  Schedule schedule;                                 // of clock, the undecided points at the base clock
  std::shared_ptr<const Predictor::PassState> pass;  // the pass for schedule, for the children's RunFrom
  std::vector<double> gpu_delay_ns;                  // with gpu_delays_by_work: per GPU, see GpuDelays
};

// Per GPU, its GPU work (kernels, collectives, copies) and when each piece finishes at the default
// clocks: with gpu_delays_by_work, a schedule's delay on a GPU is the most any of it finishes
// later (see dp_search.h).
struct GpuWork {
  std::vector<std::vector<uint32_t>> nodes;
  std::vector<std::vector<double>> base_finish_ns;
};

GpuWork GpuWorkOf(const Predictor& predictor) {
  const Graph& g = *predictor.input().graph;
  Predictor::PassState pass;
  predictor.Run(Schedule(), &pass);
  GpuWork w;
  w.nodes.resize(static_cast<size_t>(predictor.gpus()));
  w.base_finish_ns.resize(w.nodes.size());
  for (size_t v = 0; v < g.nodes(); ++v)
    if (IsGpu(g.kind[v]) && g.rank[v] >= 0) {
      w.nodes[g.rank[v]].push_back(static_cast<uint32_t>(v));
      w.base_finish_ns[g.rank[v]].push_back(pass.finish_ns[v]);
    }
  return w;
}

std::vector<double> GpuDelays(const GpuWork& work, const Predictor::PassState& pass) {
  std::vector<double> delay(work.nodes.size(), 0);
  for (size_t gpu = 0; gpu < work.nodes.size(); ++gpu)
    for (size_t i = 0; i < work.nodes[gpu].size(); ++i)
      delay[gpu] = std::max(delay[gpu], pass.finish_ns[work.nodes[gpu][i]] - work.base_finish_ns[gpu][i]);
  return delay;
}

// The schedule of a clock per point: per group, its points' clocks in time order, a landing where
// the clock changes (the first point always lands, so nothing carries over from the previous
// iteration unless the latency delays it).
Schedule ScheduleOf(const std::vector<Point>& points, const std::vector<int>& clock, const std::vector<int>& group,
                    int groups, int default_clock, double latency_ns, double jitter_ns) {
  std::vector<std::vector<Landing>> per_group(groups);
  for (size_t j = 0; j < points.size(); ++j) {
    const int c = clock[j];
    std::vector<Landing>& l = per_group[points[j].group];
    if (l.empty() || l.back().clock != c) l.push_back({std::max(points[j].t_ns, latency_ns), c});
  }
  // The latency varies: take a lower clock as landing early and a higher one late, the worse case
  // for time (the first landing follows the last one, carried over from the previous iteration).
  if (jitter_ns > 0)
    for (std::vector<Landing>& l : per_group)
      for (size_t i = 0; i < l.size(); ++i) {
        const int before = i > 0 ? l[i - 1].clock : l.back().clock;
        l[i].t_ns += l[i].clock < before ? -jitter_ns : l[i].clock > before ? jitter_ns : 0;
      }
  Schedule s(group.size());
  for (size_t gpu = 0; gpu < group.size(); ++gpu) {
    const std::vector<Landing>& l = per_group[group[gpu]];
    // A group left at the default everywhere needs no landings at all.
    const bool all_default =
        std::all_of(l.begin(), l.end(), [&](const Landing& x) { return x.clock == default_clock; });
    if (!all_default) s[gpu] = l;
  }
  return s;
}

// What the search's passes cost: prediction passes of candidate schedules, and nodes computed by
// every pass (RunFrom keeps the nodes before the first change).
struct Counters {
  int64_t evaluations = 0;
  int64_t nodes = 0;
};

// Which clocks point j's group may take at j, given the clocks of the points decided so far: a
// change of clock lands at least min_interval after the group's previous landing among them.
// Forward, the points before j are decided: a change at j lands at t_j, after their last landing.
// Backward, the points after j are: a change between j and the group's next point lands at that
// point's time, before their first landing. `keep` (the clock that changes nothing) is always
// allowed; the others when `change` is.
struct Allowed {
  int keep = -1;
  bool change = true;
};
Allowed AllowedAt(const std::vector<Point>& points, const std::vector<int>& clock, const std::vector<int>& base_clock,
                  size_t j, bool backward, double eps_ns) {
  const int g = points[j].group;
  if (!backward) {
    int prev = base_clock[j];
    double last_change = -1e300;
    for (size_t i = 0; i < j; ++i)
      if (points[i].group == g) {
        if (clock[i] != prev) last_change = points[i].t_ns;
        prev = clock[i];
      }
    return {prev, points[j].t_ns - last_change >= eps_ns};
  }
  size_t next = points.size();
  for (size_t i = j + 1; i < points.size() && next == points.size(); ++i)
    if (points[i].group == g) next = i;
  if (next == points.size()) return {};
  for (size_t i = next + 1, last = next; i < points.size(); ++i)
    if (points[i].group == g) {
      if (clock[i] != clock[last]) return {clock[next], points[i].t_ns - points[next].t_ns >= eps_ns};
      last = i;
    }
  return {clock[next], true};
}

// At most k of v, evenly spread over it, both ends kept (the last where k is 1).
std::vector<size_t> Thin(const std::vector<size_t>& v, size_t k) {
  if (v.size() <= k) return v;
  std::vector<size_t> out;
  for (size_t i = 0; i < k; ++i) out.push_back(v[k == 1 ? v.size() - 1 : i * (v.size() - 1) / (k - 1)]);
  return out;
}

// At most k of v (in order of delay), spread evenly over the delay range rather than over v: for
// each of k delays evenly spaced from the first's to the last's, the nearest not yet kept (both
// ends kept; the last where k is 1). In v's order.
std::vector<size_t> ThinOverDelay(const std::vector<size_t>& v, size_t k, const std::function<double(size_t)>& delay) {
  if (v.size() <= k || k <= 1) return Thin(v, k);
  const double first = delay(v.front()), last = delay(v.back());
  std::vector<char> kept(v.size(), 0);
  for (size_t t = 0; t < k; ++t) {
    const double target = first + (last - first) * static_cast<double>(t) / static_cast<double>(k - 1);
    size_t nearest = v.size();
    for (size_t q = 0; q < v.size(); ++q)
      if (!kept[q] && (nearest == v.size() || std::abs(delay(v[q]) - target) < std::abs(delay(v[nearest]) - target)))
        nearest = q;
    kept[nearest] = 1;
  }
  std::vector<size_t> out;
  for (size_t q = 0; q < v.size(); ++q)
    if (kept[q]) out.push_back(v[q]);
  return out;
}

// The dynamic program with every undecided point j at base[j]: the least-energy state found.
// Points are decided in time order, or with `backward` from the last: the two prune differently
// (see dp_search.h). Each point's children are predicted in parallel from their parents' passes,
// then filed in one order (parent, then candidate), so the answer does not depend on the threads.
// `work`: each GPU's work where its delay is taken from it (gpu_delays_by_work), else null.
State RunDp(const Predictor& predictor, const SearchOptions& opt, const std::vector<Point>& points,
            const std::vector<int>& group, int groups, const Candidates& cand, const std::vector<int>& base_clock,
            bool backward, const GpuWork* work, int threads, Counters* counters) {
  const Predictor::Result base = predictor.base();
  const double iteration_ns = predictor.period_ns();
  const double step_ns = opt.step_ms > 0 ? opt.step_ms * 1e6 : std::min(1e6, iteration_ns / 1000);
  const double limit_ns = opt.budget * base.end_ns;
  const double latency_ns = opt.dvfs_latency_ms * 1e6, jitter_ns = opt.dvfs_jitter_ms * 1e6;
  const double eps_ns = opt.min_interval_ms * 1e6;
  const int dc = predictor.default_clock();
  auto schedule_of = [&](const std::vector<int>& clock) {
    return ScheduleOf(points, clock, group, groups, dc, latency_ns, jitter_ns);
  };

  std::vector<State> states(1);
  {
    State& s = states[0];
    s.clock = base_clock;
    s.schedule = schedule_of(s.clock);
    auto pass = std::make_shared<Predictor::PassState>();
    s.result = predictor.Run(s.schedule, pass.get());
    if (std::any_of(base_clock.begin(), base_clock.end(), [&](int c) { return c != dc; }))
      ++counters->evaluations;  // (at the default, the predictor's base)
    counters->nodes += pass->nodes_computed;
    if (work) s.gpu_delay_ns = GpuDelays(*work, *pass);
    s.pass = std::move(pass);
  }
  std::vector<Predictor::PassState> scratch(static_cast<size_t>(std::max(1, threads)));
  for (size_t step = 0; step < points.size(); ++step) {
    const size_t j = backward ? points.size() - 1 - step : step;
    // The extensions of every state by every candidate clock allowed here.
    struct Child {
      size_t parent;
      int clock;
      Schedule schedule;
      Predictor::Result result;
      std::vector<double> gpu_delay_ns;
      int64_t nodes = 0;
    };
    std::vector<Child> children;
    for (size_t si = 0; si < states.size(); ++si) {
      const Allowed a = AllowedAt(points, states[si].clock, base_clock, j, backward, eps_ns);
      for (int c : cand[points[j].group])
        if (c == a.keep || a.change) children.push_back({si, c, {}, {}, {}, 0});
    }
    ParallelFor(threads, children.size(), [&](size_t i, int worker) {
      Child& ch = children[i];
      const State& parent = states[ch.parent];
      if (ch.clock == base_clock[j]) {  // at the base clock, nothing changed
        ch.result = parent.result;
        ch.gpu_delay_ns = parent.gpu_delay_ns;
        return;
      }
      std::vector<int> clock = parent.clock;
      clock[j] = ch.clock;
      ch.schedule = schedule_of(clock);
      // A child over the budget is dropped below: its pass stops where that shows.
      ch.result = opt.incremental ? predictor.RunFrom(ch.schedule, parent.schedule, *parent.pass, &scratch[worker],
                                                      base.end_ns + limit_ns)
                                  : predictor.Run(ch.schedule, &scratch[worker]);
      ch.nodes = scratch[worker].nodes_computed;
      if (work && ch.result.end_ns - base.end_ns <= limit_ns) ch.gpu_delay_ns = GpuDelays(*work, scratch[worker]);
    });
    // Per key, the least-energy extension (the first of equals). The key is the run's delay, then
    // with gpu_delays each GPU's (its latest finish; with gpu_delays_by_work, see GpuDelays),
    // discretised by step_ns.
    auto bucket = [&](double delay) {
      return delay <= 0 ? int64_t{0} : static_cast<int64_t>(std::ceil(delay / step_ns - 1e-9));
    };
    std::map<std::vector<int64_t>, size_t> best;
    for (size_t i = 0; i < children.size(); ++i) {
      const Child& ch = children[i];
      if (ch.clock != base_clock[j]) ++counters->evaluations;
      counters->nodes += ch.nodes;
      const double delay = ch.result.end_ns - base.end_ns;
      if (delay > limit_ns) continue;
      std::vector<int64_t> key{bucket(delay)};
      if (work)
        for (double d : ch.gpu_delay_ns) key.push_back(bucket(d));
      else
        for (size_t gpu = 0; opt.gpu_delays && gpu < base.gpu_end_ns.size(); ++gpu)
          key.push_back(bucket(ch.result.gpu_end_ns[gpu] - base.gpu_end_ns[gpu]));
      auto it = best.find(key);
      if (it == best.end() || ch.result.energy_j < children[it->second].result.energy_j) best[key] = i;
    }
    auto energy = [&](size_t i) { return children[i].result.energy_j; };
    // The Pareto front over the run's delay: per delay, the least energy, where it is less than at
    // every smaller delay.
    std::map<int64_t, size_t> by_end;
    for (const auto& [key, i] : best) {
      auto it = by_end.find(key[0]);
      if (it == by_end.end() || energy(i) < energy(it->second)) by_end[key[0]] = i;
    }
    std::vector<size_t> front;
    for (const auto& [b, i] : by_end)
      if (front.empty() || energy(i) < energy(front.back())) front.push_back(i);
    // The states no other state beats in energy and in every delay, outside that front: one that
    // delays the end no less may have spent less of some GPU's slack, which a later point can use
    // (at a zero budget every state delays the end by nothing, and that front keeps one). Without
    // gpu_delays every key is the run's delay alone, and that front holds them all.
    std::vector<std::pair<const std::vector<int64_t>*, size_t>> by_energy, others;
    if (opt.gpu_delays)
      for (const auto& [key, i] : best) by_energy.emplace_back(&key, i);
    std::stable_sort(by_energy.begin(), by_energy.end(),
                     [&](const auto& a, const auto& b) { return energy(a.second) < energy(b.second); });
    std::vector<const std::vector<int64_t>*> undominated;
    for (const auto& [key, i] : by_energy) {
      const auto covers = [key = key](const std::vector<int64_t>* k) {
        for (size_t d = 0; d < k->size(); ++d)
          if ((*k)[d] > (*key)[d]) return false;
        return true;
      };
      if (std::any_of(undominated.begin(), undominated.end(), covers)) continue;
      undominated.push_back(key);
      if (std::find(front.begin(), front.end(), i) == front.end()) others.emplace_back(key, i);
    }
    auto total = [](const std::vector<int64_t>& k) { return std::accumulate(k.begin() + 1, k.end(), int64_t{0}); };
    std::stable_sort(others.begin(), others.end(), [&](const auto& a, const auto& b) {
      return std::make_pair((*a.first)[0], total(*a.first)) < std::make_pair((*b.first)[0], total(*b.first));
    });
    // Each thinned to max_states: the front evenly over the range of the run's delay (evenly over
    // its states, the DP lost the larger delays where states crowd at small ones: docs/search.md),
    // the others evenly over their order by the run's delay, then the GPUs' total.
    const size_t k = static_cast<size_t>(opt.max_states);
    front = ThinOverDelay(front, k, [&](size_t i) { return children[i].result.end_ns; });
    std::vector<size_t> other;
    for (const auto& [key, i] : others) other.push_back(i);
    for (size_t i : Thin(other, k)) front.push_back(i);
    if (front.empty())  // no state within the budget: the default clocks
      return State{std::vector<int>(points.size(), dc), base, {}, nullptr, {}};
    // The survivors, each with its pass for the next point's RunFrom (predicted again: keeping the
    // pass of every child until the front is known would take a graph's worth of memory each).
    std::vector<State> next(front.size());
    ParallelFor(threads, front.size(), [&](size_t i, int) {
      Child& ch = children[front[i]];
      const State& parent = states[ch.parent];
      State& n = next[i];
      n.clock = parent.clock;
      n.clock[j] = ch.clock;
      n.result = ch.result;
      n.gpu_delay_ns = std::move(ch.gpu_delay_ns);
      if (ch.clock == base_clock[j]) {
        n.schedule = parent.schedule;
        n.pass = parent.pass;
        return;
      }
      n.schedule = std::move(ch.schedule);
      if (!opt.incremental) return;
      auto pass = std::make_shared<Predictor::PassState>();
      predictor.RunFrom(n.schedule, parent.schedule, *parent.pass, pass.get());
      n.pass = std::move(pass);
    });
    for (const State& n : next)
      if (n.clock[j] != base_clock[j] && n.pass) counters->nodes += n.pass->nodes_computed;
    states = std::move(next);
  }
  return *std::min_element(states.begin(), states.end(),
                           [](const State& a, const State& b) { return a.result.energy_j < b.result.energy_j; });
}

// Whether each group's clock changes stay min_interval apart.
bool Spaced(const std::vector<Point>& points, const std::vector<int>& clock, int groups, double eps_ns) {
  for (int g = 0; g < groups; ++g) {
    int prev = -1;
    double last_change = -1e300;
    for (size_t j = 0; j < points.size(); ++j) {
      if (points[j].group != g) continue;
      if (prev >= 0 && clock[j] != prev) {
        if (points[j].t_ns - last_change < eps_ns) return false;
        last_change = points[j].t_ns;
      }
      prev = clock[j];
    }
  }
  return true;
}

// A local search from *best: for each step in turn, moves(step, clock, &tries) lists schedules
// (clock vectors) near the best one; those whose changes stay min_interval apart are predicted in
// parallel from the best schedule's pass, and the one of least energy within the budget is kept
// when it saves energy. Stops before it would pass max_evaluations predictions.
using Moves = std::function<void(size_t step, const std::vector<int>& clock, std::vector<std::vector<int>>* tries)>;
void Sweep(const Predictor& predictor, const SearchOptions& opt, const std::vector<Point>& points,
           const std::vector<int>& group, int groups, int threads, size_t steps, const Moves& moves,
           int64_t max_evaluations, State* best, Counters* counters) {
  const double limit_ns = predictor.base().end_ns * (1 + opt.budget);
  const double latency_ns = opt.dvfs_latency_ms * 1e6, jitter_ns = opt.dvfs_jitter_ms * 1e6;
  const double eps_ns = opt.min_interval_ms * 1e6;
  const int dc = predictor.default_clock();
  auto schedule_of = [&](const std::vector<int>& clock) {
    return ScheduleOf(points, clock, group, groups, dc, latency_ns, jitter_ns);
  };
  best->schedule = schedule_of(best->clock);
  Predictor::PassState pass;
  predictor.Run(best->schedule, &pass);
  counters->nodes += pass.nodes_computed;
  std::vector<Predictor::PassState> scratch(static_cast<size_t>(std::max(1, threads)));
  struct Try {
    std::vector<int> clock;
    Schedule schedule;
    Predictor::Result result;
    int64_t nodes = 0;
  };
  int64_t spent = 0;
  std::vector<std::vector<int>> clocks;
  for (size_t step = 0; step < steps; ++step) {
    clocks.clear();
    moves(step, best->clock, &clocks);
    std::vector<Try> tries;
    for (std::vector<int>& clock : clocks)
      if (clock != best->clock && Spaced(points, clock, groups, eps_ns)) tries.push_back({std::move(clock), {}, {}, 0});
    if (spent + static_cast<int64_t>(tries.size()) > max_evaluations) break;
    spent += static_cast<int64_t>(tries.size());
    ParallelFor(threads, tries.size(), [&](size_t k, int worker) {
      Try& t = tries[k];
      t.schedule = schedule_of(t.clock);
      t.result = opt.incremental ? predictor.RunFrom(t.schedule, best->schedule, pass, &scratch[worker], limit_ns)
                                 : predictor.Run(t.schedule, &scratch[worker]);
      t.nodes = scratch[worker].nodes_computed;
    });
    const Try* taken = nullptr;
    for (const Try& t : tries) {
      ++counters->evaluations;
      counters->nodes += t.nodes;
      const double least = taken ? taken->result.energy_j : best->result.energy_j * (1 - 1e-12);
      if (t.result.end_ns <= limit_ns && t.result.energy_j < least) taken = &t;
    }
    if (taken) {
      predictor.RunFrom(taken->schedule, best->schedule, pass, &pass);
      counters->nodes += pass.nodes_computed;
      best->clock = taken->clock;
      best->result = taken->result;
      best->schedule = taken->schedule;
    }
  }
}

// The DP keeps a few states per point, compared with the points after it still at one clock, so it
// can prune the state that would have been best. Single moves (SearchOptions::local_search) repair
// some of that: each point in turn at each other candidate clock. One sweep: on the MIP reference's
// instances (bench/search_gap.cc) more sweeps found nothing more, and on a 496-point pipeline a
// sweep costs a tenth of the DP's predictions.
void Refine(const Predictor& predictor, const SearchOptions& opt, const std::vector<Point>& points,
            const std::vector<int>& group, int groups, const Candidates& cand, int threads, State* best,
            Counters* counters) {
  const Moves moves = [&](size_t j, const std::vector<int>& clock, std::vector<std::vector<int>>* tries) {
    for (int c : cand[points[j].group]) {
      tries->push_back(clock);
      tries->back()[j] = c;
    }
  };
  Sweep(predictor, opt, points, group, groups, threads, points.size(), moves, INT64_MAX, best, counters);
}

// Pairs of points (SearchOptions::pairs): the DP can drop the state that would have been best,
// because it compares states with the later points still at one clock: a point that spends slack
// pays only with the change of a later point that frees it, and no single move repairs that. Each
// pair of points in turn, nearest in time first, takes the pairs of clocks that move one point up
// and the other down (two moves the same way are two single moves), each by at most kPairReach
// candidate clocks. A sweep over every pair costs O(points² × candidates²) passes, so it stops
// before it would pass kPairShare of the passes the DP took: on small instances it covers nearly
// every pair, on a large graph the nearest ones. bench/search_gap.cc, 128 instances: mean gap to
// the optimum 0.55 → 0.34 %, instances over 3 % 8 → 4 (every pair, every clock, twice the passes:
// 0.25 %, 2).
constexpr int kPairReach = 2;
constexpr double kPairShare = 0.5;

void RefinePairs(const Predictor& predictor, const SearchOptions& opt, const std::vector<Point>& points,
                 const std::vector<int>& group, int groups, const Candidates& cand, int threads, int64_t dp_evaluations,
                 State* best, Counters* counters) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t j = i + 1; j < points.size(); ++j) pairs.emplace_back(i, j);
  std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& a, const auto& b) {
    return points[a.second].t_ns - points[a.first].t_ns < points[b.second].t_ns - points[b.first].t_ns;
  });
  Candidates sorted = cand;
  for (std::vector<int>& c : sorted) std::sort(c.begin(), c.end());
  auto near = [&](size_t point, int c, int from) {
    const std::vector<int>& s = sorted[points[point].group];
    auto rank = [&](int x) { return std::lower_bound(s.begin(), s.end(), x) - s.begin(); };
    return std::abs(rank(c) - rank(from)) <= kPairReach;
  };
  const Moves moves = [&](size_t step, const std::vector<int>& clock, std::vector<std::vector<int>>* tries) {
    const auto [i, j] = pairs[step];
    for (int ci : cand[points[i].group])
      for (int cj : cand[points[j].group]) {
        if ((ci - clock[i]) * (cj - clock[j]) >= 0) continue;  // one up, the other down
        if (!near(i, ci, clock[i]) || !near(j, cj, clock[j])) continue;
        tries->push_back(clock);
        tries->back()[i] = ci;
        tries->back()[j] = cj;
      }
  };
  Sweep(predictor, opt, points, group, groups, threads, pairs.size(), moves,
        static_cast<int64_t>(kPairShare * static_cast<double>(dp_evaluations)), best, counters);
}

// Clocks lo..hi (indices), at most k of them (at least 2 where there are), evenly spread, both
// ends included.
std::vector<int> Spread(int lo, int hi, int k) {
  const int n = hi - lo + 1;
  k = std::max(2, std::min(n, k));
  std::vector<int> out;
  for (int i = 0; i < k; ++i) out.push_back(lo + (n == 1 ? 0 : i * (n - 1) / (k - 1)));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Per group, the candidates of a group whose GPUs the power limit or a boost ceiling held below
// the default clock in the traced run (PredictorInput::held_mhz): with the ceiling the highest
// clock at or under the least held clock of its GPUs, the candidates asked for below it and the
// ceiling, or without any asked for, max_candidates spread up to the ceiling (see dp_search.h).
Candidates HeldCandidates(const Predictor& predictor, const SearchOptions& opt, const std::vector<int>& group,
                          int groups, const std::vector<int>& cand) {
  const std::vector<double>& held = predictor.input().held_mhz;
  const std::vector<int>& mhz = predictor.clocks_mhz();
  std::vector<int> ceiling(static_cast<size_t>(groups), predictor.default_clock());
  for (size_t gpu = 0; gpu < group.size() && gpu < held.size(); ++gpu) {
    if (!(held[gpu] > 0)) continue;
    const int c = std::max(0, static_cast<int>(std::upper_bound(mhz.begin(), mhz.end(), held[gpu]) - mhz.begin()) - 1);
    ceiling[group[gpu]] = std::min(ceiling[group[gpu]], c);
  }
  Candidates out(static_cast<size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    if (ceiling[g] >= predictor.default_clock()) {
      out[g] = cand;
      continue;
    }
    if (opt.candidates.empty()) {
      out[g] = Spread(std::min(predictor.LowestUsefulClock(), ceiling[g]), ceiling[g], opt.max_candidates);
      continue;
    }
    for (int c : cand)
      if (c < ceiling[g]) out[g].push_back(c);
    out[g].push_back(ceiling[g]);
  }
  return out;
}

}  // namespace

bool Search(Predictor& predictor, const SearchOptions& opt, SearchResult* out, std::string* err) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!(opt.budget >= 0) || !(opt.grid_ms > 0) || !(opt.step_ms >= 0) || !(opt.min_interval_ms >= 0) ||
      !(opt.dvfs_latency_ms >= 0) || !(opt.dvfs_jitter_ms >= 0) || opt.max_states < 1 || opt.threads < 0) {
    *err = "search options out of range (budget and step must be >= 0, grid > 0, max_states >= 1, threads >= 0)";
    return false;
  }
  const int gpus = predictor.gpus();
  std::vector<int> group = opt.group;
  if (group.empty())
    for (int g = 0; g < gpus; ++g) group.push_back(g);
  if (group.size() != static_cast<size_t>(gpus)) {
    *err = "groups given for " + std::to_string(group.size()) + " GPUs, the graph has " + std::to_string(gpus);
    return false;
  }
  const int groups = group.empty() ? 0 : *std::max_element(group.begin(), group.end()) + 1;
  std::vector<int> cand = opt.candidates;
  if (cand.empty()) {
    cand = Spread(predictor.LowestUsefulClock(), predictor.clocks() - 1, opt.max_candidates);
    if (std::find(cand.begin(), cand.end(), predictor.default_clock()) == cand.end())
      cand.push_back(predictor.default_clock());
  }
  for (int c : cand)
    if (c < 0 || c >= predictor.clocks()) {
      *err = "candidate clock index " + std::to_string(c) + " out of range";
      return false;
    }

  const double iteration_ns = predictor.period_ns();
  std::vector<Point> points;
  for (double t = 0; t < iteration_ns; t += opt.grid_ms * 1e6)
    for (int g = 0; g < groups; ++g) points.push_back({t, g});
  const int threads = opt.threads > 0 ? opt.threads : HardwareThreads();
  Counters counters;
  // Undecided points at the default clock, and again at the best single clock within the budget
  // (the DP then looks for where to leave it); the better of the two.
  const double latency_ns = opt.dvfs_latency_ms * 1e6, jitter_ns = opt.dvfs_jitter_ms * 1e6;
  const int dc = predictor.default_clock();
  // Every clock: one pass each, cheap next to the DP.
  std::vector<Predictor::Result> uniform(predictor.clocks());
  std::vector<Predictor::PassState> scratch(static_cast<size_t>(threads));
  ParallelFor(threads, uniform.size(), [&](size_t c, int worker) {
    const int ci = static_cast<int>(c);
    uniform[c] =
        predictor.Run(ScheduleOf(points, std::vector<int>(points.size(), ci), group, groups, dc, latency_ns, jitter_ns),
                      &scratch[worker]);
  });
  scratch.clear();
  int best_static = dc;
  double best_static_j = predictor.base().energy_j;
  for (int c = 0; c < predictor.clocks(); ++c) {
    const Predictor::Result& r = uniform[c];
    ++counters.evaluations;
    counters.nodes += static_cast<int64_t>(predictor.input().graph->nodes());
    if (r.end_ns <= predictor.base().end_ns * (1 + opt.budget) && r.energy_j < best_static_j) {
      best_static = c;
      best_static_j = r.energy_j;
    }
  }
  const bool by_work = opt.gpu_delays && opt.gpu_delays_by_work;
  const GpuWork work = by_work ? GpuWorkOf(predictor) : GpuWork();
  const GpuWork* work_p = by_work ? &work : nullptr;
  auto search = [&](const Candidates& cands) {
    std::vector<std::vector<int>> bases = {std::vector<int>(points.size(), dc)};
    if (best_static != dc) bases.push_back(std::vector<int>(points.size(), best_static));
    State best;
    for (const std::vector<int>& base : bases) {
      State s = RunDp(predictor, opt, points, group, groups, cands, base, false, work_p, threads, &counters);
      if (best.clock.empty() || s.result.energy_j < best.result.energy_j) best = std::move(s);
    }
    // Backward from the last base (the best single clock, where there is one): see dp_search.h.
    if (opt.backward) {
      State s = RunDp(predictor, opt, points, group, groups, cands, bases.back(), true, work_p, threads, &counters);
      if (s.result.energy_j < best.result.energy_j) best = std::move(s);
    }
    // Again with the undecided points at the best schedule's clocks, while that saves energy: each
    // point is then judged with the later ones where the answer put them, not all at one clock. (A
    // base already run would give the same answer.)
    for (int round = 0; round < opt.dp_rounds; ++round) {
      if (std::find(bases.begin(), bases.end(), best.clock) != bases.end()) break;
      bases.push_back(best.clock);
      State again = RunDp(predictor, opt, points, group, groups, cands, best.clock, false, work_p, threads, &counters);
      if (!(again.result.energy_j < best.result.energy_j * (1 - 1e-9))) break;
      best = std::move(again);
    }
    if (opt.local_search) Refine(predictor, opt, points, group, groups, cands, threads, &best, &counters);
    if (opt.pairs)
      RefinePairs(predictor, opt, points, group, groups, cands, threads, counters.evaluations, &best, &counters);
    return best;
  };
  // Groups held below the default clock take clocks up to the one they were held at; where no
  // schedule so kept fits the budget (the DP's answer is then the default clocks) or saves
  // energy, every clock.
  const Candidates every(static_cast<size_t>(groups), cand);
  const Candidates held = opt.above_held ? every : HeldCandidates(predictor, opt, group, groups, cand);
  State best = search(held);
  out->held_ceiling.assign(static_cast<size_t>(groups), -1);
  if (held != every) {
    if (std::all_of(best.clock.begin(), best.clock.end(), [&](int c) { return c == dc; }) ||
        !(best.result.energy_j < predictor.base().energy_j)) {
      best = search(every);
    } else {
      for (int g = 0; g < groups; ++g)
        if (held[g] != every[g]) out->held_ceiling[g] = *std::max_element(held[g].begin(), held[g].end());
    }
  }
  out->evaluations = counters.evaluations;
  out->nodes_computed = counters.nodes;
  out->threads = threads;
  out->schedule = ScheduleOf(points, best.clock, group, groups, dc, latency_ns, 0);
  out->predicted = best.result;
  out->best_static = best_static == dc ? -1 : best_static;
  out->points = static_cast<int>(points.size());
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

FrequencyPolicy PolicyFromSchedule(const Schedule& s, const std::vector<int>& clocks_mhz, double dvfs_latency_ms) {
  FrequencyPolicy p;
  for (size_t gpu = 0; gpu < s.size(); ++gpu) {
    if (s[gpu].empty()) continue;
    FrequencyPolicy::Gpu g;
    g.gpu = static_cast<int>(gpu);
    for (const Landing& l : s[gpu])
      g.changes.push_back({std::max(0.0, l.t_ns / 1e6 - dvfs_latency_ms), clocks_mhz[l.clock]});
    p.gpus.push_back(std::move(g));
  }
  return p;
}

bool ScheduleFromPolicy(const FrequencyPolicy& p, const std::vector<int>& clocks_mhz, int gpus, double dvfs_latency_ms,
                        Schedule* out, std::string* err) {
  *out = Schedule(gpus);
  for (const FrequencyPolicy::Gpu& g : p.gpus) {
    if (g.gpu < 0 || g.gpu >= gpus) {
      *err = "the policy names GPU " + std::to_string(g.gpu) + ", the run has " + std::to_string(gpus);
      return false;
    }
    for (const ClockChange& c : g.changes) {
      const auto it = std::find(clocks_mhz.begin(), clocks_mhz.end(), c.mhz);
      if (it == clocks_mhz.end()) {
        *err = "GPU " + std::to_string(g.gpu) + ": " + std::to_string(c.mhz) + " MHz is not a profiled clock";
        return false;
      }
      (*out)[g.gpu].push_back({(c.t_ms + dvfs_latency_ms) * 1e6, static_cast<int>(it - clocks_mhz.begin())});
    }
  }
  return true;
}

std::vector<int> ReplicaGroups(const Graph& g, int gpus) {
  std::vector<std::vector<uint32_t>> seq(gpus);
  for (size_t v = 0; v < g.nodes(); ++v)
    if (g.kind[v] == NodeKind::kKernel && g.rank[v] >= 0 && g.rank[v] < gpus) seq[g.rank[v]].push_back(g.name[v]);
  std::vector<int> group(gpus, -1);
  int groups = 0;
  for (int a = 0; a < gpus; ++a) {
    if (group[a] >= 0) continue;
    group[a] = groups;
    for (int b = a + 1; b < gpus; ++b)
      if (group[b] < 0 && seq[b] == seq[a]) group[b] = groups;
    ++groups;
  }
  return group;
}

}  // namespace emo
