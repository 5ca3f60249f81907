#include "api_groups.h"

#include <cstring>

#include "config.h"

namespace gpuhook::hook {
namespace {
bool has(const char* s, const char* part) { return std::strstr(s, part) != nullptr; }
}  // namespace

uint32_t api_group_of(const char* name) {
  if (name == nullptr) return kApiOther;
  // Launches: cudaLaunchKernel, __cudaLaunchKernel_v13000, cuLaunchKernelEx, cudaGraphLaunch,
  // cudaLaunchCooperativeKernel, cudaLaunchHostFunc; cudaStreamAddCallback queues host work
  // as cudaLaunchHostFunc does (its host function joins the call's record).
  if (has(name, "Launch") || has(name, "StreamAddCallback")) return kApiLaunch;
  if (has(name, "Synchronize") || has(name, "StreamWaitEvent") || has(name, "StreamWaitValue")) return kApiSync;
  if (has(name, "Memcpy") || has(name, "Memset") || has(name, "MemPrefetch")) return kApiMemcpy;
  if (has(name, "Malloc") || has(name, "cudaFree") || has(name, "cuMemAlloc") || has(name, "cuMemFree") ||
      has(name, "HostAlloc") || has(name, "MemPool") || has(name, "cuMemCreate") || has(name, "cuMemRelease") ||
      has(name, "cuMemMap") || has(name, "cuMemUnmap")) {
    return kApiAlloc;
  }
  return kApiOther;
}

}  // namespace gpuhook::hook
