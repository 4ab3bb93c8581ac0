// validate.cc — `emo validate`: predicted against measured time and energy of static clocks and
// random policies on a simulated device, through the pipeline only (cli/sim_pipeline.h).
//
// The JSON report (MAPEs in percent, errors as fractions: predicted / measured − 1):
//   workload, device, gpus, kernels, packs, unique_packs, profiled_ranges
//   low_clock_mhz  the clock of the second traced run (--low-clock), 0: none
//   energy_scale   per GPU, the predictor's factor on pack energies fitted to the traced energy
//   profiling      {ranges, passes, kernels_profiled, overhead_s, kernels_in_run, reduction,
//                   profiled_s, instances_reduction}: the pack profiling's cost as the MetricSource
//                   reports it, the profiled ranges' summed duration (a floor of a replay pass), and
//                   per-kernel profiling's (kernels_in_run) over it, by kernel executions and by
//                   profiled instances (ranges)
//   basis          what the headline MAPEs compare (ratios to each side's own default run)
//   default        predicted and measured iteration_ms and energy_j at the default clocks
//   static         {time_mape, energy_mape, abs_time_mape, abs_energy_mape, clocks: [...]}
//   random         the same, with policies: [...] (each with its policy JSON)
//   measurement    {seeds, iterations, warmup}
//   seconds        wall time of the whole validation
#include "cli/validate.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "cli/sim_pipeline.h"

namespace emo {

namespace {

// Per-iteration time (ms) and energy (J, all GPUs).
struct PerIteration {
  double ms = 0, j = 0;
};

struct Compared {
  PerIteration pred, meas;
  double time_err = 0, energy_err = 0;          // of the ratios to the default run
  double abs_time_err = 0, abs_energy_err = 0;  // of the per-iteration values
};

Compared Compare(const PerIteration& pred, const PerIteration& meas, const PerIteration& pred0,
                 const PerIteration& meas0) {
  Compared c;
  c.pred = pred;
  c.meas = meas;
  c.time_err = (pred.ms / pred0.ms) / (meas.ms / meas0.ms) - 1;
  c.energy_err = (pred.j / pred0.j) / (meas.j / meas0.j) - 1;
  c.abs_time_err = pred.ms / meas.ms - 1;
  c.abs_energy_err = pred.j / meas.j - 1;
  return c;
}

nlohmann::ordered_json ComparedJson(const Compared& c, const PerIteration& pred0, const PerIteration& meas0) {
  return {{"predicted_iteration_ms", c.pred.ms},
          {"measured_iteration_ms", c.meas.ms},
          {"predicted_energy_j", c.pred.j},
          {"measured_energy_j", c.meas.j},
          {"predicted_time_ratio", c.pred.ms / pred0.ms},
          {"measured_time_ratio", c.meas.ms / meas0.ms},
          {"predicted_energy_ratio", c.pred.j / pred0.j},
          {"measured_energy_ratio", c.meas.j / meas0.j},
          {"time_err", c.time_err},
          {"energy_err", c.energy_err},
          {"abs_time_err", c.abs_time_err},
          {"abs_energy_err", c.abs_energy_err}};
}

// MAPEs (percent) of a set of comparisons, into j.
void AddMapes(const std::vector<Compared>& v, nlohmann::ordered_json* j) {
  double t = 0, e = 0, at = 0, ae = 0;
  for (const Compared& c : v) {
    t += std::abs(c.time_err);
    e += std::abs(c.energy_err);
    at += std::abs(c.abs_time_err);
    ae += std::abs(c.abs_energy_err);
  }
  const double n = v.empty() ? 1 : static_cast<double>(v.size());
  (*j)["time_mape"] = 100 * t / n;
  (*j)["energy_mape"] = 100 * e / n;
  (*j)["abs_time_mape"] = 100 * at / n;
  (*j)["abs_energy_mape"] = 100 * ae / n;
}

// The clock of `clocks` nearest to mhz.
int Nearest(const std::vector<int>& clocks, double mhz) {
  int best = clocks.front();
  for (int c : clocks)
    if (std::abs(c - mhz) < std::abs(best - mhz)) best = c;
  return best;
}

// Uniform in [0, 1) from the 53 high bits: the same draws on every standard library.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

bool Validate(const ValidateOptions& opt, nlohmann::ordered_json* out, std::string* err) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.seeds < 1 || (opt.iterations != 0 && opt.iterations < 2) || opt.trace_iterations < 3 || opt.clocks < 2 ||
      opt.random_policies < 0 || !(opt.change_ms > 0) || !(opt.dvfs_latency_ms >= 0) ||
      !(opt.low_fraction > 0 && opt.low_fraction <= 1)) {
    *err =
        "--seeds must be >= 1, --iterations >= 2, --trace-iterations >= 3, --clocks >= 2, --change-ms > 0, "
        "--dvfs-latency-ms >= 0, --low-fraction in (0, 1]";
    return false;
  }
  Pipeline pl;
  PipelineOptions po;
  po.profile = opt.profile;
  po.pack_ms = opt.pack_ms;
  po.trace_iterations = opt.trace_iterations;
  po.seed = opt.seed;
  po.low_mhz = opt.low_mhz;
  if (!BuildPipeline(opt.workload, opt.device, po, &pl, err)) return false;
  const DeviceProfile& profile = pl.profile;
  Predictor& predictor = pl.predictor;
  const int gpus = predictor.gpus();
  const std::vector<int>& clocks = profile.clocks_mhz;

