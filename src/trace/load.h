// load.h — loads traces from files and directories, choosing the reader by content:
// SQLite files (magic "SQLite format 3") go to the Nsight Systems importer, everything else to
// the Kineto JSON importer. A directory loads every *.json, *.json.gz and *.sqlite in it, sorted.
// A trace written by `emo trace` (emo-trace-rank<R>.json) with the NCCL profiler plugin's records
// beside it (emo-nccl-rank<R>.txt) has its NCCL kernels annotated from them (trace/nccl_records.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace emo {

// Expands directories into the trace files they hold. Fails on a missing path.
bool ExpandTracePaths(const std::vector<std::string>& paths, std::vector<std::string>* files, std::string* err);

// Loads every file into `trace` (one rank per Kineto file, one per process of a SQLite file), in
// the order given. Files are read in parallel by `threads` threads (0: one per core), each into a
// trace of its own, then appended in order. `progress`, when set, is called (one call at a time,
// from the reading threads) before each file with (index, count, path, 0) and, inside a large JSON
// file, every 256 MiB with the bytes read so far. On failure, *err is the first failing file's.
bool LoadTraces(const std::vector<std::string>& files, Trace* trace, std::string* err,
                const std::function<void(size_t, size_t, const std::string&, uint64_t)>& progress = {},
                int threads = 0);

}  // namespace emo
