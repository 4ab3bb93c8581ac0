// run.cc — the `emo run` command: NVML back end + RealtimeHost around a child process.
//
// The child learns of a Unix datagram socket through $EMO_STEP_SOCKET; a training loop that sends
// one datagram there as each iteration begins gives iteration-driven methods (Zeus's power-limit
// optimizer, frequency policies) their step hook. Signals that would end EMO (SIGINT, SIGTERM,
// SIGHUP) are passed to the child instead, so that EMO outlives it and restores the GPUs.
#include "cli/run.h"

#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "apply/nvml_gpu_control.h"
#include "apply/policy.h"
#include "apply/realtime_host.h"
#include "cli/online_method.h"

extern char** environ;

namespace emo {
namespace {

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

// The step socket: every datagram is one iteration start. Receives on its own thread until
// closed; the path is removed on destruction.
class StepSocket {
 public:
  ~StepSocket() { Close(); }
  bool Open(RealtimeHost* host, std::string* err) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/emo-steps-" + std::to_string(getpid()) + ".sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path) {
      *err = "step socket path too long: " + path_;
      return false;
    }
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    unlink(path_.c_str());
    if (fd_ < 0 || bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      *err = "step socket " + path_ + ": " + std::strerror(errno);
      return false;
    }
    timeval tv{0, 100000};  // wake every 100 ms to notice Close()
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this, host] {
      char buf[256];
      while (!closing_) {
        const ssize_t n = recv(fd_, buf, sizeof buf, 0);
        if (n >= 0) {
          host->IterationStart();
          ++steps_;
        }
      }
    });
    return true;
  }
  void Close() {
    closing_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_), unlink(path_.c_str());
    fd_ = -1;
  }
  const std::string& path() const { return path_; }
  int steps() const { return steps_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> closing_{false};
  std::atomic<int> steps_{0};
  std::thread thread_;
};

}  // namespace

int RunCommand(const RunOptions& opt) {
  std::string err;
  OnlineMethod method;
  if (!method.Parse(opt.controller, &err)) {
    fmt::print(stderr, "emo run: --controller: {}\n", err);
    return 1;
  }
  FrequencyPolicy policy;
  if (!opt.policy.empty() && !LoadPolicy(opt.policy, &policy, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  std::unique_ptr<NvmlGpuControl> nvml = NvmlGpuControl::Open(&err);
  if (!nvml) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  for (const auto& g : policy.gpus)
    if (g.gpu >= nvml->Count()) {
      fmt::print(stderr, "emo run: {}: no GPU {} (there are {})\n", opt.policy, g.gpu, nvml->Count());
      return 1;
    }
  if (!method.Build(nvml.get(), &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  RealtimeHost* host_ptr = nullptr;
  PolicyPlayer player(policy, nvml.get(), [&](double t, std::function<void(double)> fn) { host_ptr->At(t, std::move(fn)); });
  std::vector<Controller*> controllers{&player};
  if (method.controller()) controllers.push_back(method.controller());
  RealtimeHost host(controllers);
  host_ptr = &host;
  StepSocket steps;
  if (!steps.Open(&host, &err)) {
    fmt::print(stderr, "emo run: {}\n", err);
    return 1;
  }
  setenv("EMO_STEP_SOCKET", steps.path().c_str(), 1);

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
  steps.Close();
  host.Stop();  // Finish(): every controller resets what it changed
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
    if (!c->error().empty())
      fmt::print(stderr, "emo run: {}: {}\n", c == &player ? opt.policy : opt.controller, c->error());
  if (!restored) fmt::print(stderr, "emo run: restoring the GPUs: {} (run `emo gpus --reset` as root)\n", restore_err);
  if ((method.iteration_driven() || !policy.gpus.empty()) && steps.steps() == 0)
    fmt::print(stderr, "emo run: no iteration start arrived at $EMO_STEP_SOCKET, so the {} never acted\n",
               method.iteration_driven() ? "method" : "policy");

  nlohmann::ordered_json per_gpu = nlohmann::ordered_json::array();
  double total = 0;
  for (int g = 0; g < nvml->Count(); ++g) {
    const double e = nvml->EnergyJ(g) - e0[static_cast<size_t>(g)];
    total += e;
    per_gpu.push_back({{"gpu", g}, {"name", nvml->Name(g)}, {"energy_j", e}});
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  fmt::print(stderr, "emo run: {} exited with {} after {:.3f} s and {} iterations; {:.1f} J on {} GPUs{}\n",
             opt.command[0], code, seconds, steps.steps(), total, nvml->Count(),
             nvml->error().empty() ? "" : " (" + nvml->error() + ")");
  nlohmann::ordered_json found;
  method.Report(nvml->Count(), &found);
  if (!opt.measure_out.empty()) {
    nlohmann::ordered_json m = {{"command", opt.command}, {"controller", opt.controller}, {"policy", opt.policy},
                                {"exit_code", code},      {"seconds", seconds},           {"iterations", steps.steps()},
                                {"energy_j", total},      {"per_gpu", per_gpu}};
    for (const auto& [key, value] : found.items()) m[key] = value;
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
