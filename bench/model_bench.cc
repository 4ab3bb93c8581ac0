// model_bench.cc — speed of the pack model: NNLS fits of 10 000 packs (11 rows, 12 microbenchmarks)
// and their time and energy tables over 81 clocks, against the goal of under 1 s for the largest
// workload's unique packs (df_index_resolver has 190). Run: build/model_bench
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "model/nnls.h"
#include "model/pack_model.h"

namespace emo {
namespace {

// A profile with 81 clocks (210..1395 MHz by 15, plus 1410) and random metric vectors that are
// sparse like real ones: cycles and warps everywhere, a few counters per benchmark.
DeviceProfile BenchProfile() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(0, 1);
  DeviceProfile p;
  p.device = "bench";
  for (int f = 210; f <= 1395; f += 15) p.clocks_mhz.push_back(f);
  p.clocks_mhz.push_back(1410);
  p.default_mhz = 1410;
  for (int b = 0; b < kMicrobenches; ++b) {
    auto& m = p.bench[b].metrics;
    m[kSmCyclesActive] = 1e6 * (0.5 + u(rng));
    m[kWarpsPerActiveCycle] = 8 + 56 * u(rng);
    for (int k = kDramReadBytes; k < kMetrics; ++k) m[k] = u(rng) < 0.3 ? 1e7 * u(rng) : 0;
    for (int f : p.clocks_mhz) {
      const double t = (0.5 + u(rng) * 0.01) * 1e-3 * 1410.0 / f + 0.1e-3 * (b % 3);
      p.bench[b].time_s.push_back(t);
      p.bench[b].energy_j.push_back(t * (80 + 200 * (f / 1410.0) * (f / 1410.0)));
    }
  }
  return p;
}

// Packs: random non-negative mixes of 1-4 benchmarks with a few percent of noise per counter, so
// most are slightly outside the cone as measured packs are.
void BenchPacks(const DeviceProfile& p, int n, std::vector<PackMetrics>* packs, std::vector<PackObservation>* obs) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < n; ++i) {
    PackMetrics m;
    const int parts = 1 + i % 4;
    for (int k = 0; k < parts; ++k) {
      PackMetrics one;
      one.v = p.bench[rng() % kMicrobenches].metrics;
      const double w = 0.1 + 3 * u(rng);
      for (int r = 0; r < kMetrics; ++r)
        if (r != kWarpsPerActiveCycle) one.v[r] *= w * (0.97 + 0.06 * u(rng));
      m.Add(one);
    }
    packs->push_back(m);
    obs->push_back({1e-3 * (0.2 + 5 * u(rng)), 1410, 0});
  }
}

void BM_PredictPacks(benchmark::State& state) {
  const DeviceProfile prof = BenchProfile();
  std::vector<PackMetrics> packs;
  std::vector<PackObservation> obs;
  BenchPacks(prof, static_cast<int>(state.range(0)), &packs, &obs);
  PackModel model(prof);
  PackTables tables;
  std::string err;
  double residual = 0;
  for (auto _ : state) {
    if (!PredictPacks(model, packs, obs, &tables, &err)) state.SkipWithError(err.c_str());
    benchmark::DoNotOptimize(tables.time_s.data());
  }
  for (double r : tables.rel_residual) residual += r;
  state.counters["packs/s"] =
      benchmark::Counter(static_cast<double>(packs.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["mean_rel_residual"] = residual / static_cast<double>(packs.size());
  state.counters["clocks"] = model.clocks();
}
BENCHMARK(BM_PredictPacks)->Arg(190)->Arg(10000)->Unit(benchmark::kMillisecond);

// NNLS alone on the same shape (11×12).
void BM_Nnls(benchmark::State& state) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const int m = 11, n = 12, problems = 10000;
  std::vector<double> a(m * n), b(static_cast<size_t>(problems) * m), x(n);
  for (double& v : a) v = u(rng) < 0.5 ? 0 : u(rng);
  for (double& v : b) v = u(rng);
  NnlsSolver solver(m, n);
  for (auto _ : state) {
    for (int i = 0; i < problems; ++i) solver.Solve(a.data(), &b[static_cast<size_t>(i) * m], x.data());
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["solves/s"] = benchmark::Counter(problems, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Nnls)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace emo

BENCHMARK_MAIN();
