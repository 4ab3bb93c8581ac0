// microbench.cu — a small driver for the CUDA microbenchmarks (microbench_kernels.h):
// emo_microbench_cuda NAME [LAUNCHES] launches one back to back and prints the mean time per launch
// from CUDA events. Built whenever CMake finds the CUDA toolkit (sm_80, sm_90).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "microbench_kernels.h"

int main(int argc, char** argv) {
  using emo::kMicrobenchTable;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NAME [LAUNCHES]\n", argv[0]);
    return 2;
  }
  int b = 0;
  while (b <= emo::kBenchEmpty && std::strcmp(argv[1], kMicrobenchTable[b].name) != 0) ++b;
  if (b > emo::kBenchEmpty) {
    std::fprintf(stderr, "unknown microbenchmark '%s'\n", argv[1]);
    return 2;
  }
  const emo::Microbench bench = static_cast<emo::Microbench>(b);
  const int launches = argc > 2 ? std::atoi(argv[2]) : 100;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  emo::cuda::BenchBuffers buf;
  std::string err;
  if (!emo::cuda::Allocate(bench, &buf, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < launches; ++i) emo::cuda::Launch(bench, sms, buf, nullptr);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  const cudaError_t status = cudaGetLastError();
  emo::cuda::Free(&buf);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", argv[1], cudaGetErrorString(status));
    return 1;
  }
  std::printf("%s: %d launches, %.4f ms per launch\n", argv[1], launches, ms / launches);
  return 0;
}
