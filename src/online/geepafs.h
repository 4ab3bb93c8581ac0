// geepafs.h — GEEPAFS's "Assure" policy (zyjopensource/geepafs, dvfs.c) as an online controller and
// baseline: every 200 ms it samples each GPU's utilisation, memory utilisation, clock and power;
// every 15 s it probes four clocks in zig-zag order, fits memory utilisation (its proxy for
// throughput) against clock with one line or two segments, and locks the clock that keeps a
// fraction p of the predicted full-clock performance, but not below the most efficient probe.
// Spec: ../shared/reference/BASELINES.md §2.
#pragma once

#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/method_options.h"
#include "online/online_method.h"

namespace emo {

struct GeepafsOptions {
  double perf_threshold = 0.90;  // p: the share of full-clock performance to keep (0.95/0.90/0.85 upstream)
  double period_ms = 200;
  double reprobe_s = 15;
  int util_window = 16;  // samples in the moving average of GPU utilisation
  double reg_err_threshold = 100;
  // The lowest clock GEEPAFS sets and its first probe (upstream "freqAvgEff"). 0: upstream's
  // value for A100 (1110 MHz) and V100 (952 MHz); other GPUs, which upstream leaves to the user,
  // get the A100's ratio to its maximum clock (1110/1410), rounded up to a supported clock.
  int min_set_mhz = 0;
};

// Options from the command line's keys p, period-ms, reprobe-s, min-mhz.
bool ParseGeepafsOptions(const MethodOptions& m, GeepafsOptions* out, std::string* err);

// One reading of the probe: the clock that was set during the period it covers, and what the
// driver reported at its end.
struct GeepafsSample {
  int probe = 0;            // index of the probe clock that was set
  double measured_mhz = 0;  // SM clock reported
  double gpu_util_pct = 0;
  double mem_util_pct = 0;
  double power_w = 0;
};

// The decision at the end of a probe, in MHz before clamping and rounding (exposed for tests).
struct GeepafsDecision {
  double bound = 0;   // lowest clock predicted to keep p of full-clock performance
  double cap = 0;     // utilisation-based cap: a GPU that idles needs less than fmax
  double eff = 0;     // probe with the most predicted performance per watt
  double chosen = 0;  // max(min(bound, cap), eff)
};
GeepafsDecision GeepafsDecide(const std::vector<GeepafsSample>& samples, const std::vector<int>& probes_mhz,
                              double max_mhz, double min_set_mhz, double p, double reg_err_threshold);

class Geepafs : public OnlineMethod {
 public:
  // Resets every GPU's clocks, as upstream does at start.
  Geepafs(GpuControl* gpus, const GeepafsOptions& options);
  double PeriodMs() const override { return o_.period_ms; }
  void Tick(double now_ns) override;
  void Finish() override;  // resets the clocks
  void Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const override;

  const std::vector<int>& probes_mhz(int gpu) const { return gpus_state_[static_cast<size_t>(gpu)].probes; }
  // The clock each probe chose, per GPU, in order.
  const std::vector<int>& choices(int gpu) const { return gpus_state_[static_cast<size_t>(gpu)].choices; }

 private:
  struct GpuState {
    std::vector<int> probes;  // 4 clocks, ascending
    int min_set = 0, max = 0;
    std::vector<int> supported;  // ascending
    std::vector<double> util;    // the moving-average window, ring
    size_t util_next = 0;
    double util_sum = 0;
    std::vector<GeepafsSample> samples;
    std::vector<int> choices;
  };
  void Lock(int gpu, int mhz);

  GpuControl* gpus_;
  GeepafsOptions o_;
  std::vector<GpuState> gpus_state_;
  int phase_ = 0;  // ticks into the current probe; -1 outside probing
  int timer_ = 0;  // ticks left until the next probe, outside probing
};

}  // namespace emo
