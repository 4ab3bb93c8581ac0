// profile.cc — the `emo profile` command (profile.h). CommandMetricSource is the MetricSource of a
// real job: it writes the ranges, reruns the command under the injection library and reads back
// what each process measured, checking each range's first kernel name against the trace.
#include "cli/profile.h"

#include <fmt/core.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "cli/child.h"
#include "cli/model_pipeline.h"
#include "device/range_file.h"
#include "model/pack_profile.h"
#include "trace/load.h"

namespace emo {
namespace {

namespace fs = std::filesystem;

class CommandMetricSource : public MetricSource {
 public:
  // `names[gpu][ordinal - ranks[gpu].kernels_before]`: the traced kernel names, for the check that
  // both runs launch alike.
  CommandMetricSource(std::vector<std::string> command, std::string library, fs::path dir,
                      std::vector<std::vector<std::string>> names, const std::vector<RankTrace>& ranks)
      : command_(std::move(command)), library_(std::move(library)), dir_(std::move(dir)), names_(std::move(names)) {
    for (const RankTrace& r : ranks) windows_.push_back({r.windowed, r.kernels_before});
  }

  int exit_code() const { return exit_code_; }
  int mismatches() const { return mismatches_; }

  bool Profile(const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out, ProfileCost* cost,
               std::string* err) override {
    const fs::path ranges_path = dir_ / "ranges.json";
    {
      std::ofstream f(ranges_path);
      f << RangesJson(ranges) << "\n";
      if (!f) {
        *err = ranges_path.string() + ": cannot write";
        return false;
      }
    }
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().starts_with("profile-")) fs::remove(e.path());
    setenv("CUDA_INJECTION64_PATH", fs::absolute(library_).c_str(), 1);
    setenv("EMO_PROFILE_RANGES", ranges_path.c_str(), 1);
    setenv("EMO_PROFILE_OUT", dir_.c_str(), 1);
    const SignalGuard guard;
    if (!RunChild(command_, &exit_code_, err)) return false;
    // Every process's results, by (gpu, first, last).
    std::map<std::tuple<int, int64_t, int64_t>, ProfiledRange> got;
    std::vector<std::string> problems;
    int results = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
      if (!e.path().filename().string().starts_with("profile-")) continue;
      ++results;
      std::ifstream f(e.path());
      std::stringstream text;
      text << f.rdbuf();
      ProfileResult r;
      if (!ParseProfileResult(text.str(), &r, err)) {
        *err = e.path().string() + ": " + *err;
        return false;
      }
      if (!r.error.empty()) problems.push_back("GPU " + std::to_string(r.gpu) + ": " + r.error);
      // A windowed trace saw the kernels up to its window's end; the run launches more after it.
      const bool known = r.gpu >= 0 && static_cast<size_t>(r.gpu) < names_.size();
      const Window w = known ? windows_[r.gpu] : Window();
      const int64_t traced = w.kernels_before + (known ? static_cast<int64_t>(names_[r.gpu].size()) : 0);
      if (w.windowed ? r.kernels_seen < traced : r.kernels_seen != traced)
        problems.push_back("GPU " + std::to_string(r.gpu) + " launched " + std::to_string(r.kernels_seen) +
                           " compute kernels, the trace " + (w.windowed ? "at least " : "") + std::to_string(traced));
      for (const ProfiledRange& p : r.ranges) {
        got[{p.range.gpu, p.range.first, p.range.last}] = p;
        cost->passes += r.passes_per_kernel;  // kernel replay: each of the range's kernels runs every pass
      }
    }
    if (results == 0) {
      *err = command_[0] + " exited with " + std::to_string(exit_code_) + " and wrote no profile results to " +
             dir_.string() + " (did it run CUDA kernels?)";
      return false;
    }
    out->assign(ranges.size(), {});
    for (size_t i = 0; i < ranges.size(); ++i) {
      const KernelRange& k = ranges[i];
      const auto it = got.find({k.gpu, k.first, k.last});
      if (it == got.end()) {
        *err = "range " + std::to_string(k.first) + ".." + std::to_string(k.last) + " of GPU " + std::to_string(k.gpu) +
               " was not profiled" +
               (problems.empty() ? std::string(" (no process of the command profiled that GPU)") : ": " + problems[0]);
        return false;
      }
      const std::string& want = names_[k.gpu][k.first - windows_[k.gpu].kernels_before];
      if (it->second.first_kernel != want) {
        if (mismatches_++ == 0)
          fmt::print(stderr, "emo profile: range {}..{} of GPU {} began at {}, where the trace has {}\n", k.first,
                     k.last, k.gpu, it->second.first_kernel, want);
      }
      (*out)[i] = it->second.metrics;
      cost->kernels_profiled += it->second.metrics.kernels;
    }
    cost->ranges += static_cast<int64_t>(ranges.size());
    for (const std::string& p : problems) fmt::print(stderr, "emo profile: {}\n", p);
    return true;
  }

