// trace.cc — the `emo trace` command: sets CUDA_INJECTION64_PATH to libemo_inject.so (next to the
// emo binary, or $EMO_INJECT_LIBRARY) and EMO_TRACE_DIR to the output directory, runs the command
// and lists the trace files it wrote.
#include "cli/trace.h"

#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

extern char** environ;

namespace emo {
#ifdef EMO_HAVE_CUPTI
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_trace_child = 0;

void ForwardToChild(int sig) {
  if (g_trace_child > 0) kill(static_cast<pid_t>(g_trace_child), sig);
}

// $EMO_INJECT_LIBRARY, else libemo_inject.so in the emo binary's directory.
std::string InjectLibrary() {
  const char* env = std::getenv("EMO_INJECT_LIBRARY");
  if (env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "libemo_inject.so" : (exe.parent_path() / "libemo_inject.so").string();
}

}  // namespace
#endif

int RunTrace(const TraceOptions& opt) {
#ifndef EMO_HAVE_CUPTI
  (void)opt;
  fmt::print(stderr, "emo trace: this emo was built without CUDA support (no CUDA toolkit found at build time)\n");
  return 1;
#else
  if (opt.command.empty()) {
    fmt::print(stderr, "emo trace: no command given (usage: emo trace -o DIR -- CMD ARGS...)\n");
    return 1;
  }
  std::error_code ec;
  const std::string library = InjectLibrary();
  if (!fs::is_regular_file(library, ec)) {
    fmt::print(stderr, "emo trace: injection library {} not found (set EMO_INJECT_LIBRARY)\n", library);
    return 1;
  }
  const fs::path dir = fs::absolute(opt.out_dir, ec);
  if (ec || (fs::create_directories(dir, ec), ec)) {
    fmt::print(stderr, "emo trace: {}: cannot create the directory: {}\n", opt.out_dir, ec.message());
    return 1;
  }
  // Files written before this run are not reported as this run's.
  const auto started = fs::file_time_type::clock::now();
  setenv("CUDA_INJECTION64_PATH", fs::absolute(library).c_str(), 1);
  setenv("EMO_TRACE_DIR", dir.c_str(), 1);

  struct sigaction forward {
  }, old_int{}, old_term{}, old_hup{};
  forward.sa_handler = ForwardToChild;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  std::vector<char*> argv;
  for (const std::string& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawn_rc == 0) {
    g_trace_child = pid;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_trace_child = 0;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (spawn_rc != 0) {
    fmt::print(stderr, "emo trace: cannot start {}: {}\n", opt.command[0], std::strerror(spawn_rc));
    return 1;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  std::vector<std::string> written;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("emo-trace-") && name.ends_with(".json") && e.last_write_time(ec) >= started)
      written.push_back(e.path().string());
  }
  std::sort(written.begin(), written.end());
  for (const std::string& f : written) fmt::print("{}\n", f);
  if (written.empty())
    fmt::print(stderr, "emo trace: {} exited with {} and wrote no trace (did it use CUDA?)\n", opt.command[0], code);
  else
    fmt::print(stderr, "emo trace: {} exited with {}; {} trace file{} in {} (emo analyze {})\n", opt.command[0], code,
               written.size(), written.size() == 1 ? "" : "s", dir.string(), dir.string());
  return code;
#endif
}

}  // namespace emo
