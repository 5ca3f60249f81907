// Pattern 9: a kernel that holds the GPU while its SMs mostly wait. Each thread reads one row of
// a table through an index; with the indices in random order, neighbouring threads read far
// apart addresses, every warp's loads split into 32 transactions and the warps wait on DRAM
// instead of computing: the GPU is "busy" (a kernel is always running) but SM active, sampled
// with GPUHOOK_METRICS=sm_active,dram_read,dram_write, reads low (`diagnose` stalled).
// The fixed twin sorts the indices once, so a warp's 32 reads fall in a few cache lines.
//   gather_stall            gather_random: out[i] = 2 * table[idx[i]], idx a random permutation
//   gather_stall --fixed    gather_sorted: the same gather with idx sorted
// The program checks every element of out after the last iteration.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common.h"

__global__ void gather_random(int n, const int* idx, const float* table, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * table[idx[i]];
}

__global__ void gather_sorted(int n, const int* idx, const float* table, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * table[idx[i]];
}

static void gather_host(dim3 grid, dim3 block, int n, const int* idx, const float* table, float* out) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) out[i] = 2.0f * table[idx[i]];
  });
}
HOST_TWIN(gather_random, gather_host);
HOST_TWIN(gather_sorted, gather_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 10, 1 << 20, "a random-order gather vs a sorted one");
  const int n = static_cast<int>(opt.size);
  std::vector<int> hidx(static_cast<size_t>(n));
  std::vector<float> htable(static_cast<size_t>(n));
  // A fixed permutation (a full-period LCG step modulo n's power-of-two ceiling, kept below n),
  // so every run and every platform gathers the same rows.
  uint64_t p2 = 1;
  while (p2 < static_cast<uint64_t>(n)) p2 <<= 1;
  uint64_t x = 12345 % p2;
  for (int i = 0; i < n;) {
    x = (x * 1103515245ull + 12345ull) & (p2 - 1);
    if (x < static_cast<uint64_t>(n)) hidx[static_cast<size_t>(i++)] = static_cast<int>(x);
  }
  if (opt.fixed) std::sort(hidx.begin(), hidx.end());
  for (int i = 0; i < n; ++i) htable[static_cast<size_t>(i)] = static_cast<float>(i % 1000);

  int* idx = nullptr;
  float *table = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&idx, hidx.size() * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&table, htable.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, htable.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(idx, hidx.data(), hidx.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(table, htable.data(), htable.size() * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256;
  const int grid = (n + block - 1) / block;
  for (int it = 0; it < opt.iterations; ++it) {
    if (opt.fixed) gather_sorted<<<grid, block>>>(n, idx, table, out);
    else gather_random<<<grid, block>>>(n, idx, table, out);
    CHECK_LAUNCH();
  }
  std::vector<float> hout(static_cast<size_t>(n));
  CHECK_CUDA(cudaMemcpy(hout.data(), out, hout.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    examples::expect_close("out[i]", hout[static_cast<size_t>(i)], 2.0 * (hidx[static_cast<size_t>(i)] % 1000));
  std::printf("gather_stall%s: %s gather of %d floats, %d iterations\n", opt.fixed ? " --fixed" : "",
              opt.fixed ? "sorted" : "random-order", n, opt.iterations);
  CHECK_CUDA(cudaFree(idx));
  CHECK_CUDA(cudaFree(table));
  CHECK_CUDA(cudaFree(out));
  std::printf("OK\n");
  return 0;
}
