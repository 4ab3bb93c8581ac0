// model_pipeline.cc — graph, packs, pack metrics and the fitted prediction pass (model_pipeline.h).
#include "cli/model_pipeline.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "graph/replay.h"
#include "model/pack_model.h"
#include "trace/counter_tracks.h"
#include "trace/load.h"
#include "util/file.h"

namespace emo {

bool FindProfile(const std::string& given, const std::string& device, DeviceProfile* out, std::string* err) {
  if (!given.empty()) {
    if (!LoadProfile(given, out, err)) return false;
    if (out->device != device) {
      *err = given + ": a profile of " + out->device + ", not of " + device;
      return false;
    }
    return true;
  }
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("EMO_PROFILES")) dirs.emplace_back(env);
  dirs.emplace_back("profiles");
  dirs.emplace_back(std::filesystem::path(EMO_SOURCE_DIR) / "profiles");
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      DeviceProfile p;
      std::string why;
      if (LoadProfile(f.string(), &p, &why) && p.device == device) {
        *out = std::move(p);
        return true;
      }
    }
  }
  *err = "no device profile of " + device + " found (give --profile, or make one with emo calibrate)";
  return false;
}

bool GraphAndPacks(const Trace& trace, double pack_ms, Graph* g, BuildReport* report, Packing* packing,
                   std::string* err) {
  if (!BuildGraph(trace, g, report, err)) return false;
  PackOptions po;
  po.max_ns = pack_ms * 1e6;
  *packing = PackKernels(*g, trace.names, ReplayMeasured(*g), po);
  return true;
}

std::vector<double> DefaultIdlePower(const Packing& packing,
                                     const std::vector<std::vector<std::pair<double, double>>>& samples,
                                     const std::vector<int>& clocks_mhz, const std::vector<double>& idle_power_w) {
  std::vector<double> out(samples.size(), 0);
  for (size_t gpu = 0; gpu < samples.size(); ++gpu) {
    std::vector<std::pair<double, double>> busy;  // the GPU's pack spans, sorted
    for (size_t p = 0; p < packing.packs(); ++p)
      if (static_cast<size_t>(packing.rank[p]) == gpu) busy.push_back({packing.start_ns[p], packing.end_ns[p]});
    std::sort(busy.begin(), busy.end());
    // Each sample stands for the time until the next; it counts where no pack has begun and not ended.
    double reach_end = -1e300, w_ns = 0, gap_ns = 0;
    size_t next = 0;
    const auto& gs = samples[gpu];
    for (size_t i = 0; i + 1 < gs.size(); ++i) {
      const double t = gs[i].first;
      while (next < busy.size() && busy[next].first <= t) reach_end = std::max(reach_end, busy[next++].second);
      if (t < reach_end) continue;
      const double dt = gs[i + 1].first - t;
      w_ns += dt * AtClock(clocks_mhz, idle_power_w.data(), gs[i].second);
      gap_ns += dt;
    }
    if (gap_ns > 0) out[gpu] = w_ns / gap_ns;
  }
  return out;
}

int LowClock(const DeviceProfile& profile) {
  const double want = kLowClockShare * profile.default_mhz;
  return *std::min_element(profile.clocks_mhz.begin(), profile.clocks_mhz.end(),
                           [&](int a, int b) { return std::abs(a - want) < std::abs(b - want); });
}

std::vector<double> HeldClocks(const Packing& packing, const std::vector<double>& pack_mhz, int gpus,
                               double default_mhz) {
  std::vector<double> busy(static_cast<size_t>(gpus), 0), weighted(static_cast<size_t>(gpus), 0);
  for (size_t p = 0; p < packing.packs(); ++p) {
    const int32_t r = packing.rank[p];
    if (r < 0 || r >= gpus) continue;
    busy[r] += packing.busy_ns[p];
    weighted[r] += packing.busy_ns[p] * pack_mhz[p];
  }
  std::vector<double> held(static_cast<size_t>(gpus), 0);
  for (int r = 0; r < gpus; ++r)
    if (busy[r] > 0 && weighted[r] / busy[r] < default_mhz - 0.5) held[r] = weighted[r] / busy[r];
  return held;
}

