// mip_reference.cc — the search's problem as a GLPK mixed-integer program (see mip_reference.h).
#include "search/mip_reference.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <utility>
#include <vector>

#include "graph/replay.h"

namespace emo {

namespace {

constexpr double kInf = HUGE_VAL;

// The program as flat arrays, handed to GLPK in one go: columns (bounds, cost, kind) and rows
// (lo ≤ Σ coef · column ≤ hi, either side infinite). Times in ms, energies in J.
struct Program {
  std::vector<double> col_lo, col_hi, col_cost;
  std::vector<char> col_binary;
  std::vector<double> row_lo, row_hi;
  std::vector<int> row_begin{0};  // row r's terms are [row_begin[r], row_begin[r + 1])
  std::vector<int> term_col;
  std::vector<double> term_coef;

  int Column(double lo, double hi, double cost, bool binary) {
    col_lo.push_back(lo);
    col_hi.push_back(hi);
    col_cost.push_back(cost);
    col_binary.push_back(binary);
    return static_cast<int>(col_lo.size()) - 1;
  }
  void Row(const std::vector<std::pair<int, double>>& terms, double lo, double hi) {
    for (const auto& [c, a] : terms) {
      term_col.push_back(c);
      term_coef.push_back(a);
    }
    row_lo.push_back(lo);
    row_hi.push_back(hi);
    row_begin.push_back(static_cast<int>(term_col.size()));
  }
};

int BoundType(double lo, double hi) {
  if (lo == -kInf) return hi == kInf ? GLP_FR : GLP_UP;
  if (hi == kInf) return GLP_LO;
  return lo == hi ? GLP_FX : GLP_DB;
}

// glp_intopt, or -1 where GLPK stopped on an internal error (an assertion such as glpios09.c's
// "dx != 0.0" in pseudocost branching, which GLPK answers by aborting the process): its error hook
// jumps back here, and the caller must then free GLPK's environment, `lp` with it. No C++ object
// lives in this frame, so the jump skips no destructor.
void OnGlpkError(void* env) { std::longjmp(*static_cast<std::jmp_buf*>(env), 1); }

int GuardedIntopt(glp_prob* lp, const glp_iocp* parm) {
  std::jmp_buf env;
  glp_error_hook(OnGlpkError, &env);
  if (setjmp(env) != 0) {
    glp_error_hook(nullptr, nullptr);
    return -1;
  }
  const int ret = glp_intopt(lp, parm);
  glp_error_hook(nullptr, nullptr);
  return ret;
}

// `p` as a GLPK problem.
glp_prob* Load(const Program& p) {
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  const int nc = static_cast<int>(p.col_lo.size()), nr = static_cast<int>(p.row_lo.size());
  glp_add_cols(lp, nc);
  for (int c = 0; c < nc; ++c) {
    if (p.col_binary[c]) {
      glp_set_col_kind(lp, c + 1, GLP_BV);
    } else {
      glp_set_col_bnds(lp, c + 1, BoundType(p.col_lo[c], p.col_hi[c]), p.col_lo[c], p.col_hi[c]);
    }
    glp_set_obj_coef(lp, c + 1, p.col_cost[c]);
  }
  glp_add_rows(lp, nr);
  std::vector<int> ind(1);
  std::vector<double> val(1);
  for (int r = 0; r < nr; ++r) {
    glp_set_row_bnds(lp, r + 1, BoundType(p.row_lo[r], p.row_hi[r]), p.row_lo[r], p.row_hi[r]);
    ind.resize(1);
    val.resize(1);
    for (int t = p.row_begin[r]; t < p.row_begin[r + 1]; ++t) {
      ind.push_back(p.term_col[t] + 1);  // GLPK counts from 1
      val.push_back(p.term_coef[t]);
    }
    glp_set_mat_row(lp, r + 1, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
  }
  return lp;
}

// Solves `p`; on a proven optimum, its objective and column values. Pseudocost branching first;
// where GLPK fails internally on it, again with Driebeck-Tomlin branching (GLPK's default) in the
// time left.
bool SolveWithGlpk(const Program& p, double time_limit_s, double* objective, std::vector<double>* value,
                   std::string* err) {
  const auto start = std::chrono::steady_clock::now();
  for (const int branching : {GLP_BR_PCH, GLP_BR_DTH}) {
    const double left_s =
        time_limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    glp_term_out(GLP_OFF);  // (per try: glp_free_env resets it)
    glp_prob* lp = Load(p);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.br_tech = branching;
    parm.gmi_cuts = parm.mir_cuts = parm.cov_cuts = parm.clq_cuts = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tol_int = 1e-9;  // a binary's slack times a big-M stays well under a nanosecond
    parm.tm_lim = static_cast<int>(std::clamp(left_s * 1e3, 1.0, 2e9));
    const int ret = GuardedIntopt(lp, &parm);
    if (ret == -1) {
      glp_free_env();  // frees lp too
      *err = "GLPK stopped on an internal error";
      continue;
    }
    const int status = glp_mip_status(lp);
    const bool ok = ret == 0 && status == GLP_OPT;
    if (ok) {
      *objective = glp_mip_obj_val(lp);
      value->resize(p.col_lo.size());
      for (size_t c = 0; c < value->size(); ++c) (*value)[c] = glp_mip_col_val(lp, static_cast<int>(c) + 1);
    } else {
      *err = ret == GLP_ETMLIM
                 ? "GLPK found no proven optimum within " + std::to_string(time_limit_s) + " s"
                 : "GLPK failed (glp_intopt " + std::to_string(ret) + ", status " + std::to_string(status) + ")";
    }
    glp_delete_prob(lp);
    return ok;
  }
  return false;
}

}  // namespace

bool SolveMip(Predictor& predictor, const SearchOptions& opt, double time_limit_s, MipResult* out, std::string* err) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!(opt.budget >= 0) || !(opt.grid_ms > 0) || !(opt.min_interval_ms >= 0) || !(opt.dvfs_latency_ms >= 0)) {
    *err = "search options out of range (budget and latency must be >= 0, grid > 0)";
    return false;
  }
  if (opt.dvfs_jitter_ms != 0) {
    *err = "the MIP reference does not model the DVFS jitter (set it to 0)";
    return false;
  }
  const PredictorInput& in = predictor.input();
  if (in.split_at_landings) {
    *err = "the MIP reference restates the pass with each pack at one clock (split_at_landings off)";
    return false;
  }
  if (!in.comm_time_ratio.empty()) {
    *err = "the MIP reference restates the pass with collectives at their traced time (no comm_time_ratio)";
    return false;
  }
  const Graph& g = *in.graph;
  const Packing& pk = *in.packing;
  const int nc = predictor.clocks(), c0 = predictor.default_clock(), gpus = predictor.gpus();
  std::vector<int> group = opt.group;
  if (group.empty())
    for (int r = 0; r < gpus; ++r) group.push_back(r);
  if (group.size() != static_cast<size_t>(gpus)) {
    *err = "groups given for " + std::to_string(group.size()) + " GPUs, the graph has " + std::to_string(gpus);
    return false;
  }
  const int groups = gpus == 0 ? 0 : *std::max_element(group.begin(), group.end()) + 1;

