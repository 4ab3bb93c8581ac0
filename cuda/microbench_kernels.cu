// microbench_kernels.cu — the CUDA kernels of the 12 microbenchmarks: one kernel per table row of
// device/microbench.h, each doing per thread and trip the work the table lists.
#include <cuda_fp16.h>

#include "microbench_kernels.h"

namespace emo::cuda {
namespace {

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

constexpr size_t kDataFloat4s = size_t{1} << 28;  // 4 GiB

}  // namespace

bool NeedsData(Microbench b) {
  return b == kBenchL1 || b == kBenchL2 || b == kBenchDramRead || b == kBenchDramWrite;
}

bool Allocate(Microbench b, BenchBuffers* buf, std::string* err) {
  cudaError_t rc = cudaSuccess;
  if (!buf->sink && (rc = cudaMalloc(&buf->sink, 64)) != cudaSuccess) {
    *err = std::string("cudaMalloc of 64 B: ") + cudaGetErrorString(rc);
    return false;
  }
  if (NeedsData(b) && !buf->data) {
    if ((rc = cudaMalloc(&buf->data, kDataFloat4s * sizeof(float4))) != cudaSuccess ||
        (rc = cudaMemset(buf->data, 0, kDataFloat4s * sizeof(float4))) != cudaSuccess) {
      *err = std::string("cudaMalloc of the 4 GiB window: ") + cudaGetErrorString(rc);
      return false;
    }
  }
  return true;
}

void Free(BenchBuffers* buf) {
  if (buf->sink) cudaFree(buf->sink);
  if (buf->data) cudaFree(buf->data);
  *buf = {};
}

void Launch(Microbench b, int sms, const BenchBuffers& buf, cudaStream_t stream) {
  const MicrobenchDef& d = kMicrobenchTable[b];
  const dim3 grid(sms * d.blocks_per_sm), block(d.threads_per_block);
  float4* data = static_cast<float4*>(buf.data);
  switch (b) {
    case kBenchIntAlu: IntAlu<<<grid, block, 0, stream>>>(d.trips, static_cast<int*>(buf.sink)); break;
    case kBenchFp32Fma: Fp32Fma<<<grid, block, 0, stream>>>(d.trips, static_cast<float*>(buf.sink)); break;
    case kBenchFp64: Fp64<<<grid, block, 0, stream>>>(d.trips, static_cast<double*>(buf.sink)); break;
    case kBenchSfu: Sfu<<<grid, block, 0, stream>>>(d.trips, static_cast<float*>(buf.sink)); break;
    case kBenchShared: Shared<<<grid, block, 0, stream>>>(d.trips, static_cast<float*>(buf.sink)); break;
    case kBenchL1:
      Load<<<grid, block, 0, stream>>>(d.trips, 16, data, (32768 / 16) - 1, static_cast<float*>(buf.sink));
      break;
    case kBenchL2:
      Load<<<grid, block, 0, stream>>>(d.trips, 8, data, (1u << 20) - 1, static_cast<float*>(buf.sink));
      break;
    case kBenchDramRead:
      Load<<<grid, block, 0, stream>>>(d.trips, 4, data, static_cast<unsigned>(kDataFloat4s - 1),
                                       static_cast<float*>(buf.sink));
      break;
    case kBenchDramWrite: DramWrite<<<grid, block, 0, stream>>>(d.trips, data, kDataFloat4s); break;
    case kBenchHmma: Hmma<<<grid, block, 0, stream>>>(d.trips, static_cast<float*>(buf.sink)); break;
    case kBenchImma: Imma<<<grid, block, 0, stream>>>(d.trips, static_cast<int*>(buf.sink)); break;
    default: Idle<<<grid, block, 0, stream>>>(d.trips, static_cast<unsigned>(d.sleep_ns)); break;
  }
}

void LaunchGate(int sms, cudaStream_t stream) {
  const MicrobenchDef& d = kMicrobenchTable[kBenchEmpty];
  Idle<<<sms, d.threads_per_block, 0, stream>>>(static_cast<int>(kEmptyGateS * 1e9 / d.sleep_ns),
                                                static_cast<unsigned>(d.sleep_ns));
}

}  // namespace emo::cuda
