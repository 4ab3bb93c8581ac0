// pack_profiler.h — the pack profiler of libemo_inject.so (`emo profile`): CUPTI range profiling of
// the kernel ranges that $EMO_PROFILE_RANGES names (device/range_file.h), instead of tracing.
#pragma once

namespace emo {

// Reads the range file and subscribes to kernel launches; results are written at exit. `rank` is
// the launcher's rank (-1: none, GPU 0). False (after saying why on stderr) when it cannot start.
bool StartPackProfiler(const char* ranges_path, int rank);

}  // namespace emo
