// A CUDA graph of 8 small kernels, captured from a stream and launched 20 times. Its kernel
// records should carry graphId/graphNodeId and, per cupti_activity.h, unknown (0) queued and
// submitted: the hook must keep them as unknown stages, never as invalid or dropped.
#include <cstdio>

#include <cuda_runtime.h>

__global__ void bump(int* x) { atomicAdd(x, 1); }

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                 \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main() {
  int* x = nullptr;
  CHECK(cudaMalloc(&x, sizeof(int)));
  CHECK(cudaMemset(x, 0, sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 8; ++i) bump<<<1, 32, 0, s>>>(x);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 20; ++i) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  int got = 0;
  CHECK(cudaMemcpy(&got, x, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("graph_stamps: %d of %d increments\n", got, 8 * 20 * 32);
  std::printf(got == 8 * 20 * 32 ? "OK\n" : "WRONG\n");
  return got == 8 * 20 * 32 ? 0 : 1;
}
