// nnls.cc — Lawson-Hanson active-set NNLS with a Householder-QR least-squares step on the
// passive columns.
#include "model/nnls.h"

#include <cmath>

namespace emo {

namespace {
// A column whose part orthogonal to the passive columns before it is below this share of its norm
// counts as dependent on them.
constexpr double kRankTol = 1e-10;
constexpr double kDefaultRelTol = 1e-10;
}  // namespace

NnlsSolver::NnlsSolver(int m, int n)
    : m_(m),
      n_(n),
      w_(n),
      z_(n),
      resid_(m),
      q_(static_cast<size_t>(m) * n),
      rhs_(m),
      colnorm_(n),
      passive_(n),
      in_passive_(n),
      skip_(n) {}

void NnlsSolver::Gradient(const double* a, const double* b, const double* x) {
  for (int r = 0; r < m_; ++r) {
    double s = b[r];
    const double* row = a + static_cast<size_t>(r) * n_;
    for (int c = 0; c < n_; ++c) s -= row[c] * x[c];
    resid_[r] = s;
  }
  for (int c = 0; c < n_; ++c) w_[c] = 0;
  for (int r = 0; r < m_; ++r) {
    const double* row = a + static_cast<size_t>(r) * n_;
    for (int c = 0; c < n_; ++c) w_[c] += row[c] * resid_[r];
  }
}

bool NnlsSolver::SolvePassive(const double* a, const double* b, double* z) {
  const int k = np_;
  if (k > m_) return false;
  // q_: the passive columns, column-major (column i at q_[i * m_]).
  for (int i = 0; i < k; ++i) {
    const int c = passive_[i];
    for (int r = 0; r < m_; ++r) q_[static_cast<size_t>(i) * m_ + r] = a[static_cast<size_t>(r) * n_ + c];
  }
  for (int r = 0; r < m_; ++r) rhs_[r] = b[r];
  // Householder QR, applied to the right-hand side as it goes; R overwrites q_'s upper triangle.
  for (int j = 0; j < k; ++j) {
    double* col = &q_[static_cast<size_t>(j) * m_];
    double norm2 = 0;
    for (int r = j; r < m_; ++r) norm2 += col[r] * col[r];
    const double norm = std::sqrt(norm2);
    if (!(norm > kRankTol * colnorm_[passive_[j]])) return false;
    const double alpha = col[j] > 0 ? -norm : norm;  // the new diagonal, of sign opposite to col[j]
    // v = col[j..] − alpha e₁, stored in place; vᵀv = 2 (norm² − alpha col[j]).
    col[j] -= alpha;
    const double vtv = 2 * (norm2 - alpha * (col[j] + alpha));
    for (int i = j + 1; i < k; ++i) {
      double* other = &q_[static_cast<size_t>(i) * m_];
      double s = 0;
      for (int r = j; r < m_; ++r) s += col[r] * other[r];
      s = 2 * s / vtv;
      for (int r = j; r < m_; ++r) other[r] -= s * col[r];
    }
    double s = 0;
    for (int r = j; r < m_; ++r) s += col[r] * rhs_[r];
    s = 2 * s / vtv;
    for (int r = j; r < m_; ++r) rhs_[r] -= s * col[r];
    col[j] = alpha;
  }
  // Back substitution R z = (Qᵀ b)[0..k).
  for (int c = 0; c < n_; ++c) z[c] = 0;
  for (int i = k - 1; i >= 0; --i) {
    double s = rhs_[i];
    for (int l = i + 1; l < k; ++l) s -= q_[static_cast<size_t>(l) * m_ + i] * z[passive_[l]];
    z[passive_[i]] = s / q_[static_cast<size_t>(i) * m_ + i];
  }
  return true;
}

NnlsResult NnlsSolver::Solve(const double* a, const double* b, double* x, const NnlsOptions& opt) {
  NnlsResult res;
  double anorm2 = 0, bnorm2 = 0;
  for (int c = 0; c < n_; ++c) colnorm_[c] = 0;
  for (int r = 0; r < m_; ++r) {
    bnorm2 += b[r] * b[r];
    for (int c = 0; c < n_; ++c) colnorm_[c] += a[static_cast<size_t>(r) * n_ + c] * a[static_cast<size_t>(r) * n_ + c];
  }
  for (int c = 0; c < n_; ++c) {
    anorm2 += colnorm_[c];
    colnorm_[c] = std::sqrt(colnorm_[c]);
  }
  res.tol = opt.tol >= 0 ? opt.tol : kDefaultRelTol * std::sqrt(anorm2) * std::sqrt(bnorm2);
  const int max_iter = opt.max_iter > 0 ? opt.max_iter : 3 * n_;

  for (int c = 0; c < n_; ++c) {
    x[c] = 0;
    in_passive_[c] = 0;
    skip_[c] = 0;
  }
  np_ = 0;
  Gradient(a, b, x);
  res.converged = true;
  while (true) {
    // The zero column with the largest positive gradient enters, unless it was just found unusable.
    int t = -1;
    for (int c = 0; c < n_; ++c)
      if (!in_passive_[c] && !skip_[c] && w_[c] > res.tol && (t < 0 || w_[c] > w_[t])) t = c;
    if (t < 0) break;
    if (res.iterations >= max_iter) {
      res.converged = false;
      break;
    }
    ++res.iterations;
    passive_[np_++] = t;
    in_passive_[t] = 1;
    bool first = true;
    bool moved = false;
    while (true) {
      const bool ok = SolvePassive(a, b, z_.data());
      if (first && (!ok || z_[t] <= 0)) {
        // The entering column is dependent on the passive ones or would enter at a non-positive
        // value (rounding: in exact arithmetic w_t > 0 rules both out): leave it at zero.
        --np_;
        in_passive_[t] = 0;
        skip_[t] = 1;
        break;
      }
      first = false;
      if (!ok) {  // cannot happen for a subset of independent columns; stop at a feasible x
        res.converged = false;
        break;
      }
      bool all_positive = true;
      for (int i = 0; i < np_; ++i) all_positive = all_positive && z_[passive_[i]] > 0;
      moved = true;
      if (all_positive) {
        for (int i = 0; i < np_; ++i) x[passive_[i]] = z_[passive_[i]];
        break;
      }
      // Step from x towards z as far as feasibility allows; the blocking column(s) leave.
      double alpha = 2;
      int block = -1;
      for (int i = 0; i < np_; ++i) {
        const int c = passive_[i];
        if (z_[c] <= 0) {
          const double step = x[c] / (x[c] - z_[c]);
          if (step < alpha) {
            alpha = step;
            block = c;
          }
        }
      }
      for (int i = 0; i < np_; ++i) {
        const int c = passive_[i];
        x[c] += alpha * (z_[c] - x[c]);
      }
      x[block] = 0;
      int keep = 0;
      for (int i = 0; i < np_; ++i) {
        const int c = passive_[i];
        if (x[c] <= 0) {
          x[c] = 0;
          in_passive_[c] = 0;
        } else {
          passive_[keep++] = c;
        }
      }
      np_ = keep;
    }
    if (!res.converged) break;
    if (moved) {
      for (int c = 0; c < n_; ++c) skip_[c] = 0;
      Gradient(a, b, x);
    }
  }
  if (!res.converged) Gradient(a, b, x);  // resid_ for the x returned
  double r2 = 0;
  for (int r = 0; r < m_; ++r) r2 += resid_[r] * resid_[r];
  res.residual = std::sqrt(r2);
  return res;
}

NnlsResult Nnls(const std::vector<double>& a, int m, int n, const std::vector<double>& b, std::vector<double>* x,
                const NnlsOptions& opt) {
  x->assign(n, 0);
  NnlsSolver s(m, n);
  return s.Solve(a.data(), b.data(), x->data(), opt);
}

}  // namespace emo
