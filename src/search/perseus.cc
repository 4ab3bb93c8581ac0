// perseus.cc — the Perseus planner (see perseus.h): options and cost fit, the 1F1B DAG, and the
// Phillips–Dessouky time–cost trade-off with a max-flow minimum cut.
#include "search/perseus.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace emo::perseus {

namespace {

constexpr double kFpError = 1e-6;  // lowtime's FP_ERROR
constexpr double kInfCap = 10000;  // lowtime's "inf" flow bound
const double kInf = std::numeric_limits<double>::infinity();

// Options with the Pareto filter at factor nf (time < nf·t and cost < nf·c dominates).
std::vector<Option> Pareto(const std::vector<Option>& all, double nf) {
  std::vector<Option> out;
  for (const Option& o : all) {
    bool dominated = false;
    for (const Option& other : all)
      if (other.real_s < nf * o.real_s && other.cost < nf * o.cost) dominated = true;
    if (!dominated) out.push_back(o);
  }
  return out;
}

// Solves the 3×3 system m·x = v by Gaussian elimination with partial pivoting; false if singular.
bool Solve3(double m[3][3], double v[3], double x[3]) {
  double a[3][4];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) a[i][j] = m[i][j];
    a[i][3] = v[i];
  }
  for (int c = 0; c < 3; ++c) {
    int p = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (std::fabs(a[p][c]) < 1e-300) return false;
    for (int j = 0; j < 4; ++j) std::swap(a[c][j], a[p][j]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < 4; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < 3; ++i) x[i] = a[i][3] / a[i][i];
  return true;
}

double Sse(const std::vector<double>& q, const std::vector<double>& y, const double p[3]) {
  double s = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const double r = p[0] * std::exp(p[1] * q[i]) + p[2] - y[i];
    s += r * r;
  }
  return s;
}

// Jᵀ·J and Jᵀ·r of the model at p.
void Normal(const std::vector<double>& q, const std::vector<double>& y, const double p[3], double jtj[3][3],
            double jtr[3]) {
  for (int i = 0; i < 3; ++i) {
    jtr[i] = 0;
    for (int j = 0; j < 3; ++j) jtj[i][j] = 0;
  }
  for (size_t k = 0; k < q.size(); ++k) {
    const double e = std::exp(p[1] * q[k]);
    const double jac[3] = {e, p[0] * q[k] * e, 1};
    const double r = p[0] * e + p[2] - y[k];
    for (int i = 0; i < 3; ++i) {
      jtr[i] += jac[i] * r;
      for (int j = 0; j < 3; ++j) jtj[i][j] += jac[i] * jac[j];
    }
  }
}

// Levenberg–Marquardt from p (in place); false when it went non-finite.
bool Levenberg(const std::vector<double>& q, const std::vector<double>& y, double p[3]) {
  double sse = Sse(q, y, p), lambda = 1e-3;
  if (!std::isfinite(sse)) return false;
  for (int it = 0; it < 5000; ++it) {
    double jtj[3][3], jtr[3];
    Normal(q, y, p, jtj, jtr);
    bool improved = false;
    while (lambda < 1e20) {
      double m[3][3], v[3], d[3];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i][j] = jtj[i][j];
        m[i][i] += lambda * std::max(jtj[i][i], 1e-12);
        v[i] = -jtr[i];
      }
      if (Solve3(m, v, d)) {
        const double np[3] = {p[0] + d[0], p[1] + d[1], p[2] + d[2]};
        const double ns = Sse(q, y, np);
        if (std::isfinite(ns) && ns <= sse) {
          const double gain = sse - ns;
          std::copy(np, np + 3, p);
          sse = ns;
          lambda = std::max(lambda / 10, 1e-15);
          improved = true;
          if (gain <= 1e-15 * std::max(sse, 1e-300)) return true;
          break;
        }
      }
      lambda *= 10;
    }
    if (!improved) return true;  // no step lowers the error: a minimum
  }
  return true;
}

}  // namespace