  // The change points as Search lays them out, and where each lands (ms after the iteration start).
  std::vector<double> t_ns;
  for (double t = 0; t < predictor.period_ns(); t += opt.grid_ms * 1e6) t_ns.push_back(t);
  const int points = static_cast<int>(t_ns.size());
  const double latency_ns = opt.dvfs_latency_ms * 1e6;
  std::vector<double> b(points);
  for (int j = 0; j < points; ++j) b[j] = std::max(t_ns[j], latency_ns) * 1e-6;
  const double period_ms = predictor.period_ns() * 1e-6;
  // ω_j: the share of the period during which point j's clock is in force (the last point's also
  // before the first landing, carried over from the previous iteration).
  std::vector<double> omega(points, 0);
  for (int j = 0; j < points; ++j) {
    const double from = std::clamp(b[j], 0.0, period_ms);
    const double to = j + 1 < points ? std::clamp(b[j + 1], 0.0, period_ms) : period_ms;
    omega[j] = (to - from) / period_ms;
  }
  if (points > 0) omega[points - 1] += std::clamp(b[0], 0.0, period_ms) / period_ms;

  // Times lie in [lo, limit]: every finish is at most the end, no start before 0 or an anchor.
  const double limit_ms = (predictor.base().end_ns + opt.budget * predictor.base().end_ns) * 1e-6;
  double lo = 0;
  for (double a : g.anchor)
    if (a != kNoAnchor) lo = std::min(lo, a * 1e-6);
  const double big_t = limit_ms - lo + 1;  // exceeds any difference of two times

