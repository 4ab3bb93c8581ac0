// pack_profile.cc — profiling unique packs by launch-ordinal ranges and extending the model's
// tables to every pack.
#include "model/pack_profile.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

namespace emo {

std::vector<std::vector<uint32_t>> ComputeKernelsInLaunchOrder(const Trace& trace) {
  std::vector<std::vector<uint32_t>> order(trace.ranks.size());
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const std::vector<GpuOp>& ops = trace.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == GpuOpKind::kKernel && !ops[i].is_comm) order[r].push_back(static_cast<uint32_t>(i));
    std::stable_sort(order[r].begin(), order[r].end(),
                     [&](uint32_t a, uint32_t b) { return ops[a].correlation < ops[b].correlation; });
  }
  return order;
}

namespace {

// Per rank, the launch ordinal of each op (-1 for ops that are not compute kernels).
std::vector<std::vector<int64_t>> LaunchOrdinals(const Trace& trace) {
  std::vector<std::vector<int64_t>> ordinal(trace.ranks.size());
  const std::vector<std::vector<uint32_t>> order = ComputeKernelsInLaunchOrder(trace);
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    ordinal[r].assign(trace.ranks[r].ops.size(), -1);
    for (size_t i = 0; i < order[r].size(); ++i)
      ordinal[r][order[r][i]] = trace.ranks[r].kernels_before + static_cast<int64_t>(i);
  }
  return ordinal;
}

// The launch ordinal of kernel node v, or -1.
int64_t NodeOrdinal(const std::vector<std::vector<int64_t>>& ordinal, const Graph& g, uint32_t v) {
  const size_t r = static_cast<size_t>(g.rank[v]);
  const int32_t src = g.source[v];
  return r < ordinal.size() && src >= 0 && static_cast<size_t>(src) < ordinal[r].size() ? ordinal[r][src] : -1;
}

}  // namespace

bool ProfilePacks(const Trace& trace, const Graph& g, const Packing& packing, MetricSource& source, PackProfile* out,
                  std::string* err) {
  *out = PackProfile();
  const std::vector<std::vector<int64_t>> ordinal = LaunchOrdinals(trace);
  for (const auto& r : ordinal)
    out->kernels_in_run += std::count_if(r.begin(), r.end(), [](int64_t o) { return o >= 0; });

  std::vector<KernelRange> ranges;
  std::vector<uint32_t> range_pack;  // index into out->packs of each range
  for (size_t p = 0; p < packing.packs(); ++p) {
    if (packing.unique[p] != p) continue;
    const uint32_t idx = static_cast<uint32_t>(out->packs.size());
    out->packs.push_back(static_cast<uint32_t>(p));
    std::vector<int64_t> ords;
    for (uint32_t m = packing.member_begin[p]; m < packing.member_begin[p + 1]; ++m) {
      const uint32_t v = packing.members[m];
      const int64_t o = NodeOrdinal(ordinal, g, v);
      if (o < 0) {
        *err = "pack " + std::to_string(p) + ": kernel node " + std::to_string(v) + " has no launch ordinal";
        return false;
      }
      ords.push_back(o);
    }
    std::sort(ords.begin(), ords.end());
    for (size_t i = 0; i < ords.size();) {
      size_t j = i;
      while (j + 1 < ords.size() && ords[j + 1] == ords[j] + 1) ++j;
      ranges.push_back({static_cast<int>(packing.rank[p]), ords[i], ords[j]});
      range_pack.push_back(idx);
      i = j + 1;
    }
  }
  // Sources take ranges in any order but not overlapping: packs never share kernels, so they do not.
  std::vector<PackMetrics> got;
  if (!source.Profile(ranges, &got, &out->cost, err)) return false;
  if (got.size() != ranges.size()) {
    *err = "the metric source returned " + std::to_string(got.size()) + " ranges for " + std::to_string(ranges.size());
    return false;
  }
  out->metrics.assign(out->packs.size(), PackMetrics());
  std::vector<char> seen(out->packs.size(), 0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    PackMetrics& m = out->metrics[range_pack[i]];
    if (!seen[range_pack[i]]) {
      m = got[i];
      seen[range_pack[i]] = 1;
    } else {
      m.Add(got[i]);
    }
  }
  return true;
}

