// packer.h — packing (DESIGN.md §3): runs of consecutive GPU compute kernels on one stream that
// become one unit of frequency control, since a clock command takes 5-15 ms to land and
// per-kernel control would be wasted. Greedy in topological order, a kernel joins the open pack
// of its stream only if
//   1. it follows the pack's last member directly on the stream, and its critical predecessor is
//      on that stream (it is not held back by a launch, an event or another stream);
//   2. the pack's last member has no critical successor off the stream (nothing outside waits
//      critically on it, so it need not end the pack);
//   3. the pack's span at the default clocks (first start to last end) stays <= max_ns.
// Communication, copies, memsets and CPU nodes are never packed and end the open pack of their
// stream. Each pack is identified by a hash of its kernel-name sequence; packs with the same
// hash share the `unique` index of the first, so that only first occurrences need profiling.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "graph/replay.h"
#include "trace/trace.h"

namespace emo {

struct PackOptions {
  double max_ns = 5e6;  // Δmax
};

inline constexpr uint32_t kNoPack = UINT32_MAX;

// Packs in flat arrays, indexed by pack id (ordered by their first member's node id).
struct Packing {
  std::vector<uint32_t> member_begin;  // CSR: members of pack p are members[member_begin[p] .. member_begin[p+1])
  std::vector<uint32_t> members;       // kernel node ids, in stream order
  std::vector<int32_t> rank;
  std::vector<int64_t> stream;
  std::vector<double> start_ns, end_ns;  // replayed at the graph's durations
  std::vector<double> busy_ns;           // sum of member durations
  std::vector<uint64_t> hash;            // of the kernel-name sequence
  std::vector<uint32_t> unique;          // the first pack with this hash (itself when first)
  std::vector<uint32_t> pack_of;         // per graph node: its pack, or kNoPack

  size_t packs() const { return rank.size(); }
  size_t unique_packs() const;
};

// What packing made of the kernels, for reports: how many packs, how many distinct ones need
// profiling, and how much kernel time sits in packs of several kernels.
struct PackSummary {
  size_t kernels = 0;
  size_t packs = 0;
  size_t unique = 0;
  double median_span_ms = 0;           // first member's start to last member's end
  double multi_kernel_time_share = 0;  // share of kernel time in packs of several kernels
};
PackSummary Summarize(const Packing& p);

// Packs the kernels of `g`, whose names are in `names`, from its replay at its durations
// (`replay` is ReplayMeasured(g); the second form computes it).
Packing PackKernels(const Graph& g, const StringTable& names, const ReplayResult& replay,
                    const PackOptions& options = {});
Packing PackKernels(const Graph& g, const StringTable& names, const PackOptions& options = {});

}  // namespace emo
