// iteration_window.cc — keeps a trace's steady-state iterations and the work they issued.
#include "trace/iteration_window.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "trace/counter_tracks.h"

namespace emo {

bool KeepIterationWindow(RankTrace* rank, int64_t warmup, int64_t count, std::string* err) {
  RankTrace& r = *rank;
  const int64_t have = static_cast<int64_t>(r.iterations.size());
  if (warmup < 0 || count < 1 || warmup + count > have) {
    *err = "the trace has " + std::to_string(have) + " iteration" + (have == 1 ? "" : "s") + "; " +
           std::to_string(warmup) + " warm-up + " + std::to_string(count) + " need " + std::to_string(warmup + count);
    return false;
  }
  const int64_t first = r.iterations[static_cast<size_t>(warmup)].start_ns;
  const int64_t last = r.iterations[static_cast<size_t>(warmup + count - 1)].end_ns;
  auto inside = [&](int64_t t) { return t >= first && t <= last; };

  std::unordered_set<int64_t> known, kept;  // correlations of every call, of the kept ones
  for (const CpuCall& c : r.calls) {
    if (c.correlation < 0) continue;
    known.insert(c.correlation);
    if (inside(c.start_ns)) kept.insert(c.correlation);
  }
  auto issued_inside = [&](int64_t correlation, int64_t start_ns) {
    return correlation >= 0 && known.contains(correlation) ? kept.contains(correlation) : inside(start_ns);
  };
  std::erase_if(r.calls, [&](const CpuCall& c) { return !inside(c.start_ns); });
  // Launch ordinals of the kept compute kernels start after those launched before the first of them.
  auto compute = [](const GpuOp& o) { return o.kind == GpuOpKind::kKernel && !o.is_comm; };
  std::vector<int64_t> dropped;  // correlations of the compute kernels cut
  for (const GpuOp& o : r.ops)
    if (compute(o) && !issued_inside(o.correlation, o.start_ns)) dropped.push_back(o.correlation);
  std::erase_if(r.ops, [&](const GpuOp& o) { return !issued_inside(o.correlation, o.start_ns); });
  int64_t first_kept = INT64_MAX;
  for (const GpuOp& o : r.ops)
    if (compute(o)) first_kept = std::min(first_kept, o.correlation);
  r.windowed = true;
  r.kernels_before += std::count_if(dropped.begin(), dropped.end(), [&](int64_t c) { return c < first_kept; });
  std::erase_if(r.syncs, [&](const SyncRecord& s) { return !kept.contains(s.correlation); });
  // Counter tracks over the kept work's time, with the value in force as the window begins.
  int64_t until = last;
  for (const GpuOp& o : r.ops) until = std::max(until, o.end_ns);
  for (CounterTrack& c : r.counters) KeepCounterSpan(&c, first, until);
  r.iterations.erase(r.iterations.begin() + warmup + count, r.iterations.end());
  r.iterations.erase(r.iterations.begin(), r.iterations.begin() + warmup);
  return true;
}

}  // namespace emo