double CostFit::operator()(double q) const { return a * std::exp(b * q) + c; }

int OpSpec::MhzFor(int64_t d) const {
  // options are sorted by q descending: the first with q <= d is the slowest that fits.
  for (const Option& o : options)
    if (o.q <= d) return o.mhz;
  return options.back().mhz;
}

std::vector<Option> CandidateOptions(const std::vector<ProfileRow>& rows, const PerseusOptions& opt) {
  std::vector<Option> all;
  for (const ProfileRow& r : rows) {
    Option o;
    o.mhz = r.mhz;
    o.real_s = r.time_s;
    o.q = static_cast<int64_t>(std::floor(r.time_s / opt.unit_time_s));
    o.cost = r.energy_j - opt.p2p_power_w * static_cast<double>(o.q) * opt.unit_time_s;
    all.push_back(o);
  }
  std::vector<Option> kept = Pareto(all, 1.0);
  if (kept.size() <= 3) kept = Pareto(all, opt.noise_factor);
  // Per q the costliest option (quantisation rounds down: it is the one closest to its q).
  std::stable_sort(kept.begin(), kept.end(), [](const Option& x, const Option& y) { return x.cost > y.cost; });
  std::vector<Option> out;
  for (const Option& o : kept) {
    bool seen = false;
    for (const Option& p : out) seen = seen || p.q == o.q;
    if (!seen) out.push_back(o);
  }
  std::stable_sort(out.begin(), out.end(), [](const Option& x, const Option& y) { return x.q > y.q; });
  return out;
}

CostFit FitExponential(const std::vector<double>& q, const std::vector<double>& cost, double unit_time_s) {
  CostFit best;
  if (q.size() <= 3 || q.size() != cost.size()) return best;  // covariance undefined
  const double scale = unit_time_s / 1e-3;
  const double as[] = {10, 100, 1000}, cs[] = {10, 100, 1000};
  const double bs[] = {-0.01, -0.02, -0.03, -0.04, -0.05, -0.1};
  for (double a0 : as)
    for (double b0 : bs)
      for (double c0 : cs) {
        double p[3] = {a0, b0 * scale, c0};
        if (!Levenberg(q, cost, p)) continue;
        if (p[0] < 0 || !std::isfinite(p[0] + p[1] + p[2])) continue;
        // Covariance: (JᵀJ)⁻¹ exists (the scaled determinant is not negligible).
        double jtj[3][3], jtr[3];
        Normal(q, cost, p, jtj, jtr);
        const double det = jtj[0][0] * (jtj[1][1] * jtj[2][2] - jtj[1][2] * jtj[2][1]) -
                           jtj[0][1] * (jtj[1][0] * jtj[2][2] - jtj[1][2] * jtj[2][0]) +
                           jtj[0][2] * (jtj[1][0] * jtj[2][1] - jtj[1][1] * jtj[2][0]);
        if (!(std::fabs(det) > 1e-12 * jtj[0][0] * jtj[1][1] * jtj[2][2])) continue;
        const double mse = Sse(q, cost, p) / static_cast<double>(q.size());
        if (mse < best.mse) best = CostFit{p[0], p[1], p[2], mse, true};
      }
  return best;
}

bool BuildOpSpec(const std::vector<ProfileRow>& rows, const PerseusOptions& opt, OpSpec* out, std::string* err) {
  out->options = CandidateOptions(rows, opt);
  if (out->options.empty()) {
    *err = "no profiled options";
    return false;
  }
  std::vector<double> q, c;
  for (const Option& o : out->options) q.push_back(static_cast<double>(o.q)), c.push_back(o.cost);
  out->fit = FitExponential(q, c, opt.unit_time_s);
  if (!out->fit.ok) {
    *err = "no exponential fit of cost against time (" + std::to_string(q.size()) + " options)";
    return false;
  }
  return true;
}

