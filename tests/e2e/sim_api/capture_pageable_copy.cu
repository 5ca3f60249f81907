// cudaMemcpyAsync from and to pageable memory inside stream capture, as simpleCudaGraphs
// (its result into a stack variable), graphMemoryNodes and jacobiCudaGraphs do: CUDA captures
// each as a memcpy node, which copies at every launch of the graph.
#include <vector>

#include "check.h"

int main() {
  constexpr size_t kCount = 1024;
  std::vector<float> in(kCount);
  std::vector<float> out(kCount, -1.0f);
  double scalar = 0.0;  // on the stack, as simpleCudaGraphs' result_h
  float* staged = nullptr;
  double* scalar_d = nullptr;
  CHECK_OK(cudaMalloc(&staged, kCount * sizeof(float)));
  CHECK_OK(cudaMalloc(&scalar_d, sizeof(double)));
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CHECK_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK_OK(cudaMemcpyAsync(staged, in.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, s));
  CHECK_OK(cudaMemcpyAsync(out.data(), staged, kCount * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK_OK(cudaMemcpyAsync(&scalar, scalar_d, sizeof(double), cudaMemcpyDefault, s));
  CHECK_OK(cudaStreamEndCapture(s, &graph));
  size_t nodes = 0;
  CHECK_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_TRUE(nodes == 3);

  cudaGraphExec_t exec;
  CHECK_OK(cudaGraphInstantiate(&exec, graph, 0));
  // The copies read the pageable memory when the graph runs, not when it was captured.
  for (int launch = 1; launch <= 3; ++launch) {
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(launch * 1000 + i);
    const double value = 0.5 * launch;
    CHECK_OK(cudaMemcpy(scalar_d, &value, sizeof value, cudaMemcpyHostToDevice));
    CHECK_OK(cudaGraphLaunch(exec, s));
    CHECK_OK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < kCount; ++i) EXPECT_TRUE(out[i] == in[i]);
    EXPECT_TRUE(scalar == value);
  }
  // Outside a capture the same call still waits for its data.
  in[0] = 42.0f;
  CHECK_OK(cudaMemcpyAsync(staged, in.data(), sizeof(float), cudaMemcpyHostToDevice, s));
  CHECK_OK(cudaMemcpyAsync(out.data(), staged, sizeof(float), cudaMemcpyDeviceToHost, s));
  EXPECT_TRUE(out[0] == 42.0f);

  CHECK_OK(cudaGraphExecDestroy(exec));
  CHECK_OK(cudaGraphDestroy(graph));
  CHECK_OK(cudaStreamDestroy(s));
  CHECK_OK(cudaFree(staged));
  CHECK_OK(cudaFree(scalar_d));
  std::printf("OK\n");
  return 0;
}