namespace {

// One pack's entry of `emo profile`'s file; throws what is missing.
PackMetrics MetricsOf(const nlohmann::json& pack) {
  PackMetrics m;
  m.kernels = pack.at("kernels").get<int64_t>();
  for (int k = 0; k < kMetrics; ++k) m.v[k] = pack.at("metrics").at(MetricName(static_cast<Metric>(k))).get<double>();
  return m;
}

}  // namespace

bool ParsePackMetrics(const std::string& source, const std::string& text, const Packing& packing, PackProfile* out,
                      std::string* err) {
  *out = PackProfile();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  std::vector<uint32_t> unique;
  for (size_t p = 0; p < packing.packs(); ++p)
    if (packing.unique[p] == p) unique.push_back(static_cast<uint32_t>(p));
  try {
    if (j.is_discarded()) throw std::runtime_error("not JSON");
    const nlohmann::json& packs = j.at("packs");
    if (packs.size() != unique.size())
      throw std::runtime_error(std::to_string(packs.size()) + " packs, where this trace packs into " +
                               std::to_string(unique.size()) + " unique ones");
    for (size_t i = 0; i < packs.size(); ++i) {
      const uint32_t p = packs[i].at("pack").get<uint32_t>();
      if (p != unique[i])
        throw std::runtime_error("pack " + std::to_string(i) + " is " + std::to_string(p) + ", not " +
                                 std::to_string(unique[i]));
      out->packs.push_back(p);
      out->metrics.push_back(MetricsOf(packs[i]));
    }
    out->kernels_in_run = j.value("kernels_in_run", int64_t{0});
    out->cost.kernels_profiled = j.value("kernels_profiled", int64_t{0});
    out->cost.ranges = j.value("ranges", int64_t{0});
    out->cost.passes = j.value("passes", int64_t{0});
  } catch (const std::exception& e) {
    *err = source + ": " + e.what() + " (made by emo profile from this trace, with the same --pack-ms?)";
    return false;
  }
  return true;
}

bool ParseKnownPacks(const std::string& source, const std::string& text, std::vector<KnownPack>* out,
                     std::string* err) {
  out->clear();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  try {
    if (j.is_discarded()) throw std::runtime_error("not JSON");
    for (const nlohmann::json& pack : j.at("packs")) {
      if (!pack.contains("hash"))
        throw std::runtime_error("a pack without its hash (written by an emo before 2026-12-04: profile again)");
      const std::string hex = pack.at("hash").get<std::string>();
      KnownPack k;
      const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), k.hash, 16);
      if (hex.empty() || ec != std::errc() || end != hex.data() + hex.size())
        throw std::runtime_error("hash \"" + hex + "\" is not hexadecimal");
      k.metrics = MetricsOf(pack);
      out->push_back(k);
    }
    if (out->empty()) throw std::runtime_error("no packs");
  } catch (const std::exception& e) {
    *err = source + ": " + e.what();
    return false;
  }
  return true;
}