Dag OneFOneBDag(int stages, int microbatches) {
  Dag d;
  auto add = [&](int spec, int stage, int micro, bool backward) {
    d.spec.push_back(spec);
    d.stage.push_back(stage);
    d.micro.push_back(micro);
    d.backward.push_back(backward);
    return d.nodes() - 1;
  };
  auto edge = [&](int u, int v) { d.from.push_back(u), d.to.push_back(v); };
  d.source = add(-1, -1, -1, false);
  const int N = stages, M = microbatches;
  // fwd[s][j], bwd[s][j]: node ids.
  std::vector<std::vector<int>> fwd(static_cast<size_t>(N), std::vector<int>(static_cast<size_t>(M)));
  std::vector<std::vector<int>> bwd = fwd;
  for (int s = 0; s < N; ++s) {
    const int warm = std::min(M, N - s);
    int f = 0, b = 0, prev = -1;
    auto next = [&](bool backward) {
      const int j = backward ? b++ : f++;
      const int v = add(2 * s + (backward ? 1 : 0), s, j, backward);
      (backward ? bwd : fwd)[static_cast<size_t>(s)][static_cast<size_t>(j)] = v;
      if (prev >= 0) edge(prev, v);
      prev = v;
    };
    for (int i = 0; i < warm; ++i) next(false);
    while (f < M) next(true), next(false);
    while (b < M) next(true);
  }
  for (int s = 0; s + 1 < N; ++s)
    for (int j = 0; j < M; ++j) {
      edge(fwd[static_cast<size_t>(s)][static_cast<size_t>(j)],
           fwd[static_cast<size_t>(s + 1)][static_cast<size_t>(j)]);
      edge(bwd[static_cast<size_t>(s + 1)][static_cast<size_t>(j)],
           bwd[static_cast<size_t>(s)][static_cast<size_t>(j)]);
    }
  d.sink = add(-1, -1, -1, false);
  edge(d.source, fwd[0][0]);
  edge(bwd[0][static_cast<size_t>(M - 1)], d.sink);
  return d;
}

std::vector<std::vector<int>> StageOrder(const Dag& dag) {
  std::vector<std::vector<int>> out;
  for (int v = 0; v < dag.nodes(); ++v) {
    const int s = dag.stage[static_cast<size_t>(v)];
    if (s < 0) continue;
    if (out.size() <= static_cast<size_t>(s)) out.resize(static_cast<size_t>(s) + 1);
    out[static_cast<size_t>(s)].push_back(v);  // nodes are laid out in each stage's order
  }
  return out;
}

namespace {

// Topological order of the AON DAG (Kahn); empty when there is a cycle.
std::vector<int> Topo(const Dag& dag) {
  const int n = dag.nodes();
  std::vector<int> indeg(static_cast<size_t>(n), 0), order;
  std::vector<std::vector<int>> succ(static_cast<size_t>(n));
  for (size_t e = 0; e < dag.from.size(); ++e) {
    succ[static_cast<size_t>(dag.from[e])].push_back(dag.to[e]);
    ++indeg[static_cast<size_t>(dag.to[e])];
  }
  for (int v = 0; v < n; ++v)
    if (indeg[static_cast<size_t>(v)] == 0) order.push_back(v);
  for (size_t i = 0; i < order.size(); ++i)
    for (int w : succ[static_cast<size_t>(order[i])])
      if (--indeg[static_cast<size_t>(w)] == 0) order.push_back(w);
  if (static_cast<int>(order.size()) != n) order.clear();
  return order;
}

// Earliest and latest finish of each node (critical-path method).
void Times(const Dag& dag, const std::vector<int64_t>& d, std::vector<int64_t>* ef, std::vector<int64_t>* lf) {
  const size_t n = static_cast<size_t>(dag.nodes());
  const std::vector<int> order = Topo(dag);
  std::vector<std::vector<int>> succ(n), pred(n);
  for (size_t e = 0; e < dag.from.size(); ++e) {
    succ[static_cast<size_t>(dag.from[e])].push_back(dag.to[e]);
    pred[static_cast<size_t>(dag.to[e])].push_back(dag.from[e]);
  }
  ef->assign(n, 0);
  for (int v : order) {
    int64_t es = 0;
    for (int u : pred[static_cast<size_t>(v)]) es = std::max(es, (*ef)[static_cast<size_t>(u)]);
    (*ef)[static_cast<size_t>(v)] = es + d[static_cast<size_t>(v)];
  }
  const int64_t total = (*ef)[static_cast<size_t>(dag.sink)];
  lf->assign(n, std::numeric_limits<int64_t>::max());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int v = *it;
    int64_t l = succ[static_cast<size_t>(v)].empty() ? total : std::numeric_limits<int64_t>::max();
    for (int w : succ[static_cast<size_t>(v)])
      l = std::min(l, (*lf)[static_cast<size_t>(w)] - d[static_cast<size_t>(w)]);
    (*lf)[static_cast<size_t>(v)] = l;
  }
}