std::vector<double> CollectiveRatio(const DeviceProfile& profile) {
  std::vector<double> r = profile.collective_time_ratio;
  // Pool adjacent violators, from the default clock down: blocks of clocks (first index, sum,
  // count) whose means rise as the clock drops.
  struct Block {
    size_t first;
    double sum;
    int count;
  };
  std::vector<Block> blocks;
  for (size_t c = r.size(); c-- > 0;) {
    if (profile.clocks_mhz[c] > profile.default_mhz) continue;
    blocks.push_back({c, r[c], 1});
    while (blocks.size() >= 2 &&
           blocks[blocks.size() - 2].sum / blocks[blocks.size() - 2].count > blocks.back().sum / blocks.back().count) {
      const Block last = blocks.back();
      blocks.pop_back();
      blocks.back().sum += last.sum;
      blocks.back().count += last.count;
      blocks.back().first = last.first;
    }
  }
  for (double& x : r) x = 1;
  for (const Block& b : blocks)
    for (size_t c = b.first; c < b.first + static_cast<size_t>(b.count); ++c) r[c] = std::max(1.0, b.sum / b.count);
  return r;
}

bool BuildPredictor(const Trace& trace, const Graph& g, const Packing& packing, const PackProfile& pp,
                    const DeviceProfile& profile, const DefaultRun& run, Predictor* predictor, PackTables* tables,
                    std::string* err) {
  PackModel model(profile);
  PredictorInput in;
  const std::vector<double> pack_mhz = PackClocks(packing, run.clock_samples, profile.default_mhz);
  if (!PackTimeEnergy(model, packing, pp, pack_mhz, &in.pack_time_s, &in.pack_energy_j, tables, err, run.low))
    return false;
  in.graph = &g;
  in.packing = &packing;
  in.split_at_landings = true;
  in.clocks_mhz = profile.clocks_mhz;
  in.default_clock = profile.ClockIndex(profile.default_mhz);
  in.idle_power_w = model.idle_power_w();
  in.default_idle_power_w = DefaultIdlePower(packing, run.clock_samples, profile.clocks_mhz, in.idle_power_w);
  in.held_mhz = HeldClocks(packing, pack_mhz, static_cast<int>(trace.ranks.size()), profile.default_mhz);
  in.comm_time_ratio = CollectiveRatio(profile);
  for (const Iteration& it : trace.ranks[0].iterations)
    in.iteration_start_ns.push_back(static_cast<double>(it.start_ns - g.origin_ns));
  // The traced span: given, or from the graph's origin to its last observed end.
  double span_ns = run.span_ns;
  if (span_ns <= 0)
    for (size_t v = 0; v < g.nodes(); ++v) span_ns = std::max(span_ns, g.observed_end[v]);
  if (run.power_w.size() != trace.ranks.size()) {
    *err = "measured power for " + std::to_string(run.power_w.size()) + " GPUs, where the trace has " +
           std::to_string(trace.ranks.size()) + " (measure the job's GPUs only: emo run --gpus)";
    return false;
  }
  // The predictor counts from the first iteration's start where it precedes the graph's origin.
  const double run_start_ns = in.iteration_start_ns.empty() ? 0.0 : std::min(0.0, in.iteration_start_ns.front());
  span_ns -= run_start_ns;
  for (double w : run.power_w) in.measured_energy_j.push_back(w * span_ns * 1e-9);
  if (run.low.mhz <= 0 || run.low_power_w.empty()) return predictor->Init(std::move(in), err);
  if (run.low_power_w.size() != run.power_w.size()) {
    *err = "power at the low clock for " + std::to_string(run.low_power_w.size()) + " GPUs, at default clocks for " +
           std::to_string(run.power_w.size());
    return false;
  }
  // The energy at the low clock (see the header).
  const int low = profile.ClockIndex(static_cast<int>(run.low.mhz));
  if (low < 0) {
    *err = "the low clock " + std::to_string(run.low.mhz) + " MHz is not one of the profile's";
    return false;
  }
  PredictorInput copy = in;
  if (!predictor->Init(std::move(copy), err)) return false;
  Schedule s(run.power_w.size());
  for (auto& landings : s) landings = {{0, low}};
  Predictor::PassState state;
  const Predictor::Result r = predictor->Run(s, &state);
  const double low_span_s = (r.end_ns - run_start_ns) * 1e-9;
  const int nc = static_cast<int>(profile.clocks_mhz.size());
  const double f0 = profile.default_mhz, f1 = run.low.mhz;
  std::vector<double> m1(run.power_w.size(), 1);  // per GPU; 1 where it has no dynamic energy
  for (size_t gpu = 0; gpu < m1.size(); ++gpu) {
    const double dynamic = predictor->energy_scale()[gpu] * state.dynamic_j[gpu];
    if (dynamic > 0) m1[gpu] = 1 + (run.low_power_w[gpu] * low_span_s - r.gpu_energy_j[gpu]) / dynamic;
  }
  for (size_t p = 0; p < packing.packs(); ++p) {
    const double m1_p = m1[static_cast<size_t>(packing.rank[p])];
    for (int c = 0; c < nc; ++c) {
      const double f = profile.clocks_mhz[c];
      if (f >= f0) continue;
      const double m = std::clamp(1 + (m1_p - 1) * (f0 - f) / (f0 - f1), 0.5, 2.0);
      double& e = in.pack_energy_j[p * nc + c];
      const double idle = in.pack_time_s[p * nc + c] * in.idle_power_w[c];
      e = idle + m * (e - idle);
    }
  }
  *predictor = Predictor();
  return predictor->Init(std::move(in), err);
}

