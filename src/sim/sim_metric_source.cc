// sim_metric_source.cc — range profiling in a simulated run.
#include "sim/sim_metric_source.h"

#include <algorithm>
#include <map>

#include "sim/engine_constants.h"

namespace emo::sim {

PackMetrics ToPackMetrics(const CounterValues& c, double sm_mhz) {
  PackMetrics m;
  m.v[kSmCyclesActive] = c.sm_cycles_active;
  m.v[kWarpsPerActiveCycle] = c.warps_per_active_cycle;
  m.v[kDramReadBytes] = c.dram_read_bytes;
  m.v[kDramWriteBytes] = c.dram_write_bytes;
  m.v[kL1Bytes] = c.l1_bytes;
  m.v[kL2Bytes] = c.l2_bytes;
  m.v[kInstAlu] = c.inst_alu;
  m.v[kInstFma] = c.inst_fma;
  m.v[kInstFp64] = c.inst_fp64;
  m.v[kInstLsu] = c.inst_lsu;
  m.v[kInstTensor] = c.inst_tensor;
  m.kernels = c.kernels;
  m.time_ns = c.time_ns;
  m.sm_mhz = sm_mhz;
  return m;
}

bool SimMetricSource::Profile(const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out, ProfileCost* cost,
                              std::string* err) {
  // Ranges per GPU, checked for order and overlap; `where` maps each back to its place in `ranges`.
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> per_gpu;
  for (const KernelRange& r : ranges) {
    if (r.first < 0 || r.last < r.first) {
      *err = "range " + std::to_string(r.first) + ".." + std::to_string(r.last) + " on GPU " + std::to_string(r.gpu) +
             " is empty or negative";
      return false;
    }
    per_gpu[r.gpu].push_back({r.first, r.last});
  }
  Engine engine(program_, options_);
  for (auto& [gpu, list] : per_gpu) {
    if (gpu < 0 || gpu >= engine.gpus()) {
      *err = "no simulated GPU " + std::to_string(gpu) + " (there are " + std::to_string(engine.gpus()) + ")";
      return false;
    }
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i)
      if (list[i].first <= list[i - 1].second) {
        *err = "ranges overlap on GPU " + std::to_string(gpu) + " at launch " + std::to_string(list[i].first);
        return false;
      }
    engine.ProfileRanges(gpu, list);
  }
  if (!engine.Run(err)) return false;
  out->clear();
  for (const KernelRange& r : ranges) {
    const auto& list = per_gpu[r.gpu];
    const size_t i =
        static_cast<size_t>(std::lower_bound(list.begin(), list.end(), std::pair(r.first, r.last)) - list.begin());
    if (r.last >= engine.kernels_launched(r.gpu)) {
      *err = "GPU " + std::to_string(r.gpu) + " launched " + std::to_string(engine.kernels_launched(r.gpu)) +
             " kernels; range " + std::to_string(r.first) + ".." + std::to_string(r.last) + " is beyond them";
      return false;
    }
    out->push_back(ToPackMetrics(engine.RangeCounters(r.gpu)[i], engine.ClockMhz(r.gpu)));
  }
  // Kernel replay: every kernel of a range runs once per pass (engine_constants.h).
  cost->ranges += static_cast<int64_t>(ranges.size());
  cost->passes += static_cast<int64_t>(ranges.size()) * kRangeProfilerPasses;
  for (const PackMetrics& m : *out) cost->kernels_profiled += m.kernels;
  for (const auto& [gpu, list] : per_gpu) cost->overhead_s += engine.ProfilingOverheadNs(gpu) * 1e-9;
  return true;
}

}  // namespace emo::sim
