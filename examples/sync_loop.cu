// Pattern 6: a host loop that calls cudaStreamSynchronize after every step. The GPU idles
// while the host wakes up and launches the next step; without the per-step wait the launches
// run ahead and the GPU stays busy.
//   sync_loop            launch, cudaStreamSynchronize, repeat
//   sync_loop --fixed    launch every step, wait once at the end (polling cudaStreamQuery,
//                        as frameworks that keep the host thread responsive do)
// Each step adds (i % 7) to x[i]; the program checks x[i] == iterations * (i % 7).
#include <sched.h>

#include <vector>

#include "common.h"

__global__ void step_update(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += static_cast<float>(i % 7);
}

static void step_update_host(dim3 grid, dim3 block, float* x, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] += static_cast<float>(i % 7);
  });
}
HOST_TWIN(step_update, step_update_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 50, 1 << 20,
                                           "cudaStreamSynchronize every step vs once");
  const int n = static_cast<int>(opt.size);
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, static_cast<size_t>(n) * sizeof(float)));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMemsetAsync(x, 0, static_cast<size_t>(n) * sizeof(float), s));

  const int block = 256;
  const int grid = (n + block - 1) / block;
  int waits = 0;
  for (int step = 0; step < opt.iterations; ++step) {
    step_update<<<grid, block, 0, s>>>(x, n);
    CHECK_LAUNCH();
    if (!opt.fixed) {
      // The stall: nothing here needs the result, yet the host waits for it every step.
      CHECK_CUDA(cudaStreamSynchronize(s));
      ++waits;
    }
  }
  if (opt.fixed) {
    cudaError_t state;
    while ((state = cudaStreamQuery(s)) == cudaErrorNotReady) sched_yield();
    CHECK_CUDA(state);
  } else {
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  ++waits;

  std::vector<float> host(static_cast<size_t>(n));
  CHECK_CUDA(cudaMemcpy(host.data(), x, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    examples::expect_close("x[i]", host[static_cast<size_t>(i)], 1.0 * opt.iterations * (i % 7));
  }
  std::printf("sync_loop%s: %d steps over %d elements, %d host waits\n",
              opt.fixed ? " --fixed" : "", opt.iterations, n, waits);
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(x));
  std::printf("OK\n");
  return 0;
}
