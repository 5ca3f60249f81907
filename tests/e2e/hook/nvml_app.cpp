// A CUDA program without nvcc, for the NVML sampler's end-to-end test on the simulator: it
// registers one kernel the way nvcc's host code does, allocates 64 MiB, then idles, keeps the
// GPU busy with back-to-back kernels that fill every SM, and idles again, so the GPU's
// counters have a known shape to be held against the trace.
//   nvml_app IDLE_MS KERNELS IDLE_MS [BLOCKS]   (kernel length: GPUHOOK_SIM_BLOCK_NS, one wave;
//                                               BLOCKS of 64 threads, 4224 fill the device)
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace {

using RegisterFatBinary = void** (*)(void*);
using UnregisterFatBinary = void (*)(void**);
using RegisterFunction = void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
using Malloc = cudaError_t (*)(void**, size_t);
using Launch = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
using Sync = cudaError_t (*)();

void busy_kernel_stub() {}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: nvml_app IDLE_MS KERNELS IDLE_MS [BLOCKS]\n");
    return 2;
  }
  void* rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (rt == nullptr) {
    std::fprintf(stderr, "nvml_app: no libcudart.so.13\n");
    return 1;
  }
  auto fat = reinterpret_cast<RegisterFatBinary>(dlsym(rt, "__cudaRegisterFatBinary"));
  auto unregister = reinterpret_cast<UnregisterFatBinary>(dlsym(rt, "__cudaUnregisterFatBinary"));
  auto function = reinterpret_cast<RegisterFunction>(dlsym(rt, "__cudaRegisterFunction"));
  auto cuda_malloc = reinterpret_cast<Malloc>(dlsym(rt, "cudaMalloc"));
  auto launch = reinterpret_cast<Launch>(dlsym(rt, "cudaLaunchKernel"));
  auto sync = reinterpret_cast<Sync>(dlsym(rt, "cudaDeviceSynchronize"));
  if (fat == nullptr || unregister == nullptr || function == nullptr || cuda_malloc == nullptr || launch == nullptr || sync == nullptr) {
    std::fprintf(stderr, "nvml_app: the runtime lacks an entry point\n");
    return 1;
  }
  static char fatbin[16];
  void** handle = fat(fatbin);
  function(handle, reinterpret_cast<const char*>(&busy_kernel_stub), const_cast<char*>("busy_kernel"), "busy_kernel", -1,
           nullptr, nullptr, nullptr, nullptr, nullptr);
  void* buffer = nullptr;
  if (cuda_malloc(&buffer, 64u << 20) != cudaSuccess) return 1;
  sleep_ms(std::atol(argv[1]));
  // 132 SMs x 32 blocks of 64 threads: one wave that fills the device (BLOCKS: a part of it).
  const int kernels = std::atoi(argv[2]);
  const int blocks = argc == 5 ? std::atoi(argv[4]) : 132 * 32;
  if (blocks < 1 || blocks > 132 * 32) return 2;
  for (int i = 0; i < kernels; ++i)
    if (launch(reinterpret_cast<const void*>(&busy_kernel_stub), dim3(static_cast<unsigned>(blocks)), dim3(64), nullptr, 0,
               nullptr) != cudaSuccess)
      return 1;
  if (sync() != cudaSuccess) return 1;
  sleep_ms(std::atol(argv[3]));
  unregister(handle);  // as nvcc's exit handler does
  std::printf("nvml_app done\n");
  return 0;
}