  // Predicted per-iteration values: the run from the first iteration's start, over its iterations.
  const Trace& trace = pl.engine->trace();
  const double start0_ns = trace.ranks[0].iterations.empty()
                               ? 0
                               : static_cast<double>(trace.ranks[0].iterations[0].start_ns - pl.g.origin_ns);
  const double iters = static_cast<double>(std::max(1, predictor.iterations()));
  auto predicted = [&](const Schedule& s) {
    const Predictor::Result r = predictor.Run(s);
    return PerIteration{(r.end_ns - start0_ns) / iters / 1e6, r.energy_j / iters};
  };
  const PerIteration pred0 = predicted(Schedule(gpus));
  // The energy counter moves every ~100 ms: a window of a few short iterations measures its steps,
  // not the energy.
  const int iterations = opt.iterations > 0 ? opt.iterations : MeasureWindowIterations(pred0.ms, 6);

  // Measured: the mean over seeds, each run's first iteration left out.
  std::vector<uint64_t> seeds;
  for (int i = 0; i < opt.seeds; ++i) seeds.push_back(opt.seed + 1000 + static_cast<uint64_t>(i));
  auto measured = [&](const FrequencyPolicy* p, PerIteration* m) {
    *m = PerIteration();
    for (uint64_t seed : seeds) {
      Measurement r;
      if (!MeasureRun(pl.program, seed, iterations, 1, p, "", &r, err)) return false;
      m->ms += r.iteration_ms() / static_cast<double>(seeds.size());
      m->j += r.iteration_energy_j() / static_cast<double>(seeds.size());
    }
    return true;
  };
  PerIteration meas0;
  if (!measured(nullptr, &meas0)) return false;

  // 1. Static clocks across the profile's range, the default among them.
  std::vector<int> static_mhz{profile.default_mhz};
  for (int i = 0; i < opt.clocks; ++i)
    static_mhz.push_back(
        Nearest(clocks, clocks.front() + (clocks.back() - clocks.front()) * static_cast<double>(i) / (opt.clocks - 1)));
  std::sort(static_mhz.begin(), static_mhz.end());
  static_mhz.erase(std::unique(static_mhz.begin(), static_mhz.end()), static_mhz.end());
  std::vector<Compared> statics;
  nlohmann::ordered_json static_rows = nlohmann::ordered_json::array();
  for (int mhz : static_mhz) {
    const int c = profile.ClockIndex(mhz);
    if (c < 0) {
      *err = fmt::format("{} MHz is not a clock of the profile", mhz);
      return false;
    }
    const FrequencyPolicy p = StaticPolicy(gpus, mhz);
    PerIteration m;
    if (!measured(&p, &m)) return false;
    statics.push_back(Compare(predicted(Schedule(gpus, {{opt.dvfs_latency_ms * 1e6, c}})), m, pred0, meas0));
    nlohmann::ordered_json row{{"mhz", mhz}};
    row.update(ComparedJson(statics.back(), pred0, meas0));
    static_rows.push_back(row);
  }

