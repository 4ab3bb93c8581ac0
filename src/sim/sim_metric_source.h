// sim_metric_source.h — the simulator as a MetricSource: profiles ranges of kernels (by launch
// ordinal on a GPU) in a run of the program of its own, as CUPTI's range profiler would in a
// profiled run of the job, and returns the metrics table's counters with measurement noise.
// Only code that hosts the simulator includes this.
#pragma once

#include "device/metric_source.h"
#include "sim/engine.h"
#include "sim/program.h"

namespace emo::sim {

class SimMetricSource : public MetricSource {
 public:
  // Each Profile() runs `program` with `options` (its seed too), at default clocks, long enough
  // to launch the last ordinal asked for.
  SimMetricSource(const Program& program, const EngineOptions& options) : program_(program), options_(options) {}
  bool Profile(const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out, ProfileCost* cost,
               std::string* err) override;

 private:
  const Program& program_;
  EngineOptions options_;
};

// The counters of a range as the metrics table orders them, at the clock it ran.
PackMetrics ToPackMetrics(const CounterValues& c, double sm_mhz);

}  // namespace emo::sim
