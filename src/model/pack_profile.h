// pack_profile.h — pack metrics (DESIGN.md §4): the first occurrence of each unique pack of a
// traced run is profiled through a MetricSource, and the pack model's per-clock tables are
// extended to every pack, so that the prediction pass has a time and an energy for each pack at
// each clock.
//
// A pack's kernels are named to the MetricSource by launch ordinal on their GPU: the compute
// kernels of the rank in correlation (launch) order, counted from the first kernel of the run (a
// windowed trace starts at RankTrace::kernels_before). A pack's kernels are consecutive on their
// stream but may not be consecutive in launch order (kernels of other streams launched between
// them); such a pack is profiled as several ranges and their counters added.
#pragma once

#include <string>
#include <vector>

#include "device/metric_source.h"
#include "graph/graph.h"
#include "model/pack_model.h"
#include "pack/packer.h"
#include "trace/trace.h"

namespace emo {

struct PackProfile {
  std::vector<uint32_t> packs;       // the profiled packs (first occurrences), ascending
  std::vector<PackMetrics> metrics;  // per profiled pack
  ProfileCost cost;
  int64_t kernels_in_run = 0;  // compute kernels of the traced run: what per-kernel profiling would profile
};

// A pack profiled in another trace of the same program, as `emo profile`'s file records it: the hash
// of its kernel-name sequence (Packing::hash) and its metrics.
struct KnownPack {
  uint64_t hash = 0;
  PackMetrics metrics;
};

// Metrics for every unique pack of `packing` from packs profiled in another trace of the same
// program, as EMO's online loop needs them for a window traced when the job changed phase (it
// cannot profile while the job runs): a pack takes the metrics of the known pack with its hash; a
// pack that none has takes the known packs' metrics added up (the job's mix as a whole) with its
// own kernel count. Returns the share of the packing's busy time in packs of that second kind.
double PackProfileFromKnown(const Packing& packing, const std::vector<KnownPack>& known, PackProfile* out);

// `emo profile`'s file ({"packs": [{"pack": P, "hash": H, "kernels": K, "metrics": {...}}], ...},
// written by cli/model_pipeline.h's PackMetricsJson), read from `text` (`source` names it in
// errors): for this packing, whose unique packs must be the profiled ones (the same trace, packed
// with the same Δmax), or as packs known by hash for other traces of the same program.
bool ParsePackMetrics(const std::string& source, const std::string& text, const Packing& packing, PackProfile* out,
                      std::string* err);
bool ParseKnownPacks(const std::string& source, const std::string& text, std::vector<KnownPack>* out, std::string* err);

// Each rank's compute kernels (indices into its ops, NCCL's left out) in launch (correlation)
// order: a kernel's position here is its launch ordinal.
std::vector<std::vector<uint32_t>> ComputeKernelsInLaunchOrder(const Trace& trace);

// Profiles every unique pack's first occurrence. False with *err when a pack's kernels cannot be
// found in launch order or the source failed.
bool ProfilePacks(const Trace& trace, const Graph& g, const Packing& packing, MetricSource& source, PackProfile* out,
                  std::string* err);

// The SM clock each pack ran at in the traced run: the time-weighted mean of the clock samples
// (GpuControl::ClockMhz, which shows power-cap throttling) over the pack's span. `samples[gpu]` are
// (time in graph ns, MHz), ascending; a pack with no sample inside takes the last one before it,
// or `fallback_mhz`.
std::vector<double> PackClocks(const Packing& packing,
                               const std::vector<std::vector<std::pair<double, double>>>& samples, double fallback_mhz);

// The same packs in a second traced run of the job with every GPU locked at `mhz`: each pack's busy
// time there (the sum of its kernels' durations), so that the model's sensitivity to the clock is
// checked against a measurement as well as anchored at the default (PackTimeEnergy).
struct LowClockRun {
  double mhz = 0;               // 0: no such run
  std::vector<double> busy_ns;  // per pack of the first run's packing
};

// The packs' busy times in `other`, a trace of the same program over the same iterations: each
// kernel is found by its launch ordinal on its rank. False with *err naming the first kernel that
// `other` lacks or names differently.
bool PackBusyInOtherRun(const Trace& trace, const Graph& g, const Packing& packing, const Trace& other,
                        std::vector<double>* busy_ns, std::string* err);

// Time (s) and energy (J) of every pack at every clock of the model, [pack * clocks + clock].
// Profiled packs are predicted by the model from their metrics, anchored to their measured busy
// time at the clock they ran at (pack_mhz); every other pack takes the mix of the profiled pack
// it repeats, anchored to its own busy time and clock (PackModel::Anchor). A clock above the one a
// pack ran at is taken to change nothing (its busy time, and the energy predicted at its clock):
// the pack ran below the requested default because the power limit held it there, and it would
// again. `tables` receives the model's output for the profiled packs (for
// reports: residuals, mixes).
//
// With a run at a lower clock (low.mhz > 0), the share of each pack's predicted change that shows
// is measured: a kernel overlaps its pipes and its memory traffic, which the mix adds, so the mix
// over-states how much of a pack's time follows the clock. For each unique pack, over its
// occurrences, β = Σ (t_low − t0) / Σ (t̂_low − t0) (measured against predicted change at the
// low clock f1), held to [0, 2]; each occurrence's time at a clock f ≥ f1 becomes
// t0 + β (t̂(f) − t0), and below f1 follows the model's slope from there, t0 + β (t̂(f1) − t0) +
// t̂(f) − t̂(f1) (kernels turn clock-bound at low clocks, the full slope returns); its energy
// loses the idle power at that clock over the time taken off (the pack does the same work in less
// time: only its static draw changes). A pack whose predicted change is under 1 % of its time
// keeps the model's.
bool PackTimeEnergy(PackModel& model, const Packing& packing, const PackProfile& profile,
                    const std::vector<double>& pack_mhz, std::vector<double>* time_s, std::vector<double>* energy_j,
                    PackTables* tables, std::string* err, const LowClockRun& low = {});

}  // namespace emo
