// load.cc — input discovery and dispatch to the trace importers.
#include "trace/load.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "trace/kineto_json.h"
#include "trace/launcher_rank.h"
#include "trace/nccl_records.h"
#include "trace/nsys_sqlite.h"

namespace emo {

namespace fs = std::filesystem;

static bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool ExpandTracePaths(const std::vector<std::string>& paths, std::vector<std::string>* files, std::string* err) {
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        std::string f = entry.path().string();
        if (entry.is_regular_file() && (EndsWith(f, ".json") || EndsWith(f, ".json.gz") || EndsWith(f, ".sqlite")))
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

bool LoadTraces(const std::vector<std::string>& files, Trace* trace, std::string* err,
                const std::function<void(size_t, size_t, const std::string&, uint64_t)>& progress) {
  for (size_t i = 0; i < files.size(); ++i) {
    if (progress) progress(i, files.size(), files[i], 0);
    std::function<void(uint64_t)> within;
    if (progress) within = [&](uint64_t bytes) { progress(i, files.size(), files[i], bytes); };
    bool ok = IsSqlite(files[i]) ? LoadNsysSqlite(files[i], trace, err) : LoadKinetoJson(files[i], trace, err, within);
    if (!ok) return false;
    // `emo trace` with the NCCL profiler plugin: its records beside the process's trace.
    const std::string nccl = NcclFileBeside(files[i]);
    std::error_code ec;
    if (nccl.empty() || !fs::exists(nccl, ec)) continue;
    NcclRecords recs;
    if (!ReadNcclRecords(nccl, &recs, err)) return false;
    std::string note;
    AnnotateNcclKernels(recs, trace, trace->ranks.size() - 1, &note);
    if (!note.empty()) trace->notes.push_back(nccl + ": " + note);
  }
  if (trace->ranks.empty()) {
    *err = "no trace given";
    return false;
  }
  return true;
}

}  // namespace emo
