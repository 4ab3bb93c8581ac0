// microbench_kernels.h — the CUDA kernels of the 12 microbenchmarks (device/microbench.h), behind a
// launch function, shared by the stand-alone driver (microbench.cu) and the calibration device
// (cuda_bench_device.cc). Plain C++ over the CUDA runtime, so that the host compiler can include it.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "device/microbench.h"

namespace emo::cuda {

// Device memory the benchmarks use: a sink for results, and for the L1/L2/DRAM benchmarks a 4 GiB
// window of float4s that the loads sweep.
struct BenchBuffers {
  void* sink = nullptr;
  void* data = nullptr;  // null until a memory benchmark needs it
};

// True for the benchmarks that sweep BenchBuffers::data.
bool NeedsData(Microbench b);
// Allocates what benchmark b needs on the current device (once); false with *err.
bool Allocate(Microbench b, BenchBuffers* buf, std::string* err);
void Free(BenchBuffers* buf);
// Enqueues one launch of benchmark b on `stream`: kMicrobenchTable[b]'s grid on `sms` SMs.
void Launch(Microbench b, int sms, const BenchBuffers& buf, cudaStream_t stream);

// Enqueues the gate of a run of empty kernels (kEmptyGateS): one warp per SM sleeping that long.
void LaunchGate(int sms, cudaStream_t stream);

}  // namespace emo::cuda