  // 2. Random policies: a command every change_ms of the (predicted default) iteration, each a
  // clock drawn uniformly from [low_fraction, 1] × the highest clock, snapped to the profile's;
  // even-numbered policies give all GPUs the same clocks, odd-numbered ones draw per GPU.
  std::vector<int> allowed;
  for (int mhz : clocks)
    if (mhz >= opt.low_fraction * clocks.back() - 1e-9) allowed.push_back(mhz);
  const double low = opt.low_fraction * clocks.back(), high = clocks.back();
  std::vector<double> commands_ms;
  for (double t = 0; t < pred0.ms; t += opt.change_ms) commands_ms.push_back(t);
  std::vector<Compared> randoms;
  nlohmann::ordered_json random_rows = nlohmann::ordered_json::array();
  for (int i = 0; i < opt.random_policies; ++i) {
    std::mt19937_64 rng(opt.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(i));
    const bool per_gpu = i % 2 == 1;
    FrequencyPolicy policy;
    std::vector<int> shared;
    for (size_t k = 0; k < commands_ms.size(); ++k)
      shared.push_back(Nearest(allowed, low + Uniform(rng) * (high - low)));
    for (int g = 0; g < gpus; ++g) {
      FrequencyPolicy::Gpu pg;
      pg.gpu = g;
      for (size_t k = 0; k < commands_ms.size(); ++k) {
        const int mhz = per_gpu ? Nearest(allowed, low + Uniform(rng) * (high - low)) : shared[k];
        pg.changes.push_back({commands_ms[k], mhz});
      }
      policy.gpus.push_back(std::move(pg));
    }
    // Predicted as applied: each command lands dvfs_latency_ms later.
    Schedule schedule;
    if (!ScheduleFromPolicy(policy, clocks, gpus, opt.dvfs_latency_ms, &schedule, err)) return false;
    PerIteration m;
    if (!measured(&policy, &m)) return false;
    randoms.push_back(Compare(predicted(schedule), m, pred0, meas0));
    double mean_mhz = 0;
    for (const auto& pg : policy.gpus)
      for (const ClockChange& ch : pg.changes)
        mean_mhz += ch.mhz / static_cast<double>(pg.changes.size() * policy.gpus.size());
    nlohmann::ordered_json row{
        {"index", i}, {"per_gpu", per_gpu}, {"changes_per_gpu", commands_ms.size()}, {"mean_mhz", mean_mhz}};
    row.update(ComparedJson(randoms.back(), pred0, meas0));
    row["policy"] = nlohmann::ordered_json::parse(PolicyJson(policy));
    random_rows.push_back(row);
  }

