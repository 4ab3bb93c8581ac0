// microbench.cu — the CUDA back end of the 12 microbenchmarks (device/microbench.h): one kernel per
// table row, each doing per thread and trip the work the table lists, and a small driver program
// (emo_microbench_cuda NAME [LAUNCHES]) that launches one back to back and prints the mean time per
// launch from CUDA events. Built whenever CMake finds the CUDA toolkit (sm_80, sm_90).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device/microbench.h"

namespace {

using emo::kMicrobenchTable;

__global__ void IntAlu(int trips, int* sink) {
  unsigned a = threadIdx.x, b = blockIdx.x, c = a ^ 0x9e3779b9u, d = b + 7;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int i = 0; i < 16; ++i) {  // 64 integer ops
      a = (a + b) ^ c;
      b = (b + c) ^ d;
      c = (c + d) ^ a;
      d = (d + a) ^ b;
    }
  if ((a ^ b ^ c ^ d) == 0x12345678u) *sink = 1;
}

__global__ void Fp32Fma(int trips, float* sink) {
  float x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = threadIdx.x * 1e-3f + i;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int k = 0; k < 8; ++k)  // 64 FMA = 128 FLOP
#pragma unroll
      for (int i = 0; i < 8; ++i) x[i] = fmaf(x[i], 0.999f, 1e-4f);
  float s = 0;
  for (int i = 0; i < 8; ++i) s += x[i];
  if (s == 12345.f) *sink = s;
}

__global__ void Fp64(int trips, double* sink) {
  double x[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) x[i] = threadIdx.x * 1e-3 + i;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int k = 0; k < 4; ++k)  // 16 DFMA = 32 FLOP
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = fma(x[i], 0.999, 1e-4);
  if (x[0] + x[1] + x[2] + x[3] == 12345.0) *sink = x[0];
}

__global__ void Sfu(int trips, float* sink) {
  float x = threadIdx.x * 1e-3f;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) x = __expf(__sinf(x) * 0.5f) + rsqrtf(x + 1.f) + __cosf(x) + x * 0.5f;
  if (x == 12345.f) *sink = x;
}

__global__ void Shared(int trips, float* sink) {
  __shared__ float buf[4096];  // 16 KiB
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) buf[i] = i;
  __syncthreads();
  float s = 0;
  unsigned at = threadIdx.x;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int i = 0; i < 16; ++i) {  // 16 LDS of 4 B
      s += buf[at & 4095];
      at += 33;
    }
  if (s == 12345.f) *sink = s;
}

__global__ void Load(int trips, int step, const float4* data, unsigned mask, float* sink) {
  // L1 / L2 / DRAM reads: coalesced 16-byte loads sweeping a window of mask+1 float4s (32 KiB,
  // 16 MiB, 4 GiB): every load of the grid is a new address until the sweep wraps at the window,
  // so the window alone decides which level serves the loads.
  float4 s = make_float4(0, 0, 0, 0);
  const size_t n = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t me = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int t = 0; t < trips; ++t)
    for (int i = 0; i < step; ++i) {
      const float4 v = __ldg(&data[((static_cast<size_t>(t) * step + i) * n + me) & mask]);
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
  if (s.x + s.y + s.z + s.w == 12345.f) *sink = s.x;
}

__global__ void DramWrite(int trips, float4* data, size_t n) {  // n: a power of two
  size_t at = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i, at += stride) data[at & (n - 1)] = make_float4(t, i, 0, 1);
}

__global__ void Hmma(int trips, float* sink) {
#if __CUDA_ARCH__ >= 800
  unsigned a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = a0 ^ 5, b1 = a0 ^ 9;
  float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (int t = 0; t < trips; ++t)
#pragma unroll
    for (int i = 0; i < 8; ++i)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  if (c0 + c1 + c2 + c3 == 12345.f) *sink = c0;
#endif
}

__global__ void Imma(int trips, int* sink) {
#if __CUDA_ARCH__ >= 800
  unsigned a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = a0 ^ 5, b1 = a0 ^ 9;
  int c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (int t = 0; t < trips; ++t) {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+r"(c0), "+r"(c1), "+r"(c2), "+r"(c3)
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    a0 += c0 & 1;  // the table's integer ops: operand repacking
  }
  if (c0 + c1 + c2 + c3 == 12345) *sink = c0;
#endif
}

__global__ void Idle(int trips, unsigned sleep_ns) {
  for (int t = 0; t < trips; ++t) __nanosleep(sleep_ns);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NAME [LAUNCHES]\n", argv[0]);
    return 2;
  }
  int b = 0;
  while (b < emo::kMicrobenches && std::strcmp(argv[1], kMicrobenchTable[b].name) != 0) ++b;
  if (b == emo::kMicrobenches) {
    std::fprintf(stderr, "unknown microbenchmark '%s'\n", argv[1]);
    return 2;
  }
  const int launches = argc > 2 ? std::atoi(argv[2]) : 100;
  const emo::MicrobenchDef& d = kMicrobenchTable[b];
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const dim3 grid(sms * d.blocks_per_sm), block(d.threads_per_block);
  const size_t big = size_t{1} << 28;  // float4s: 4 GiB
  void* data = nullptr;
  void* sink = nullptr;
  const bool streams = b == emo::kBenchL1 || b == emo::kBenchL2 || b == emo::kBenchDramRead || b == emo::kBenchDramWrite;
  if ((streams && cudaMalloc(&data, big * sizeof(float4)) != cudaSuccess) || cudaMalloc(&sink, 64) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  if (streams) cudaMemset(data, 0, big * sizeof(float4));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < launches; ++i) {
    switch (b) {
      case emo::kBenchIntAlu: IntAlu<<<grid, block>>>(d.trips, static_cast<int*>(sink)); break;
      case emo::kBenchFp32Fma: Fp32Fma<<<grid, block>>>(d.trips, static_cast<float*>(sink)); break;
      case emo::kBenchFp64: Fp64<<<grid, block>>>(d.trips, static_cast<double*>(sink)); break;
      case emo::kBenchSfu: Sfu<<<grid, block>>>(d.trips, static_cast<float*>(sink)); break;
      case emo::kBenchShared: Shared<<<grid, block>>>(d.trips, static_cast<float*>(sink)); break;
      case emo::kBenchL1:
        Load<<<grid, block>>>(d.trips, 16, static_cast<float4*>(data), (32768 / 16) - 1, static_cast<float*>(sink));
        break;
      case emo::kBenchL2:
        Load<<<grid, block>>>(d.trips, 8, static_cast<float4*>(data), (1u << 20) - 1, static_cast<float*>(sink));
        break;
      case emo::kBenchDramRead:
        Load<<<grid, block>>>(d.trips, 4, static_cast<float4*>(data), static_cast<unsigned>(big - 1),
                              static_cast<float*>(sink));
        break;
      case emo::kBenchDramWrite: DramWrite<<<grid, block>>>(d.trips, static_cast<float4*>(data), big); break;
      case emo::kBenchHmma: Hmma<<<grid, block>>>(d.trips, static_cast<float*>(sink)); break;
      case emo::kBenchImma: Imma<<<grid, block>>>(d.trips, static_cast<int*>(sink)); break;
      default: Idle<<<grid, block>>>(d.trips, static_cast<unsigned>(d.sleep_ns)); break;
    }
  }
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", d.name, cudaGetErrorString(status));
    return 1;
  }
  std::printf("%s: %d launches, %.4f ms per launch\n", d.name, launches, ms / launches);
  return 0;
}