  Program p;
  std::vector<int> x_col(static_cast<size_t>(groups) * points * nc);  // [(group · points + j) · clocks + c]
  for (int& c : x_col) c = p.Column(0, 1, 0, true);
  for (int gr = 0; gr < groups; ++gr)
    for (int j = 0; j < points; ++j) {
      std::vector<std::pair<int, double>> one;
      for (int c = 0; c < nc; ++c) one.emplace_back(x_col[(gr * points + j) * nc + c], 1);
      p.Row(one, 1, 1);
    }
  auto X = [&](int gr, int j, int c) { return x_col[(gr * points + j) * nc + c]; };

  // Pack clocks U (continuous: one-hot wherever the binaries are) and their energy.
  const size_t np = pk.packs();
  std::vector<int> u_col(np * nc);
  for (size_t q = 0; q < np; ++q) {
    const int r = pk.rank[q];
    const double k = predictor.energy_scale()[r];
    std::vector<std::pair<int, double>> one;
    for (int c = 0; c < nc; ++c) {
      const size_t i = q * nc + c;
      const double idle_j = in.idle_power_w[c] * in.pack_time_s[i];
      u_col[i] = p.Column(0, 1, idle_j + k * (in.pack_energy_j[i] - idle_j), false);
      one.emplace_back(u_col[i], 1);
    }
    p.Row(one, 1, 1);
  }

  // Node starts and finishes, and the end.
  const size_t n = g.nodes();
  std::vector<int> s_col(n), f_col(n);
  for (size_t v = 0; v < n; ++v) {
    s_col[v] = p.Column(lo, limit_ms, 0, false);
    f_col[v] = p.Column(lo, limit_ms, 0, false);
  }
  const int end_col = p.Column(0, limit_ms, 0, false);
  for (size_t v = 0; v < n; ++v) {
    // Start = max(anchor, preds' finish + latency): at least each, at most the one a binary picks.
    struct Term {
      int col;  // a predecessor's finish, or -1 for the anchor
      double ms;
    };
    std::vector<Term> terms;
    if (g.anchor[v] != kNoAnchor) terms.push_back({-1, g.anchor[v] * 1e-6});
    for (uint32_t e = g.pred_begin[v]; e < g.pred_begin[v + 1]; ++e)
      terms.push_back({f_col[g.pred[e]], g.pred_latency[e] * 1e-6});
    if (terms.empty()) p.Row({{s_col[v], 1}}, 0, 0);
    for (const Term& t : terms) {
      std::vector<std::pair<int, double>> row{{s_col[v], 1}};
      if (t.col >= 0) row.emplace_back(t.col, -1);
      p.Row(row, t.ms, terms.size() == 1 ? t.ms : kInf);
    }
    if (terms.size() > 1) {
      std::vector<std::pair<int, double>> one;
      for (const Term& t : terms) {
        const int a = p.Column(0, 1, 0, true);
        one.emplace_back(a, 1);
        std::vector<std::pair<int, double>> row{{s_col[v], 1}, {a, big_t}};
        if (t.col >= 0) row.emplace_back(t.col, -1);
        p.Row(row, -kInf, t.ms + big_t);
      }
      p.Row(one, 1, 1);
    }
    // Finish = start + duration, a pack's kernel scaled by its pack's clock.
    const uint32_t q = pk.pack_of.empty() ? kNoPack : pk.pack_of[v];
    if (q == kNoPack) {
      p.Row({{f_col[v], 1}, {s_col[v], -1}}, g.duration[v] * 1e-6, g.duration[v] * 1e-6);
    } else {
      std::vector<std::pair<int, double>> row{{f_col[v], 1}, {s_col[v], -1}};
      const size_t base = static_cast<size_t>(q) * nc;
      for (int c = 0; c < nc; ++c)
        row.emplace_back(u_col[base + c], -g.duration[v] * 1e-6 * in.pack_time_s[base + c] / in.pack_time_s[base + c0]);
      p.Row(row, 0, 0);
    }
    p.Row({{end_col, 1}, {f_col[v], -1}}, 0, kInf);
  }

