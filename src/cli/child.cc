// child.cc — posix_spawnp, signal forwarding and the child's exit status.
#include "cli/child.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace emo {
namespace {

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

SignalGuard::SignalGuard() {
  struct sigaction forward {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &forward, &old_[i]);
}

SignalGuard::~SignalGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

bool RunChild(const std::vector<std::string>& command, int* exit_code, std::string* err) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_rc = command.empty() ? EINVAL : posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawn_rc == 0) {
    g_child = pid;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
  }
  if (spawn_rc != 0) {
    *err =
        "cannot start " + (command.empty() ? std::string("(no command)") : command[0]) + ": " + std::strerror(spawn_rc);
    return false;
  }
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return true;
}

std::string LibraryBesideEmo(const char* env, const char* name) {
  const char* value = std::getenv(env);
  if (value && *value) return value;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (exe.parent_path() / name).string();
}

bool FindInjectLibrary(std::string* path, std::string* err) {
  *path = LibraryBesideEmo("EMO_INJECT_LIBRARY", "libemo_inject.so");
  std::error_code ec;
  if (std::filesystem::is_regular_file(*path, ec)) return true;
  *err = "injection library " + *path + " not found (set EMO_INJECT_LIBRARY)";
  return false;
}

bool FindNcclProfilerLibrary(std::string* path, std::string* err) {
  *path = LibraryBesideEmo("EMO_NCCL_PROFILER_LIBRARY", "libemo_nccl_profiler.so");
  std::error_code ec;
  if (std::filesystem::is_regular_file(*path, ec)) return true;
  *err = "NCCL profiler plugin " + *path + " not found (set EMO_NCCL_PROFILER_LIBRARY)";
  return false;
}

}  // namespace emo
