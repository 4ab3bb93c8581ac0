// static_sweep.h — the device's own bound, read beside every optimizer figure: a workload measured
// at each static SM clock locked on all GPUs, over several seeds, and the best single clock within
// a slowdown budget. `emo sim --sweep-clocks` prints it; other commands call it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apply/measurement.h"
#include "sim/program.h"

namespace emo::sim {

// One static clock measured over the seeds. Slowdown and saving are paired per seed against the
// default run of the same seed (same run-to-run draws), then averaged; their spreads are over seeds.
struct StaticPoint {
  int mhz = 0;                // 0: the default (no lock; the driver's governor at its boost clock)
  Spread iteration_ms;        // over seeds
  Spread iteration_energy_j;  // all GPUs, per iteration
  Spread slowdown;            // T(f) / T(default) - 1, per seed
  Spread saving;              // 1 - E(f) / E(default), per seed
  double window_s = 0;        // mean measured window
  double counter_error = 0;   // largest typical (rms) relative error of a run's window energy from the
                              // energy counter's steps: update interval / (√6 · window)
};

// Measures `program` at its default clocks and at each clock in `mhz` (locked on every GPU before
// the run starts; the lock lands within the DVFS latency, inside the warm-up), each with every seed
// in `seeds`, `iterations` iterations of which the first `warmup` are not measured. *out gets the
// default point first (mhz 0), then one point per clock in the order given. The power limit stays
// at the device's default, as a user's locked clock would run. False with *err when a run fails or
// an argument is bad (no seeds, a clock outside the device's table, warmup >= iterations).
bool SweepStaticClocks(const Program& program, const std::vector<int>& mhz, const std::vector<uint64_t>& seeds,
                       int iterations, int warmup, std::vector<StaticPoint>* out, std::string* err);

// The point with the least mean energy whose mean slowdown is at most `budget` (0.02 = 2 %) among
// `points` (SweepStaticClocks' output; the default point always qualifies). nullptr when empty.
const StaticPoint* BestStaticClock(const std::vector<StaticPoint>& points, double budget);

// The clocks to sweep on `device`: "all" (every supported clock up to the boost ceiling), "" (the
// default subset: the boost ceiling and every sixth table entry below it, 90 MHz apart on the A100,
// down to the lowest clock), or a comma-separated list of MHz from the device's table. False with
// *err naming the bad entry.
bool SweepClockList(const std::string& device, const std::string& arg, std::vector<int>* mhz, std::string* err);

}  // namespace emo::sim
