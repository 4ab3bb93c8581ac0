// predict.cc — the prediction pass over the packed graph for a clock schedule.
#include "model/predict.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  if (!in.comm_time_ratio.empty() && in.comm_time_ratio.size() != nc) {
    *err = "collective time ratios given for " + std::to_string(in.comm_time_ratio.size()) + " clocks, not " +
           std::to_string(nc);
    return false;
  }
  for (double r : in.comm_time_ratio)
    if (!(r > 0) || !std::isfinite(r)) {
      *err = "a collective time ratio is not positive and finite";
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
  run_start_ns_ = starts.empty() ? 0 : std::min(0.0, starts.front());
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
  time_by_clock_.resize(np * nc);
  energy_by_clock_.resize(np * nc);
  for (size_t p = 0; p < np; ++p)
    for (size_t c = 0; c < nc; ++c) {
      time_by_clock_[c * np + p] = in_.pack_time_s[p * nc + c];
      energy_by_clock_[c * np + p] = in_.pack_energy_j[p * nc + c];
    }
  // A kernel's share of its pack: by traced duration (evenly where the pack has none).
  kernel_share_.assign(n, 0);
  for (size_t p = 0; p < np; ++p) {
    const uint32_t begin = pk.member_begin[p], end = pk.member_begin[p + 1];
    double duration_ns = 0;
    for (uint32_t i = begin; i < end; ++i) duration_ns += g.duration[pk.members[i]];
    for (uint32_t i = begin; i < end; ++i) {
      const uint32_t v = pk.members[i];
      kernel_share_[v] = duration_ns > 0 ? g.duration[v] / duration_ns : 1 / static_cast<double>(end - begin);
    }
  }
  comm_nodes_.clear();
  comm_index_.clear();
  if (!in_.comm_time_ratio.empty()) {
    comm_index_.assign(n, -1);
    for (size_t v = 0; v < n; ++v)
      if (g.kind[v] == NodeKind::kComm && g.rank[v] >= 0) {
        comm_index_[v] = static_cast<int32_t>(comm_nodes_.size());
        comm_nodes_.push_back(static_cast<uint32_t>(v));
      }
  }
  is_marker_.assign(n, 0);
  for (uint32_t v : marker_node_)
    if (v != kNoPred) is_marker_[v] = 1;

  // Per GPU: the nodes no node of the same GPU waits for. Every other node of it has a successor
  // on it that finishes later, so the GPU's latest finish is one of theirs.
  std::vector<char> followed(n, 0), late_out(n, 0);
  for (size_t v = 0; v < n; ++v)
    for (uint32_t e = g.pred_begin[v]; e < g.pred_begin[v + 1]; ++e) {
      if (g.rank[g.pred[e]] == g.rank[v]) followed[g.pred[e]] = 1;
      if (!(g.pred_latency[e] >= 0)) late_out[g.pred[e]] = 1;
    }
  rank_sinks_.assign(gpus_, {});
  for (size_t v = 0; v < n; ++v)
    if (!followed[v] && g.rank[v] >= 0) rank_sinks_[g.rank[v]].push_back(static_cast<uint32_t>(v));

  // The nodes the pass computes and their predecessors. A CPU gap with one predecessor u, no anchor
  // and a successor on its GPU finishes a fixed time after u (its edge's latency plus its duration)
  // whatever the schedule: the pass folds it into its successors' edges and skips it (the gaps
  // between a thread's calls are a third of a training job's graph). A successor finishes no
  // earlier than it (edges out of it do not go back in time), so no latest finish changes.
  folded_.assign(n, 0);
  std::vector<uint32_t> root(n);
  std::vector<double> root_offset(n, 0);  // a folded node finishes at root's finish + this
  compute_.clear();
  cpred_begin_.assign(1, 0);
  cpred_.clear();
  cpred_latency_.clear();
  for (size_t v = 0; v < n; ++v) {
    const uint32_t b = g.pred_begin[v], e = g.pred_begin[v + 1];
    if (g.kind[v] == NodeKind::kCpuGap && g.anchor[v] == kNoAnchor && e - b == 1 && !is_marker_[v] && followed[v] &&
        !late_out[v] && g.duration[v] >= 0) {
      const uint32_t u = g.pred[b];
      folded_[v] = 1;
      root[v] = folded_[u] ? root[u] : u;
      root_offset[v] = (folded_[u] ? root_offset[u] : 0) + g.pred_latency[b] + g.duration[v];
      continue;
    }
    compute_.push_back(static_cast<uint32_t>(v));
    for (uint32_t k = b; k < e; ++k) {
      const uint32_t u = g.pred[k];
      cpred_.push_back(folded_[u] ? root[u] : u);
      cpred_latency_.push_back((folded_[u] ? root_offset[u] : 0) + g.pred_latency[k]);
    }
    cpred_begin_.push_back(static_cast<uint32_t>(cpred_.size()));
  }

  // The tails: backwards through the computed nodes (a node's successors come after it), each
  // node at the least duration the pass can give it: a pack's kernel at its pack's fastest clock
  // (split at landings, it is a mix of clocks, no faster), a collective at the fastest collective
  // clock, the rest as traced. Per pack, and for collectives, the least and greatest time ratio to
  // the default clock (1 among them).
  auto ratio_range = [&](const double* t) {
    std::pair<double, double> r{1, 1};
    for (size_t c = 0; c < nc; ++c) {
      r.first = std::min(r.first, t[c] / t[in_.default_clock]);
      r.second = std::max(r.second, t[c] / t[in_.default_clock]);
    }
    return r;
  };
  std::vector<std::pair<double, double>> pack_ratio(np);
  for (size_t p = 0; p < np; ++p) pack_ratio[p] = ratio_range(&in_.pack_time_s[p * nc]);
  const std::pair<double, double> comm_ratio =
      in_.comm_time_ratio.empty() ? std::pair{1.0, 1.0} : ratio_range(in_.comm_time_ratio.data());
  tail_ns_.assign(n, 0);
  for (size_t i = compute_.size(); i-- > 0;) {
    const uint32_t v = compute_[i];
    const uint32_t p = pk.pack_of.empty() ? kNoPack : pk.pack_of[v];
    const bool comm = !comm_index_.empty() && comm_index_[v] >= 0;
    const auto [lo, hi] = p != kNoPack ? pack_ratio[p] : comm ? comm_ratio : std::pair{1.0, 1.0};
    const double fastest = std::min(g.duration[v] * lo, g.duration[v] * hi);
    for (uint32_t e = cpred_begin_[i]; e < cpred_begin_[i + 1]; ++e)
      tail_ns_[cpred_[e]] = std::max(tail_ns_[cpred_[e]], cpred_latency_[e] + fastest + tail_ns_[v]);
  }

  // Packs in the order of their first members, which is the pass's (RunFrom looks for the first
  // pack whose clock changes).
  pack_order_.resize(np);
  for (size_t p = 0; p < np; ++p) pack_order_[p] = static_cast<uint32_t>(p);
  std::sort(pack_order_.begin(), pack_order_.end(),
            [&](uint32_t a, uint32_t b) { return first_member_[a] < first_member_[b]; });

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
    const double dynamic_j = state_.dynamic_j[r], fixed_j = base_.gpu_energy_j[r] - dynamic_j;
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

int Predictor::ClockAt(const Schedule& s, int gpu, int iteration, double offset_ns) const {
  return ClockFrom(s, false, gpu, iteration, offset_ns, nullptr);  // unsorted: no cursor
}

Predictor::Result Predictor::Run(const Schedule& s) { return Run(s, &state_); }

Predictor::Result Predictor::Run(const Schedule& s, PassState* st) const {
  st->finish_ns.resize(in_.graph->nodes());
  st->pack_clock.assign(in_.packing->packs(), in_.default_clock);
  st->pack_offset_ns.assign(in_.packing->packs(), 0);
  if (in_.split_at_landings)
    for (std::vector<double>* a : {&st->pack_end_ns, &st->pack_time_s, &st->pack_idle_j, &st->pack_dynamic_j})
      a->assign(in_.packing->packs(), 0);
  st->comm_offset_ns.assign(comm_nodes_.size(), 0);
  st->comm_clock.assign(comm_nodes_.size(), in_.default_clock);
  st->iteration_writes.clear();
  st->iter_start_ns = in_.iteration_start_ns;
  st->iter_known.assign(in_.iteration_start_ns.size(), 0);
  return Pass(s, 0, st, std::numeric_limits<double>::infinity());
}

size_t Predictor::FirstAffectedNode(const Schedule& s, const Schedule& from_s, const PassState& from) const {
  // Per GPU, the least offset at which the two schedules' clocks can differ, in iteration 0 and
  // after it: below every landing after the lists' common prefix, ClockAt finds the same landing
  // in both, or none; then iteration 0 runs at the default clock and later ones at the last
  // landing's clock, which may differ.
  const std::vector<Landing> none;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> first0(gpus_, inf), first1(gpus_, inf);
  bool any = false;
  for (int gpu = 0; gpu < gpus_; ++gpu) {
    const std::vector<Landing>& a = static_cast<size_t>(gpu) < s.size() ? s[gpu] : none;
    const std::vector<Landing>& b = static_cast<size_t>(gpu) < from_s.size() ? from_s[gpu] : none;
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i].t_ns == b[i].t_ns && a[i].clock == b[i].clock) ++i;
    if (i == a.size() && i == b.size()) continue;
    double x = inf;
    for (size_t j = i; j < a.size(); ++j) x = std::min(x, a[j].t_ns);
    for (size_t j = i; j < b.size(); ++j) x = std::min(x, b[j].t_ns);
    const int last_a = a.empty() ? in_.default_clock : a.back().clock;
    const int last_b = b.empty() ? in_.default_clock : b.back().clock;
    first0[gpu] = x;
    first1[gpu] = last_a != last_b ? -inf : x;
    any = true;
  }
  if (!any) return in_.graph->nodes();
  // The first communication node whose clock under s differs from the one it ran at (as for packs,
  // below: up to it every node's inputs are the same), then the first such pack before it.
  size_t first_comm = in_.graph->nodes();
  for (size_t i = 0; i < comm_nodes_.size(); ++i) {
    const uint32_t v = comm_nodes_[i];
    const int k = node_iteration_[v], gpu = in_.graph->rank[v];
    if (k < 0) continue;
    const double x = from.comm_offset_ns[i];
    if (x < (k == 0 ? first0[gpu] : first1[gpu])) continue;
    if (ClockAt(s, gpu, k, x) != from.comm_clock[i]) {
      first_comm = v;
      break;
    }
  }
  // The first pack (in pass order) whose clock under s differs from the one it ran at: before its
  // first member every node's inputs are the same, so its offset is what `from` recorded.
  for (uint32_t p : pack_order_) {
    const uint32_t v = first_member_[p];
    if (v >= first_comm) break;
    const int k = node_iteration_[v], gpu = in_.packing->rank[p];
    if (in_.split_at_landings) {
      // Its members saw the landings up to their latest finish (infinite where they span iterations).
      if (first0[gpu] == inf || (k < 0 && from.pack_end_ns[p] != inf)) continue;
      if (from.pack_end_ns[p] < (k == 0 ? first0[gpu] : first1[gpu])) continue;
      return v;
    }
    if (k < 0) continue;
    const double x = from.pack_offset_ns[p];
    if (x < (k == 0 ? first0[gpu] : first1[gpu])) continue;
    if (ClockAt(s, gpu, k, x) != from.pack_clock[p]) return v;
  }
  return first_comm;
}

