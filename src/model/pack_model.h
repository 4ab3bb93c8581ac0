// pack_model.h — the pack model of DESIGN.md §4: a pack's metric vector b is written as a
// non-negative mix B x of the 12 microbenchmarks' (NNLS), and its time and energy at every SM clock
// are predicted as the same mix of theirs, anchored to the pack's measured time at its clock.
//
// The fit. Rows are the metrics of PackMetrics with one change: warps per active cycle is an
// average, which does not add up over a mix, so its row is warps × active cycles (warp-cycles, a
// sum, as PackMetrics::Add averages it). Each row, of B and of b alike, is divided by its
// Euclidean norm over the 12 microbenchmarks, so that bytes, instructions and cycles weigh alike
// and every row of B has norm 1. A metric that no microbenchmark shows (a zero row of B) cannot be
// explained by any mix and is left out of the fit. The residual reported is ‖B̃x − b̃‖ in these
// scaled rows, and also relative to ‖b̃‖.
//
// The prediction. Every kernel pays the device's kernel floor τ(f) (an empty kernel's duration,
// DeviceProfile::kernel_floor_s; 0 when the profile has none), which no metric shows, so a pack of
// K kernels measured t0 at its clock f0 is a floor share φ = min(1, K τ(f0) / t0) of its time that
// scales as τ does and draws the idle power, and a body, (1 − φ) t0, that scales as its mix. x_i
// counts runs of microbenchmark i, so the body's raw prediction is t(f) = Σ x_i t_i(f) and
// e(f) = Σ x_i e_i(f). It is then anchored: every t(f) is multiplied by (1 − φ) t0 / t(f0), so that
// the pack's time equals t0 at f0 (f0 between two profiled clocks: t(f0) interpolated linearly).
// The body's energy takes the same factor (the mix's power is kept, only its duration is
// corrected) unless the pack's energy e0 at f0 was measured, in which case it is anchored on its
// own, to e0 less the floor's energy at f0. A pack whose fit is empty (x = 0, e.g. b = 0) has no
// shape to scale: its body keeps (1 − φ) t0 at every clock and draws the idle power (times
// e0 / (idle power(f0) × t0) when e0 is known), flagged anchored = false.
//
// f0 is the clock the pack ran at (the device's clock readings), while the tables are by the clock
// locked: where a benchmark was throttled at a setting (DeviceProfile::Bench::throttled_mhz), its
// time there belongs to the lower clock it held. So the anchor, t(f0) and e(f0), reads each
// benchmark's time and energy by the clock it actually ran at (its unthrottled cells and its
// throttled ones at their held clock, linear between them, and above the highest clock it held,
// its trend over the top tenth of its range continued as a power law: a pack may run faster than
// the benchmark could under the power limit); the tables predicted stay by setting, as a policy
// locks them.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "device/metric_source.h"
#include "model/device_profile.h"
#include "model/nnls.h"

namespace emo {

// What was measured of a pack besides its counters.
struct PackObservation {
  double time_s = 0;    // its duration at mhz (> 0)
  double mhz = 0;       // the SM clock it ran at; ≤ 0: the profile's default clock
  double energy_j = 0;  // its energy at mhz; ≤ 0: unknown
};

struct PackFit {
  std::array<double, kMicrobenches> x{};  // the mix, in runs of each microbenchmark
  double residual = 0;                    // ‖B̃x − b̃‖ in scaled rows
  double rel_residual = 0;                // residual / ‖b̃‖ (0 when b̃ = 0)
  double time_scale = 1;                  // the anchoring factors applied to the raw mix
  double energy_scale = 1;
  double floor_share = 0;  // φ: the share of t0 that is its kernels' floor
  double energy_f0 = 0;    // the predicted energy at f0 (the measured one when given)
  bool anchored = true;    // false: empty fit, time held at t0 (see above)
  int iterations = 0;      // NNLS outer iterations
  bool converged = true;
};

class PackModel {
 public:
  // The profile must pass CheckProfile.
  explicit PackModel(const DeviceProfile& profile);

  int clocks() const { return static_cast<int>(clocks_mhz_.size()); }
  const std::vector<int>& clocks_mhz() const { return clocks_mhz_; }
  int default_mhz() const { return default_mhz_; }
  int fit_rows() const { return static_cast<int>(rows_.size()); }
  const std::vector<int>& fit_metrics() const { return rows_; }  // the metric of each fitted row
  // Power of gaps at each clock: the idle/control microbenchmark's energy over its time (W).
  const std::vector<double>& idle_power_w() const { return idle_power_w_; }

  // Fits one pack and writes its time (s) and energy (J) at every clock into time_s[0..clocks())
  // and energy_j[0..clocks()). False with *err when the observation is unusable (time not
  // positive, clock outside the profiled range). Not thread-safe (keeps NNLS scratch): one model
  // per thread.
  bool Predict(const PackMetrics& m, const PackObservation& obs, PackFit* fit, double* time_s, double* energy_j,
               std::string* err);
  // The two halves of Predict: the NNLS fit of m into *fit (x, residuals), and the anchoring of
  // fit->x, for a pack of `kernels` kernels, to an observation. A pack that repeats a fitted one
  // takes its mix and is anchored to its own observation.
  void Fit(const PackMetrics& m, PackFit* fit);
  bool Anchor(int64_t kernels, const PackObservation& obs, PackFit* fit, double* time_s, double* energy_j,
              std::string* err);

 private:
  // The fitted row r of b (unscaled): metric rows_[r], warp-cycles for warps per active cycle.
  double RowValue(const std::array<double, kMetrics>& v, int r) const;

  std::vector<int> clocks_mhz_;
  int default_mhz_ = 0;
  std::vector<int> rows_;              // metric per fitted row
  std::vector<double> row_scale_;      // 1 / norm of the row over the microbenchmarks
  std::vector<double> b_matrix_;       // scaled B, rows × kMicrobenches, row-major
  std::vector<double> time_, energy_;  // [bench * clocks + clock]
  // Per benchmark, by the clock it actually ran at (ascending, one entry per clock): MHz, time, energy.
  std::array<std::vector<double>, kMicrobenches> held_mhz_, held_t_, held_e_;
  std::vector<double> idle_power_w_;
  std::vector<double> floor_s_;  // the kernel floor per clock (zeros when the profile has none)
  NnlsSolver nnls_;
  std::vector<double> rhs_, raw_t_, raw_e_;
};

// A per-clock table (table[c] belongs to clocks_mhz[c], ascending) at mhz: the entry of a clock at
// or up to half a MHz below mhz, else linear between the two clocks around it; outside the range,
// the end's entry.
double AtClock(const std::vector<int>& clocks_mhz, const double* table, double mhz);

// Every pack's prediction, flat: time_s and energy_j are [pack * clocks + clock], x is
// [pack * kMicrobenches + bench], rel_residual and anchored are per pack.
struct PackTables {
  int packs = 0, clocks = 0;
  std::vector<double> time_s, energy_j, x, rel_residual;
  std::vector<char> anchored;
};

// Predicts packs[i] with observations obs[i] (same length). False with *err naming the pack.
bool PredictPacks(PackModel& model, const std::vector<PackMetrics>& packs, const std::vector<PackObservation>& obs,
                  PackTables* out, std::string* err);

}  // namespace emo
