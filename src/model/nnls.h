// nnls.h — non-negative least squares, min ||A x - b||₂ subject to x ≥ 0, by Lawson and Hanson's
// active-set method (Solving Least Squares Problems, 1974, ch. 23). The pack model (pack_model.h)
// writes a pack's metric vector as a non-negative mix of the microbenchmarks' with it.
#pragma once

#include <vector>

namespace emo {

struct NnlsOptions {
  // The optimality tolerance on the gradient w = Aᵀ(b − A x): the method stops when w_j ≤ tol for
  // every j with x_j = 0. Negative: 1e-10 · ‖A‖_F · ‖b‖₂, i.e. relative to the problem's scale.
  double tol = -1;
  // The cap on outer iterations (columns entering the passive set). Zero or less: 3 n.
  int max_iter = 0;
};

struct NnlsResult {
  int iterations = 0;      // outer iterations taken
  bool converged = false;  // false when the cap was hit (x is then feasible but maybe not optimal)
  double residual = 0;     // ‖A x − b‖₂
  double tol = 0;          // the tolerance used
};

// A solver for m×n problems that keeps its scratch between calls (no allocation per solve once
// sized). A is dense, row-major: A[r * n + c]. x has n entries. Not thread-safe: one per thread.
class NnlsSolver {
 public:
  NnlsSolver(int m, int n);
  NnlsResult Solve(const double* a, const double* b, double* x, const NnlsOptions& opt = {});
  int rows() const { return m_; }
  int cols() const { return n_; }

 private:
  // Least squares on the passive columns only: z[passive_[i]] for i < np_, by Householder QR.
  // False when a column is numerically dependent on the ones before it.
  bool SolvePassive(const double* a, const double* b, double* z);
  void Gradient(const double* a, const double* b, const double* x);  // w_ = Aᵀ(b − A x), resid_ = b − A x

  int m_, n_;
  std::vector<double> w_, z_, resid_, q_, rhs_, colnorm_;
  std::vector<int> passive_;  // indices of the passive (free) columns, np_ of them
  std::vector<char> in_passive_, skip_;
  int np_ = 0;
};

// One-shot convenience: A is m×n row-major; x is resized to n.
NnlsResult Nnls(const std::vector<double>& a, int m, int n, const std::vector<double>& b, std::vector<double>* x,
                const NnlsOptions& opt = {});

}  // namespace emo