Predictor::Result Predictor::RunFrom(const Schedule& s, const Schedule& from_s, const PassState& from, PassState* st,
                                     double end_limit_ns) const {
  const size_t v0 = FirstAffectedNode(s, from_s, from);
  if (st != &from) {
    st->finish_ns.resize(in_.graph->nodes());
    std::copy(from.finish_ns.begin(), from.finish_ns.begin() + static_cast<std::ptrdiff_t>(v0), st->finish_ns.begin());
    st->block_end_ns = from.block_end_ns;
    st->pack_clock = from.pack_clock;
    st->pack_offset_ns = from.pack_offset_ns;
    st->iteration_writes = from.iteration_writes;
    st->pack_end_ns = from.pack_end_ns;
    st->pack_time_s = from.pack_time_s;
    st->pack_idle_j = from.pack_idle_j;
    st->pack_dynamic_j = from.pack_dynamic_j;
    st->comm_offset_ns = from.comm_offset_ns;
    st->comm_clock = from.comm_clock;
  }
  // The iterations' starts as the pass had them on reaching v0.
  std::vector<PassState::IterationWrite>& w = st->iteration_writes;
  w.erase(std::find_if(w.begin(), w.end(), [&](const PassState::IterationWrite& x) { return x.node >= v0; }), w.end());
  st->iter_start_ns = in_.iteration_start_ns;
  st->iter_known.assign(in_.iteration_start_ns.size(), 0);
  for (const PassState::IterationWrite& x : w) {
    st->iter_start_ns[x.iteration] = x.start_ns;
    if (x.known) st->iter_known[x.iteration] = 1;
  }
  return Pass(s, v0, st, end_limit_ns);
}

