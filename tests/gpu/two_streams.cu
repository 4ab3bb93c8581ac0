// two_streams.cu — a small CUDA program for scripts/gpu-check.sh: per step, a copy in, a kernel on
// stream A, an event that stream B waits for, a kernel on B, a memset, a copy out and a stream
// synchronisation, inside an NVTX range "emo.step" and announced on $EMO_STEP_SOCKET when set.
// Usage: two_streams [STEPS]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void Fma(float* x, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 1.0001f + 0.5f;
  x[i] = v;
}

__global__ void Scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * x[i];
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t e = (call);                                                                \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int n = 1 << 24;
  int sock = -1;
  sockaddr_un addr{};
  if (const char* path = std::getenv("EMO_STEP_SOCKET")) {
    sock = socket(AF_UNIX, SOCK_DGRAM, 0);
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  }
  float *host = nullptr, *x = nullptr, *y = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  for (int i = 0; i < n; ++i) host[i] = 1.0f;
  cudaStream_t a, b;
  cudaEvent_t done_a;
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  CHECK(cudaEventCreateWithFlags(&done_a, cudaEventDisableTiming));
  for (int s = 0; s < steps; ++s) {
    if (sock >= 0) sendto(sock, "step", 4, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    nvtxRangePushA("emo.step");
    CHECK(cudaMemcpyAsync(x, host, n * sizeof(float), cudaMemcpyHostToDevice, a));
    Fma<<<n / 256, 256, 0, a>>>(x, n, 2000);
    CHECK(cudaEventRecord(done_a, a));
    CHECK(cudaStreamWaitEvent(b, done_a, 0));
    Scale<<<n / 256, 256, 0, b>>>(x, y, n);
    CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), b));
    CHECK(cudaMemcpyAsync(host, y, n * sizeof(float), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    nvtxRangePop();
  }
  std::printf("two_streams: %d steps, y[0] = %g\n", steps, host[0]);
  CHECK(cudaDeviceSynchronize());
  return 0;
}
