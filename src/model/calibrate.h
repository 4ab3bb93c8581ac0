// calibrate.h — `emo calibrate`'s method: fills a DeviceProfile by running the 12 microbenchmarks
// (device/microbench.h) at each chosen SM clock through the device interface only: the clock locked
// through GpuControl, time from the launches' end times, energy from the energy counter, metric
// vectors from range profiling. Works on any BenchDevice (the simulator, or CUDA beside NVML).
//
// One measurement (benchmark b at clock f): launch b back to back for the clock change to land
// plus `window_s`, polling the energy counter every poll_ms. The counter advances only at its
// updates (every few tens of ms), so power is taken between the first and the last update seen
// after the clock landed: P = ΔE/Δt over whole update intervals. Time per launch is the spacing of
// launch ends inside that window; energy per launch P·t. Repeated (new runs) until the spread of
// the energies is below `spread` or `max_repeats` runs; the mean is kept.
//
// The kernel floor (DeviceProfile::kernel_floor_s) at each clock: 256 empty kernels behind their
// gate, each timed from its start to its end.
//
// The collective curve (DeviceProfile::collective_time_ratio) at each clock: every GPU locked
// there, kCollectiveLaunches all-reduces of 256 MiB between two GPUs (BenchDevice::RunCollective),
// the mean time of all but the first over that at the default clock. A device that cannot run one
// leaves the curve empty, and `note` says why.
//
// Resumable: every finished measurement is appended to PROFILE.partial (JSON lines); a later run
// with the same device and clocks skips what is there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device/microbench.h"
#include "model/device_profile.h"

namespace emo {

struct CalibrateOptions {
  std::vector<int> clocks_mhz;  // the clocks to profile (ascending, supported); must hold the default
  double window_s = 0.25;       // steady time measured per run
  double poll_ms = 0.5;
  int min_repeats = 2, max_repeats = 5;
  double spread = 0.01;                               // (max − min) / mean of the repeats' energies
  std::string partial_path;                           // the resume file; "" for none
  std::string command, date;                          // provenance
  std::function<void(int done, int total)> progress;  // after each measurement
  std::function<void(const std::string&)> note;       // a measurement left out, and why
};

// The default subset of clocks: `n` clocks spread evenly over `supported` by index, always with
// the lowest and the highest. n ≤ 0 or ≥ size: every clock.
std::vector<int> SpreadClocks(const std::vector<int>& supported, int n);

// Parses --clocks: "all", a count below 100 ("13"), or MHz values ("210,810,1410") that must be supported.
bool ParseClocks(const std::string& text, const std::vector<int>& supported, std::vector<int>* out, std::string* err);

// Runs the calibration. False with *err when the device failed or a measurement never settled.
bool Calibrate(BenchDevice& device, const CalibrateOptions& opt, DeviceProfile* out, std::string* err);

}  // namespace emo