size_t Predictor::LandingsUpTo(const std::vector<Landing>& l, bool sorted, int gpu, double offset_ns,
                               PassState* st) const {
  if (!sorted) {
    for (size_t j = l.size(); j-- > 0;)
      if (l[j].t_ns <= offset_ns) return j + 1;
    return 0;
  }
  // From where the GPU's last lookup left it: its nodes come mostly in time order.
  size_t i = std::min<size_t>(st->cursor[gpu], l.size());
  while (i < l.size() && l[i].t_ns <= offset_ns) ++i;
  while (i > 0 && l[i - 1].t_ns > offset_ns) --i;
  st->cursor[gpu] = static_cast<uint32_t>(i);
  return i;
}

int Predictor::ClockFrom(const Schedule& s, bool sorted, int gpu, int k, double offset_ns, PassState* st) const {
  if (k < 0 || static_cast<size_t>(gpu) >= s.size() || s[gpu].empty()) return in_.default_clock;
  const std::vector<Landing>& l = s[gpu];
  return ClockAfter(l, LandingsUpTo(l, sorted, gpu, offset_ns, st), k);
}

int Predictor::ClockAfter(const std::vector<Landing>& l, size_t i, int k) const {
  return i > 0 ? l[i - 1].clock : k == 0 ? in_.default_clock : l.back().clock;
}

