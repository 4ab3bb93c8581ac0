// run.cc — the `emo run` command: NVML back end + RealtimeHost around a child process. Signals
// that would end EMO (SIGINT, SIGTERM, SIGHUP) are passed to the child instead, so that EMO
// always outlives it and restores the GPUs.
#include "cli/run.h"

#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apply/nvml_gpu_control.h"
#include "apply/realtime_host.h"
#include "online/geepafs.h"
#include "online/method_options.h"

extern char** environ;

namespace emo {
namespace {

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

int RunCommand(const RunOptions& opt) {
  std::string err;
  MethodOptions method;
  GeepafsOptions geepafs_options;
  if (!opt.controller.empty()) {
    bool ok = SplitMethodSpec(opt.controller, &method, &err);
    if (ok && method.name == "geepafs") {
      ok = ParseGeepafsOptions(method, &geepafs_options, &err);
    } else if (ok) {
      ok = false;
      err = "'" + method.name + "' cannot run here: emo run hosts methods driven by a periodic tick (geepafs); "
            "iteration-driven ones (zeus-power-limit, policies) need the training loop's step hook";
    }
    if (!ok) {
      fmt::print(stderr, "emo run: --controller: {}\n", err);
      return 1;
    }
  }
  std::unique_ptr<NvmlGpuControl> nvml = NvmlGpuControl::Open(&err);
  if (!nvml) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  std::unique_ptr<Geepafs> geepafs;
  std::vector<Controller*> controllers;
  if (method.name == "geepafs") {
    geepafs = std::make_unique<Geepafs>(nvml.get(), geepafs_options);
    controllers.push_back(geepafs.get());
  }
  for (Controller* c : controllers)
    if (!c->error().empty()) {
      fmt::print(stderr, "emo run: {}: {}\n", opt.controller, c->error());
      return 1;
    }

  std::vector<double> e0;
  for (int g = 0; g < nvml->Count(); ++g) e0.push_back(nvml->EnergyJ(g));
  struct sigaction forward {}, old_int {}, old_term {}, old_hup {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);

  std::vector<char*> argv;
  for (const std::string& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  RealtimeHost host(controllers);
  host.Start();
  pid_t pid = 0;
  const int spawn_rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawn_rc == 0) {
    g_child = pid;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
  }
  host.Stop();  // Finish(): the method resets what it changed
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string restore_err;
  const bool restored = nvml->RestoreAll(&restore_err);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (spawn_rc != 0) {
    fmt::print(stderr, "emo run: cannot start {}: {}\n", opt.command[0], std::strerror(spawn_rc));
    return 1;
  }
  for (Controller* c : controllers)
    if (!c->error().empty()) fmt::print(stderr, "emo run: {}: {}\n", opt.controller, c->error());
  if (!restored) fmt::print(stderr, "emo run: restoring the GPUs: {} (run `emo gpus --reset` as root)\n", restore_err);

  nlohmann::ordered_json per_gpu = nlohmann::ordered_json::array();
  double total = 0;
  for (int g = 0; g < nvml->Count(); ++g) {
    const double e = nvml->EnergyJ(g) - e0[static_cast<size_t>(g)];
    total += e;
    nlohmann::ordered_json j = {{"gpu", g}, {"name", nvml->Name(g)}, {"energy_j", e}};
    if (geepafs) j["geepafs_choices_mhz"] = geepafs->choices(g);
    per_gpu.push_back(j);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  fmt::print(stderr, "emo run: {} exited with {} after {:.3f} s; {:.1f} J on {} GPUs{}\n", opt.command[0], code,
             seconds, total, nvml->Count(), nvml->error().empty() ? "" : " (" + nvml->error() + ")");
  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json m = {{"command", opt.command},   {"controller", opt.controller},
                                {"exit_code", code},        {"seconds", seconds},
                                {"energy_j", total},        {"per_gpu", per_gpu}};
    std::ofstream f(opt.measure_out);
    f << m.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "emo run: {}: cannot write\n", opt.measure_out);
      return 1;
    }
  }
  return code;
}

}  // namespace emo
