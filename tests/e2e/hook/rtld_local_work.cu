// The CUDA and NCCL work of rtld_local_app, in a library that program loads with
// dlopen(RTLD_LOCAL), as Python loads PyTorch: this library's libcudart and libnccl are then
// not in the global scope, yet its calls reach the preloaded hook first.
#include <nccl.h>

#include <cstdio>

#include "common.h"

__global__ void scale(const float* in, float* out, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}
static void scale_host(dim3 grid, dim3 block, const float* in, float* out, float factor, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (static_cast<int>(i) < n) out[i] = in[i] * factor;
  });
}
HOST_TWIN(scale, scale_host);

static void CUDART_CB note(void* ran) { *static_cast<int*>(ran) = 1; }

extern "C" int rtld_local_work() {
  constexpr int n = 4096;
  float host[n];
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, sizeof host) != cudaSuccess || cudaMalloc(&out, sizeof host) != cudaSuccess) return 1;
  if (cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
  scale<<<(n + 255) / 256, 256>>>(in, out, 2.0f, n);  // __cudaLaunchKernel: interposed
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("launch failed\n");
    return 1;
  }
  int ran = 0;
  if (cudaLaunchHostFunc(nullptr, note, &ran) != cudaSuccess) return 1;  // interposed too
  if (cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  if (cudaDeviceSynchronize() != cudaSuccess || !ran) return 1;
  for (int i = 0; i < n; ++i)
    if (host[i] != 2.0f * static_cast<float>(i)) return 1;
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;
  if (ncclAllReduce(in, out, n, ncclFloat, ncclSum, comm, nullptr) != ncclSuccess) return 1;  // interposed
  ncclCommDestroy(comm);
  cudaFree(in);
  cudaFree(out);
  return 0;
}
