// static_sweep.cc — static-clock sweeps over seeds (see static_sweep.h).
#include "sim/static_sweep.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"

namespace emo::sim {
namespace {

// Each end of a window reads the counter up to one update interval P late (uniformly), so the
// window's energy is off by the difference of two such lags: rms P / √6 of the window.
double CounterError(double period_s, double window_s) {
  return window_s > 0 ? period_s / std::sqrt(6.0) / window_s : 1;
}

struct Run {
  double iteration_ms = 0, iteration_energy_j = 0, window_s = 0, counter_error = 0;
};

// One run with every GPU locked at `mhz` (0: default governor), measured after `warmup`.
bool RunAt(const Program& program, int mhz, uint64_t seed, int iterations, int warmup, Run* out, std::string* err) {
  EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed;
  eo.record_trace = false;
  Engine engine(program, eo);
  SimGpuControl gpus(&engine);
  SimHost host(&engine);
  for (int g = 0; mhz > 0 && g < gpus.Count(); ++g)
    if (!gpus.SetLockedClock(g, mhz, err)) return false;
  Meter meter(&gpus, warmup);
  host.Add(&meter);
  if (!engine.Run(err)) return false;
  Measurement m;
  if (!meter.Close(engine.end_ns(), &m, err)) return false;
  out->iteration_ms = m.iteration_ms();
  out->iteration_energy_j = m.iteration_energy_j();
  out->window_s = m.window_s;
  out->counter_error = CounterError(engine.EnergyCounterPeriodS(0), m.window_s);
  return true;
}

}  // namespace

bool SweepStaticClocks(const Program& program, const std::vector<int>& mhz, const std::vector<uint64_t>& seeds,
                       int iterations, int warmup, std::vector<StaticPoint>* out, std::string* err) {
  out->clear();
  const DeviceSpec* spec = FindDevice(program.device);
  if (!spec) {
    *err = "unknown device '" + program.device + "'";
    return false;
  }
  if (seeds.empty()) {
    *err = "no seeds to sweep";
    return false;
  }
  if (iterations < 1 || warmup < 0 || warmup >= iterations) {
    *err = "iterations (" + std::to_string(iterations) + ") must exceed warmup (" + std::to_string(warmup) + ")";
    return false;
  }
  for (int f : mhz)
    if (!std::binary_search(spec->sm_clocks_mhz.begin(), spec->sm_clocks_mhz.end(), f)) {
      *err = std::to_string(f) + " MHz is not a supported clock of " + spec->name;
      return false;
    }
  std::vector<int> clocks = {0};
  clocks.insert(clocks.end(), mhz.begin(), mhz.end());
  std::vector<Run> base(seeds.size());
  for (int f : clocks) {
    std::vector<double> ms, joules, slowdown, saving;
    double window = 0, counter_error = 0;
    for (size_t s = 0; s < seeds.size(); ++s) {
      Run r;
      if (!RunAt(program, f, seeds[s], iterations, warmup, &r, err)) {
        *err = (f > 0 ? "at " + std::to_string(f) + " MHz" : std::string("at the default clocks")) + ", seed " +
               std::to_string(seeds[s]) + ": " + *err;
        return false;
      }
      if (f == 0) base[s] = r;
      ms.push_back(r.iteration_ms);
      joules.push_back(r.iteration_energy_j);
      slowdown.push_back(base[s].iteration_ms > 0 ? r.iteration_ms / base[s].iteration_ms - 1 : 0);
      saving.push_back(base[s].iteration_energy_j > 0 ? 1 - r.iteration_energy_j / base[s].iteration_energy_j : 0);
      window += r.window_s / static_cast<double>(seeds.size());
      counter_error = std::max(counter_error, r.counter_error);
    }
    StaticPoint p;
    p.mhz = f;
    p.iteration_ms = SpreadOf(ms);
    p.iteration_energy_j = SpreadOf(joules);
    p.slowdown = SpreadOf(slowdown);
    p.saving = SpreadOf(saving);
    p.window_s = window;
    p.counter_error = counter_error;
    out->push_back(p);
  }
  return true;
}

const StaticPoint* BestStaticClock(const std::vector<StaticPoint>& points, double budget) {
  const StaticPoint* best = nullptr;
  for (const StaticPoint& p : points)
    if ((p.mhz == 0 || p.slowdown.mean <= budget) &&
        (!best || p.iteration_energy_j.mean < best->iteration_energy_j.mean))
      best = &p;
  return best;
}

bool SweepClockList(const std::string& device, const std::string& arg, std::vector<int>* mhz, std::string* err) {
  mhz->clear();
  const DeviceSpec* spec = FindDevice(device);
  if (!spec) {
    *err = "unknown device '" + device + "'";
    return false;
  }
  const std::vector<int>& table = spec->sm_clocks_mhz;
  const int top = spec->boost_ceiling_mhz();
  if (arg == "all") {
    for (int f : table)
      if (f <= top) mhz->push_back(f);
  } else if (arg.empty()) {
    // From the boost ceiling down, every sixth entry, then the lowest clock.
    auto it = std::upper_bound(table.begin(), table.end(), top);
    for (ptrdiff_t i = (it - table.begin()) - 1; i >= 0; i -= 6) mhz->push_back(table[static_cast<size_t>(i)]);
    if (mhz->back() != table.front()) mhz->push_back(table.front());
  } else {
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t used = 0;
      int f = 0;
      try {
        f = std::stoi(item, &used);
      } catch (...) {
        used = 0;
      }
      if (used == 0 || used != item.size()) {
        *err = "'" + item + "' is not a clock in MHz (expected all, or a list such as 1410,1200,1005)";
        return false;
      }
      if (!std::binary_search(table.begin(), table.end(), f) || f > top) {
        *err = std::to_string(f) + " MHz is not a supported clock of " + spec->name + " (" +
               std::to_string(table.front()) + "-" + std::to_string(top) + " MHz in its table)";
        return false;
      }
      mhz->push_back(f);
    }
    if (mhz->empty()) {
      *err = "no clocks to sweep";
      return false;
    }
  }
  return true;
}

}  // namespace emo::sim