// Dinic's max flow on doubles; edges stored in pairs (e, e^1).
struct Flow {
  std::vector<int> head, next, to;
  std::vector<double> cap;
  std::vector<int> level, it;
  explicit Flow(int n) : head(static_cast<size_t>(n), -1) {}
  int Add(int u, int v, double c, double rc = 0) {
    const int e = static_cast<int>(to.size());
    to.push_back(v), cap.push_back(c), next.push_back(head[static_cast<size_t>(u)]), head[static_cast<size_t>(u)] = e;
    to.push_back(u), cap.push_back(rc), next.push_back(head[static_cast<size_t>(v)]),
        head[static_cast<size_t>(v)] = e + 1;
    return e;
  }
  bool Bfs(int s, int t) {
    level.assign(head.size(), -1);
    std::vector<int> q{s};
    level[static_cast<size_t>(s)] = 0;
    for (size_t i = 0; i < q.size(); ++i)
      for (int e = head[static_cast<size_t>(q[i])]; e >= 0; e = next[static_cast<size_t>(e)]) {
        const int v = to[static_cast<size_t>(e)];
        if (cap[static_cast<size_t>(e)] > kFpError * 1e-3 && level[static_cast<size_t>(v)] < 0) {
          level[static_cast<size_t>(v)] = level[static_cast<size_t>(q[i])] + 1;
          q.push_back(v);
        }
      }
    return level[static_cast<size_t>(t)] >= 0;
  }
  double Dfs(int u, int t, double f) {
    if (u == t) return f;
    for (int& e = it[static_cast<size_t>(u)]; e >= 0; e = next[static_cast<size_t>(e)]) {
      const int v = to[static_cast<size_t>(e)];
      if (cap[static_cast<size_t>(e)] <= kFpError * 1e-3 ||
          level[static_cast<size_t>(v)] != level[static_cast<size_t>(u)] + 1)
        continue;
      const double got = Dfs(v, t, std::min(f, cap[static_cast<size_t>(e)]));
      if (got > 0) {
        cap[static_cast<size_t>(e)] -= got;
        cap[static_cast<size_t>(e ^ 1)] += got;
        return got;
      }
    }
    return 0;
  }
  double Run(int s, int t) {
    double total = 0;
    while (Bfs(s, t)) {
      it = head;
      for (double f; (f = Dfs(s, t, kInf)) > 0;) {
        total += f;
        if (!std::isfinite(total)) return total;
      }
    }
    return total;
  }
};

}  // namespace

int64_t CriticalPath(const Dag& dag, const std::vector<int64_t>& duration) {
  std::vector<int64_t> ef, lf;
  Times(dag, duration, &ef, &lf);
  return ef[static_cast<size_t>(dag.sink)];
}

