// watchdog.cc — the watchdog process: reads what EMO changed until the pipe closes, then restores it
// through NVML or zeusd. (What EMO tells it is in watchdog_messages.cc.)
#include "apply/watchdog.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "apply/nvml_gpu_control.h"
#include "apply/zeusd_gpu_control.h"

namespace emo {
namespace {

// The GPUs put back through zeusd at `socket`; the number restored wrong.
int RestoreThroughZeusd(const std::string& socket, const std::map<int, bool>& locked,
                        const std::map<int, unsigned int>& original, std::string* err) {
  std::unique_ptr<ZeusdGpuControl> zeusd = ZeusdGpuControl::Open(err, socket);
  if (!zeusd) return -1;
  int failed = 0;
  for (const auto& [gpu, yes] : locked)
    if (yes && !zeusd->ResetClock(gpu, err)) ++failed, fmt::print(stderr, "emo watchdog: {}\n", *err);
  for (const auto& [gpu, mw] : original)
    if (!zeusd->SetPowerLimit(gpu, mw / 1000.0, err)) ++failed, fmt::print(stderr, "emo watchdog: {}\n", *err);
  // Not destroyed: its destructor would put back the limits it found, EMO's, undoing the above (the
  // watchdog _exits next).
  (void)zeusd.release();
  return failed;
}

int RestoreThroughNvml(const std::map<int, bool>& locked, const std::map<int, unsigned int>& original,
                       std::string* err) {
  std::unique_ptr<NvmlGpuControl> nvml = NvmlGpuControl::Open(err);
  if (!nvml) return -1;
  int failed = 0;
  for (const auto& [gpu, yes] : locked)
    if (yes && !nvml->RestoreForOther(gpu, true, 0, err)) ++failed, fmt::print(stderr, "emo watchdog: {}\n", *err);
  for (const auto& [gpu, mw] : original)
    if (!nvml->RestoreForOther(gpu, false, mw, err)) ++failed, fmt::print(stderr, "emo watchdog: {}\n", *err);
  return failed;
}

// The watchdog's whole life: collect "lock G" / "limit G MW" / "zeusd SOCKET" / "done" lines until
// EOF, then act.
[[noreturn]] void Watch(int fd) {
  // Signals meant for EMO's process group (Ctrl-C, a hang-up) must not end the watchdog first.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  std::map<int, bool> locked;            // GPU -> clocks locked
  std::map<int, unsigned int> original;  // GPU -> power limit to restore, mW
  std::string zeusd;                     // zeusd's socket; "": NVML
  bool done = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string what;
    int gpu = -1;
    unsigned int mw = 0;
    words >> what;
    if (what == "done") done = true;
    if (what == "lock" && words >> gpu) locked[gpu] = true;
    if (what == "limit" && words >> gpu >> mw && !original.count(gpu)) original[gpu] = mw;
    if (what == "zeusd") zeusd = line.substr(6);
  }
  if (done || (locked.empty() && original.empty())) _exit(0);
  std::string err;
  const int failed =
      zeusd.empty() ? RestoreThroughNvml(locked, original, &err) : RestoreThroughZeusd(zeusd, locked, original, &err);
  if (failed < 0) {
    fmt::print(stderr,
               "emo watchdog: EMO ended without restoring the GPUs and {} failed: {} (run `emo gpus{} --reset`)\n",
               zeusd.empty() ? "NVML" : "zeusd", err, zeusd.empty() ? "" : " --backend zeusd");
    _exit(1);
  }
  fmt::print(stderr,
             "emo watchdog: EMO ended without restoring the GPUs; unlocked {} and restored {} power limit{}{}\n",
             locked.size() == 1 ? "one GPU's clocks" : fmt::format("{} GPUs' clocks", locked.size()), original.size(),
             original.size() == 1 ? "" : "s", failed ? fmt::format(", {} failed", failed) : "");
  _exit(failed ? 1 : 0);
}

}  // namespace

bool Watchdog::Start(std::string* err) {
  int fds[2];
  // Close-on-exec: the job EMO starts must not hold the pipe open after EMO is gone.
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *err = std::string("watchdog pipe: ") + std::strerror(errno);
    return false;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("watchdog fork: ") + std::strerror(errno);
    close(fds[0]), close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[1]);
    Watch(fds[0]);
  }
  close(fds[0]);
  fd_ = fds[1];
  return true;
}

}  // namespace emo
