// sim.cc — the `emo sim` command.
#include "cli/sim.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apply/policy.h"
#include "apply/sim_gpu_control.h"
#include "online/geepafs.h"
#include "online/method_options.h"
#include "online/zeus_power_limit.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/workload.h"
#include "trace/kineto_writer.h"

namespace emo {

int RunSim(const SimOptions& opt) {
  std::string err;
  sim::Program program;
  if (!sim::LoadWorkload(opt.workload, &program, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  if (!opt.device.empty()) {
    const sim::DeviceSpec* spec = sim::FindDevice(opt.device);
    if (!spec) {
      std::string known;
      for (const std::string& n : sim::DeviceNames()) known += " " + n;
      fmt::print(stderr, "emo sim: unknown device '{}' (known:{})\n", opt.device, known);
      return 1;
    }
    program.device = spec->name;
  }
  FrequencyPolicy policy;
  if (!opt.policy.empty() && !LoadPolicy(opt.policy, &policy, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  MethodOptions method;
  ZeusPowerLimitOptions zeus_options;
  GeepafsOptions geepafs_options;
  if (!opt.controller.empty()) {
    bool ok = SplitMethodSpec(opt.controller, &method, &err);
    if (ok && method.name == "zeus-power-limit") {
      ok = ParseZeusPowerLimitOptions(method, &zeus_options, &err);
    } else if (ok && method.name == "geepafs") {
      ok = ParseGeepafsOptions(method, &geepafs_options, &err);
    } else if (ok) {
      ok = false;
      err = "unknown method '" + method.name + "' (zeus-power-limit, geepafs)";
    }
    if (!ok) {
      fmt::print(stderr, "emo sim: --controller: {}\n", err);
      return 1;
    }
  }
  // By default the first iteration warms up (and lets a policy's first clock change land);
  // measurement covers the rest, read from the energy counters as a user would read NVML.
  const int warmup = opt.warmup >= 0 ? opt.warmup : (opt.iterations > 1 ? 1 : 0);
  if (opt.iterations < 1 || warmup >= opt.iterations) {
    fmt::print(stderr, "emo sim: --iterations ({}) must exceed --warmup ({})\n", opt.iterations, warmup);
    return 1;
  }

  sim::EngineOptions eo;
  eo.iterations = opt.iterations;
  eo.seed = opt.seed;
  eo.record_trace = !opt.trace_out.empty();
  sim::Engine engine(program, eo);
  SimGpuControl gpus(&engine);
  PolicyPlayer player(policy, &gpus, [&](double t, std::function<void(double)> fn) { engine.At(t, std::move(fn)); });
  std::unique_ptr<ZeusPowerLimitOptimizer> zeus;
  std::unique_ptr<Geepafs> geepafs;
  std::vector<Controller*> controllers{&player};
  if (method.name == "zeus-power-limit") {
    zeus = std::make_unique<ZeusPowerLimitOptimizer>(&gpus, zeus_options);
    controllers.push_back(zeus.get());
  } else if (method.name == "geepafs") {
    geepafs = std::make_unique<Geepafs>(&gpus, geepafs_options);
    controllers.push_back(geepafs.get());
  }
  if (!controllers.back()->error().empty()) {
    fmt::print(stderr, "emo sim: {}: {}\n", opt.controller, controllers.back()->error());
    return 1;
  }
  for (Controller* c : controllers) AttachController(&engine, c);
  std::vector<double> e0(static_cast<size_t>(engine.gpus()), 0.0);
  double t0 = 0;
  engine.OnIterationStart([&](int iteration, double now) {
    if (iteration != warmup) return;
    t0 = now;
    for (int g = 0; g < engine.gpus(); ++g) e0[static_cast<size_t>(g)] = gpus.EnergyJ(g);
  });
  const bool ran = engine.Run(&err);
  for (Controller* c : controllers) c->Finish();
  if (!ran) {
    fmt::print(stderr, "emo sim: {}: {}\n", opt.workload, err);
    return 1;
  }
  for (Controller* c : controllers) {
    if (!c->error().empty()) {
      fmt::print(stderr, "emo sim: {}: {}\n", c == &player ? "policy" : opt.controller, c->error());
      return 1;
    }
  }
  const int measured = opt.iterations - warmup;
  double iteration_ms = (engine.end_ns() - t0) / 1e6 / measured;
  double total = 0;
  nlohmann::ordered_json per_gpu = nlohmann::ordered_json::array();
  for (int g = 0; g < engine.gpus(); ++g) {
    double e = (gpus.EnergyJ(g) - e0[static_cast<size_t>(g)]) / measured;
    total += e;
    per_gpu.push_back({{"gpu", g}, {"energy_j", e}, {"avg_power_w", e / (iteration_ms / 1e3)}});
  }
  fmt::print("{} on {} x {}: {} iterations ({} measured), {:.3f} ms and {:.2f} J per iteration\n", program.name,
             engine.gpus(), program.device, opt.iterations, measured, iteration_ms, total);
  nlohmann::ordered_json zeus_report;
  if (zeus) {
    nlohmann::ordered_json profiled = nlohmann::ordered_json::array();
    for (const auto& x : zeus->measurements())
      profiled.push_back({{"limit_w", x.limit_w}, {"energy_j", x.energy_j}, {"time_s", x.time_s}});
    const bool done = zeus->state() == ZeusPowerLimitOptimizer::State::kDone;
    zeus_report = {{"done", done}, {"optimum_w", done ? nlohmann::ordered_json(zeus->optimum_w()) : nullptr},
                   {"candidates", zeus->candidates_w().size()}, {"profiled", profiled}};
    if (done)
      fmt::print("zeus-power-limit: profiled {} limits, chose {:.0f} W\n", profiled.size(), zeus->optimum_w());
    else
      fmt::print("zeus-power-limit: profiled {} of {} limits before the run ended (each takes {} iterations)\n",
                 profiled.size(), zeus->candidates_w().size(), zeus_options.warmup_steps + zeus_options.profile_steps);
  }
  nlohmann::ordered_json geepafs_report;
  if (geepafs) {
    geepafs_report = nlohmann::ordered_json::array();
    for (int g = 0; g < engine.gpus(); ++g) {
      geepafs_report.push_back({{"gpu", g}, {"probes_mhz", geepafs->probes_mhz(g)}, {"choices_mhz", geepafs->choices(g)}});
      fmt::print("geepafs: GPU {} probed {} and chose {}\n", g, fmt::join(geepafs->probes_mhz(g), "/"),
                 geepafs->choices(g).empty() ? std::string("nothing yet") : fmt::format("{}", fmt::join(geepafs->choices(g), ", ")));
    }
  }

  if (!opt.trace_out.empty()) {
    const Trace& t = engine.trace();
    if (t.ranks.size() == 1) {
      if (!WriteKinetoJson(t, 0, opt.trace_out, &err)) {
        fmt::print(stderr, "emo sim: {}\n", err);
        return 1;
      }
    } else {
      std::error_code ec;
      std::filesystem::create_directories(opt.trace_out, ec);
      if (ec) {
        fmt::print(stderr, "emo sim: {}: {}\n", opt.trace_out, ec.message());
        return 1;
      }
      for (size_t r = 0; r < t.ranks.size(); ++r)
        if (!WriteKinetoJson(t, r, opt.trace_out + "/rank-" + std::to_string(r) + ".json", &err)) {
          fmt::print(stderr, "emo sim: {}\n", err);
          return 1;
        }
    }
  }
  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json m;
    m["workload"] = program.name;
    m["device"] = program.device;
    m["gpus"] = engine.gpus();
    m["iterations"] = opt.iterations;
    m["warmup_iterations"] = warmup;
    m["measured_iterations"] = measured;
    m["seed"] = opt.seed;
    m["policy"] = opt.policy.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.policy);
    m["controller"] = opt.controller.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.controller);
    if (zeus) m["zeus_power_limit"] = zeus_report;
    if (geepafs) m["geepafs"] = geepafs_report;
    m["iteration_ms"] = iteration_ms;
    m["energy_j"] = total;
    m["per_gpu"] = per_gpu;
    std::ofstream f(opt.measure_out);
    f << m.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo sim: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace emo
