// watchdog_messages.cc — what EMO tells its watchdog (watchdog.h) as it changes GPUs: apart from
// the watchdog process (watchdog.cc), so that the NVML back end, which sends them, links without
// zeusd's client and libcurl, which only the process uses (libemo_inject.so reads NVML).
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include "apply/watchdog.h"

namespace emo {

void Watchdog::Send(const std::string& line) {
  if (fd_ < 0) return;
  // Lines are short, so each write is atomic; a watchdog that is gone must not kill EMO (SIGPIPE).
  const sighandler_t old = signal(SIGPIPE, SIG_IGN);
  if (write(fd_, line.data(), line.size()) < 0) {
    close(fd_);
    fd_ = -1;
  }
  signal(SIGPIPE, old);
}

void Watchdog::Locked(int gpu) { Send(fmt::format("lock {}\n", gpu)); }
void Watchdog::LimitChanged(int gpu, unsigned int original_mw) { Send(fmt::format("limit {} {}\n", gpu, original_mw)); }
void Watchdog::Zeusd(const std::string& socket_path) { Send("zeusd " + socket_path + "\n"); }
void Watchdog::Done() { Send("done\n"); }

Watchdog::~Watchdog() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace emo
