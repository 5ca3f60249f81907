// The stubs cmake/GpuhookSimStubs.cmake generates, one per entry point of the real library the
// simulator does not define: a weak definition, so the simulator's own (strong) one wins at
// link time and a program calling a missing one still loads. The call then fails with one line
// naming it (once per entry point), never a dynamic loader error.
// No toolkit header is included where these are compiled: a stub's prototype differs from the
// real one, which the C calling convention allows for a function that ignores its arguments and
// returns an int (the runtime's cudaError_t and NCCL's ncclResult_t are both enums).
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace gpuhook_sim_stubs {

inline int not_simulated(const char* name, std::atomic<bool>* said) {
  if (!said->exchange(true)) {
    std::fprintf(stderr, "gpuhook-sim: %s is not simulated (tests/sim/README.md lists what is): %s\n", name,
                 GPUHOOK_SIM_STUB_ERROR_NAME);
  }
  return GPUHOOK_SIM_STUB_ERROR;
}

// A registration call or a function returning a struct cannot fail meaningfully.
[[noreturn]] inline void not_simulated_fatal(const char* name) {
  std::fprintf(stderr, "gpuhook-sim: %s is not simulated (tests/sim/README.md lists what is)\n", name);
  std::abort();
}

}  // namespace gpuhook_sim_stubs

#define STUB_RETURNS(name)                                             \
  extern "C" __attribute__((weak, visibility("default"))) int name();  \
  extern "C" int name() {                                              \
    static std::atomic<bool> said{false};                              \
    return gpuhook_sim_stubs::not_simulated(#name, &said);             \
  }
#define STUB_ABORTS(name)                                              \
  extern "C" __attribute__((weak, visibility("default"))) void name(); \
  extern "C" void name() { gpuhook_sim_stubs::not_simulated_fatal(#name); }
