// watchdog.h — puts the GPUs back when EMO dies without doing it itself (a crash, SIGKILL, the OOM
// killer). Start() forks a small process before EMO touches a GPU; EMO tells it through a pipe
// which clocks it locked and which power limits it changed (with their original values). When the
// pipe closes, as it does however EMO ends, the watchdog exits quietly if EMO said Done(), and
// otherwise unlocks those clocks and restores those limits through its own NVML session, or
// through the Zeus daemon when EMO named its socket (Zeusd()).
#pragma once

#include <string>

namespace emo {

class Watchdog {
 public:
  Watchdog() = default;
  ~Watchdog();  // closes the pipe: without Done(), the watchdog restores the GPUs
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Forks the watchdog; false with *err. Call before opening NVML or starting threads.
  bool Start(std::string* err);
  // What this process changed: a GPU's clocks locked; a GPU's power limit moved from original_mw.
  void Locked(int gpu);
  void LimitChanged(int gpu, unsigned int original_mw);
  // The GPUs are zeusd's at `socket_path` (GPU indices as ZeusdGpuControl numbers them), not NVML's.
  void Zeusd(const std::string& socket_path);
  // This process restored everything itself: the watchdog leaves without acting.
  void Done();

 private:
  void Send(const std::string& line);
  int fd_ = -1;
};

}  // namespace emo
