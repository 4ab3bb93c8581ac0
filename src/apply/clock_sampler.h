// clock_sampler.h — a controller that only reads: samples every GPU's SM clock as the device
// reports it (throttling included) every period, for the pack model to learn the clock each pack
// really ran at in a traced run; optionally only while the GPU is busy (utilisation at least
// min_utilization), for the clock a job runs at on hardware, whose idle clock is far lower. Its
// readers may run on another thread than its host's (a plan in the background: adaptive_player.h).
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include "apply/controller.h"
#include "device/gpu_control.h"

namespace emo {

class ClockSampler : public Controller {
 public:
  ClockSampler(const GpuControl* gpus, double period_ms, double min_utilization = -1)
      : gpus_(gpus), period_ms_(period_ms), min_utilization_(min_utilization), samples_(gpus->Count()) {}
  double PeriodMs() const override { return period_ms_; }
  void Tick(double now_ns) override {
    for (size_t g = 0; g < samples_.size(); ++g) {
      const int gpu = static_cast<int>(g);
      if (min_utilization_ >= 0 && gpus_->Utilization(gpu).value_or(0) < min_utilization_) continue;
      if (const auto mhz = gpus_->ClockMhz(gpu)) {
        std::lock_guard<std::mutex> lock(mu_);
        samples_[g].emplace_back(now_ns, *mhz);
      }
    }
  }
  // Per GPU: the mean of its samples, or 0 without any.
  std::vector<double> MeanMhz() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> out;
    for (const auto& gpu : samples_) {
      double sum = 0;
      for (const auto& [t, mhz] : gpu) sum += mhz;
      out.push_back(gpu.empty() ? 0 : sum / static_cast<double>(gpu.size()));
    }
    return out;
  }
  // Per GPU: (time ns, MHz), ascending; a copy.
  std::vector<std::vector<std::pair<double, double>>> samples() const {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }

 private:
  const GpuControl* gpus_;
  double period_ms_;
  double min_utilization_;
  mutable std::mutex mu_;  // guards samples_
  std::vector<std::vector<std::pair<double, double>>> samples_;
};

}  // namespace emo