double PackProfileFromKnown(const Packing& packing, const std::vector<KnownPack>& known, PackProfile* out) {
  *out = PackProfile();
  std::unordered_map<uint64_t, const PackMetrics*> by_hash;
  PackMetrics all;
  for (const KnownPack& k : known) {
    by_hash.emplace(k.hash, &k.metrics);
    all.Add(k.metrics);
  }
  double busy = 0, unknown = 0;
  for (size_t p = 0; p < packing.packs(); ++p) {
    busy += packing.busy_ns[p];
    const auto it = by_hash.find(packing.hash[p]);
    if (it == by_hash.end()) unknown += packing.busy_ns[p];
    if (packing.unique[p] != p) continue;
    out->packs.push_back(static_cast<uint32_t>(p));
    if (it != by_hash.end()) {
      out->metrics.push_back(*it->second);
    } else {
      out->metrics.push_back(all);
      out->metrics.back().kernels = packing.member_begin[p + 1] - packing.member_begin[p];
    }
  }
  out->kernels_in_run = static_cast<int64_t>(packing.members.size());
  return busy > 0 ? unknown / busy : 0;
}

std::vector<double> PackClocks(const Packing& packing,
                               const std::vector<std::vector<std::pair<double, double>>>& samples,
                               double fallback_mhz) {
  std::vector<double> mhz(packing.packs(), fallback_mhz);
  for (size_t p = 0; p < packing.packs(); ++p) {
    const size_t gpu = static_cast<size_t>(packing.rank[p]);
    if (gpu >= samples.size() || samples[gpu].empty()) continue;
    const auto& s = samples[gpu];
    const double a = packing.start_ns[p], b = packing.end_ns[p];
    // The sample in force at a (the last at or before it), then every later one inside [a, b).
    auto it = std::upper_bound(s.begin(), s.end(), a, [](double t, const auto& x) { return t < x.first; });
    double t = a, clock = it == s.begin() ? it->second : std::prev(it)->second, acc = 0;
    for (; it != s.end() && it->first < b; ++it) {
      acc += (it->first - t) * clock;
      t = it->first;
      clock = it->second;
    }
    acc += (b - t) * clock;
    mhz[p] = b > a ? acc / (b - a) : clock;
  }
  return mhz;
}

bool PackBusyInOtherRun(const Trace& trace, const Graph& g, const Packing& packing, const Trace& other,
                        std::vector<double>* busy_ns, std::string* err) {
  if (other.ranks.size() != trace.ranks.size()) {
    *err = "the run at the low clock has " + std::to_string(other.ranks.size()) + " ranks, the traced run " +
           std::to_string(trace.ranks.size());
    return false;
  }
  const std::vector<std::vector<int64_t>> ordinal = LaunchOrdinals(trace);
  const std::vector<std::vector<uint32_t>> other_order = ComputeKernelsInLaunchOrder(other);
  busy_ns->assign(packing.packs(), 0);
  for (size_t p = 0; p < packing.packs(); ++p)
    for (uint32_t m = packing.member_begin[p]; m < packing.member_begin[p + 1]; ++m) {
      const uint32_t v = packing.members[m];
      const size_t r = static_cast<size_t>(g.rank[v]);
      const int64_t j = NodeOrdinal(ordinal, g, v) - other.ranks[r].kernels_before;
      const std::string& name = trace.names.Get(g.name[v]);
      if (j < 0 || j >= static_cast<int64_t>(other_order[r].size())) {
        *err = "rank " + std::to_string(r) + ": the run at the low clock lacks kernel " + name + " (launch ordinal " +
               std::to_string(j + other.ranks[r].kernels_before) + ")";
        return false;
      }
      const GpuOp& op = other.ranks[r].ops[other_order[r][static_cast<size_t>(j)]];
      if (other.names.Get(op.name) != name) {
        *err = "rank " + std::to_string(r) + ": launch ordinal " + std::to_string(j + other.ranks[r].kernels_before) +
               " is " + name + " in the traced run but " + other.names.Get(op.name) + " in the run at the low clock";
        return false;
      }
      (*busy_ns)[p] += static_cast<double>(op.end_ns - op.start_ns);
    }
  return true;
}

