// sim.cc — the `emo sim` command.
#include "cli/sim.h"

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apply/measurement.h"
#include "apply/policy_player.h"
#include "online/registry.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
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
  MethodSpec method_spec;
  if (!ParseMethodSpec(opt.controller, &method_spec, &err)) {
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
  sim::SimGpuControl gpus(&engine);
  sim::SimHost host(&engine);
  PolicyPlayer player(policy, &gpus);
  std::unique_ptr<OnlineMethod> method = BuildMethod(method_spec, &gpus, &err);
  if (method_spec.entry && !method) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  Meter meter(&gpus, warmup);
  host.Add(&player);
  if (method) host.Add(method.get());
  host.Add(&meter);
  const bool ran = engine.Run(&err);
  player.Finish();
  if (method) method->Finish();
  if (!ran) {
    fmt::print(stderr, "emo sim: {}: {}\n", opt.workload, err);
    return 1;
  }
  if (!player.error().empty()) {
    fmt::print(stderr, "emo sim: policy: {}\n", player.error());
    return 1;
  }
  if (method && !method->error().empty()) {
    fmt::print(stderr, "emo sim: {}: {}\n", opt.controller, method->error());
    return 1;
  }
  Measurement m;
  if (!meter.Close(engine.end_ns(), &m, &err)) {
    fmt::print(stderr, "emo sim: {}\n", err);
    return 1;
  }
  fmt::print("{} on {} x {}: {} iterations ({} measured), {:.3f} ms and {:.2f} J per iteration\n", program.name,
             engine.gpus(), program.device, opt.iterations, m.iterations, m.iteration_ms(), m.iteration_energy_j());
  std::vector<std::string> lines;
  nlohmann::ordered_json findings;
  if (method) method->Report(&lines, &findings);
  for (const std::string& line : lines) fmt::print("{}\n", line);

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
    nlohmann::ordered_json j;
    j["workload"] = program.name;
    j["device"] = program.device;
    j["gpus"] = engine.gpus();
    j["seed"] = opt.seed;
    j["policy"] = opt.policy.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.policy);
    j["controller"] = opt.controller.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(opt.controller);
    j["run_iterations"] = opt.iterations;
    j["warmup_iterations"] = warmup;
    AddMeasurementJson(m, &j);
    if (method) j[method_spec.entry->json_key] = findings;
    std::ofstream f(opt.measure_out);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo sim: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return 0;
}

}  // namespace emo