bool PdIteration(const Dag& dag, const std::vector<OpSpec>& specs, std::vector<int64_t>* duration,
                 double* cost_change) {
  *cost_change = 0;
  const std::vector<int64_t>& d = *duration;
  std::vector<int64_t> ef, lf;
  Times(dag, d, &ef, &lf);
  // Activity-on-arc form: node v's arc runs 2v → 2v+1, edge u→w becomes the dummy arc 2u+1 → 2w.
  // Keep only critical arcs: earliest finish = latest finish. A dummy arc u→w finishes earliest
  // at EF(u) and latest at LS(w) = LF(w) − d(w).
  struct Arc {
    int u, v, node;  // node: the AON node of an op arc, −1 for a dummy
    double lb, ub;
  };
  std::vector<Arc> arcs;
  const int n = dag.nodes();
  for (int v = 0; v < n; ++v) {
    const size_t sv = static_cast<size_t>(v);
    if (ef[sv] != lf[sv]) continue;
    const int sp = dag.spec[sv];
    double lb = 0, ub = kInfCap;
    if (sp >= 0) {
      const OpSpec& s = specs[static_cast<size_t>(sp)];
      const int64_t dv = d[sv];
      if (dv == s.min_q() && dv == s.max_q()) {
        lb = 0, ub = kInfCap;  // fixed
      } else if (dv - 1 < s.min_q()) {
        lb = std::fabs(s.Cost(dv) - s.Cost(dv + 1)), ub = kInfCap;
      } else if (dv + 1 > s.max_q()) {
        lb = 0, ub = std::fabs(s.Cost(dv - 1) - s.Cost(dv));
      } else {
        lb = std::fabs(s.Cost(dv) - s.Cost(dv + 1));
        ub = std::fabs(s.Cost(dv - 1) - s.Cost(dv)) + kFpError;
      }
      lb = std::floor(lb / kFpError) * kFpError;
      ub = std::floor(ub / kFpError) * kFpError;
    }
    arcs.push_back({2 * v, 2 * v + 1, sp >= 0 ? v : -1, lb, ub});
  }
  for (size_t e = 0; e < dag.from.size(); ++e) {
    const size_t u = static_cast<size_t>(dag.from[e]), w = static_cast<size_t>(dag.to[e]);
    if (ef[u] != lf[w] - d[w]) continue;
    arcs.push_back({2 * dag.from[e] + 1, 2 * dag.to[e], -1, 0, kInfCap});
  }
  const int src = 2 * dag.source, snk = 2 * dag.sink + 1;

  // A feasible flow under the lower bounds: capacities ub − lb, a super source s' feeding each
  // node the lower bounds of its incoming arcs and a super sink t' draining those of its
  // outgoing arcs, and an unbounded arc sink → source. Feasible when s' saturates.
  const int sp = 2 * n, tp = 2 * n + 1;
  Flow f1(2 * n + 2);
  std::vector<int> arc_edge(arcs.size());
  std::vector<double> in_lb(static_cast<size_t>(2 * n), 0), out_lb(static_cast<size_t>(2 * n), 0);
  for (size_t a = 0; a < arcs.size(); ++a) {
    arc_edge[a] = f1.Add(arcs[a].u, arcs[a].v, arcs[a].ub - arcs[a].lb);
    in_lb[static_cast<size_t>(arcs[a].v)] += arcs[a].lb;
    out_lb[static_cast<size_t>(arcs[a].u)] += arcs[a].lb;
  }
  std::vector<int> s_edges;
  for (int u = 0; u < 2 * n; ++u) {
    s_edges.push_back(f1.Add(sp, u, in_lb[static_cast<size_t>(u)]));
    f1.Add(u, tp, out_lb[static_cast<size_t>(u)]);
  }
  f1.Add(snk, src, kInf);
  f1.Run(sp, tp);
  for (int e : s_edges)
    if (std::fabs(f1.cap[static_cast<size_t>(e)]) > kFpError) return false;  // unsaturated: no feasible flow

  // The flow on each arc (lb + what the first flow sent), then a maximum flow source → sink on
  // its residual graph (forward ub − flow, backward flow − lb).
  Flow f2(2 * n);
  std::vector<int> arc_edge2(arcs.size());
  for (size_t a = 0; a < arcs.size(); ++a) {
    const double flow = f1.cap[static_cast<size_t>(arc_edge[a] ^ 1)] + arcs[a].lb;
    double fwd = arcs[a].ub - flow, bwd = flow - arcs[a].lb;
    if (std::fabs(fwd) < kFpError) fwd = 0;
    if (std::fabs(bwd) < kFpError) bwd = 0;
    arc_edge2[a] = f2.Add(arcs[a].u, arcs[a].v, fwd, bwd);
  }
  f2.Run(src, snk);

  // S: nodes reachable from the source through residual capacity above 1e-6.
  std::vector<char> in_s(static_cast<size_t>(2 * n), 0);
  std::vector<int> stack{src};
  in_s[static_cast<size_t>(src)] = 1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int e = f2.head[static_cast<size_t>(u)]; e >= 0; e = f2.next[static_cast<size_t>(e)]) {
      const int v = f2.to[static_cast<size_t>(e)];
      if (!in_s[static_cast<size_t>(v)] && std::fabs(f2.cap[static_cast<size_t>(e)]) > kFpError) {
        in_s[static_cast<size_t>(v)] = 1;
        stack.push_back(v);
      }
    }
  }
  if (in_s[static_cast<size_t>(snk)]) return false;

  // Arcs S → T one unit shorter, T → S one unit longer (dummies cannot move and need not).
  std::vector<int> faster, slower;
  for (const Arc& a : arcs) {
    const bool us = in_s[static_cast<size_t>(a.u)], vs = in_s[static_cast<size_t>(a.v)];
    if (us && !vs) {
      if (a.node < 0) return false;
      const OpSpec& s = specs[static_cast<size_t>(dag.spec[static_cast<size_t>(a.node)])];
      if (d[static_cast<size_t>(a.node)] - 1 < s.min_q()) return false;
      faster.push_back(a.node);
    } else if (!us && vs && a.node >= 0) {
      const OpSpec& s = specs[static_cast<size_t>(dag.spec[static_cast<size_t>(a.node)])];
      if (d[static_cast<size_t>(a.node)] + 1 > s.max_q()) return false;
      slower.push_back(a.node);
    }
  }
  if (faster.empty()) return false;
  double change = 0;
  for (int v : faster) {
    const OpSpec& s = specs[static_cast<size_t>(dag.spec[static_cast<size_t>(v)])];
    change += std::fabs(s.Cost(d[static_cast<size_t>(v)] - 1) - s.Cost(d[static_cast<size_t>(v)]));
  }
  for (int v : slower) {
    const OpSpec& s = specs[static_cast<size_t>(dag.spec[static_cast<size_t>(v)])];
    change -= std::fabs(s.Cost(d[static_cast<size_t>(v)]) - s.Cost(d[static_cast<size_t>(v)] + 1));
  }
  if (std::fabs(change) < kFpError) return false;
  for (int v : faster) --(*duration)[static_cast<size_t>(v)];
  for (int v : slower) ++(*duration)[static_cast<size_t>(v)];
  *cost_change = change;
  return true;
}