  // 3. The report.
  const PackProfile& pp = pl.pp;
  double profiled_s = 0;  // the profiled ranges' own duration: what one replay pass of each takes at least
  for (const PackMetrics& m : pp.metrics) profiled_s += m.time_ns / 1e9;
  nlohmann::ordered_json& j = *out;
  j = nlohmann::ordered_json::object();
  j["workload"] = pl.program.name;
  j["device"] = pl.program.device;
  j["gpus"] = gpus;
  j["kernels"] = pp.kernels_in_run;
  j["packs"] = pl.packing.packs();
  j["unique_packs"] = pp.packs.size();
  j["profiled_ranges"] = pp.cost.ranges;
  j["energy_scale"] = predictor.energy_scale();
  j["low_clock_mhz"] = pl.low_mhz;
  j["profiling"] = {
      {"ranges", pp.cost.ranges},
      {"passes", pp.cost.passes},
      {"kernels_profiled", pp.cost.kernels_profiled},
      {"overhead_s", pp.cost.overhead_s},
      {"profiled_s", profiled_s},
      {"kernels_in_run", pp.kernels_in_run},
      {"reduction", pp.cost.kernels_profiled > 0
                        ? static_cast<double>(pp.kernels_in_run) / static_cast<double>(pp.cost.kernels_profiled)
                        : 0.0},
      {"instances_reduction",
       pp.cost.ranges > 0 ? static_cast<double>(pp.kernels_in_run) / static_cast<double>(pp.cost.ranges) : 0.0}};
  j["basis"] =
      "time_mape, energy_mape: errors of the ratio to the default clocks (predicted policy / predicted default "
      "against measured policy / measured default); abs_*: of the per-iteration values";
  j["default"] = {{"predicted_iteration_ms", pred0.ms},
                  {"measured_iteration_ms", meas0.ms},
                  {"predicted_energy_j", pred0.j},
                  {"measured_energy_j", meas0.j}};
  j["static"] = nlohmann::ordered_json::object();
  AddMapes(statics, &j["static"]);
  j["static"]["clocks"] = static_rows;
  j["random"] = {{"change_ms", opt.change_ms},
                 {"low_mhz", allowed.front()},
                 {"high_mhz", allowed.back()},
                 {"dvfs_latency_ms", opt.dvfs_latency_ms}};
  AddMapes(randoms, &j["random"]);
  j["random"]["policies"] = random_rows;
  j["measurement"] = {{"seeds", seeds}, {"iterations", iterations}, {"warmup", 1}};
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

int RunValidate(const ValidateOptions& opt) {
  std::string err;
  nlohmann::ordered_json j;
  if (!Validate(opt, &j, &err)) {
    fmt::print(stderr, "emo validate: {}\n", err);
    return 1;
  }
  // With the JSON on stdout, the text goes to stderr.
  FILE* txt = opt.json == "-" ? stderr : stdout;
  const auto& pr = j["profiling"];
  fmt::print(txt, "{} on {} x {}: {} kernels in {} packs ({} unique)\n", j["workload"].get<std::string>(),
             j["gpus"].get<int>(), j["device"].get<std::string>(), j["kernels"].get<int64_t>(),
             j["packs"].get<size_t>(), j["unique_packs"].get<size_t>());
  fmt::print(txt,
             "  pack profiling: {} ranges, {} passes, {} kernel executions profiled ({:.3f} s of kernels), {:.3f} s "
             "overhead reported; per-kernel profiling "
             "of the traced run would profile {} kernels: {:.0f}x the executions, {:.0f}x the instances\n",
             pr["ranges"].get<int64_t>(), pr["passes"].get<int64_t>(), pr["kernels_profiled"].get<int64_t>(),
             pr["profiled_s"].get<double>(), pr["overhead_s"].get<double>(), pr["kernels_in_run"].get<int64_t>(),
             pr["reduction"].get<double>(), pr["instances_reduction"].get<double>());
  if (j["low_clock_mhz"].get<int>() > 0)
    fmt::print(txt, "  traced again at {} MHz: each pack's change with the clock measured (--low-clock)\n",
               j["low_clock_mhz"].get<int>());
  const auto& d = j["default"];
  fmt::print(txt,
             "  default clocks: predicted {:.3f} ms, {:.2f} J per iteration; measured {:.3f} ms, {:.2f} J "
             "({} seeds x {} iterations, the first left out)\n",
             d["predicted_iteration_ms"].get<double>(), d["predicted_energy_j"].get<double>(),
             d["measured_iteration_ms"].get<double>(), d["measured_energy_j"].get<double>(), opt.seeds,
             j["measurement"]["iterations"].get<int>());
  fmt::print(
      txt,
      "  errors are predicted/measured - 1 of the ratio to the default clocks (each side against its own default "
      "run); abs: of the per-iteration values\n");
  auto row = [txt](const std::string& what, const nlohmann::ordered_json& r) {
    fmt::print(txt,
               "    {:<16} time {:7.3f} -> {:7.3f} ms x{:.3f}/x{:.3f} {:+6.2f} % (abs {:+6.2f} %)   energy "
               "{:7.2f} -> {:7.2f} J x{:.3f}/x{:.3f} {:+6.2f} % (abs {:+6.2f} %)\n",
               what, r["predicted_iteration_ms"].get<double>(), r["measured_iteration_ms"].get<double>(),
               r["predicted_time_ratio"].get<double>(), r["measured_time_ratio"].get<double>(),
               r["time_err"].get<double>() * 100, r["abs_time_err"].get<double>() * 100,
               r["predicted_energy_j"].get<double>(), r["measured_energy_j"].get<double>(),
               r["predicted_energy_ratio"].get<double>(), r["measured_energy_ratio"].get<double>(),
               r["energy_err"].get<double>() * 100, r["abs_energy_err"].get<double>() * 100);
  };
  fmt::print(txt, "  static clocks (predicted -> measured, ratios predicted/measured):\n");
  for (const auto& r : j["static"]["clocks"]) row(fmt::format("{} MHz", r["mhz"].get<int>()), r);
  const auto& rnd = j["random"];
  fmt::print(txt, "  random policies (a clock every {} ms in {}-{} MHz, landing {} ms after its command):\n",
             rnd["change_ms"].get<double>(), rnd["low_mhz"].get<int>(), rnd["high_mhz"].get<int>(),
             rnd["dvfs_latency_ms"].get<double>());
  for (const auto& r : rnd["policies"])
    row(fmt::format("#{} {}", r["index"].get<int>(), r["per_gpu"].get<bool>() ? "per GPU" : "all GPUs"), r);
  auto mape = [txt](const char* what, const nlohmann::ordered_json& s) {
    fmt::print(txt, "  {} MAPE: time {:.2f} %, energy {:.2f} % (absolute: time {:.2f} %, energy {:.2f} %)\n", what,
               s["time_mape"].get<double>(), s["energy_mape"].get<double>(), s["abs_time_mape"].get<double>(),
               s["abs_energy_mape"].get<double>());
  };
  mape("static", j["static"]);
  mape("random", rnd);
  if (!opt.json.empty()) {
    if (opt.json == "-") {
      fmt::print("{}\n", j.dump(2));
    } else {
      std::ofstream f(opt.json);
      f << j.dump(2) << "\n";
      if (!f) {
        fmt::print(stderr, "emo validate: {}: cannot write\n", opt.json);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace emo