double Predictor::SplitKernel(const Schedule& s, bool sorted, uint32_t v, uint32_t p, int gpu, int k, double offset_ns,
                              bool add, PassState* st) const {
  const int c0 = in_.default_clock;
  const double d0_ns = in_.graph->duration[v];  // at the default clock
  const size_t np = in_.packing->packs();
  auto time = [&](int c) { return time_by_clock_[c * np + p]; };
  auto energy = [&](int c) { return energy_by_clock_[c * np + p]; };
  // The clock at its start, as ClockAt finds it (the last landing at or before it), and the
  // landings after that one.
  int c = c0;
  size_t i = 0;
  const std::vector<Landing>* l = nullptr;
  if (k >= 0 && static_cast<size_t>(gpu) < s.size() && !s[gpu].empty()) {
    l = &s[gpu];
    i = LandingsUpTo(*l, sorted, gpu, offset_ns, st);
    c = ClockAfter(*l, i, k);
  }
  double t = offset_ns, work = 1, d = 0, t_s = 0, idle_j = 0, dynamic_j = 0;
  auto piece = [&](double f, int clock) {
    if (!add) return;
    const double idle = in_.idle_power_w[clock] * time(clock);
    t_s += f * time(clock);
    idle_j += f * idle;
    dynamic_j += f * (energy(clock) - idle);
  };
  for (;;) {
    const double whole = d0_ns * time(c) / time(c0);  // the kernel at c
    while (l && i < l->size() && (*l)[i].t_ns <= t) ++i;
    if (!l || i >= l->size() || (*l)[i].t_ns >= t + work * whole || whole <= 0) {
      piece(work, c);
      d += work * whole;
      break;
    }
    const double f = ((*l)[i].t_ns - t) / whole;
    piece(f, c);
    d += (*l)[i].t_ns - t;
    work -= f;
    t = (*l)[i].t_ns;
    c = (*l)[i].clock;
    ++i;
  }
  if (add) {  // the kernel's share of its pack
    const double share = kernel_share_[v];
    st->pack_time_s[p] += share * t_s;
    st->pack_idle_j[p] += share * idle_j;
    st->pack_dynamic_j[p] += share * dynamic_j;
  }
  return d;
}

