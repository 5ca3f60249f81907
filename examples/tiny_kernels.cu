// Pattern 3: thousands of tiny kernels, each launch costing more than its work, vs one
// grid-stride kernel doing the same work.
//   tiny_kernels            one 256-thread kernel per 256 elements, every iteration
//   tiny_kernels --fixed    one grid-stride kernel over all elements, every iteration
// Every iteration adds 1 to every element; the program checks x[i] == i + iterations.
#include <algorithm>
#include <vector>

#include "common.h"

__global__ void add_one_chunk(float* x, int n) {
  const int i = threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void add_one_grid_stride(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] += 1.0f;
  }
}

static void add_one_chunk_host(dim3, dim3 block, float* x, int n) {
  for (unsigned i = 0; i < block.x; ++i) {
    if (static_cast<int>(i) < n) x[i] += 1.0f;
  }
}

static void add_one_grid_stride_host(dim3 grid, dim3 block, float* x, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long t, unsigned long long threads) {
    for (unsigned long long i = t; i < static_cast<unsigned long long>(n); i += threads) x[i] += 1.0f;
  });
}
HOST_TWIN(add_one_chunk, add_one_chunk_host);
HOST_TWIN(add_one_grid_stride, add_one_grid_stride_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 2, 1 << 19,
                                           "thousands of tiny kernels vs one grid-stride kernel");
  const int n = static_cast<int>(opt.size);
  std::vector<float> host(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i);
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, host.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));

  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  constexpr int kChunk = 256;
  long long launches = 0;
  for (int it = 0; it < opt.iterations; ++it) {
    if (opt.fixed) {
      const int blocks = std::min((n + kChunk - 1) / kChunk, sms * 8);
      add_one_grid_stride<<<blocks, kChunk>>>(x, n);
      CHECK_LAUNCH();
      ++launches;
    } else {
      for (int offset = 0; offset < n; offset += kChunk) {
        add_one_chunk<<<1, kChunk>>>(x + offset, std::min(kChunk, n - offset));
        CHECK_LAUNCH();
        ++launches;
      }
    }
  }
  CHECK_CUDA(cudaMemcpy(host.data(), x, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i += 1) {
    examples::expect_close("x[i]", host[static_cast<size_t>(i)], static_cast<double>(i) + opt.iterations);
  }
  std::printf("tiny_kernels%s: %d elements, %d iterations, %lld launches\n",
              opt.fixed ? " --fixed" : "", n, opt.iterations, launches);
  CHECK_CUDA(cudaFree(x));
  std::printf("OK\n");
  return 0;
}
