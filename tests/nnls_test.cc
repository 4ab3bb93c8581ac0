// nnls_test.cc — NNLS on cases worked out by hand, on exact recovery of a non-negative x*, and on
// random problems checked against the KKT conditions and, for small n, against brute force over
// every active set.
#include "model/nnls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace emo {
namespace {

double ResidualNorm(const std::vector<double>& a, int m, int n, const std::vector<double>& b,
                    const std::vector<double>& x) {
  double r2 = 0;
  for (int r = 0; r < m; ++r) {
    double s = b[r];
    for (int c = 0; c < n; ++c) s -= a[r * n + c] * x[c];
    r2 += s * s;
  }
  return std::sqrt(r2);
}

// Checks x ≥ 0, w = Aᵀ(b − A x) ≤ tol where x = 0 and |w| ≤ tol where x > 0.
void ExpectKkt(const std::vector<double>& a, int m, int n, const std::vector<double>& b, const std::vector<double>& x,
               double tol) {
  for (int c = 0; c < n; ++c) {
    EXPECT_GE(x[c], 0) << "x[" << c << "]";
    double w = 0;
    for (int r = 0; r < m; ++r) {
      double res = b[r];
      for (int k = 0; k < n; ++k) res -= a[r * n + k] * x[k];
      w += a[r * n + c] * res;
    }
    if (x[c] > 0) {
      EXPECT_LE(std::abs(w), tol) << "w[" << c << "] for x > 0";
    } else {
      EXPECT_LE(w, tol) << "w[" << c << "] for x = 0";
    }
  }
}

// Unconstrained least squares on the columns in `subset` by the normal equations and Gaussian
// elimination with partial pivoting (a method independent of the solver's QR). False if singular.
bool SubsetLeastSquares(const std::vector<double>& a, int m, int n, const std::vector<double>& b,
                        const std::vector<int>& subset, std::vector<double>* x) {
  const int k = static_cast<int>(subset.size());
  std::vector<double> g(k * (k + 1));  // [AᵀA | Aᵀb]
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j)
      for (int r = 0; r < m; ++r) g[i * (k + 1) + j] += a[r * n + subset[i]] * a[r * n + subset[j]];
    for (int r = 0; r < m; ++r) g[i * (k + 1) + k] += a[r * n + subset[i]] * b[r];
  }
  for (int col = 0; col < k; ++col) {
    int piv = col;
    for (int r = col + 1; r < k; ++r)
      if (std::abs(g[r * (k + 1) + col]) > std::abs(g[piv * (k + 1) + col])) piv = r;
    if (std::abs(g[piv * (k + 1) + col]) < 1e-12) return false;
    for (int j = 0; j <= k; ++j) std::swap(g[col * (k + 1) + j], g[piv * (k + 1) + j]);
    for (int r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = g[r * (k + 1) + col] / g[col * (k + 1) + col];
      for (int j = col; j <= k; ++j) g[r * (k + 1) + j] -= f * g[col * (k + 1) + j];
    }
  }
  x->assign(n, 0);
  for (int i = 0; i < k; ++i) (*x)[subset[i]] = g[i * (k + 1) + k] / g[i * (k + 1) + i];
  return true;
}

// The best residual over all active sets whose unconstrained solution is feasible.
double BruteForceResidual(const std::vector<double>& a, int m, int n, const std::vector<double>& b) {
  double best = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << n); ++mask) {
    std::vector<int> subset;
    for (int c = 0; c < n; ++c)
      if (mask & (1 << c)) subset.push_back(c);
    std::vector<double> x;
    if (!SubsetLeastSquares(a, m, n, b, subset, &x)) continue;
    bool feasible = true;
    for (double v : x) feasible = feasible && v >= -1e-12;
    if (feasible) best = std::min(best, ResidualNorm(a, m, n, b, x));
  }
  return best;
}

TEST(Nnls, HandWorkedThreeByTwo) {
  // Columns a1 = (1,0,1), a2 = (1,1,0); b = (1,-2,2). Unconstrained: AᵀA = [[2,1],[1,2]], Aᵀb = (3,-1),
  // x = (7/3, -5/3). With x2 = 0: x1 = a1·b/|a1|² = 3/2 and w2 = a2·(b − a1 x1) = -2.5 ≤ 0, so the
  // optimum is (3/2, 0) with residual (-0.5, -2, 0.5), norm √4.5.
  const std::vector<double> a = {1, 1, 0, 1, 1, 0};
  const std::vector<double> b = {1, -2, 2};
  std::vector<double> x;
  NnlsResult r = Nnls(a, 3, 2, b, &x);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(x[0], 1.5, 1e-12);
  EXPECT_EQ(x[1], 0);
  EXPECT_NEAR(r.residual, std::sqrt(4.5), 1e-12);
}