Predictor::Result Predictor::Pass(const Schedule& s, size_t v0, PassState* st, double end_limit_ns) const {
  const Graph& g = *in_.graph;
  const Packing& pk = *in_.packing;
  const size_t n = g.nodes();
  const int c0 = in_.default_clock;
  const bool split = in_.split_at_landings;
  std::vector<char>& sorted = st->sorted;
  st->cursor.assign(static_cast<size_t>(gpus_), 0);
  sorted.assign(static_cast<size_t>(gpus_), 1);
  for (size_t gpu = 0; gpu < s.size() && gpu < sorted.size(); ++gpu)
    sorted[gpu] = std::is_sorted(s[gpu].begin(), s[gpu].end(),
                                 [](const Landing& a, const Landing& b) { return a.t_ns < b.t_ns; });
  // The hot loop reads flat arrays through plain pointers.
  const double* anchor = g.anchor.data();
  const double* tail = tail_ns_.data();
  // Beyond the rounding of the sums that give the end.
  const double stop_ns = end_limit_ns + 1e-9 * std::abs(end_limit_ns) + 1;
  const double* duration = g.duration.data();
  const uint32_t* compute = compute_.data();
  const uint32_t* pred_begin = cpred_begin_.data();
  const uint32_t* pred = cpred_.data();
  const double* pred_latency = cpred_latency_.data();
  const uint32_t* pack_of = pk.pack_of.empty() ? nullptr : pk.pack_of.data();
  const uint32_t* first_member = first_member_.data();
  const char* is_marker = is_marker_.data();
  const int32_t* comm_index = comm_index_.empty() ? nullptr : comm_index_.data();
  const double* pack_time = time_by_clock_.data();  // [clock * np + pack]
  const size_t np = pk.packs();
  double* finish = st->finish_ns.data();
  int* pack_clock = st->pack_clock.data();
  std::vector<double>& iter_start = st->iter_start_ns;
  std::vector<char>& iter_known = st->iter_known;
  // Until its marker node is reached, an iteration's start is taken as observed, shifted by the
  // delay of the node asking (markers normally come first in topological order).
  size_t next_marker = 0;  // the first iteration whose marker is not reached yet
  while (next_marker < marker_node_.size() && iter_known[next_marker]) ++next_marker;
  // The latest finish: of the blocks before v0's as the pass that computed them left it, then node
  // by node, each block's kept for the passes that start after it.
  constexpr size_t kEndBlock = 1024;
  std::vector<double>& block_end = st->block_end_ns;
  const size_t blocks = (n + kEndBlock - 1) / kEndBlock;
  block_end.resize(blocks);
  double end = 0, block = 0;
  size_t current = v0 / kEndBlock;  // the block `block` is of
  for (size_t b = 0; b < current; ++b) end = std::max(end, block_end[b]);
  for (size_t v = current * kEndBlock; v < v0; ++v)
    if (!folded_[v]) block = std::max(block, finish[v]);
  auto close_blocks = [&](size_t until) {  // the blocks before `until` are done
    for (; current < until; ++current) {
      block_end[current] = block;
      end = std::max(end, block);
      block = 0;
    }
  };
  const size_t i0 = static_cast<size_t>(std::lower_bound(compute_.begin(), compute_.end(), v0) - compute_.begin());
  for (size_t i = i0; i < compute_.size(); ++i) {
    const size_t v = compute[i];
    if (v / kEndBlock != current) close_blocks(v / kEndBlock);
    double start = anchor[v];
    for (uint32_t e = pred_begin[i]; e < pred_begin[i + 1]; ++e)
      start = std::max(start, finish[pred[e]] + pred_latency[e]);
    if (start == kNoAnchor) start = 0;
    double d = duration[v];
    const uint32_t p = pack_of ? pack_of[v] : kNoPack;
    if (p != kNoPack) {
      if (first_member[p] == v) {
        const int k = node_iteration_[v];
        if (k >= 0 && !iter_known[k]) {
          iter_start[k] = in_.iteration_start_ns[k] + (start - g.observed_start[v]);
          st->iteration_writes.push_back({static_cast<uint32_t>(v), k, iter_start[k], false});
        }
        const double offset = k >= 0 ? start - iter_start[k] : 0;
        st->pack_offset_ns[p] = offset;
        pack_clock[p] = ClockFrom(s, sorted[g.rank[v]], g.rank[v], k, offset, st);
        if (split) {
          st->pack_end_ns[p] = -std::numeric_limits<double>::infinity();
          st->pack_time_s[p] = st->pack_idle_j[p] = st->pack_dynamic_j[p] = 0;
        }
      }
      if (split) {
        // A pack begun before v0 keeps the sums `from` left: its members are the same.
        const int k = node_iteration_[v], k_pack = node_iteration_[first_member[p]];
        const double offset = k >= 0 ? start - iter_start[k] : 0;
        const int gpu = g.rank[v];
        d = SplitKernel(s, sorted[gpu], static_cast<uint32_t>(v), p, gpu, k, offset, first_member[p] >= v0, st);
        double& pack_end = st->pack_end_ns[p];
        pack_end = k != k_pack ? std::numeric_limits<double>::infinity() : std::max(pack_end, offset + d);
      } else {
        d *= pack_time[pack_clock[p] * np + p] / pack_time[c0 * np + p];
      }
    } else if (comm_index && comm_index[v] >= 0) {
      const int k = node_iteration_[v], j = comm_index[v];
      const double offset = k >= 0 ? start - iter_start[k] : 0;
      const int c = ClockFrom(s, sorted[g.rank[v]], g.rank[v], k, offset, st);
      st->comm_offset_ns[j] = offset;
      st->comm_clock[j] = c;
      d *= in_.comm_time_ratio[c] / in_.comm_time_ratio[c0];
    }
    finish[v] = start + d;
    if (finish[v] + tail[v] > stop_ns) {  // the run cannot end by end_limit_ns
      st->nodes_computed = static_cast<int64_t>(i + 1 - i0);
      const double inf = std::numeric_limits<double>::infinity();
      Result r;
      r.end_ns = r.energy_j = inf;
      r.gpu_end_ns.assign(gpus_, inf);
      r.gpu_energy_j.assign(gpus_, inf);
      return r;
    }
    block = std::max(block, finish[v]);
    if (is_marker[v]) {  // the iterations it marks (the next ones; markers are few)
      for (size_t k = next_marker; k < marker_node_.size(); ++k)
        if (marker_node_[k] == v) {
          iter_start[k] = start - marker_offset_ns_[k];
          iter_known[k] = 1;
          st->iteration_writes.push_back({static_cast<uint32_t>(v), static_cast<int32_t>(k), iter_start[k], true});
          if (k == next_marker) ++next_marker;
        }
      while (next_marker < marker_node_.size() && iter_known[next_marker]) ++next_marker;
    }
  }
  close_blocks(blocks);
  end = std::max(end, block);
  st->nodes_computed = static_cast<int64_t>(compute_.size() - i0);

  Result r;
  r.end_ns = end;
  r.gpu_end_ns.assign(gpus_, 0);
  for (int gpu = 0; gpu < gpus_; ++gpu)
    for (uint32_t v : rank_sinks_[gpu]) r.gpu_end_ns[gpu] = std::max(r.gpu_end_ns[gpu], finish[v]);
  r.gpu_energy_j.assign(gpus_, 0);
  std::vector<double> pack_t(gpus_, 0);
  // Each pack's energy: idle power over its time, plus the rest (its dynamic energy), which the
  // fitted factor scales.
  std::vector<double>& dynamic_j = st->dynamic_j;
  dynamic_j.assign(gpus_, 0);
  if (split) {
    for (size_t p = 0; p < pk.packs(); ++p) {
      r.gpu_energy_j[pk.rank[p]] += st->pack_idle_j[p];
      dynamic_j[pk.rank[p]] += st->pack_dynamic_j[p];
      pack_t[pk.rank[p]] += st->pack_time_s[p];
    }
  } else {
    for (size_t p = 0; p < np; ++p) {
      const int c = st->pack_clock[p];
      const size_t i = c * np + p;  // the tables by clock, as the pass above reads them
      const double idle_j = in_.idle_power_w[c] * time_by_clock_[i];
      r.gpu_energy_j[pk.rank[p]] += idle_j;
      dynamic_j[pk.rank[p]] += energy_by_clock_[i] - idle_j;
      pack_t[pk.rank[p]] += time_by_clock_[i];
    }
  }
  const double idle0 = in_.idle_power_w[c0];
  for (int gpu = 0; gpu < gpus_; ++gpu) {
    r.gpu_energy_j[gpu] += energy_scale_[gpu] * dynamic_j[gpu];
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
    const bool unlocked = static_cast<size_t>(gpu) >= s.size() || s[gpu].empty();
    const double gap_w =
        unlocked && static_cast<size_t>(gpu) < in_.default_idle_power_w.size() && in_.default_idle_power_w[gpu] > 0
            ? in_.default_idle_power_w[gpu]
            : idle0 * ratio;
    const double busy_ns = pack_time0_s_[gpu] > 0 ? pack_union_ns_[gpu] * pack_t[gpu] / pack_time0_s_[gpu] : 0;
    r.gpu_energy_j[gpu] += gap_w * std::max(0.0, end - run_start_ns_ - busy_ns) * 1e-9;
    r.energy_j += r.gpu_energy_j[gpu];
  }
  return r;
}

}  // namespace emo