bool SolveTradeoff(const Dag& dag, const std::vector<OpSpec>& specs, const PerseusOptions& opt,
                   std::vector<PlanPoint>* points, int64_t* t_min, std::string* err) {
  points->clear();
  const int n = dag.nodes();
  if (Topo(dag).empty()) {
    *err = "the computation graph has a cycle";
    return false;
  }
  std::vector<int> indeg(static_cast<size_t>(n), 0), outdeg(static_cast<size_t>(n), 0);
  for (size_t e = 0; e < dag.from.size(); ++e)
    ++outdeg[static_cast<size_t>(dag.from[e])], ++indeg[static_cast<size_t>(dag.to[e])];
  for (int v = 0; v < n; ++v) {
    if ((indeg[static_cast<size_t>(v)] == 0) != (v == dag.source)) {
      *err = "node " + std::to_string(v) + (v == dag.source ? ": the source has predecessors" : ": a second source");
      return false;
    }
    if ((outdeg[static_cast<size_t>(v)] == 0) != (v == dag.sink)) {
      *err = "node " + std::to_string(v) + (v == dag.sink ? ": the sink has successors" : ": a second sink");
      return false;
    }
    const int sp = dag.spec[static_cast<size_t>(v)];
    if (sp >= static_cast<int>(specs.size()) || (sp >= 0 && specs[static_cast<size_t>(sp)].options.empty())) {
      *err = "node " + std::to_string(v) + ": no options for spec " + std::to_string(sp);
      return false;
    }
  }
  std::vector<int64_t> d(static_cast<size_t>(n), 0);
  for (int v = 0; v < n; ++v) {
    const int sp = dag.spec[static_cast<size_t>(v)];
    if (sp >= 0) d[static_cast<size_t>(v)] = specs[static_cast<size_t>(sp)].min_q();
  }
  *t_min = CriticalPath(dag, d);
  for (int v = 0; v < n; ++v) {
    const int sp = dag.spec[static_cast<size_t>(v)];
    if (sp >= 0) d[static_cast<size_t>(v)] = specs[static_cast<size_t>(sp)].max_q();
  }
  const int64_t t_max = CriticalPath(dag, d);
  const int64_t cap = 4 * (t_max - *t_min + 1) + 16;  // upstream runs until it stops; a guard
  for (int64_t it = 0; it < cap; ++it) {
    double change = 0;
    if (!PdIteration(dag, specs, &d, &change)) break;
    PlanPoint p;
    p.quant_time = CriticalPath(dag, d);
    p.real_time_s = static_cast<double>(p.quant_time) * opt.unit_time_s;
    p.duration = d;
    p.mhz.assign(static_cast<size_t>(n), 0);
    for (int v = 0; v < n; ++v) {
      const int sp = dag.spec[static_cast<size_t>(v)];
      if (sp < 0) continue;
      const OpSpec& s = specs[static_cast<size_t>(sp)];
      p.cost += s.Cost(d[static_cast<size_t>(v)]);
      p.mhz[static_cast<size_t>(v)] = s.MhzFor(d[static_cast<size_t>(v)]);
    }
    int stages = 0;
    for (int v = 0; v < n; ++v) stages = std::max(stages, dag.stage[static_cast<size_t>(v)] + 1);
    p.energy_j = p.cost + stages * p.real_time_s * opt.p2p_power_w;
    points->push_back(std::move(p));
  }
  return true;
}

int PickPlan(const std::vector<PlanPoint>& points, int64_t t_min, double unit_time_s, double budget) {
  if (points.empty()) return -1;
  int best = -1;
  if (budget <= 0) {
    for (size_t i = 0; i < points.size() && best < 0; ++i)
      if (points[i].quant_time == t_min) best = static_cast<int>(i);
  } else {
    const double limit = (1 + budget) * static_cast<double>(t_min) * unit_time_s;
    for (size_t i = 0; i < points.size(); ++i)
      if (points[i].real_time_s <= limit + 1e-12 &&
          (best < 0 || points[i].cost < points[static_cast<size_t>(best)].cost))
        best = static_cast<int>(i);
  }
  if (best >= 0) return best;
  int fastest = 0;
  for (size_t i = 1; i < points.size(); ++i)
    if (points[i].quant_time < points[static_cast<size_t>(fastest)].quant_time) fastest = static_cast<int>(i);
  return fastest;
}

}  // namespace emo::perseus
