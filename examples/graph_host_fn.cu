// A host function captured into a CUDA graph, as NVIDIA's simpleCudaGraphs sample does: during
// stream capture cudaLaunchHostFunc becomes a host node that runs at every launch of the graph,
// of its clones and of every executable graph made from them, always with the same argument.
//   graph_host_fn [--iterations N]
// The graph (a kernel, the host function, a kernel) is launched N times (default 3), cloned and
// the clone launched once, then launched once more and destroyed while that launch is in
// flight; a second captured graph is never launched. The program checks the host function ran
// N + 2 times, each after the kernel before it.
#include <atomic>

#include "common.h"

__global__ void add_one(int* counter) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *counter += 1;
}

static void add_one_host(dim3, dim3, int* counter) { *counter += 1; }

HOST_TWIN(add_one, add_one_host);

namespace {

struct Runs {
  const int* counter;  // device memory the host can read (managed)
  std::atomic<int> count{0};
  std::atomic<int> in_order{0};  // runs that found the kernel before them done
};

void CUDART_CB count_run(void* data) {
  auto* runs = static_cast<Runs*>(data);
  const int n = runs->count.fetch_add(1) + 1;
  // Each launch adds 2 to the counter; this run sits between its launch's two kernels.
  if (*runs->counter == 2 * n - 1) runs->in_order.fetch_add(1);
}

cudaGraph_t capture(cudaStream_t s, int* counter, Runs* runs) {
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  add_one<<<1, 32, 0, s>>>(counter);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaLaunchHostFunc(s, count_run, runs));
  add_one<<<1, 32, 0, s>>>(counter);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  return graph;
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 3, 1, "a host function captured into a CUDA graph");
  int* counter = nullptr;
  CHECK_CUDA(cudaMallocManaged(&counter, sizeof(int)));
  *counter = 0;
  Runs runs;
  runs.counter = counter;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph = capture(s, counter, &runs);
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < opt.iterations; ++i) {
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  }

  cudaGraph_t clone;
  CHECK_CUDA(cudaGraphClone(&clone, graph));
  cudaGraphExec_t clone_exec;
  CHECK_CUDA(cudaGraphInstantiate(&clone_exec, clone, 0));
  CHECK_CUDA(cudaGraphDestroy(clone));  // the executable graph outlives the graph it came from
  CHECK_CUDA(cudaGraphLaunch(clone_exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(clone_exec));

  // Destroyed in flight: "freed asynchronously on completion" (cudaGraphExecDestroy).
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamSynchronize(s));

  // Captured and never launched.
  CHECK_CUDA(cudaGraphDestroy(capture(s, counter, &runs)));

  const int launches = opt.iterations + 2;
  examples::expect_close("host function runs", runs.count.load(), launches);
  examples::expect_close("runs between their launch's kernels", runs.in_order.load(), launches);
  examples::expect_close("counter", *counter, 2.0 * launches);
  std::printf("graph_host_fn: the host node ran %d times\n", runs.count.load());
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(counter));
  std::printf("OK\n");
  return 0;
}
