// The real function behind one the hook interposes (NCCL's entry points, the exec family):
// found with dlsym(RTLD_NEXT) once and cached in the row's slot. nullptr when the library
// that defines it is not loaded.
#pragma once

#include <dlfcn.h>

#include <atomic>

namespace gpuhook::hook {

template <typename Fn>
Fn resolve(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, name);
    if (p != nullptr) slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

}  // namespace gpuhook::hook