bool SearchPolicy(Predictor& predictor, const Graph& g, const DeviceProfile& profile, SearchOptions so, double budget,
                  FrequencyPolicy* out, std::string* err) {
  so.budget = budget;
  so.group = ReplicaGroups(g, predictor.gpus());
  SearchResult sr;
  if (!Search(predictor, so, &sr, err)) return false;
  *out = PolicyFromSchedule(sr.schedule, profile.clocks_mhz, so.dvfs_latency_ms);
  out->budget = budget;
  out->default_iteration_ms = predictor.base().end_ns / 1e6 / std::max(1, predictor.iterations());
  return true;
}

nlohmann::ordered_json PackMetricsJson(const PackProfile& pp, const Packing& packing, const Graph& g,
                                       const StringTable& names) {
  nlohmann::ordered_json j = {{"kernels_in_run", pp.kernels_in_run},
                              {"kernels_profiled", pp.cost.kernels_profiled},
                              {"ranges", pp.cost.ranges},
                              {"passes", pp.cost.passes}};
  j["packs"] = nlohmann::json::array();
  for (size_t i = 0; i < pp.packs.size(); ++i) {
    const uint32_t p = pp.packs[i];
    nlohmann::ordered_json m;
    for (int k = 0; k < kMetrics; ++k) m[MetricName(static_cast<Metric>(k))] = pp.metrics[i].v[k];
    j["packs"].push_back({{"pack", p},
                          {"hash", fmt::format("{:016x}", packing.hash[p])},
                          {"rank", packing.rank[p]},
                          {"kernels", pp.metrics[i].kernels},
                          {"first_kernel", names.Get(g.name[packing.members[packing.member_begin[p]]])},
                          {"metrics", m}});
  }
  return j;
}

bool ReadKnownPacks(const std::string& path, std::vector<KnownPack>* out, std::string* err) {
  std::string text;
  return ReadFileMaybeGz(path, &text, err) && ParseKnownPacks(path, text, out, err);
}

bool ReadPackMetrics(const std::string& path, const Packing& packing, PackProfile* out, std::string* err) {
  std::string text;
  return ReadFileMaybeGz(path, &text, err) && ParsePackMetrics(path, text, packing, out, err);
}

namespace {

// The span of a trace's CPU calls and GPU work, every rank's (trace time).
void TraceSpan(const Trace& trace, int64_t* from_ns, int64_t* to_ns) {
  *from_ns = INT64_MAX, *to_ns = INT64_MIN;
  for (const RankTrace& rt : trace.ranks) {
    for (const CpuCall& c : rt.calls) *from_ns = std::min(*from_ns, c.start_ns), *to_ns = std::max(*to_ns, c.end_ns);
    for (const GpuOp& o : rt.ops) *from_ns = std::min(*from_ns, o.start_ns), *to_ns = std::max(*to_ns, o.end_ns);
  }
}

// The rank's track `name unit` of the GPU its first GPU work ran on (a rank is one GPU), or null.
const CounterTrack* RankCounter(const RankTrace& rt, std::string_view name, std::string_view unit) {
  return rt.ops.empty() ? nullptr : FindCounter(rt, rt.ops.front().device, name, unit);
}

}  // namespace

