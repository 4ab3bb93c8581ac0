// clock_sampler.h — a controller that only reads: samples every GPU's SM clock as the device
// reports it (throttling included) every period, for the pack model to learn the clock each pack
// really ran at in a traced run.
#pragma once

#include <utility>
#include <vector>

#include "apply/controller.h"
#include "device/gpu_control.h"

namespace emo {

class ClockSampler : public Controller {
 public:
  ClockSampler(const GpuControl* gpus, double period_ms)
      : gpus_(gpus), period_ms_(period_ms), samples_(gpus->Count()) {}
  double PeriodMs() const override { return period_ms_; }
  void Tick(double now_ns) override {
    for (size_t g = 0; g < samples_.size(); ++g)
      if (const auto mhz = gpus_->ClockMhz(static_cast<int>(g))) samples_[g].emplace_back(now_ns, *mhz);
  }
  // Per GPU: (time ns, MHz), ascending.
  const std::vector<std::vector<std::pair<double, double>>>& samples() const { return samples_; }

 private:
  const GpuControl* gpus_;
  double period_ms_;
  std::vector<std::vector<std::pair<double, double>>> samples_;
};

}  // namespace emo
