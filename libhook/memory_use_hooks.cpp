// CUDA 13's <<<>>> launches through __cudaLaunchKernel (crt/device_functions.h), whose CUPTI
// callback carries no parameter struct: with GPUHOOK_MEM_USE the hook interposes it, leaves the
// kernel and its arguments for that callback (memory_use.h) and calls the runtime's. Only a
// program that reaches it through the dynamic linker is seen (LD_PRELOAD, a shared libcudart);
// nvcc's default static cudart binds it inside the program.
#include <cuda_runtime_api.h>

#include <atomic>

#include "interpose.h"
#include "memory_use.h"
#include "visibility.h"

namespace gpuhook::hook {
namespace {

using LaunchFn = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
std::atomic<void*> g_real_launch{nullptr};
std::atomic<void*> g_real_launch_ptsz{nullptr};

cudaError_t launch(std::atomic<void*>& slot, const char* name, cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                   size_t shared_bytes, cudaStream_t stream) {
  auto real = resolve<LaunchFn>(slot, name);
  if (real == nullptr) return cudaErrorNotSupported;  // no runtime loaded defines it
  const bool on = memory_use_on();
  if (on) set_pending_launch(kernel, args);
  const cudaError_t rc = real(kernel, grid, block, args, shared_bytes, stream);
  if (on) set_pending_launch(nullptr, nullptr);  // the callback took it, or never came
  return rc;
}

}  // namespace
}  // namespace gpuhook::hook

using namespace gpuhook::hook;

extern "C" {
GPUHOOK_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                              size_t shared_bytes, cudaStream_t stream) {
  return launch(g_real_launch, "__cudaLaunchKernel", kernel, grid, block, args, shared_bytes, stream);
}

GPUHOOK_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                                   size_t shared_bytes, cudaStream_t stream) {
  return launch(g_real_launch_ptsz, "__cudaLaunchKernel_ptsz", kernel, grid, block, args, shared_bytes, stream);
}
}  // extern "C"
