// One kernel that spins on the GPU clock for --ms milliseconds (default 10000), then exits.
//   long_kernel [--ms N] [--no-wait]   --no-wait: return from main without synchronising
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

__global__ void spin(unsigned long long ns, int* done) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  unsigned long long t = t0;
  while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  if (threadIdx.x == 0) *done = 1;
}

int main(int argc, char** argv) {
  long ms = 10000;
  bool wait = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ms") == 0 && i + 1 < argc) ms = std::atol(argv[++i]);
    else if (std::strcmp(argv[i], "--no-wait") == 0) wait = false;
  }
  int* done = nullptr;
  if (cudaMalloc(&done, sizeof(int)) != cudaSuccess) return 1;
  spin<<<1, 32>>>(static_cast<unsigned long long>(ms) * 1000000ull, done);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::printf("long_kernel: launched %ld ms\n", ms);
  std::fflush(stdout);
  if (wait && cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("OK\n");
  return 0;
}