TEST(Nnls, HandWorkedAllZero) {
  // b opposes both columns: every w_j < 0 at x = 0, which is optimal with residual ‖b‖.
  const std::vector<double> a = {1, 0, 0, 1};
  const std::vector<double> b = {-3, -4};
  std::vector<double> x;
  NnlsResult r = Nnls(a, 2, 2, b, &x);
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_NEAR(r.residual, 5, 1e-12);
}

TEST(Nnls, HandWorkedSecondColumnEnters) {
  // Columns a1 = (1,0), a2 = (1,1), a3 = (0,1); b = (2,1). The largest gradient picks a2 first
  // (w = (2,3,1)), x2 = 1.5; then w1 = 0.5 > 0 brings a1 in and the exact solution (1,1,0) on
  // {a1,a2} is positive. Any x ≥ 0 with a1 x1 + a2 x2 + a3 x3 = b has residual 0; the solver's is
  // that one.
  const std::vector<double> a = {1, 1, 0, 0, 1, 1};
  const std::vector<double> b = {2, 1};
  std::vector<double> x;
  NnlsResult r = Nnls(a, 2, 3, b, &x);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.residual, 0, 1e-12);
  EXPECT_NEAR(x[0], 1, 1e-12);
  EXPECT_NEAR(x[1], 1, 1e-12);
  EXPECT_EQ(x[2], 0);
}

TEST(Nnls, ExactRecoveryOfNonNegativeSolution) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 50; ++trial) {
    const int m = 15, n = 8;
    std::vector<double> a(m * n), xs(n), b(m, 0);
    for (double& v : a) v = u(rng);
    for (int c = 0; c < n; ++c) xs[c] = c % 3 == 0 ? 0 : 1 + u(rng);
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c) b[r] += a[r * n + c] * xs[c];
    std::vector<double> x;
    NnlsResult res = Nnls(a, m, n, b, &x);
    EXPECT_TRUE(res.converged);
    for (int c = 0; c < n; ++c) EXPECT_NEAR(x[c], xs[c], 1e-9) << "trial " << trial << " x[" << c << "]";
    EXPECT_LT(res.residual, 1e-9);
  }
}

TEST(Nnls, RandomProblemsMeetKktAndBruteForce) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial % 6;
    const int m = n + trial % 4;  // full column rank (almost surely)
    std::vector<double> a(m * n), b(m);
    for (double& v : a) v = u(rng);
    for (double& v : b) v = u(rng);
    std::vector<double> x;
    NnlsResult res = Nnls(a, m, n, b, &x);
    ASSERT_TRUE(res.converged) << "trial " << trial;
    EXPECT_NEAR(res.residual, ResidualNorm(a, m, n, b, x), 1e-12);
    ExpectKkt(a, m, n, b, x, 1e-9);
    EXPECT_NEAR(res.residual, BruteForceResidual(a, m, n, b), 1e-9) << "trial " << trial;
  }
}

TEST(Nnls, UnderdeterminedNonNegativeData) {
  // The pack model's shape: 11 rows, 12 non-negative columns; b non-negative, sometimes outside the
  // cone. KKT must hold (brute force over 4096 sets checks a few of them).
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 100; ++trial) {
    const int m = 11, n = 12;
    std::vector<double> a(m * n), b(m);
    for (double& v : a) v = u(rng) < 0.6 ? 0 : u(rng);
    for (double& v : b) v = u(rng);
    std::vector<double> x;
    NnlsResult res = Nnls(a, m, n, b, &x);
    ASSERT_TRUE(res.converged) << "trial " << trial;
    ExpectKkt(a, m, n, b, x, 1e-9);
    if (trial < 5) {
      EXPECT_NEAR(res.residual, BruteForceResidual(a, m, n, b), 1e-8) << "trial " << trial;
    }
  }
}

TEST(Nnls, DependentColumnsAndIterationCap) {
  // Two equal columns: once the first is in, the second adds nothing and must not enter or break the solve.
  const std::vector<double> a = {1, 1, 0, 2, 2, 0, 0, 0, 1};
  const std::vector<double> b = {2, 4, -1};
  std::vector<double> x;
  NnlsResult r = Nnls(a, 3, 3, b, &x);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(x[0] + x[1], 2, 1e-12);
  EXPECT_EQ(x[2], 0);
  EXPECT_NEAR(r.residual, 1, 1e-12);
  // A cap of one iteration on a problem needing two: feasible, flagged.
  const std::vector<double> a2 = {1, 0, 0, 1};
  const std::vector<double> b2 = {1, 2};
  NnlsOptions opt;
  opt.max_iter = 1;
  r = Nnls(a2, 2, 2, b2, &x, opt);
  EXPECT_FALSE(r.converged);
  EXPECT_GE(x[0], 0);
  EXPECT_NEAR(x[1], 2, 1e-12);
  EXPECT_NEAR(r.residual, ResidualNorm(a2, 2, 2, b2, x), 1e-12);
}

}  // namespace
}  // namespace emo
