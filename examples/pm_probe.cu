// Known work for checking the GPU's own counters (scripts/gpu-check.sh, GPUHOOK_METRICS and
// NVML): idle, a GEMM, idle, device-to-device copies, idle, host-to-device copies from pinned
// memory, idle; each phase long enough for NVML's averages (1/6 s or more) and for many PM
// samples. The GEMM is a plain FP32 one (no tensor cores) with a grid of one full wave of
// 256-thread blocks that strides over C, so every SM has warps for the whole phase.
//   pm_probe [--iterations N] [--size N]   N GEMMs of N x N (default 8 of 2048); 40 N
//                                          device-to-device copies and 32 N host-to-device
//                                          copies of 64 x N x N bytes (256 MiB at 2048)
#include <time.h>

#include <vector>

#include "common.h"

__global__ void sgemm_strided(int n, const float* a, const float* b, float* c) {
  const long long total = 1ll * n * n;
  for (long long e = 1ll * blockIdx.x * blockDim.x + threadIdx.x; e < total; e += 1ll * gridDim.x * blockDim.x) {
    const int row = static_cast<int>(e / n), col = static_cast<int>(e % n);
    float sum = 0;
    for (int k = 0; k < n; ++k) sum += a[1ll * row * n + k] * b[1ll * k * n + col];
    c[e] = sum;
  }
}

static void sgemm_host(dim3 grid, dim3 block, int n, const float* a, const float* b, float* c) {
  (void)grid, (void)block;
  for (int row = 0; row < n; ++row)
    for (int col = 0; col < n; ++col) {
      float sum = 0;
      for (int k = 0; k < n; ++k) sum += a[1ll * row * n + k] * b[1ll * k * n + col];
      c[1ll * row * n + col] = sum;
    }
}
HOST_TWIN(sgemm_strided, sgemm_host);

static void idle_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 8, 2048, "a known GEMM and known copies for the GPU's counters");
  const int n = static_cast<int>(opt.size);
  const size_t elems = 1ull * n * n;
  std::vector<float> ha(elems, 1.0f), hb(elems, 0.5f), hc(elems, 0.0f);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, elems * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, elems * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, elems * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(a, ha.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, hb.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
  int sms = 0, per_sm = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sgemm_strided, 256, 0));
  const int grid = sms * (per_sm > 0 ? per_sm : 1);

  idle_ms(300);
  for (int it = 0; it < opt.iterations; ++it) {
    sgemm_strided<<<grid, 256>>>(n, a, b, c);
    CHECK_LAUNCH();
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  idle_ms(300);

  const size_t copy_bytes = 64ull * elems;
  char *d0 = nullptr, *d1 = nullptr, *pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&d0, copy_bytes));
  CHECK_CUDA(cudaMalloc(&d1, copy_bytes));
  CHECK_CUDA(cudaMallocHost(&pinned, copy_bytes));
  CHECK_CUDA(cudaMemset(d0, 1, copy_bytes));
  for (int it = 0; it < 40 * opt.iterations; ++it) CHECK_CUDA(cudaMemcpyAsync(d1, d0, copy_bytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());
  idle_ms(300);
  for (int it = 0; it < 32 * opt.iterations; ++it) CHECK_CUDA(cudaMemcpyAsync(d1, pinned, copy_bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());
  idle_ms(300);

  CHECK_CUDA(cudaMemcpy(hc.data(), c, elems * sizeof(float), cudaMemcpyDeviceToHost));
  examples::expect_close("c[0]", hc[0], 0.5 * n);
  examples::expect_close("c[last]", hc[elems - 1], 0.5 * n);
  std::printf("pm_probe: %d GEMMs of %d x %d on %d blocks, %d + %d copies of %zu MiB\n", opt.iterations, n, n, grid,
              40 * opt.iterations, 32 * opt.iterations, copy_bytes >> 20);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  CHECK_CUDA(cudaFree(d0));
  CHECK_CUDA(cudaFree(d1));
  CHECK_CUDA(cudaFreeHost(pinned));
  std::printf("OK\n");
  return 0;
}
