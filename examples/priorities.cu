// Pattern 5: latency-critical work competing with a background stream for a full GPU. With
// equal priorities each critical kernel waits for the background kernels issued before it;
// a higher-priority stream gets the SMs as soon as they free up.
//   priorities            both streams at the default priority
//   priorities --fixed    the critical stream created with the greatest priority
// The program checks both results: background x[i] == iterations * kBatches, critical
// r[i] == 3 * iterations.
#include <vector>

#include "common.h"

__global__ void background_batch(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void critical_request(float* r, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) r[i] += 3.0f;
}

static void background_batch_host(dim3 grid, dim3 block, float* x, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] += 1.0f;
  });
}
static void critical_request_host(dim3 grid, dim3 block, float* r, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) r[i] += 3.0f;
  });
}
HOST_TWIN(background_batch, background_batch_host);
HOST_TWIN(critical_request, critical_request_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 8, 1 << 22,
                                           "two streams with different priorities competing");
  constexpr int kBatches = 4;      // background kernels issued per critical request
  constexpr int kRequest = 4096;   // elements per critical request
  const int n = static_cast<int>(opt.size);
  float *x = nullptr, *r = nullptr;
  CHECK_CUDA(cudaMalloc(&x, static_cast<size_t>(n) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&r, kRequest * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, static_cast<size_t>(n) * sizeof(float)));
  CHECK_CUDA(cudaMemset(r, 0, kRequest * sizeof(float)));
  // The streams below are non-blocking: they do not wait for the legacy stream's memsets.
  CHECK_CUDA(cudaDeviceSynchronize());

  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t background, critical;
  CHECK_CUDA(cudaStreamCreateWithPriority(&background, cudaStreamNonBlocking, least));
  // The fix is this one argument.
  CHECK_CUDA(cudaStreamCreateWithPriority(&critical, cudaStreamNonBlocking,
                                          opt.fixed ? greatest : least));

  const int block = 256;
  for (int it = 0; it < opt.iterations; ++it) {
    for (int b = 0; b < kBatches; ++b) {
      background_batch<<<(n + block - 1) / block, block, 0, background>>>(x, n);
      CHECK_LAUNCH();
    }
    critical_request<<<kRequest / block, block, 0, critical>>>(r, kRequest);
    CHECK_LAUNCH();
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float> hx(static_cast<size_t>(n)), hr(kRequest);
  CHECK_CUDA(cudaMemcpy(hx.data(), x, hx.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hr.data(), r, hr.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (float v : hx) examples::expect_close("background x[i]", v, opt.iterations * kBatches);
  for (float v : hr) examples::expect_close("critical r[i]", v, 3.0 * opt.iterations);
  std::printf("priorities%s: priorities background %d / critical %d, %d iterations, "
              "x = %.0f, r = %.0f\n",
              opt.fixed ? " --fixed" : "", least, opt.fixed ? greatest : least, opt.iterations,
              static_cast<double>(hx[0]), static_cast<double>(hr[0]));
  CHECK_CUDA(cudaStreamDestroy(background));
  CHECK_CUDA(cudaStreamDestroy(critical));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(r));
  std::printf("OK\n");
  return 0;
}
