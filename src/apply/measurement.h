// measurement.h — time and energy of a run, measured as a user would on hardware: over a window of
// iterations, from the GPUs' cumulative energy counters. One module and one JSON schema for
// `emo sim`, `emo run` and the tests, so that a key means the same thing everywhere:
//
//   window_s            length of the measured window, s
//   iterations          iterations in the window (those after the first `warmup`)
//   energy_j            energy over the window, all GPUs, J
//   avg_power_w         energy_j / window_s, W
//   iteration_ms        window_s / iterations, ms           (null without iteration starts)
//   iteration_energy_j  energy_j / iterations, J            (null without iteration starts)
//   per_gpu             [{gpu, name, energy_j, iteration_energy_j, avg_power_w}], same units
//
// The window opens at the start of iteration `warmup` (or at Open(), for a window over the whole
// run: warmup -1) and closes when Close() is called: at the end of the run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apply/controller.h"
#include "device/gpu_control.h"

namespace emo {

struct Measurement {
  double window_s = 0;
  int iterations = 0;
  double energy_j = 0;
  std::vector<double> gpu_energy_j;  // per GPU
  std::vector<std::string> gpu_names;

  double iteration_ms() const { return iterations > 0 ? window_s * 1e3 / iterations : 0; }
  double iteration_energy_j() const { return iterations > 0 ? energy_j / iterations : 0; }
  double avg_power_w() const { return window_s > 0 ? energy_j / window_s : 0; }
};

// The schema above; `into` keeps its other keys.
void AddMeasurementJson(const Measurement& m, nlohmann::ordered_json* into);

// Mean and spread of one quantity over repeated runs (seeds): stdev is the sample standard
// deviation (0 for one run), rel_stdev = stdev / mean.
struct Spread {
  int n = 0;
  double mean = 0, stdev = 0, min = 0, max = 0;
  double rel_stdev() const { return mean != 0 ? stdev / mean : 0; }
  double rel_range() const { return mean != 0 ? (max - min) / mean : 0; }
};
Spread SpreadOf(const std::vector<double>& values);
// {"mean", "stdev", "min", "max", "rel_stdev", "rel_range"}.
nlohmann::ordered_json SpreadJson(const Spread& s);

// A controller that only reads: opens the window at the start of iteration `warmup`.
class Meter : public Controller {
 public:
  Meter(const GpuControl* gpus, int warmup) : gpus_(gpus), warmup_(warmup) {}
  // Opens the window now (a run without iteration starts), unless an iteration opens it later.
  void Open(double now_ns);
  void OnIterationStart(int iteration, double now_ns) override;
  // Closes the window at end_ns (the end of the last iteration). False with *err when the window
  // never opened or an energy counter could not be read.
  bool Close(double end_ns, Measurement* out, std::string* err);
  int iterations_seen() const { return seen_; }

 private:
  bool ReadEnergy(std::vector<double>* out, std::string* err) const;

  const GpuControl* gpus_;
  int warmup_;
  int seen_ = 0;
  bool open_ = false;
  int first_ = 0;  // iterations seen when the window opened
  double t0_ns_ = 0;
  std::vector<double> e0_;
  std::string error_;
};

}  // namespace emo