  // Each pack's clock: that of the interval holding its first kernel's start. Per interval i a
  // binary Z_i and the start's share ξ_i in [lo_i Z_i, hi_i Z_i], Σ ξ_i the start (the intervals'
  // convex hull: no big-M, whose rounding would blur the boundaries); V_ic = Z_i · X_j(i)c as
  // Σ_c V_ic = Z_i, V_ic ≤ X_j(i)c; U_pc = Σ_i V_ic.
  const std::vector<int32_t>& node_iteration = predictor.node_iteration();
  const std::vector<uint32_t>& marker = predictor.marker_node();
  for (size_t q = 0; q < np; ++q) {
    const uint32_t v = pk.members[pk.member_begin[q]];
    const int k = node_iteration[v], gr = group[pk.rank[q]];
    auto U = [&](int c) { return u_col[q * nc + c]; };
    if (k < 0 || points == 0) {  // before the first iteration: the default clock
      p.Row({{U(c0), 1}}, 1, 1);
      continue;
    }
    // The point whose clock holds in interval j; before the first landing (j = −1) the default in
    // the first iteration (−1), the last point's clock in later ones.
    auto source = [&](int j) { return j >= 0 ? j : k == 0 ? -1 : points - 1; };
    if (marker[k] == kNoPred || marker[k] > v) {
      // The pass has not reached the iteration's marker: the start relative to the iteration is the
      // observed one, whatever the clocks. The interval is known (the last landing at or before).
      const double x = (g.observed_start[v] - in.iteration_start_ns[k]) * 1e-6;
      int j = -1;
      while (j + 1 < points && b[j + 1] <= x) ++j;
      const int src = source(j);
      for (int c = 0; c < nc; ++c) {
        if (src < 0) {
          p.Row({{U(c), 1}}, c == c0, c == c0);
        } else {
          p.Row({{U(c), 1}, {X(gr, src, c), -1}}, 0, 0);
        }
      }
      continue;
    }
    // x = S_v − I_k, I_k = S_marker − offset, lies within offset ± span.
    const int m = s_col[marker[k]];
    const double off = predictor.marker_offset_ns()[k] * 1e-6, span = limit_ms - lo + 1;
    std::vector<std::pair<int, double>> start{{s_col[v], 1}, {m, -1}}, sum_z;
    std::vector<std::vector<std::pair<int, double>>> u_rows(nc);
    for (int c = 0; c < nc; ++c) u_rows[c].emplace_back(U(c), 1);
    // Interval j (−1: before b_0) is [b_j, next landing]; empty ones (equal landings) are skipped.
    for (int j = -1; j < points; ++j) {
      if (j >= 0 && j + 1 < points && b[j + 1] <= b[j]) continue;
      const double from = j >= 0 ? b[j] : off - span, to = j + 1 < points ? b[j + 1] : off + span;
      const int z = p.Column(0, 1, 0, true), xi = p.Column(-kInf, kInf, 0, false);
      p.Row({{xi, 1}, {z, -from}}, 0, kInf);
      p.Row({{xi, 1}, {z, -to}}, -kInf, 0);
      start.emplace_back(xi, -1);
      sum_z.emplace_back(z, 1);
      const int src = source(j);
      std::vector<std::pair<int, double>> sum_v{{z, -1}};
      for (int c = 0; c < nc; ++c) {
        if (src < 0 && c != c0) continue;
        const int vc = p.Column(0, 1, 0, false);
        sum_v.emplace_back(vc, 1);
        if (src >= 0) p.Row({{vc, 1}, {X(gr, src, c), -1}}, -kInf, 0);
        u_rows[c].emplace_back(vc, -1);
      }
      p.Row(sum_v, 0, 0);
    }
    p.Row(start, -off, -off);
    p.Row(sum_z, 1, 1);
    for (int c = 0; c < nc; ++c) p.Row(u_rows[c], 0, 0);
  }

