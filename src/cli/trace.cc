// trace.cc — the `emo trace` command: sets CUDA_INJECTION64_PATH to libemo_inject.so (next to the
// emo binary, or $EMO_INJECT_LIBRARY), NCCL_PROFILER_PLUGIN to libemo_nccl_profiler.so (unless the
// user set it) and EMO_TRACE_DIR to the output directory, runs the command and lists the trace
// files it wrote. --warmup M --iterations N reach the library as EMO_TRACE_WARMUP and
// EMO_TRACE_ITERATIONS, --counters-ms as EMO_TRACE_COUNTERS_MS.
#include "cli/trace.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cli/child.h"
#include "trace/trace_control.h"

namespace emo {
#ifdef EMO_HAVE_CUPTI
namespace fs = std::filesystem;
#endif

namespace {

// `emo trace --request DIR --iterations N`: asks, waits, and lists the answers.
int RequestWindow(const TraceOptions& opt) {
  if (!opt.command.empty() || opt.on_demand || opt.warmup > 0 || !opt.out_dir.empty()) {
    fmt::print(stderr,
               "emo trace: --request asks a running job for a window: it takes --iterations and --timeout "
               "only\n");
    return 1;
  }
  if (opt.iterations < 1) {
    fmt::print(stderr, "emo trace: --request needs --iterations N\n");
    return 1;
  }
  TraceRequest request;
  std::string err;
  if (!WriteTraceRequest(opt.request, opt.iterations, opt.timeout_s, &request, &err)) {
    fmt::print(stderr, "emo trace: {}\n", err);
    return 1;
  }
  fmt::print(stderr, "emo trace: request {} for {} iterations written to {}\n", request.seq, request.iterations,
             opt.request);
  // The processes' own timeout, and time for their last poll and for the GPU to finish.
  WindowAnswers answers;
  const bool all = WaitForWindow(opt.request, request.seq, opt.timeout_s + 5, 0.05, &answers, &err);
  for (const std::string& f : answers.files) fmt::print("{}\n", f);
  for (const std::string& e : answers.errors) fmt::print(stderr, "emo trace: no trace: {}\n", e);
  if (!all) fmt::print(stderr, "emo trace: {}\n", err);
  if (!all || !answers.errors.empty()) return 1;
  const std::string window = WindowDir(opt.request, request.seq);
  fmt::print(stderr, "emo trace: {} trace file{} in {} (emo analyze {})\n", answers.files.size(),
             answers.files.size() == 1 ? "" : "s", window, window);
  return 0;
}

}  // namespace

int RunTrace(const TraceOptions& opt) {
  if (!opt.request.empty()) return RequestWindow(opt);
  if (opt.out_dir.empty()) {
    fmt::print(stderr, "emo trace: -o DIR is required (or --request DIR)\n");
    return 1;
  }
  if (opt.on_demand && opt.iterations > 0) {
    fmt::print(stderr, "emo trace: --on-demand traces the windows asked for: --iterations goes to --request\n");
    return 1;
  }
#ifndef EMO_HAVE_CUPTI
  (void)opt;
  fmt::print(stderr, "emo trace: this emo was built without CUDA support (no CUDA toolkit found at build time)\n");
  return 1;
#else
  if (opt.command.empty()) {
    fmt::print(stderr, "emo trace: no command given (usage: emo trace -o DIR -- CMD ARGS...)\n");
    return 1;
  }
  std::string library, err;
  if (!FindInjectLibrary(&library, &err)) {
    fmt::print(stderr, "emo trace: {}\n", err);
    return 1;
  }
  std::error_code ec;
  const fs::path dir = fs::absolute(opt.out_dir, ec);
  if (ec || (fs::create_directories(dir, ec), ec)) {
    fmt::print(stderr, "emo trace: {}: cannot create the directory: {}\n", opt.out_dir, ec.message());
    return 1;
  }
  // Files written before this run are not reported as this run's.
  const auto started = fs::file_time_type::clock::now();
  setenv("CUDA_INJECTION64_PATH", fs::absolute(library).c_str(), 1);
  setenv("EMO_TRACE_DIR", dir.c_str(), 1);  // and the NCCL plugin's records, of the whole run
  setenv("EMO_TRACE_COUNTERS_MS", std::to_string(opt.counters_ms).c_str(), 1);
  if (opt.on_demand) {
    setenv(kTraceControlEnv, dir.c_str(), 1);
    fmt::print(stderr, "emo trace: tracing on demand: emo trace --request {} --iterations N\n", dir.string());
  } else if (opt.iterations > 0) {
    setenv("EMO_TRACE_WARMUP", std::to_string(opt.warmup).c_str(), 1);
    setenv("EMO_TRACE_ITERATIONS", std::to_string(opt.iterations).c_str(), 1);
  }
  // NCCL's communicators and collective numbers come from EMO's NCCL profiler plugin, unless the
  // user chose a profiler plugin of their own (NCCL loads one only).
  if (const char* own = std::getenv("NCCL_PROFILER_PLUGIN"); own && *own) {
    fmt::print(stderr,
               "emo trace: NCCL_PROFILER_PLUGIN is set ({}): keeping it; NCCL collectives will be matched across "
               "ranks by order, not by sequence number\n",
               own);
  } else if (std::string plugin; FindNcclProfilerLibrary(&plugin, &err)) {
    setenv("NCCL_PROFILER_PLUGIN", fs::absolute(plugin).c_str(), 1);
  } else {
    fmt::print(stderr, "emo trace: {}; NCCL collectives will be matched by order\n", err);
  }

  int code = 1;
  const SignalGuard guard;
  if (!RunChild(opt.command, &code, &err)) {
    fmt::print(stderr, "emo trace: {}\n", err);
    return 1;
  }

  std::vector<std::string> written;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (((name.starts_with("emo-trace-") && name.ends_with(".json")) ||
         (name.starts_with("emo-nccl-") && name.ends_with(".txt"))) &&
        e.last_write_time(ec) >= started)
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
