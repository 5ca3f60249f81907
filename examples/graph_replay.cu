// A CUDA graph replayed many times, as LLM inference replays its decode step: --size small
// kernels (default 8) are captured from a stream once, then the graph is launched
// --iterations times (default 20). CUPTI gives every kernel of one replay the replay's
// correlation id, its graph ids, and no queued/submitted stamps.
//   graph_replay [--iterations N] [--size KERNELS]
// Each kernel adds 1 to a counter; the program checks it holds kernels x replays.
#include "common.h"

__global__ void add_one(int* counter) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *counter += 1;
}

static void add_one_host(dim3, dim3, int* counter) { *counter += 1; }

HOST_TWIN(add_one, add_one_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 20, 8, "a captured CUDA graph, replayed");
  const int kernels = static_cast<int>(opt.size);
  if (kernels > 4096) {
    std::fprintf(stderr, "graph_replay: at most 4096 kernels in the graph\n");
    return 2;
  }
  int* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(int)));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // On s itself: a non-blocking stream does not wait for the legacy stream's memset.
  CHECK_CUDA(cudaMemsetAsync(counter, 0, sizeof(int), s));
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kernels; ++k) add_one<<<1, 32, 0, s>>>(counter);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < opt.iterations; ++i) CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  int got = 0;
  CHECK_CUDA(cudaMemcpy(&got, counter, sizeof(int), cudaMemcpyDeviceToHost));
  examples::expect_close("counter", got, 1.0 * kernels * opt.iterations);
  std::printf("graph_replay: %d kernels x %d replays\n", kernels, opt.iterations);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(counter));
  std::printf("OK\n");
  return 0;
}
