// kineto_writer.h — saves one RankTrace as PyTorch-profiler (Kineto) Chrome-trace JSON, so that
// EMO's traces (the simulator's included) open in Perfetto, chrome://tracing and HTA.
//
// Output: {"schemaVersion":1, "distributedInfo":{"backend":"nccl","rank":R,"world_size":W},
// "deviceProperties":[{"id":D,"name":GPU}], "traceName":..., "displayTimeUnit":"ms",
// "baseTimeNanoseconds":B, "traceEvents":[...]}. B is the earliest time of the rank floored to a
// whole second; every "ts"/"dur" is written in microseconds relative to B with exactly three
// decimals, so nanoseconds survive. Events:
//   "ph":"M"  process_name / thread_name metadata (CPU process "python", "thread T", "GPU D",
//             "stream S") so that Perfetto labels the tracks
//   cuda_runtime                   each CpuCall; args correlation, cbid 0
//   kernel, gpu_memcpy, gpu_memset each GpuOp on pid = device, tid = stream; args device, stream,
//             correlation; kernels "queued":0; copies/memsets "bytes"; NCCL kernels with a
//             process group "Process Group Name" and, when bytes are known, "In msg nelems"
//             (bytes) with "dtype":"Byte"; any other op whose bytes are known carries "bytes"
//   ac2g      a flow ("ph":"s" on the call, "ph":"f","bp":"e" on the earliest op) per call that
//             launched GPU work, id = correlation
//   cuda_sync each SyncRecord, timed as the API call of the same correlation (0 if none), on
//             pid = device, tid = stream (or -1)
//   user_annotation  "ProfilerStep#N" per Iteration, on the first thread
//   "ph":"C"  each CounterTrack sample on pid = its device, args {unit: value} (Perfetto's
//             counter track "name unit", e.g. "sm_clock MHz")
// EMO's importer (kineto_json.h) reads the result back into an identical RankTrace, except for
// what Kineto JSON cannot carry: CallKind and GpuOp::is_comm are re-derived from the names,
// GpuOp::collective_seq is not read, threads without calls are not recreated, negative
// durations read back as 0, and invalid UTF-8 in names is replaced by U+FFFD (the output is
// always valid JSON).
#pragma once

#include <string>

#include "trace/trace.h"

namespace emo {

// Writes trace.ranks[rank_index] to PATH atomically (PATH.tmp, then rename); a PATH ending in
// ".gz" is gzip-compressed. On failure returns false with *err "PATH: what went wrong".
bool WriteKinetoJson(const Trace& trace, size_t rank_index, const std::string& path, std::string* err);
// Every rank: `out` itself for one rank, else the directory `out` with rank-R.json per rank.
bool WriteKinetoTraces(const Trace& trace, const std::string& out, std::string* err);

// The same JSON text, into *out (replacing its contents). traceName is the rank's source.
void WriteKinetoJson(const Trace& trace, size_t rank_index, std::string* out);

}  // namespace emo
