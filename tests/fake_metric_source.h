// fake_metric_source.h — a scripted MetricSource for pipeline tests: the test gives each kernel's
// counters per GPU (by launch ordinal), and a range reads as their sum, as range profiling would.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "device/metric_source.h"

namespace emo {

class FakeMetricSource : public MetricSource {
 public:
  std::map<int, std::vector<PackMetrics>> kernels;  // per GPU, by launch ordinal
  int passes_per_range = 1;

  bool Profile(const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out, ProfileCost* cost,
               std::string* err) override {
    out->clear();
    for (const KernelRange& r : ranges) {
      const auto it = kernels.find(r.gpu);
      if (it == kernels.end() || r.first < 0 || r.last < r.first || r.last >= static_cast<int64_t>(it->second.size())) {
        *err = "no kernels " + std::to_string(r.first) + ".." + std::to_string(r.last) + " on GPU " +
               std::to_string(r.gpu);
        return false;
      }
      PackMetrics sum;
      for (int64_t k = r.first; k <= r.last; ++k) sum.Add(it->second[static_cast<size_t>(k)]);
      out->push_back(sum);
      cost->ranges += 1;
      cost->passes += passes_per_range;
      cost->kernels_profiled += sum.kernels * passes_per_range;
    }
    return true;
  }
};

}  // namespace emo
