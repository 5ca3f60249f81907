// Pattern 1: independent work issued on the legacy default stream runs one kernel at a time;
// the same work on several streams can share the GPU.
//   default_stream            every chunk on stream 0 (serialised)
//   default_stream --fixed    chunks spread over 4 non-blocking streams (concurrent)
// Each chunk computes y = a * x + b over its slice; the program checks the sum of y.
#include <vector>

#include "common.h"

__global__ void affine(const float* x, float* y, int n, float a, float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}

static void affine_host(dim3 grid, dim3 block, const float* x, float* y, int n, float a, float b) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) y[i] = a * x[i] + b;
  });
}
HOST_TWIN(affine, affine_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 4, 1 << 16,
                                           "legacy default stream vs several streams");
  constexpr int kChunks = 8;
  constexpr int kStreams = 4;
  const int n = static_cast<int>(opt.size);
  std::vector<float> host_x(static_cast<size_t>(n) * kChunks);
  for (size_t i = 0; i < host_x.size(); ++i) host_x[i] = static_cast<float>(i % 100) * 0.5f;

  float* x = nullptr;
  float* y = nullptr;
  const size_t bytes = host_x.size() * sizeof(float);
  CHECK_CUDA(cudaMalloc(&x, bytes));
  CHECK_CUDA(cudaMalloc(&y, bytes));
  CHECK_CUDA(cudaMemcpy(x, host_x.data(), bytes, cudaMemcpyHostToDevice));

  cudaStream_t streams[kStreams];
  for (auto& s : streams) CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  const int block = 256;
  const int grid = (n + block - 1) / block;
  for (int it = 0; it < opt.iterations; ++it) {
    for (int c = 0; c < kChunks; ++c) {
      // The bug: no stream argument, so every chunk queues behind the previous one.
      cudaStream_t s = opt.fixed ? streams[c % kStreams] : 0;
      affine<<<grid, block, 0, s>>>(x + static_cast<size_t>(c) * n, y + static_cast<size_t>(c) * n,
                                    n, 2.0f, static_cast<float>(it));
      CHECK_LAUNCH();
    }
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float> host_y(host_x.size());
  CHECK_CUDA(cudaMemcpy(host_y.data(), y, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  double want = 0;
  const float b_last = static_cast<float>(opt.iterations - 1);
  for (size_t i = 0; i < host_y.size(); ++i) {
    sum += host_y[i];
    want += 2.0 * host_x[i] + b_last;
  }
  std::printf("default_stream%s: %d chunks x %d elements, %d iterations, sum(y) = %.1f\n",
              opt.fixed ? " --fixed" : "", kChunks, n, opt.iterations, sum);
  examples::expect_close("sum(y)", sum, want);

  for (auto& s : streams) CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  std::printf("OK\n");
  return 0;
}
