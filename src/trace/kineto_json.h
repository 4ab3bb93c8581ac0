// kineto_json.h — imports a PyTorch profiler (Kineto) Chrome-trace JSON file, plain or gzipped.
//
// The file is one JSON object. Its "traceEvents" array holds complete events ("ph":"X") with
// "cat", "name", "pid", "tid", "ts" and "dur" in microseconds (integer or fractional; fractions
// carry nanoseconds) and an "args" object. Categories used:
//   cuda_runtime, cuda_driver   CPU API calls; args.correlation links them to GPU ops
//   kernel, gpu_memcpy, gpu_memset   GPU ops; args.device, args.stream, args.correlation,
//                               NCCL kernels may carry "Process Group Name", "Collective name",
//                               "In msg nelems", "dtype"
//   cuda_sync                   what a sync call or cudaStreamWaitEvent waited on: args
//                               cuda_sync_kind, stream, wait_on_stream,
//                               wait_on_cuda_event_record_corr_id, wait_on_cuda_event_id
//   user_annotation / cpu_op    "ProfilerStep#N" iteration markers
// Flow events (ac2g, async_cpu_to_gpu) are ignored: CPU and GPU are linked by args.correlation,
// since Kineto writes dangling flow ends. Top-level "distributedInfo" gives rank and world size,
// "deviceProperties" the GPU name, and "baseTimeNanoseconds" (when present) the epoch that
// "ts" values are relative to. Everything else is skipped unread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trace/trace.h"

namespace emo {

// Parses JSON held in memory and appends one RankTrace. `source` names the input in errors,
// which read "SOURCE: byte N: what is wrong" (N counts decompressed bytes).
bool ParseKinetoJson(std::string_view source, const char* data, size_t size, Trace* trace, std::string* err);

// Streams PATH (gzip detected by its magic bytes) through the parser; memory use is bounded by
// the trace model, not the file size.
// `progress`, when set, is called with the (decompressed) bytes read every 256 MiB.
bool LoadKinetoJson(const std::string& path, Trace* trace, std::string* err,
                    const std::function<void(uint64_t bytes)>& progress = {});

}  // namespace emo
