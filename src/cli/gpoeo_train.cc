// gpoeo_train.cc — `emo gpoeo train`: corpus generation, clock sweeps, training, evaluation.
#include "cli/gpoeo_train.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli/cuda_bench_host.h"
#include "online/gpoeo.h"
#include "online/gpoeo_model.h"
#include "online/method_options.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/microbench.h"
#include "sim/sim_gpu_control.h"
#include "sim/workload.h"

namespace emo {

namespace {

constexpr double kSampleMs = 20;  // the controller's default telemetry interval
constexpr int kWarmup = 1;
constexpr int kMemorySmClocks = 8;  // SM clocks swept at each lower memory clock (Grid::mem_sm)

// A workload spec drawn at random: transformer tensor, data and pipeline parallel jobs, GEMM-heavy
// or memory-bound (unfused attention, FP32, long sequences on a narrow model), CPU-bound (long
// launch gaps) and communication-bound (PCIe) variants.
nlohmann::json DrawSpec(std::mt19937_64& rng, const std::string& device) {
  auto pick = [&rng](std::initializer_list<int> v) {
    std::uniform_int_distribution<size_t> d(0, v.size() - 1);
    return *(v.begin() + static_cast<long>(d(rng)));
  };
  std::uniform_real_distribution<double> u(0, 1);
  const int kind = pick({0, 0, 1, 2});  // tp, tp, dp, pp
  const bool llama = u(rng) < 0.5;
  const int hidden = pick({1024, 1536, 2048, 3072, 4096});
  nlohmann::json model = {
      {"arch", llama ? "llama" : "gpt"}, {"layers", pick({2, 4, 6, 8})},  {"hidden", hidden},
      {"heads", hidden / 128},           {"vocab", pick({32000, 50304})}, {"seq", pick({512, 1024, 2048, 4096})},
      {"batch", pick({1, 2, 4, 8})}};
  const double r = u(rng);
  if (r < 0.15) {
    model["dtype_bytes"] = 4;
    model["attention"] = "unfused";
  } else if (r < 0.4) {
    model["attention"] = "unfused";
  }
  nlohmann::json parallel;
  std::string kind_name;
  if (kind == 0) {
    kind_name = "tp";
    parallel = {{"tp", pick({2, 4})}, {"chunks", pick({1, 2})}};
  } else if (kind == 1) {
    kind_name = "dp";
    parallel = {{"dp", 2}, {"bucket_mb", pick({25, 50})}};
  } else {
    kind_name = "pp";
    parallel = {{"pp", 2}, {"microbatches", pick({4, 8})}};
  }
  nlohmann::json spec = {
      {"kind", kind_name}, {"device", device},     {"link", u(rng) < 0.75 ? "nvlink" : "pcie"},
      {"model", model},    {"parallel", parallel}, {"cpu", {{"launch_gap_us", pick({6, 6, 6, 20, 60, 150})}}}};
  return spec;
}

std::string SpecName(const nlohmann::json& s) {
  const nlohmann::json& m = s["model"];
  const nlohmann::json& p = s["parallel"];
  std::string name = s["kind"].get<std::string>();
  name += std::to_string(p.value("tp", 0) + p.value("dp", 0) + p.value("pp", 0));
  name += fmt::format("-{}-h{}-l{}-s{}-b{}", m["arch"].get<std::string>(), m["hidden"].get<int>(),
                      m["layers"].get<int>(), m["seq"].get<int>(), m["batch"].get<int>());
  if (m.value("attention", "flash") == "unfused") name += "-unfused";
  if (m.value("dtype_bytes", 2) == 4) name += "-fp32";
  if (s["link"] == "pcie") name += "-pcie";
  const int gap = s["cpu"]["launch_gap_us"].get<int>();
  if (gap != 6) name += fmt::format("-gap{}", gap);
  if (s["kind"] == "tp") name += fmt::format("-c{}", p["chunks"].get<int>());
  if (s["kind"] == "dp") name += fmt::format("-k{}", p["bucket_mb"].get<int>());
  if (s["kind"] == "pp") name += fmt::format("-m{}", p["microbatches"].get<int>());
  return name;
}

// What a run's features are read from: none (a probe or a sweep's other clocks), or a feature set.
using Features = std::optional<GpoeoFeatureSet>;
constexpr Features kNoFeatures = std::nullopt;

// One run: per-iteration time and energy over the iterations after the warm-up, and telemetry at
// kSampleMs as the controller reads it.
struct RunResult {
  double iteration_s = 0, iteration_j = 0;
  std::vector<double> features;
};

// At SM clock `mhz` and memory clock `mem_mhz` (0: the default of each).
bool RunAt(const sim::Program& program, int mhz, int mem_mhz, int iterations, uint64_t seed, Features features,
           RunResult* out, std::string* err) {
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed;
  eo.record_trace = false;
  sim::Engine e(program, eo);
  sim::SimGpuControl gpus(&e);
  const int n = e.gpus();
  const std::vector<int> clocks = e.SupportedClocks(0);
  if (mhz > 0 && mhz != clocks.back())
    for (int g = 0; g < n; ++g) gpus.SetLockedClock(g, mhz, err);
  if (mem_mhz > 0)
    for (int g = 0; g < n; ++g) gpus.SetMemoryLockedClock(g, mem_mhz, err);
  std::vector<double> sample_t;
  GpoeoSamples samples;
  GpoeoWindows windows(&gpus, features.value_or(GpoeoFeatureSet::kTelemetry), kSampleMs * 1e-3);
  if (features && !windows.Start(err)) return false;
  std::string read_err;
  if (features)
    e.Every(kSampleMs, [&](double now) {
      double p = 0, u = 0, m = 0, c = 0;
      for (int g = 0; g < n; ++g) {
        p += e.PowerW(g);
        u += e.Utilization(g);
        m += e.MemoryUtilization(g);
        c += e.ClockMhz(g);
      }
      sample_t.push_back(now);
      if (read_err.empty() && windows.Tick(&read_err))
        samples.push(p, u / n, m / n, c / n, windows.activity(), windows.counters());
    });
  double t0 = -1, e0 = 0;
  e.OnIterationStart([&](int it, double now) {
    if (it != kWarmup) return;
    t0 = now;
    for (int g = 0; g < n; ++g) e0 += e.EnergyCounterJ(g);
  });
  if (!e.Run(err)) return false;
  if (!read_err.empty()) {
    *err = read_err;
    return false;
  }
  double e1 = 0;
  for (int g = 0; g < n; ++g) e1 += e.EnergyCounterJ(g);
  const double measured = iterations - kWarmup;
  out->iteration_s = (e.end_ns() - t0) * 1e-9 / measured;
  out->iteration_j = (e1 - e0) / measured;
  if (features) {
    size_t first = 0;
    while (first < sample_t.size() && sample_t[first] < t0) ++first;
    double limit = 0;
    for (int g = 0; g < n; ++g) limit += e.PowerLimit(g);
    out->features =
        GpoeoFeatures(samples.Slice(first, samples.size()), kSampleMs * 1e-3, out->iteration_s, limit, clocks.back());
  }
  return true;
}

// The clocks a sweep runs: the SM clocks `sm` (ascending, the default last) at the default memory
// clock, then where the device lists several memory clocks, `mem_sm` (fewer SM clocks, the default
// included) at each of `mem` (ascending, the default last) below the default.
struct Grid {
  std::vector<int> sm, mem_sm, mem;
};

// A workload of the corpus with its sweep: time and energy ratios at each clock.
struct Swept {
  std::string name;
  nlohmann::json spec;   // the workload spec, or the kernel-mix job (MixJobJson)
  MixJob job;            // the kernel-mix job as swept (perhaps lengthened)
  sim::Program program;  // what the simulator runs (empty for a job run on a GPU)
  double t0_s = 0, e0_j = 0;
  std::vector<double> features;
  std::vector<int> mhz;
  std::vector<double> time_ratio, energy_ratio;
  // At the lower memory clocks (Grid::mem_sm × Grid::mem), relative to the default clocks.
  struct MemoryPoint {
    int mhz, mem_mhz;
    double time_ratio, energy_ratio;
  };
  std::vector<MemoryPoint> memory;
};

// The sweep's ratios: the default clocks' run `base`, and `run_at` (SM clock, memory clock; 0 for
// the default memory clock) each other point of the grid.
bool SweepClocks(const Grid& grid, const RunResult& base, Swept* out,
                 const std::function<bool(int mhz, int mem_mhz, RunResult* r)>& run_at) {
  out->t0_s = base.iteration_s;
  out->e0_j = base.iteration_j;
  out->features = base.features;
  for (int mhz : grid.sm) {
    RunResult r = base;
    if (mhz != grid.sm.back() && !run_at(mhz, 0, &r)) return false;
    out->mhz.push_back(mhz);
    out->time_ratio.push_back(r.iteration_s / base.iteration_s);
    out->energy_ratio.push_back(r.iteration_j / base.iteration_j);
  }
  for (size_t m = 0; m + 1 < grid.mem.size(); ++m)
    for (int mhz : grid.mem_sm) {
      RunResult r;
      if (!run_at(mhz, grid.mem[m], &r)) return false;
      out->memory.push_back({mhz, grid.mem[m], r.iteration_s / base.iteration_s, r.iteration_j / base.iteration_j});
    }
  return true;
}

// Iterations per run: enough for about 2 s of measurement, at least 3.
int IterationsFor(double iteration_s) {
  return kWarmup + std::clamp(static_cast<int>(std::ceil(2.0 / iteration_s)), 3, 20);
}

bool Sweep(const nlohmann::json& spec, const Grid& grid, Features features, uint64_t seed, Swept* out, bool* usable,
           std::string* err) {
  out->spec = spec;
  out->name = SpecName(spec);
  nlohmann::json named = spec;
  named["name"] = out->name;
  std::string why;
  if (!sim::BuildWorkload(named, &out->program, &why)) {  // a combination the generator cannot build
    *usable = false;
    return true;
  }
  // A short probe of the iteration time decides whether the job suits GPOEO's sampling (periods of
  // 0.1-4 s; the controller samples every 20 ms) and how long to run it.
  RunResult probe;
  if (!RunAt(out->program, 0, 0, 3, seed, kNoFeatures, &probe, err)) return false;
  *usable = probe.iteration_s >= 0.1 && probe.iteration_s <= 4;
  if (!*usable) return true;
  const int iterations = IterationsFor(probe.iteration_s);
  RunResult base;
  if (!RunAt(out->program, 0, 0, iterations, seed, features, &base, err)) return false;
  return SweepClocks(grid, base, out, [&](int mhz, int mem_mhz, RunResult* r) {
    return RunAt(out->program, mhz, mem_mhz, iterations, seed + static_cast<uint64_t>(mhz + mem_mhz), kNoFeatures, r,
                 err);
  });
}

bool BuildCorpus(const std::string& device, int count, uint64_t seed, const Grid& grid, Features features,
                 const std::set<std::string>& exclude, std::vector<Swept>* out, std::string* err) {
  std::mt19937_64 rng(seed);
  std::set<std::string> seen = exclude;
  for (int draws = 0; static_cast<int>(out->size()) < count && draws < 20 * count; ++draws) {
    const nlohmann::json spec = DrawSpec(rng, device);
    const std::string name = SpecName(spec);
    if (!seen.insert(name).second) continue;  // disjoint corpora, no duplicates
    Swept s;
    bool usable = false;
    if (!Sweep(spec, grid, features, seed * 7919 + static_cast<uint64_t>(draws), &s, &usable, err)) {
      *err = name + ": " + *err;
      return false;
    }
    if (usable) out->push_back(std::move(s));
  }
  return true;
}

// The kernel-mix corpus, for a device that runs no workload of its own (a GPU): periodic jobs of
// microbenchmark kernels (device/microbench.h). Each draws one to three kinds of work, from tensor,
// FP32, FP64, special-function, integer, shared-memory, L1, L2 and DRAM kernels, in counts of 4-60
// launches (about a millisecond each on an A100), and a host gap (GPU idle) after the GPU work:
// none in three jobs of seven, else 5-150 ms.
MixJob DrawMixJob(std::mt19937_64& rng) {
  static constexpr Microbench kPool[] = {kBenchHmma, kBenchImma,     kBenchFp32Fma,  kBenchFp64,
                                         kBenchSfu,  kBenchIntAlu,   kBenchShared,   kBenchL1,
                                         kBenchL2,   kBenchDramRead, kBenchDramWrite};
  std::uniform_int_distribution<size_t> kind(0, std::size(kPool) - 1);
  std::uniform_int_distribution<int> kinds(1, 3), count(4, 60);
  MixJob job;
  std::set<Microbench> used;
  for (int k = kinds(rng); static_cast<int>(used.size()) < k;) {
    const Microbench b = kPool[kind(rng)];
    if (used.insert(b).second) job.launches.push_back({b, count(rng)});
  }
  const double gaps[] = {0, 0, 0, 5, 20, 60, 150};
  job.host_gap_ms = gaps[std::uniform_int_distribution<size_t>(0, std::size(gaps) - 1)(rng)];
  return job;
}

std::string MixJobName(const MixJob& job) {
  std::string name = "mix";
  for (const auto& [b, n] : job.launches) name += fmt::format("-{}x{}", MicrobenchName(b), n);
  if (job.host_gap_ms > 0) name += fmt::format("-gap{:g}ms", job.host_gap_ms);
  return name;
}

nlohmann::json MixJobJson(const MixJob& job) {
  nlohmann::json launches = nlohmann::json::array();
  for (const auto& [b, n] : job.launches) launches.push_back({MicrobenchName(b), n});
  return {{"kind", "kernel-mix"}, {"launches", launches}, {"host_gap_ms", job.host_gap_ms}};
}

// What a run measures: the time per iteration only (a probe), also the energy, also the features.
enum class Measure { kTime, kEnergy, kFeatures };

// One run of a job on a BenchDevice at SM clock `mhz` and memory clock `mem_mhz` (0: the default
// of each): as RunAt, through the device interface only (the device resets both after the run).
// Time per iteration from the iterations' ends after the warm-up; energy per iteration from the
// energy counter's power over the same window; features from the telemetry polled every
// kSampleMs inside it.
bool RunJobAt(BenchDevice& dev, const MixJob& job, int mhz, int mem_mhz, int iterations, Measure what,
              Features features, RunResult* out, std::string* err) {
  struct Poll {
    double t, energy, power, util, mem, clock;
    Activity activity;
    PackMetrics counters;
  };
  std::vector<Poll> polls;
  std::string read_err;
  double limit_w = 0;
  std::unique_ptr<GpoeoWindows> windows;
  auto start = [&](GpuControl& gpus) {
    if (mhz > 0 && !gpus.SetLockedClock(0, mhz, &read_err))
      read_err = "locking " + std::to_string(mhz) + " MHz: " + read_err;
    if (mem_mhz > 0 && read_err.empty() && !gpus.SetMemoryLockedClock(0, mem_mhz, &read_err))
      read_err = "locking the memory clock at " + std::to_string(mem_mhz) + " MHz: " + read_err;
    limit_w = gpus.PowerLimitW(0).value_or(0);
    if (!features) return;
    windows = std::make_unique<GpoeoWindows>(&gpus, *features, kSampleMs * 1e-3);
    if (std::string e; !windows->Start(&e) && read_err.empty()) read_err = e;
  };
  auto poll = [&](GpuControl& gpus, double now) {
    const auto e = gpus.EnergyJ(0), p = gpus.PowerW(0), u = gpus.Utilization(0), m = gpus.MemoryUtilization(0),
               c = gpus.ClockMhz(0);
    if (!e || !p || !u || !m || !c) {
      if (read_err.empty()) read_err = "telemetry: " + gpus.error();
      return;
    }
    if (windows && read_err.empty() && !windows->Tick(&read_err)) return;
    polls.push_back({now, *e, *p, *u, *m, *c, windows && windows->activity() ? *windows->activity() : Activity{},
                     windows && windows->counters() ? *windows->counters() : PackMetrics{}});
  };
  JobRun run;
  if (!dev.RunJob(job, iterations, kSampleMs, start, poll, &run, err)) return false;
  if (!read_err.empty()) {
    *err = read_err;
    return false;
  }
  const std::vector<double>& ends = run.iteration_end_ns;
  if (static_cast<int>(ends.size()) != iterations || iterations <= kWarmup) {
    *err = "the run reported " + std::to_string(ends.size()) + " of " + std::to_string(iterations) + " iterations";
    return false;
  }
  const double t0 = ends[kWarmup - 1], t1 = ends.back();
  out->iteration_s = (t1 - t0) * 1e-9 / (iterations - kWarmup);
  if (what == Measure::kTime) return true;
  size_t first = 0, last = polls.size();
  while (first < polls.size() && polls[first].t < t0) ++first;
  while (last > first && polls[last - 1].t > t1) --last;
  if (last < first + 2 || polls[last - 1].energy <= polls[first].energy) {
    *err = "the energy counter did not move within the measured iterations";
    return false;
  }
  const double power_w = (polls[last - 1].energy - polls[first].energy) / ((polls[last - 1].t - polls[first].t) * 1e-9);
  out->iteration_j = power_w * out->iteration_s;
  if (what == Measure::kFeatures) {
    GpoeoSamples samples;
    for (size_t i = first; i < last; ++i)
      samples.push(polls[i].power, polls[i].util, polls[i].mem, polls[i].clock,
                   features == GpoeoFeatureSet::kActivity ? &polls[i].activity : nullptr,
                   features == GpoeoFeatureSet::kCounters ? &polls[i].counters : nullptr);
    out->features = GpoeoFeatures(samples, kSampleMs * 1e-3, out->iteration_s, limit_w, dev.SupportedClocks().back());
  }
  return true;
}

// Sweeps a job over the clocks, as Sweep does a workload. A job whose iteration is under 0.1 s is
// lengthened to about 0.12 s (its launches and gap multiplied); one over 4 s is left out.
bool SweepJob(BenchDevice& dev, MixJob job, const Grid& grid, Features features, Swept* out, bool* usable,
              std::string* err) {
  RunResult probe;
  if (!RunJobAt(dev, job, 0, 0, 4, Measure::kTime, kNoFeatures, &probe, err)) return false;
  if (probe.iteration_s < 0.1) {
    const int k = static_cast<int>(std::ceil(0.12 / probe.iteration_s));
    for (auto& [b, n] : job.launches) n *= k;
    job.host_gap_ms *= k;
    if (!RunJobAt(dev, job, 0, 0, 4, Measure::kTime, kNoFeatures, &probe, err)) return false;
  }
  *usable = probe.iteration_s >= 0.1 && probe.iteration_s <= 4;
  if (!*usable) return true;
  out->name = MixJobName(job);
  out->spec = MixJobJson(job);
  out->job = job;
  const int iterations = IterationsFor(probe.iteration_s);
  RunResult base;
  if (!RunJobAt(dev, job, 0, 0, iterations, Measure::kFeatures, features, &base, err)) return false;
  return SweepClocks(grid, base, out, [&](int mhz, int mem_mhz, RunResult* r) {
    return RunJobAt(dev, job, mhz, mem_mhz, iterations, Measure::kEnergy, kNoFeatures, r, err);
  });
}

// The kernel-mix corpus: `count` usable jobs, none named in `exclude`. With `spec` (a simulated
// device), each also gets the program the controller's evaluation runs.
bool BuildMixCorpus(BenchDevice& dev, const sim::DeviceSpec* spec, int count, uint64_t seed, const Grid& grid,
                    Features features, const std::set<std::string>& exclude, std::vector<Swept>* out,
                    std::string* err) {
  std::mt19937_64 rng(seed);
  std::set<std::string> seen = exclude;
  for (int draws = 0; static_cast<int>(out->size()) < count && draws < 20 * count; ++draws) {
    const MixJob job = DrawMixJob(rng);
    if (!seen.insert(MixJobName(job)).second) continue;
    Swept s;
    bool usable = false;
    if (!SweepJob(dev, job, grid, features, &s, &usable, err)) {
      *err = MixJobName(job) + ": " + *err;
      return false;
    }
    if (!usable) continue;
    if (spec) s.program = sim::MixJobProgram(*spec, s.job);
    seen.insert(s.name);
    out->push_back(std::move(s));
  }
  return true;
}

// The rows of the SM clock models, or with max_mem_mhz > 0 those of the memory models: every
// point of the sweeps, the memory clock's fraction after the SM clock's.
void Rows(const std::vector<Swept>& corpus, double max_mhz, std::vector<float>* x, std::vector<float>* e,
          std::vector<float>* t, double max_mem_mhz = 0) {
  auto row = [&](const Swept& s, int mhz, double mem_frac, double energy_ratio, double time_ratio) {
    GpoeoRow(s.features, mhz, max_mhz, x, mem_frac);
    e->push_back(static_cast<float>(energy_ratio));
    t->push_back(static_cast<float>(time_ratio));
  };
  for (const Swept& s : corpus) {
    for (size_t i = 0; i < s.mhz.size(); ++i)
      row(s, s.mhz[i], max_mem_mhz > 0 ? 1 : -1, s.energy_ratio[i], s.time_ratio[i]);
    if (max_mem_mhz > 0)
      for (const Swept::MemoryPoint& p : s.memory) row(s, p.mhz, p.mem_mhz / max_mem_mhz, p.energy_ratio, p.time_ratio);
  }
}

// The best static clock within the slowdown cap: its index into s.mhz.
size_t BestStatic(const Swept& s, double cap) {
  size_t best = s.mhz.size() - 1;
  for (size_t i = 0; i < s.mhz.size(); ++i)
    if (s.time_ratio[i] <= 1 + cap && s.energy_ratio[i] < s.energy_ratio[best]) best = i;
  return best;
}

// The gpoeo controller on one held-out workload: energy and time per iteration once it settled,
// relative to the default clock's.
struct ControllerResult {
  // memory_mhz: 0 unless the controller tunes the memory clock; predicted_memory_mhz: 0 unless its
  // memory models predicted one below the default
  int chosen_mhz = 0, memory_mhz = 0, predicted_memory_mhz = 0;
  double saving = 0, slowdown = 0, settle_s = 0, settle_periods = 0, period_s = 0;
  bool settled = false;
};

// The controller's run, and the default clocks' run on the same seed (the same run-to-run and
// GPU-to-GPU draws) over the same iterations, against which its saving and slowdown are measured.
bool RunController(const Swept& s, GpoeoOptions o, const std::string& models_dir, uint64_t seed, ControllerResult* out,
                   std::string* err) {
  o.models_dir = models_dir;
  // The search, then a minute held (at least 30 periods): the guard's first window is 20 s.
  const int iterations = GpoeoSearchBoundIterations(o, s.t0_s) + std::max(30, static_cast<int>(std::ceil(60 / s.t0_s)));
  sim::EngineOptions eo;
  eo.iterations = iterations;
  eo.seed = seed;
  eo.record_trace = false;
  // Per iteration start: its time and the energy counters' sum.
  auto record = [](sim::Engine& e, std::vector<double>* starts, std::vector<double>* energy) {
    e.OnIterationStart([&e, starts, energy](int, double now) {
      double j = 0;
      for (int g = 0; g < e.gpus(); ++g) j += e.EnergyCounterJ(g);
      starts->push_back(now);
      energy->push_back(j);
    });
  };
  sim::Engine e(s.program, eo);
  sim::SimGpuControl gpus(&e);
  sim::SimHost host(&e);
  Gpoeo c(&gpus, o);
  if (!c.error().empty()) {
    *err = c.error();
    return false;
  }
  host.Add(&c);
  std::vector<double> starts, energy, default_starts, default_energy;
  record(e, &starts, &energy);
  if (!e.Run(err)) return false;
  c.Finish();
  out->chosen_mhz = c.chosen_mhz();
  out->memory_mhz = c.chosen_memory_mhz();
  out->predicted_memory_mhz = c.predicted_memory_mhz();
  out->period_s = c.period_s();
  out->settle_s = c.settle_s();
  out->settle_periods = c.period_s() > 0 ? c.settle_s() / c.period_s() : 0;
  out->settled = c.state() == Gpoeo::State::kHold && c.phase_changes().empty();
  if (!out->settled) return true;
  // The iterations that begin one iteration after the search ended.
  const double settled_at = (c.settle_s() + 1.5 * s.t0_s) * 1e9;
  size_t first = 0;
  while (first < starts.size() && starts[first] < settled_at) ++first;
  if (first + 5 >= starts.size()) {
    out->settled = false;
    return true;
  }
  sim::Engine d(s.program, eo);
  record(d, &default_starts, &default_energy);
  if (!d.Run(err)) return false;
  const size_t last = std::min(starts.size(), default_starts.size()) - 1;
  out->slowdown = (starts[last] - starts[first]) / (default_starts[last] - default_starts[first]) - 1;
  out->saving = 1 - (energy[last] - energy[first]) / (default_energy[last] - default_energy[first]);
  return true;
}

double Mape(const std::vector<float>& pred, const std::vector<float>& truth) {
  double s = 0;
  for (size_t i = 0; i < pred.size(); ++i) s += std::abs(pred[i] - truth[i]) / std::abs(truth[i]);
  return pred.empty() ? 0 : 100 * s / static_cast<double>(pred.size());
}

}  // namespace

int RunGpoeoTrain(const GpoeoTrainOptions& opt) {
  const bool on_gpu = opt.device.rfind("cuda:", 0) == 0;
  const std::string corpus = opt.corpus.empty() ? (on_gpu ? "mix" : "workloads") : opt.corpus;
  const std::string eval_corpus = opt.eval_corpus.empty() ? corpus : opt.eval_corpus;
  for (const std::string& c : {corpus, eval_corpus})
    if (c != "workloads" && c != "mix") {
      fmt::print(stderr, "emo gpoeo train: corpus '{}': expected workloads or mix\n", c);
      return 1;
    }
  if (on_gpu && (corpus != "mix" || eval_corpus != "mix")) {
    fmt::print(stderr,
               "emo gpoeo train: --device {}: a GPU trains on the kernel-mix corpus (--corpus mix); the generated "
               "workloads run only in the simulator\n",
               opt.device);
    return 1;
  }
  std::string err;
  GpoeoOptions controller;  // the evaluation's controller options (the models are the ones trained here)
  if (MethodOptions m;
      !SplitMethodSpec("gpoeo:" + opt.controller_options, &m, &err) || !ParseGpoeoOptions(m, &controller, &err)) {
    fmt::print(stderr, "emo gpoeo train: --controller-options: {}\n", err);
    return 1;
  }
  if (!controller.models_dir.empty()) {
    fmt::print(stderr, "emo gpoeo train: --controller-options: the evaluation runs the models trained here\n");
    return 1;
  }
  const sim::DeviceSpec* dev = nullptr;  // the simulated device, if it is one
  std::unique_ptr<sim::SimBenchDevice> sim_bench;
  CudaHost cuda;
  BenchDevice* bench = nullptr;
  if (on_gpu) {
    if (!OpenCuda(opt.device, "emo gpoeo train", &cuda, &err)) {
      fmt::print(stderr, "emo gpoeo train: {}\n", err);
      return 1;
    }
    bench = cuda.device.get();
  } else if (opt.device.rfind("sim:", 0) == 0 && (dev = sim::FindDevice(opt.device.substr(4)))) {
    sim_bench = std::make_unique<sim::SimBenchDevice>(*dev, opt.seed);
    bench = sim_bench.get();
  } else {
    std::string known;
    for (const std::string& n : sim::DeviceNames()) known += " " + n;
    fmt::print(stderr, "emo gpoeo train: unknown device '{}' (known:{}; or cuda:N)\n", opt.device, known);
    return 1;
  }
  const std::string device_name = bench->Name();
  // The simulator offers counters on every device and activity where the product has GPM.
  auto offers = [&](Reading r) { return dev ? r != Reading::kActivity || dev->gpm : cuda.gpu->Offers(r); };
  const GpoeoFeatureSet features = opt.features == "counters"    ? GpoeoFeatureSet::kCounters
                                   : opt.features == "telemetry" ? GpoeoFeatureSet::kTelemetry
                                   : opt.features == "activity" || offers(Reading::kActivity)
                                       ? GpoeoFeatureSet::kActivity
                                       : GpoeoFeatureSet::kTelemetry;
  if (!offers(GpoeoFeatureReading(features))) {
    fmt::print(stderr, "emo gpoeo train: --features {}: {} offers no {} reading\n", opt.features, device_name,
               ReadingName(GpoeoFeatureReading(features)));
    return 1;
  }
  // The clocks swept: `clocks` spread evenly over the supported ones, the default (highest) included;
  // where the device lists several memory clocks, kMemorySmClocks of those at each lower one.
  auto spread = [](const std::vector<int>& all, int count) {
    std::vector<int> out;
    const int k = std::clamp(count, 2, static_cast<int>(all.size()));
    for (int i = 0; i < k; ++i)
      out.push_back(all[static_cast<size_t>(std::lround(static_cast<double>(i) * (all.size() - 1) / (k - 1)))]);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  const std::vector<int> all = bench->SupportedClocks();
  Grid grid;
  grid.sm = spread(all, opt.clocks);
  const std::vector<int>& clocks = grid.sm;
  grid.mem = bench->SupportedMemoryClocks();
  if (grid.mem.size() < 2) grid.mem.clear();
  if (!grid.mem.empty()) grid.mem_sm = spread(grid.sm, kMemorySmClocks);
  const double max_mhz = all.back();
  const double max_mem_mhz = grid.mem.empty() ? 0 : grid.mem.back();

  auto build = [&](const std::string& kind, int count, uint64_t seed, const std::set<std::string>& exclude,
                   std::vector<Swept>* out) {
    return kind == "mix" ? BuildMixCorpus(*bench, dev, count, seed, grid, features, exclude, out, &err)
                         : BuildCorpus(device_name, count, seed, grid, features, exclude, out, &err);
  };
  auto what = [](const std::string& kind) { return kind == "mix" ? "kernel-mix jobs" : "workloads"; };
  std::vector<Swept> train, eval;
  fmt::print("emo gpoeo train: sweeping {} training {} at {} clocks on {}{}\n", opt.train_workloads, what(corpus),
             clocks.size(), device_name,
             grid.mem.empty() ? std::string()
                              : fmt::format(", and {} of them at each of {} lower memory clocks", grid.mem_sm.size(),
                                            grid.mem.size() - 1));
  if (!build(corpus, opt.train_workloads, opt.seed, {}, &train)) {
    fmt::print(stderr, "emo gpoeo train: {}\n", err);
    return 1;
  }
  std::set<std::string> train_names;
  for (const Swept& s : train) train_names.insert(s.name);
  fmt::print("emo gpoeo train: sweeping {} held-out {}\n", opt.eval_workloads, what(eval_corpus));
  if (!build(eval_corpus, opt.eval_workloads, opt.seed + 1000003, train_names, &eval)) {
    fmt::print(stderr, "emo gpoeo train: {}\n", err);
    return 1;
  }

  std::vector<float> x, e, t;
  Rows(train, max_mhz, &x, &e, &t);
  GpoeoModels models;
  models.feature_set = features;
  const size_t cols = GpoeoFeatureNames(features).size() + 1;
  GbtParams p;
  p.rounds = 300;
  p.max_depth = 4;
  p.eta = 0.08;
  p.subsample = 0.9;
  p.seed = static_cast<int>(opt.seed);
  if (!models.energy.Train(x, e.size(), cols, e, p, &err) || !models.time.Train(x, t.size(), cols, t, p, &err)) {
    fmt::print(stderr, "emo gpoeo train: {}\n", err);
    return 1;
  }
  // Model quality on the held-out corpus.
  std::vector<float> ex, ee, et, pe, pt;
  Rows(eval, max_mhz, &ex, &ee, &et);
  if (!models.energy.Predict(ex, ee.size(), &pe, &err) || !models.time.Predict(ex, et.size(), &pt, &err)) {
    fmt::print(stderr, "emo gpoeo train: {}\n", err);
    return 1;
  }
  const double mape_e = Mape(pe, ee), mape_t = Mape(pt, et);
  fmt::print("held-out model MAPE over {} workloads × {} clocks: energy ratio {:.2f} %, time ratio {:.2f} %\n",
             eval.size(), clocks.size(), mape_e, mape_t);
  // The memory models, on every point of the sweeps, judged on the held-out points at the lower
  // memory clocks (where they predict what the SM clock models cannot).
  double mape_mem_e = 0, mape_mem_t = 0;
  if (!grid.mem.empty()) {
    std::vector<float> mx, me, mt;
    Rows(train, max_mhz, &mx, &me, &mt, max_mem_mhz);
    if (!models.energy_memory.Train(mx, me.size(), cols + 1, me, p, &err) ||
        !models.time_memory.Train(mx, mt.size(), cols + 1, mt, p, &err)) {
      fmt::print(stderr, "emo gpoeo train: memory models: {}\n", err);
      return 1;
    }
    std::vector<float> qx, qe, qt, qpe, qpt;
    for (const Swept& s : eval)
      for (const Swept::MemoryPoint& m : s.memory) {
        GpoeoRow(s.features, m.mhz, max_mhz, &qx, m.mem_mhz / max_mem_mhz);
        qe.push_back(static_cast<float>(m.energy_ratio));
        qt.push_back(static_cast<float>(m.time_ratio));
      }
    if (!models.energy_memory.Predict(qx, qe.size(), &qpe, &err) ||
        !models.time_memory.Predict(qx, qt.size(), &qpt, &err)) {
      fmt::print(stderr, "emo gpoeo train: memory models: {}\n", err);
      return 1;
    }
    mape_mem_e = Mape(qpe, qe), mape_mem_t = Mape(qpt, qt);
    fmt::print(
        "held-out memory model MAPE over {} workloads × {} SM clocks × {} lower memory clocks: energy ratio {:.2f} %, "
        "time ratio {:.2f} %\n",
        eval.size(), grid.mem_sm.size(), grid.mem.size() - 1, mape_mem_e, mape_mem_t);
  }

  nlohmann::ordered_json train_list = nlohmann::ordered_json::array(), eval_list = nlohmann::ordered_json::array();
  for (const Swept& s : train) train_list.push_back(s.name);
  for (const Swept& s : eval) eval_list.push_back(s.name);
  models.meta = {{"device", device_name},          {"corpus", corpus},
                 {"eval_corpus", eval_corpus},     {"sample_ms", kSampleMs},
                 {"command", opt.command},         {"clocks_mhz", clocks},
                 {"train_workloads", train_list},  {"eval_workloads", eval_list},
                 {"eval_mape_energy_pct", mape_e}, {"eval_mape_time_pct", mape_t}};
  if (!grid.mem.empty()) {
    models.meta["memory_clocks_mhz"] = grid.mem;
    models.meta["memory_sm_clocks_mhz"] = grid.mem_sm;
    models.meta["eval_mape_memory_energy_pct"] = mape_mem_e;
    models.meta["eval_mape_memory_time_pct"] = mape_mem_t;
  }
  if (!models.Save(opt.out, &err)) {
    fmt::print(stderr, "emo gpoeo train: {}\n", err);
    return 1;
  }
  // The corpora's specs, so that the figures can be reproduced and the held-out jobs rerun.
  {
    nlohmann::ordered_json specs;
    for (const auto* set : {&train, &eval}) {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const Swept& s : *set) {
        nlohmann::ordered_json spec = s.spec;
        spec["name"] = s.name;
        arr.push_back(spec);
      }
      specs[set == &train ? "train" : "eval"] = arr;
    }
    std::ofstream f(opt.out + "/corpus.json");
    f << specs.dump(1) << "\n";
  }

  // The controller on held-out workloads, against the best static clock within its cap (in the
  // simulator: on a GPU, run it with `emo run --controller gpoeo:models=DIR`).
  if (opt.controller_eval > 0 && !dev) fmt::print("the gpoeo controller's evaluation runs in the simulator only\n");
  if (opt.controller_eval > 0 && dev) {
    fmt::print("{:<48} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>7}\n", "held-out workload", "period", "chosen",
               "saving", "slower", "static", "saving", "slower", "settle");
    double sum_save = 0, sum_slow = 0, sum_static = 0;
    int runs = 0;
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (int i = 0; i < opt.controller_eval && i < static_cast<int>(eval.size()); ++i) {
      const Swept& s = eval[static_cast<size_t>(i)];
      ControllerResult r;
      if (!RunController(s, controller, opt.out, opt.seed + 77 + static_cast<uint64_t>(i), &r, &err)) {
        fmt::print(stderr, "emo gpoeo train: {}: {}\n", s.name, err);
        return 1;
      }
      const size_t b = BestStatic(s, controller.max_slowdown);
      if (!r.settled) {
        fmt::print("{:<48} did not settle (period {:.3f} s)\n", s.name, r.period_s);
        results.push_back({{"workload", s.name}, {"settled", false}});
        continue;
      }
      ++runs;
      sum_save += r.saving;
      sum_slow += r.slowdown;
      sum_static += 1 - s.energy_ratio[b];
      fmt::print("{:<48} {:>6.3f}s {:>7} {:>6.1f}% {:>6.1f}% | {:>7} {:>6.1f}% {:>6.1f}% | {:>5.0f} T\n", s.name,
                 r.period_s, r.chosen_mhz, 100 * r.saving, 100 * r.slowdown, s.mhz[b], 100 * (1 - s.energy_ratio[b]),
                 100 * (s.time_ratio[b] - 1), r.settle_periods);
      results.push_back({{"workload", s.name},
                         {"settled", true},
                         {"period_s", r.period_s},
                         {"default_period_s", s.t0_s},
                         {"chosen_mhz", r.chosen_mhz},
                         {"memory_mhz", r.memory_mhz},
                         {"predicted_memory_mhz", r.predicted_memory_mhz},
                         {"energy_saving", r.saving},
                         {"slowdown", r.slowdown},
                         {"settle_periods", r.settle_periods},
                         {"best_static_mhz", s.mhz[b]},
                         {"best_static_saving", 1 - s.energy_ratio[b]},
                         {"best_static_slowdown", s.time_ratio[b] - 1}});
    }
    if (runs > 0)
      fmt::print(
          "mean over {} settled held-out workloads: gpoeo saves {:.1f} % energy at {:+.1f} % time; the best "
          "static clock within {:g} % saves {:.1f} % (GPOEO paper: 16.2 % at +5.1 %, RTX 3080 Ti)\n",
          runs, 100 * sum_save / runs, 100 * sum_slow / runs, 100 * controller.max_slowdown, 100 * sum_static / runs);
    models.meta["controller_eval"] = results;
    if (!opt.controller_options.empty()) models.meta["controller_options"] = opt.controller_options;
    if (!models.Save(opt.out, &err)) {
      fmt::print(stderr, "emo gpoeo train: {}\n", err);
      return 1;
    }
  }
  fmt::print("wrote {}/meta.json, energy.json, time.json,{} corpus.json\n", opt.out,
             models.has_memory() ? " energy_memory.json, time_memory.json," : "");
  return 0;
}

}  // namespace emo