bool PackTimeEnergy(PackModel& model, const Packing& packing, const PackProfile& profile,
                    const std::vector<double>& pack_mhz, std::vector<double>* time_s, std::vector<double>* energy_j,
                    PackTables* tables, std::string* err, const LowClockRun& low) {
  if (pack_mhz.size() != packing.packs()) {
    *err = "a clock for " + std::to_string(pack_mhz.size()) + " packs, there are " + std::to_string(packing.packs());
    return false;
  }
  if (low.mhz > 0 && low.busy_ns.size() != packing.packs()) {
    *err = "busy times at the low clock for " + std::to_string(low.busy_ns.size()) + " packs, there are " +
           std::to_string(packing.packs());
    return false;
  }
  std::vector<PackObservation> obs;
  for (uint32_t p : profile.packs) obs.push_back({std::max(packing.busy_ns[p], 1.0) * 1e-9, pack_mhz[p], 0});
  if (!PredictPacks(model, profile.metrics, obs, tables, err)) return false;
  std::unordered_map<uint32_t, size_t> row;  // profiled pack -> its row in tables
  for (size_t i = 0; i < profile.packs.size(); ++i) row[profile.packs[i]] = i;
  const std::vector<int>& clocks = model.clocks_mhz();
  const size_t nc = clocks.size();
  time_s->assign(packing.packs() * nc, 0);
  energy_j->assign(packing.packs() * nc, 0);
  PackFit fit;
  for (size_t p = 0; p < packing.packs(); ++p) {
    const auto it = row.find(packing.unique[p]);
    if (it == row.end()) {
      *err = "pack " + std::to_string(p) + " repeats pack " + std::to_string(packing.unique[p]) +
             ", which was not profiled";
      return false;
    }
    // The profiled pack's mix, anchored to this pack's own busy time and clock.
    std::copy_n(&tables->x[it->second * kMicrobenches], kMicrobenches, fit.x.begin());
    const PackObservation own = {std::max(packing.busy_ns[p], 1.0) * 1e-9, pack_mhz[p], 0};
    double* t = &(*time_s)[p * nc];
    double* e = &(*energy_j)[p * nc];
    std::string why;
    if (!model.Anchor(profile.metrics[it->second].kernels, own, &fit, t, e, &why)) {
      *err = "pack " + std::to_string(p) + ": " + why;
      return false;
    }
    const double f0 = own.mhz > 0 ? own.mhz : model.default_mhz();
    for (size_t c = 0; c < nc; ++c)
      if (clocks[c] > f0 + 0.5) t[c] = own.time_s, e[c] = fit.energy_f0;
  }
  if (!(low.mhz > 0)) return true;
  // Per unique pack: measured change at the low clock, predicted change, time at f0; then β.
  std::unordered_map<uint32_t, std::array<double, 3>> sums;
  for (size_t p = 0; p < packing.packs(); ++p) {
    const double t0 = std::max(packing.busy_ns[p], 1.0) * 1e-9;
    std::array<double, 3>& s = sums[packing.unique[p]];
    s[0] += low.busy_ns[p] * 1e-9 - t0;
    s[1] += AtClock(clocks, &(*time_s)[p * nc], low.mhz) - t0;
    s[2] += t0;
  }
  for (size_t p = 0; p < packing.packs(); ++p) {
    const std::array<double, 3>& s = sums[packing.unique[p]];
    if (!(std::abs(s[1]) >= 0.01 * s[2])) continue;
    const double b = std::clamp(s[0] / s[1], 0.0, 2.0), t0 = std::max(packing.busy_ns[p], 1.0) * 1e-9;
    double* t = &(*time_s)[p * nc];
    double* e = &(*energy_j)[p * nc];
    const double t_low = AtClock(clocks, t, low.mhz);
    for (size_t c = 0; c < nc; ++c) {
      const double corrected = clocks[c] >= low.mhz ? t0 + b * (t[c] - t0) : t0 + b * (t_low - t0) + (t[c] - t_low);
      e[c] -= model.idle_power_w()[c] * (t[c] - corrected);
      t[c] = corrected;
    }
  }
  return true;
}

}  // namespace emo