  // Idle energy per GPU: P̄ · s, s = max(0, end − busy); busy = U · Σ T_p(c_p) / Σ T_p(c0). Per
  // point, s splits over the clocks, σ_c ≤ M X_c: the share at the point's clock is s.
  std::vector<double> time0_s(gpus, 0);
  for (size_t q = 0; q < np; ++q) time0_s[pk.rank[q]] += in.pack_time_s[q * nc + c0];
  for (int r = 0; r < gpus; ++r) {
    const int s = p.Column(0, big_t, 0, false);
    std::vector<std::pair<int, double>> row{{s, 1}, {end_col, -1}};
    if (time0_s[r] > 0)
      for (size_t q = 0; q < np; ++q)
        if (pk.rank[q] == r)
          for (int c = 0; c < nc; ++c)
            row.emplace_back(u_col[q * nc + c],
                             predictor.pack_union_ns()[r] * 1e-6 * in.pack_time_s[q * nc + c] / time0_s[r]);
    p.Row(row, 0, kInf);
    for (int j = 0; j < points; ++j) {
      if (omega[j] <= 0) continue;
      std::vector<std::pair<int, double>> split{{s, 1}};
      for (int c = 0; c < nc; ++c) {
        const int sigma = p.Column(0, big_t, omega[j] * in.idle_power_w[c] * 1e-3, false);
        p.Row({{sigma, 1}, {X(group[r], j, c), -big_t}}, -kInf, 0);
        split.emplace_back(sigma, -1);
      }
      p.Row(split, 0, 0);
    }
  }

  double objective = 0;
  std::vector<double> value;
  if (!SolveWithGlpk(p, time_limit_s, &objective, &value, err)) return false;

  // The optimum's schedule, as Search writes one: a landing where a group's clock changes, none
  // for a group at the default throughout.
  out->schedule.assign(gpus, {});
  for (int gr = 0; gr < groups; ++gr) {
    std::vector<Landing> l;
    for (int j = 0; j < points; ++j) {
      int c = 0;
      for (int i = 1; i < nc; ++i)
        if (value[X(gr, j, i)] > value[X(gr, j, c)]) c = i;
      if (l.empty() || l.back().clock != c) l.push_back({std::max(t_ns[j], latency_ns), c});
    }
    if (std::all_of(l.begin(), l.end(), [&](const Landing& x) { return x.clock == c0; })) l.clear();
    for (int r = 0; r < gpus; ++r)
      if (group[r] == gr) out->schedule[r] = l;
  }
  out->energy_j = objective;
  out->exact = opt.min_interval_ms <= opt.grid_ms;
  out->replayed = predictor.Run(out->schedule);
  out->points = points * groups;
  out->binaries = static_cast<int>(std::count(p.col_binary.begin(), p.col_binary.end(), 1));
  out->rows = static_cast<int>(p.row_lo.size());
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

}  // namespace emo