 private:
  std::vector<std::string> command_;
  std::string library_;
  fs::path dir_;
  std::vector<std::vector<std::string>> names_;
  struct Window {
    bool windowed = false;
    int64_t kernels_before = 0;
  };
  std::vector<Window> windows_;  // per GPU
  int exit_code_ = 0;
  int mismatches_ = 0;
};

}  // namespace

int RunProfile(const ProfileOptions& opt) {
#ifndef EMO_HAVE_CUPTI
  (void)opt;
  fmt::print(stderr, "emo profile: this emo was built without CUDA support (no CUDA toolkit found at build time)\n");
  return 1;
#else
  if (opt.command.empty()) {
    fmt::print(stderr, "emo profile: no command given (usage: emo profile --trace DIR -o OUT.json -- CMD ARGS...)\n");
    return 1;
  }
  std::string library, err;
  if (!FindInjectLibrary(&library, &err)) {
    fmt::print(stderr, "emo profile: {}\n", err);
    return 1;
  }
  std::error_code ec;
  std::vector<std::string> files;
  Trace trace;
  Graph g;
  BuildReport report;
  Packing packing;
  if (!ExpandTracePaths(opt.traces, &files, &err) || !LoadTraces(files, &trace, &err) ||
      !GraphAndPacks(trace, opt.pack_ms, &g, &report, &packing, &err)) {
    fmt::print(stderr, "emo profile: {}\n", err);
    return 1;
  }
  std::vector<std::vector<std::string>> names(trace.ranks.size());
  const std::vector<std::vector<uint32_t>> order = ComputeKernelsInLaunchOrder(trace);
  for (size_t r = 0; r < order.size(); ++r)
    for (uint32_t op : order[r]) names[r].push_back(trace.names.Get(trace.ranks[r].ops[op].name));
  const fs::path dir = fs::path(opt.out).concat(".d");
  if (fs::create_directories(dir, ec), ec) {
    fmt::print(stderr, "emo profile: {}: cannot create the directory: {}\n", dir.string(), ec.message());
    return 1;
  }
  CommandMetricSource source(opt.command, library, dir, names, trace.ranks);
  PackProfile pp;
  if (!ProfilePacks(trace, g, packing, source, &pp, &err)) {
    fmt::print(stderr, "emo profile: {}\n", err);
    return 1;
  }
  nlohmann::ordered_json j = {{"command", opt.command},
                              {"traces", files},
                              {"exit_code", source.exit_code()},
                              {"first_kernel_mismatches", source.mismatches()}};
  j.update(PackMetricsJson(pp, packing, g, trace.names));
  std::ofstream f(opt.out);
  f << j.dump(1) << "\n";
  if (!f) {
    fmt::print(stderr, "emo profile: {}: cannot write\n", opt.out);
    return 1;
  }
  fmt::print(
      "{} unique packs of {} profiled: {} of {} compute kernels under the profiler, {} replay passes in all; {} "
      "first-kernel mismatches; written to {}\n",
      pp.packs.size(), packing.packs(), pp.cost.kernels_profiled, pp.kernels_in_run, pp.cost.passes,
      source.mismatches(), opt.out);
  return source.mismatches() == 0 ? 0 : 1;
#endif
}

}  // namespace emo
