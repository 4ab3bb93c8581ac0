// sim.cc — the `emo sim` command.
#include "cli/sim.h"

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apply/policy.h"
#include "apply/sim_gpu_control.h"
#include "cli/online_method.h"
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
  OnlineMethod method;
  if (!method.Parse(opt.controller, &err)) {
    fmt::print(stderr, "emo sim: --controller: {}\n", err);
    return 1;
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
  if (!method.Build(&gpus, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  std::vector<Controller*> controllers{&player};
  if (method.controller()) controllers.push_back(method.controller());
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
  nlohmann::ordered_json found;
  method.Report(engine.gpus(), &found);

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
    m["iteration_ms"] = iteration_ms;
    m["energy_j"] = total;
    m["per_gpu"] = per_gpu;
    for (const auto& [key, value] : found.items()) m[key] = value;
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
