// child.h — runs a user's command as EMO's child process (emo run, emo trace). While a
// SignalGuard lives, SIGINT, SIGTERM and SIGHUP that would end EMO go to the child instead (and
// are ignored when no child runs), so EMO outlives it and restores the GPUs and writes its results.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace emo {

class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction old_[3];
};

// Runs `command` (searched on PATH) with EMO's environment and waits for it. False with *err when
// it could not start; otherwise *exit_code is its exit status (128 + the signal that ended it).
bool RunChild(const std::vector<std::string>& command, int* exit_code, std::string* err);

// A library EMO ships beside its binary: $`env` when set, else `name` in the emo binary's directory.
std::string LibraryBesideEmo(const char* env, const char* name);
// libemo_inject.so (`emo trace`, `emo profile`) as LibraryBesideEmo finds it; false with *err when
// the file is not there.
bool FindInjectLibrary(std::string* path, std::string* err);
// libemo_nccl_profiler.so (`emo trace`), $EMO_NCCL_PROFILER_LIBRARY or beside emo; false with *err
// when the file is not there.
bool FindNcclProfilerLibrary(std::string* path, std::string* err);

}  // namespace emo
