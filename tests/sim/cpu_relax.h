// One step of a busy wait: the CPU's spin-loop hint where it has one.
#pragma once

namespace gpuhook::sim {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace gpuhook::sim
