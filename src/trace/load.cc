// load.cc — input discovery and dispatch to the trace importers.
#include "trace/load.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <mutex>

#include "trace/kineto_json.h"
#include "trace/launcher_rank.h"
#include "trace/nccl_records.h"
#include "trace/nsys_sqlite.h"
#include "util/parallel.h"

namespace emo {

namespace fs = std::filesystem;

bool ExpandTracePaths(const std::vector<std::string>& paths, std::vector<std::string>* files, std::string* err) {
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        std::string f = entry.path().string();
        if (entry.is_regular_file() && (f.ends_with(".json") || f.ends_with(".json.gz") || f.ends_with(".sqlite")))
          found.push_back(f);
      }
      if (ec) {
        *err = p + ": " + ec.message();
        return false;
      }
      if (found.empty()) {
        *err = p + ": directory holds no *.json, *.json.gz or *.sqlite trace";
        return false;
      }
      std::sort(found.begin(), found.end());
      files->insert(files->end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files->push_back(p);
    } else {
      *err = p + ": no such file or directory";
      return false;
    }
  }
  return true;
}

static bool IsSqlite(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[16] = {};
  size_t n = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  return n == sizeof magic && std::memcmp(magic, "SQLite format 3", 16) == 0;
}

// One file into its own trace, with the NCCL plugin's records beside it when there are any.
static bool LoadOne(const std::string& path, Trace* t, std::string* err, const std::function<void(uint64_t)>& within) {
  if (!(IsSqlite(path) ? LoadNsysSqlite(path, t, err) : LoadKinetoJson(path, t, err, within))) return false;
  // `emo trace` with the NCCL profiler plugin: its records beside the process's trace.
  const std::string nccl = NcclFileBeside(path);
  std::error_code ec;
  if (nccl.empty() || !fs::exists(nccl, ec)) return true;
  NcclRecords recs;
  if (!ReadNcclRecords(nccl, &recs, err)) return false;
  std::string note;
  AnnotateNcclKernels(recs, t, t->ranks.size() - 1, &note);
  if (!note.empty()) t->notes.push_back(nccl + ": " + note);
  return true;
}

// Appends a file's trace: its strings re-interned into `trace`'s table, and a rank that did not
// name itself numbered by its position among all ranks (as if the files were read in order).
static void Append(Trace&& part, Trace* trace) {
  std::vector<uint32_t> id(part.names.size());
  for (size_t k = 0; k < id.size(); ++k) id[k] = trace->names.Intern(part.names.Get(static_cast<uint32_t>(k)));
  for (RankTrace& r : part.ranks) {
    for (CpuCall& c : r.calls) c.name = id[c.name];
    for (GpuOp& o : r.ops) {
      o.name = id[o.name];
      o.process_group = id[o.process_group];
      o.collective = id[o.collective];
    }
    if (!r.rank_given) r.rank = static_cast<int32_t>(trace->ranks.size());
    trace->ranks.push_back(std::move(r));
  }
  std::move(part.notes.begin(), part.notes.end(), std::back_inserter(trace->notes));
}

bool LoadTraces(const std::vector<std::string>& files, Trace* trace, std::string* err,
                const std::function<void(size_t, size_t, const std::string&, uint64_t)>& progress, int threads) {
  const size_t n = files.size();
  std::vector<Trace> parts(n);
  std::vector<std::string> errs(n);
  std::vector<char> ok(n, 0);
  std::mutex say;  // progress is called from the readers' threads, one at a time
  ParallelFor(threads > 0 ? threads : HardwareThreads(), n, [&](size_t i, int) {
    std::function<void(uint64_t)> within;
    if (progress) {
      std::lock_guard<std::mutex> lock(say);
      progress(i, n, files[i], 0);
      within = [&, i](uint64_t bytes) {
        std::lock_guard<std::mutex> l(say);
        progress(i, n, files[i], bytes);
      };
    }
    ok[i] = LoadOne(files[i], &parts[i], &errs[i], within);
  });
  for (size_t i = 0; i < n; ++i) {
    if (!ok[i]) {
      *err = errs[i];
      return false;
    }
    Append(std::move(parts[i]), trace);
  }
  if (trace->ranks.empty()) {
    *err = "no trace given";
    return false;
  }
  return true;
}

}  // namespace emo
