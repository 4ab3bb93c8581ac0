// run.cc — the `emo run` command: a GPU back end (NVML or zeusd) + RealtimeHost around a child process.
//
// The child learns of a Unix datagram socket through $EMO_STEP_SOCKET; a training loop that sends
// one datagram there as each iteration begins gives iteration-driven methods (Zeus's power-limit
// optimizer, frequency policies) their step hook. Signals that would end EMO (SIGINT, SIGTERM,
// SIGHUP) are passed to the child instead, so that EMO outlives it and restores the GPUs.
// A policy is played under a performance guard (apply/performance_guard.h) when its budget is known:
// iterations slower than the budget allows, five in a row, restore the default clocks for good.
#include "cli/run.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "apply/adaptive_player.h"
#include "apply/clock_sampler.h"
#include "apply/gpu_selection.h"
#include "apply/measurement.h"
#include "apply/performance_guard.h"
#include "apply/policy_player.h"
#include "apply/realtime_host.h"
#include "apply/step_socket.h"
#include "apply/watchdog.h"
#include "cli/child.h"
#include "cli/gpu_backend.h"
#include "cli/model_pipeline.h"
#include "cli/run_adapt.h"
#include "online/registry.h"
#include "trace/trace_control.h"

namespace emo {
namespace {

// The performance guard that --guard-budget, --guard-reference, --no-guard and the policy's
// recorded budget and default iteration time ask for: none (*out empty) when no budget is known.
// False with *err when the options contradict each other or the policy.
bool GuardFor(const RunOptions& opt, const FrequencyPolicy& policy, std::optional<PerformanceGuard>* out,
              std::string* err) {
  const bool asked = opt.guard_budget_pct >= 0 || opt.guard_reference != "auto";
  if (asked && opt.policy.empty()) {
    *err = "--guard-budget and --guard-reference guard a policy: they need --policy";
    return false;
  }
  if (asked && !opt.guard) {
    *err = "--no-guard contradicts --guard-budget and --guard-reference";
    return false;
  }
  if (opt.guard_reference != "auto" && opt.guard_reference != "policy" && opt.guard_reference != "measured") {
    *err = "--guard-reference " + opt.guard_reference + ": expected policy, measured or auto";
    return false;
  }
  const double budget = opt.guard_budget_pct >= 0 ? opt.guard_budget_pct / 100 : policy.budget;
  if (opt.policy.empty() || !opt.guard) return true;
  if (budget < 0) {
    if (!asked) return true;  // an old policy file, and no guard asked for
    *err = opt.policy + ": records no budget for the guard: give --guard-budget PCT";
    return false;
  }
  if (opt.guard_reference == "policy" && policy.default_iteration_ms <= 0) {
    *err = opt.policy +
           ": records no default_iteration_ms for --guard-reference policy (emo optimize writes it; or measure it: "
           "--guard-reference measured)";
    return false;
  }
  const bool from_policy = opt.guard_reference != "measured" && policy.default_iteration_ms > 0;
  out->emplace(budget, from_policy ? policy.default_iteration_ms : 0);
  return true;
}

}  // namespace

int RunCommand(const RunOptions& opt) {
  std::string err;
  MethodSpec method_spec;
  if (!ParseMethodSpec(opt.controller, &method_spec, &err)) {
    fmt::print(stderr, "emo run: --controller: {}\n", err);
    return 1;
  }
  FrequencyPolicy policy;
  if (!opt.policy.empty() && !LoadPolicy(opt.policy, &policy, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  if (opt.lock_mhz > 0 && (!opt.policy.empty() || !opt.controller.empty() || opt.adapt_pct >= 0)) {
    fmt::print(stderr, "emo run: --lock-mhz holds one clock: no --policy, --controller or --adapt\n");
    return 1;
  }
  // --adapt: the job traced on demand into a directory of its own, and the packs it profiled.
  std::vector<KnownPack> known;
  std::string control_dir;
  if (opt.adapt_pct >= 0) {
    if (!opt.policy.empty() || !opt.controller.empty()) {
      fmt::print(stderr, "emo run: --adapt plays its own policies: no --policy or --controller\n");
      return 1;
    }
    std::string library;
    if (opt.packs.empty()) err = "--adapt needs --packs (emo profile's file of the same program)";
    if (!err.empty() || !ReadKnownPacks(opt.packs, &known, &err) || !FindInjectLibrary(&library, &err)) {
      fmt::print(stderr, "emo run: {}\n", err);
      return 1;
    }
    std::error_code ec;
    control_dir = (std::filesystem::temp_directory_path(ec) / fmt::format("emo-adapt-{}", getpid())).string();
    setenv("CUDA_INJECTION64_PATH", std::filesystem::absolute(library).c_str(), 1);
    setenv(kTraceControlEnv, control_dir.c_str(), 1);
  }
  std::optional<PerformanceGuard> perf_guard;
  if (!GuardFor(opt, policy, &perf_guard, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  // Started before any GPU is touched (and any thread): if EMO dies, it restores what EMO changed.
  Watchdog watchdog;
  if (!watchdog.Start(&err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  GpuBackend backend;
  if (!backend.Open(opt.backend, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  if (backend.nvml) backend.nvml->Watch(&watchdog);
  if (backend.zeusd) backend.zeusd->Watch(&watchdog);
  // The job's GPUs (--gpus, else $CUDA_VISIBLE_DEVICES, else all), numbered as the job sees them:
  // the policy, the method and the measurement all use that numbering.
  GpuSelection selection;
  if (!SelectJobGpus(opt.gpus, std::getenv(kCudaVisibleDevicesEnv), std::getenv("CUDA_DEVICE_ORDER"),
                     InventoryOf(*backend.gpus), &selection, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  if (!selection.warning.empty()) fmt::print(stderr, "emo run: warning: {}\n", selection.warning);
  GpuView view(backend.gpus, selection.gpus);
  GpuControl* gpus = &view;
  if (selection.source != "all") {
    std::string map;
    for (int g = 0; g < view.Count(); ++g) map += fmt::format("{}{} -> {}", g ? ", " : "", g, view.BaseIndex(g));
    fmt::print(stderr, "emo run: the job's GPUs (from {}), as {} numbers them: {}\n", selection.source, opt.backend,
               map);
  }
  if (!selection.job_cuda_visible_devices.empty())
    setenv(kCudaVisibleDevicesEnv, selection.job_cuda_visible_devices.c_str(), 1);
  if (selection.job_pci_bus_order) setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  for (const auto& g : policy.gpus)
    if (g.gpu >= gpus->Count()) {
      fmt::print(stderr, "emo run: {}: no GPU {} among the job's {} (from {})\n", opt.policy, g.gpu, gpus->Count(),
                 selection.source);
      return 1;
    }
  std::unique_ptr<OnlineMethod> method = BuildMethod(method_spec, gpus, &err);
  if (method_spec.entry && !method) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  const bool iteration_driven = method_spec.entry && method_spec.entry->iteration_driven;
  RealtimeHost host;
  PolicyPlayer player(policy, gpus);
  // The guard speaks from the controller thread, as it acts: a job may run for days.
  if (perf_guard)
    player.Guard(*perf_guard, [](const std::string& line) { fmt::print(stderr, "emo run: guard: {}\n", line); });
  Meter meter(gpus, /*warmup=*/-1);  // the window is the whole run: opened before the job starts
  // The clock each GPU runs the job at while busy (under its power limit), for emo optimize --trace.
  ClockSampler clocks(gpus, 100, 0.5);
  host.Add(&player);
  host.Add(&meter);
  host.Add(&clocks);
  if (method) host.Add(method.get());
  std::unique_ptr<RunPlanner> planner;
  std::unique_ptr<AdaptivePlayer> adaptive;
  if (opt.adapt_pct >= 0) {
    RunPlannerOptions po;
    po.control_dir = control_dir;
    po.profile = opt.profile;
    AdaptiveOptions ao;
    ao.budget = opt.adapt_pct / 100;
    ao.background = true;  // a plan takes seconds here (trace, model, search): not on the host's thread
    SearchOptions so;
    so.budget = ao.budget;
    planner = std::make_unique<RunPlanner>(po, std::move(known), so, &clocks);
    adaptive = std::make_unique<AdaptivePlayer>(
        ao, gpus,
        [&planner](const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* e) {
          return planner->Plan(w, budget, out, e);
        },
        [](const std::string& line) { fmt::print(stderr, "emo run: adapt: {}\n", line); });
    host.Add(adaptive.get());
  }
  StepSocket steps;
  if (!steps.Open([&host] { host.IterationStart(); }, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  if (std::error_code ec; !control_dir.empty() && (std::filesystem::create_directories(control_dir, ec), ec)) {
    fmt::print(stderr, "emo run: {}: cannot create the directory: {}\n", control_dir, ec.message());
    return 1;
  }
  setenv(kStepSocketEnv, steps.path().c_str(), 1);
  for (int g = 0; g < gpus->Count() && opt.lock_mhz > 0; ++g)
    if (!gpus->SetLockedClock(g, opt.lock_mhz, &err)) {
      std::string restore_err;
      if (backend.RestoreAll(&restore_err)) watchdog.Done();
      fmt::print(stderr, "emo run: --lock-mhz: {}{}\n", err, restore_err.empty() ? "" : "; restoring: " + restore_err);
      return 1;
    }

  // The whole run is the window: its time from the wall clock, its energy from the counters, and
  // the iterations the job reported.
  // Signals go to the job until the GPUs are restored.
  const SignalGuard guard;
  meter.Open(0);
  host.Start();
  int code = 1;
  std::string spawn_err;
  const bool spawned = RunChild(opt.command, &code, &spawn_err);
  if (planner) planner->Cancel();  // a plan still waiting for the job's trace would wait for nothing
  steps.Close();
  const double end_ns = host.NowNs();
  host.Stop();  // Finish(): every controller resets what it changed
  std::string restore_err;
  const bool restored = backend.RestoreAll(&restore_err);
  if (restored) watchdog.Done();
  if (!spawned) {
    fmt::print(stderr, "emo run: {}\n", spawn_err);
    return 1;
  }
  if (!player.error().empty()) fmt::print(stderr, "emo run: {}: {}\n", opt.policy, player.error());
  if (adaptive && !adaptive->error().empty()) fmt::print(stderr, "emo run: --adapt: {}\n", adaptive->error());
  if (method && !method->error().empty()) fmt::print(stderr, "emo run: {}: {}\n", opt.controller, method->error());
  if (!restored) fmt::print(stderr, "emo run: restoring the GPUs: {} (run `emo gpus --reset` as root)\n", restore_err);
  if (!control_dir.empty()) {  // the windows' traces: tens of MB each, of no use once planned from
    std::error_code ec;
    std::filesystem::remove_all(control_dir, ec);
  }
  if ((iteration_driven || !policy.gpus.empty() || adaptive) && steps.steps() == 0)
    fmt::print(stderr, "emo run: no iteration start arrived at ${}, so the {} never acted\n", kStepSocketEnv,
               iteration_driven ? "method"
               : adaptive       ? "online loop"
                                : "policy");

  if (player.guard() && player.guard()->state() == PerformanceGuard::State::kMeasuring &&
      player.guard()->iterations() > 0)
    fmt::print(stderr, "emo run: guard: the job ended while the guard was {}: the policy never played\n",
               player.guard()->Describe());

  Measurement m;
  const bool measured = meter.Close(end_ns, &m, &err);
  if (measured)
    fmt::print(stderr, "emo run: {} exited with {} after {:.3f} s and {} iterations; {:.1f} J on {} GPUs{}\n",
               opt.command[0], code, m.window_s, m.iterations, m.energy_j, gpus->Count(),
               gpus->error().empty() ? "" : " (" + gpus->error() + ")");
  else
    fmt::print(stderr, "emo run: {} exited with {}; no energy measurement: {}\n", opt.command[0], code, err);
  std::vector<std::string> lines;
  nlohmann::ordered_json findings;
  if (method) method->Report(&lines, &findings);
  for (const std::string& line : lines) fmt::print("{}\n", line);
  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json j = {
        {"command", opt.command}, {"controller", opt.controller}, {"policy", opt.policy}, {"exit_code", code}};
    if (opt.lock_mhz > 0) j["lock_mhz"] = opt.lock_mhz;
    nlohmann::ordered_json backend_gpus = nlohmann::ordered_json::array();
    for (int g = 0; g < view.Count(); ++g) backend_gpus.push_back(view.BaseIndex(g));
    j["gpu_selection"] = {{"source", selection.source}, {"backend_gpus", backend_gpus}};
    if (!opt.policy.empty()) j["guard"] = player.guard() ? player.guard()->Json() : nlohmann::ordered_json();
    if (measured) AddMeasurementJson(m, &j);
    j["busy_clock_mhz"] = clocks.MeanMhz();
    if (method) j[method_spec.entry->json_key] = findings;
    if (adaptive) j["adapt"] = adaptive->Json();
    std::ofstream f(opt.measure_out);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo run: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return code;
}

}  // namespace emo
