// The real function behind one the hook interposes (NCCL's entry points, the exec family,
// host functions, __cudaLaunchKernel): found once and cached in the row's slot. nullptr when no
// loaded library defines it.
//
// dlsym(RTLD_NEXT) looks in the libraries after the hook in the global scope. A library loaded
// by dlopen(RTLD_LOCAL) is not there, nor are its dependencies: a Python import loads PyTorch
// that way, and with it libcudart and libnccl. Its calls still reach the hook (the preloaded
// hook is first in the global scope, which every lookup searches first), so the real
// function must then be found in the library itself: find_real.
#pragma once

#include <dlfcn.h>

#include <atomic>

namespace gpuhook::hook {

// The definition of `name` in a loaded library other than the hook, looked up in each loaded
// object's own scope (dlopen(RTLD_NOLOAD) + dlsym), in load order. nullptr when none has one.
void* find_real(const char* name);

// A slot's mark for "searched, not found": the library that made the call is loaded by the
// time the call arrives, so a function found nowhere then will not appear later.
inline char g_missing_function;
inline void* missing_function() { return &g_missing_function; }

// At a call of the interposed function: dlsym(RTLD_NEXT), else find_real.
template <typename Fn>
Fn resolve(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, name);
    if (p == nullptr) p = find_real(name);
    slot.store(p != nullptr ? p : missing_function(), std::memory_order_release);
  }
  return p == missing_function() ? nullptr : reinterpret_cast<Fn>(p);
}

// At the hook's start, so that the first call pays nothing: dlsym(RTLD_NEXT) only, nothing
// remembered when it finds nothing (most processes never load NCCL; a library loaded later,
// or with RTLD_LOCAL, is found by resolve at its first call).
inline bool resolve_early(std::atomic<void*>& slot, const char* name) {
  if (slot.load(std::memory_order_acquire) != nullptr) return true;
  void* p = dlsym(RTLD_NEXT, name);
  if (p != nullptr) slot.store(p, std::memory_order_release);
  return p != nullptr;
}

}  // namespace gpuhook::hook
