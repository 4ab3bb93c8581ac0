// search_gap.cc — the search's optimality gap on small instances: the DP's predicted energy over
// the exact optimum of the same model (search/mip_reference.h, GLPK) on the random two-GPU
// instances of tests/search_instances.h, per instance and as mean and max. With SPLIT=1 the
// predictor splits kernels at landings (as emo optimize's does), which the program does not
// restate: the optimum is then found by enumerating every assignment (4^(2 POINTS) passes).
// Run: build/search_gap [SEEDS=8] [MAX_STATES=8] [POINTS=7] [LOCAL_SEARCH=0] [PAIRS=0] [BACKWARD=1] [SPLIT=0]
//                       [GPU_DELAYS=1] [BY_WORK=0] [FIRST_SEED=1]
// (points per GPU: the grid is the iteration / POINTS, rounded up to a ms; budgets 0, 0.02, 0.05, 0.2; 6-12 packs; no
// latency or jitter, changes at every point: the settings under which the program is exact)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "search/dp_search.h"
#include "search/mip_reference.h"
#include "search_instances.h"

int main(int argc, char** argv) {
  using namespace emo;
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 8;
  const int max_states = argc > 2 ? std::atoi(argv[2]) : 8;
  const int per_gpu = argc > 3 ? std::atoi(argv[3]) : 7;
  const bool local_search = argc > 4 && std::atoi(argv[4]) != 0;
  const bool pairs = argc > 5 && std::atoi(argv[5]) != 0;
  const bool backward = argc <= 6 || std::atoi(argv[6]) != 0;
  const bool split = argc > 7 && std::atoi(argv[7]) != 0;
  const bool gpu_delays = argc <= 8 || std::atoi(argv[8]) != 0;
  const bool by_work = argc > 9 && std::atoi(argv[9]) != 0;
  const int first_seed = argc > 10 ? std::atoi(argv[10]) : 1;  // instances never run before: a later range
  std::printf("%4s %5s %6s %6s %10s %10s %7s %7s %7s\n", "seed", "packs", "points", "budget", "optimum_j", "search_j",
              "gap_%", split ? "enum_s" : "mip_s", "dp_s");
  double sum = 0, most = 0;
  int n = 0, over = 0;
  for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
    const int kernels = 6 + 2 * (seed - 1) % 7;  // 6, 8, 10, 12, 7, 9, 11, 6, ...
    RandomInstance inst(static_cast<uint32_t>(seed), kernels, split);
    if (!inst.err.empty()) {
      std::fprintf(stderr, "seed %d: %s\n", seed, inst.err.c_str());
      return 1;
    }
    for (double budget : {0.0, 0.02, 0.05, 0.2}) {
      SearchOptions o = ExactOptions(budget, std::ceil(inst.pred.period_ns() / per_gpu * 1e-6), 0);
      o.max_states = max_states;
      o.local_search = local_search;
      o.pairs = pairs;
      o.backward = backward;
      o.gpu_delays = gpu_delays;
      o.gpu_delays_by_work = by_work;
      MipResult m;
      SearchResult r;
      std::string err;
      if (split) {  // the optimum by enumeration, timed as the program would be
        const auto start = std::chrono::steady_clock::now();
        double end = 0;
        m.energy_j = Exhaustive(inst.pred, o.grid_ms * 1e6, budget, 0, &end);
        m.points = inst.pred.gpus() * static_cast<int>(std::ceil(inst.pred.period_ns() / (o.grid_ms * 1e6)));
        m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      if ((!split && !SolveMip(inst.pred, o, 300, &m, &err)) || !Search(inst.pred, o, &r, &err)) {
        std::fprintf(stderr, "seed %d, budget %g: %s\n", seed, budget, err.c_str());
        return 1;
      }
      const double gap = r.predicted.energy_j / m.energy_j - 1;
      std::printf("%4d %5d %6d %6.2f %10.4f %10.4f %7.3f %7.2f %7.3f\n", seed, kernels, m.points, budget, m.energy_j,
                  r.predicted.energy_j, 100 * gap, m.seconds, r.seconds);
      sum += gap;
      most = std::max(most, gap);
      over += gap > 0.03;
      ++n;
    }
  }
  std::printf(
      "gap over %d instances: mean %.2f %%, max %.2f %%, %d above 3 %% (max_states %d, grid: iteration / %d, local "
      "search %s, pairs %s, backward DP %s, GPU delay states %s%s%s)\n",
      n, 100 * sum / n, 100 * most, over, max_states, per_gpu, local_search ? "on" : "off", pairs ? "on" : "off",
      backward ? "on" : "off", gpu_delays ? "on" : "off", gpu_delays && by_work ? " by work" : "",
      split ? ", kernels split at landings, optimum by enumeration" : "");
  return 0;
}
