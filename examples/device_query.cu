// A program that only asks about the GPUs (count, name, memory, SMs) and launches nothing, as
// a job's pre-flight check or a framework's device probe does. Under the hook it still gets a
// capture, with a device record per GPU: the answer to "what did this job run on?".
//   device_query
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    std::printf("no CUDA device\n");
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) return 1;
    std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", i, p.name, p.major, p.minor, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1u << 30));
  }
  return 0;
}
