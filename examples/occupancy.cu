// Pattern 4: a launch with tiny blocks leaves most of each SM idle (at most 32 resident
// blocks per SM, so 32-thread blocks use half its threads); the fixed twin asks
// cudaOccupancyMaxPotentialBlockSize for a block size that fills the SMs.
//   occupancy            saxpy with 32-thread blocks
//   occupancy --fixed    saxpy with the block size the occupancy API suggests
// The program checks every element of y = a * x + y after all iterations.
#include <vector>

#include "common.h"

__global__ void saxpy(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

static void saxpy_host(dim3 grid, dim3 block, int n, float a, const float* x, float* y) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) y[i] = a * x[i] + y[i];
  });
}
HOST_TWIN(saxpy, saxpy_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 4, 1 << 22,
                                           "tiny blocks vs cudaOccupancyMaxPotentialBlockSize");
  const int n = static_cast<int>(opt.size);
  std::vector<float> hx(static_cast<size_t>(n)), hy(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    hx[static_cast<size_t>(i)] = static_cast<float>(i % 17);
    hy[static_cast<size_t>(i)] = 1.0f;
  }
  float *x = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, hx.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, hy.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, hy.data(), hy.size() * sizeof(float), cudaMemcpyHostToDevice));

  int block = 32;  // the bug: a warp per block, and at most 32 blocks per SM
  if (opt.fixed) {
    int min_grid = 0;
    CHECK_CUDA(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, saxpy, 0, 0));
  }
  int active = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, saxpy, block, 0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double occupancy = static_cast<double>(active * block) / prop.maxThreadsPerMultiProcessor;

  const int grid = (n + block - 1) / block;
  const float a = 0.5f;
  for (int it = 0; it < opt.iterations; ++it) {
    saxpy<<<grid, block>>>(n, a, x, y);
    CHECK_LAUNCH();
  }
  CHECK_CUDA(cudaMemcpy(hy.data(), y, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    const double want = 1.0 + opt.iterations * a * (i % 17);
    examples::expect_close("y[i]", hy[static_cast<size_t>(i)], want);
  }
  std::printf("occupancy%s: block %d, %d resident blocks/SM, theoretical occupancy %.0f%%, "
              "%d elements, %d iterations\n",
              opt.fixed ? " --fixed" : "", block, active, occupancy * 100, n, opt.iterations);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  std::printf("OK\n");
  return 0;
}