bool PowerFromCounters(const Trace& trace, std::vector<double>* power_w, std::string* what, std::string* err) {
  int64_t from = 0, to = 0;
  TraceSpan(trace, &from, &to);
  power_w->clear();
  double least_s = 0;
  bool readings = false;
  for (size_t r = 0; r < trace.ranks.size(); ++r) {
    const RankTrace& rt = trace.ranks[r];
    double w = 0, seconds = 0;
    if (const CounterTrack* e = RankCounter(rt, "energy", "J"); e && CounterRate(*e, from, to, &w, &seconds) && w > 0) {
      least_s = power_w->empty() ? seconds : std::min(least_s, seconds);
    } else if (const CounterTrack* p = RankCounter(rt, "power", "W"); p && CounterMean(*p, from, to, &w) && w > 0) {
      readings = true;
    } else {
      *err =
          rt.source + ": no energy counter or power readings of its GPU (emo trace records them where NVML reads them)";
      return false;
    }
    power_w->push_back(w);
  }
  *what = readings ? "the power readings over the trace"
                   : fmt::format("the energy counter over {:.2f} s of the trace", least_s);
  return true;
}

bool BuildTracePipeline(const TraceInputs& in, TracePipeline* out, std::string* err) {
  if (in.packs.empty()) {
    *err = "a trace needs --packs (from emo profile)";
    return false;
  }
  if (!in.clock_mhz.empty() && !in.power_w.empty() && in.clock_mhz.size() != in.power_w.size()) {
    *err = "--clock-mhz and --power-w give one value per GPU each";
    return false;
  }
  for (double v : in.power_w)
    if (!(v > 0)) {
      *err = "--power-w: each GPU's average power must be positive";
      return false;
    }
  for (double v : in.clock_mhz)
    if (!(v > 0)) {
      *err = "--clock-mhz: each GPU's clock must be positive (0 in busy_clock_mhz: never busy)";
      return false;
    }
  if (in.low_traces.empty() == (in.low_mhz > 0)) {
    *err = "--low-trace and --low-clock MHZ go together: the traces of a run with every GPU locked at that clock";
    return false;
  }
  if (!in.low_power_w.empty() &&
      (in.low_traces.empty() || (!in.power_w.empty() && in.low_power_w.size() != in.power_w.size()))) {
    *err = "--low-power-w goes with --low-trace, one value per GPU as --power-w";
    return false;
  }
  for (double v : in.low_power_w)
    if (!(v > 0)) {
      *err = "--low-power-w: each GPU's average power must be positive";
      return false;
    }
  DefaultRun run;
  run.power_w = in.power_w;
  for (double mhz : in.clock_mhz) run.clock_samples.push_back({{0.0, mhz}});
  TracePipeline& t = *out;
  if (!ExpandTracePaths(in.traces, &t.files, err) || !LoadTraces(t.files, &t.trace, err) ||
      !GraphAndPacks(t.trace, in.pack_ms, &t.g, &t.report, &t.packing, err) ||
      !ReadPackMetrics(in.packs, t.packing, &t.pp, err))
    return false;
  // Each GPU's power as the traces' counter tracks show it, where they have them: taken where
  // --power-w is not given, else a check of it. A trace's window and a long run differ by a few
  // percent (2 % on the simulated TP-2); a GPU off by more than a sixth is named, as the values of
  // another GPU order or another job would be.
  std::vector<double> traced_w;
  std::string traced_what, traced_err;
  const bool traced = PowerFromCounters(t.trace, &traced_w, &traced_what, &traced_err);
  if (run.power_w.empty()) {
    if (!traced) {
      *err = traced_err + "; give each GPU's average power at default clocks with --power-w (emo run --measure)";
      return false;
    }
    run.power_w = traced_w;
    t.notes.push_back(
        fmt::format("each GPU's power at default clocks from {}: {:.1f} W (--power-w from a run of "
                    "several seconds, emo run --measure, is steadier)",
                    traced_what, fmt::join(run.power_w, ", ")));
  } else if (traced) {
    for (size_t gpu = 0; gpu < traced_w.size() && gpu < run.power_w.size(); ++gpu)
      if (std::abs(run.power_w[gpu] / traced_w[gpu] - 1) > 1.0 / 6)
        t.notes.push_back(
            fmt::format("--power-w gives GPU {} {:.1f} W, {} {:.1f} W: are the values in the traces' "
                        "GPU order, and of the same job at default clocks?",
                        gpu, run.power_w[gpu], traced_what, traced_w[gpu]));
  }
  if (!in.clock_mhz.empty() && in.clock_mhz.size() != run.power_w.size()) {
    *err = "--clock-mhz gives " + std::to_string(in.clock_mhz.size()) + " clocks, the trace has " +
           std::to_string(run.power_w.size()) + " GPUs";
    return false;
  }
  if (in.clock_mhz.empty()) {
    for (const RankTrace& rt : t.trace.ranks) {
      const CounterTrack* c = RankCounter(rt, "sm_clock", "MHz");
      if (!c) {
        run.clock_samples.clear();
        break;
      }
      run.clock_samples.emplace_back();
      for (size_t i = 0; i < c->t_ns.size(); ++i)
        run.clock_samples.back().push_back({static_cast<double>(c->t_ns[i] - t.g.origin_ns), c->value[i]});
      std::sort(run.clock_samples.back().begin(), run.clock_samples.back().end());
    }
    if (!run.clock_samples.empty()) t.notes.push_back("each GPU's SM clock from the traces' clock counters");
  }
  t.power_w = run.power_w;
  if (in.low_mhz > 0) {
    std::vector<std::string> files;
    Trace low;
    if (!ExpandTracePaths(in.low_traces, &files, err) || !LoadTraces(files, &low, err) ||
        !PackBusyInOtherRun(t.trace, t.g, t.packing, low, &run.low.busy_ns, err)) {
      *err = "--low-trace: " + *err +
             " (the two runs must launch the same kernels: trace the same window after a warm-up, or give "
             "--low-clock none)";
      if (!in.low_optional) return false;
      t.notes.push_back(*err + "; the model alone is used");
      err->clear();
      run.low = LowClockRun();
    } else {
      run.low.mhz = t.low_mhz = in.low_mhz;
      run.low_power_w = in.low_power_w;
      std::string what, why;
      if (run.low_power_w.empty() && PowerFromCounters(low, &run.low_power_w, &what, &why))
        t.notes.push_back(fmt::format("each GPU's power at {} MHz from {} of --low-trace: {:.1f} W", in.low_mhz, what,
                                      fmt::join(run.low_power_w, ", ")));
    }
  }
  if (!(in.profile.empty() ? FindProfile("", t.trace.ranks[0].gpu_name, &t.profile, err)
                           : LoadProfile(in.profile, &t.profile, err)))
    return false;
  const std::vector<int>& clocks = t.profile.clocks_mhz;
  for (size_t gpu = 0; gpu < in.clock_mhz.size() && !clocks.empty(); ++gpu)
    if (in.clock_mhz[gpu] < clocks.front() - 0.5 || in.clock_mhz[gpu] > clocks.back() + 0.5) {
      *err = "--clock-mhz: GPU " + std::to_string(gpu) + "'s " + std::to_string(std::lround(in.clock_mhz[gpu])) +
             " MHz is outside the device profile's " + std::to_string(clocks.front()) + "-" +
             std::to_string(clocks.back()) + " MHz (" + t.profile.device + ")";
      return false;
    }
  if (!BuildPredictor(t.trace, t.g, t.packing, t.pp, t.profile, run, &t.predictor, &t.tables, err)) return false;
  if (t.profile.device != t.trace.ranks[0].gpu_name)  // the user's choice, said aloud
    t.notes.push_back(in.profile + " is a profile of " + t.profile.device + ", the trace's GPU is " +
                      t.trace.ranks[0].gpu_name);
  return true;
}

}  // namespace emo
