// Many host threads launching at once, as an inference server's request threads do: each of
// --size threads (default 64) launches --iterations small kernels on a stream of its own, then
// waits. With CUDA 13 each launching thread fills a CUPTI activity buffer of its own, so a
// tracer must have a buffer for every thread or lose records.
//   thread_storm [--iterations N] [--size THREADS]
// Each thread counts its launches into its own slot; the program checks every slot.
#include <thread>
#include <vector>

#include "common.h"

__global__ void count_launch(int* slot) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *slot += 1;
}

static void count_launch_host(dim3, dim3, int* slot) { *slot += 1; }

HOST_TWIN(count_launch, count_launch_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 50, 64, "many host threads launching at once");
  const int threads = static_cast<int>(opt.size);
  if (threads > 1024) {
    std::fprintf(stderr, "thread_storm: at most 1024 threads\n");
    return 2;
  }
  int* slots = nullptr;
  CHECK_CUDA(cudaMalloc(&slots, static_cast<size_t>(threads) * sizeof(int)));
  CHECK_CUDA(cudaMemset(slots, 0, static_cast<size_t>(threads) * sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cudaStream_t s;
      CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int i = 0; i < opt.iterations; ++i) {
        count_launch<<<1, 32, 0, s>>>(slots + t);
        CHECK_LAUNCH();
      }
      CHECK_CUDA(cudaStreamSynchronize(s));
      CHECK_CUDA(cudaStreamDestroy(s));
    });
  }
  for (auto& th : pool) th.join();
  std::vector<int> host(static_cast<size_t>(threads));
  CHECK_CUDA(cudaMemcpy(host.data(), slots, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int t = 0; t < threads; ++t) examples::expect_close("launches of a thread", host[static_cast<size_t>(t)], opt.iterations);
  std::printf("thread_storm: %d threads x %d launches\n", threads, opt.iterations);
  CHECK_CUDA(cudaFree(slots));
  std::printf("OK\n");
  return 0;
}
