// A lock of the simulator's own, shared by its libraries (header only: libcupti.so.13 and
// libcudart.so.13 each get a copy).
#pragma once

#include <dlfcn.h>

#include <mutex>

namespace gpuhook::sim {

// A program thread that finds it held waits with the clock stopped, where
// GPUHOOK_SIM_PAUSE_CLOCK asks for it (cudart/paused_clock.h): the simulator's threads then run
// at SCHED_IDLE, and one that held the lock while off a core (or just handing it over through a
// futex wake-up) kept a launch call waiting for 5 to 500 us that a GPU does not have. Resolved
// through the process's symbols (gpuhook_sim_program_wait, cudart/engine.cpp): a runtime loaded
// on its own (the hidden test runtime) does not pause.
class PausingMutex {
 public:
  void lock() {
    if (m_.try_lock()) return;
    const WaitFn wait = program_wait();
    const int paused = wait != nullptr ? wait(1) : 0;
    m_.lock();
    if (paused) wait(0);
  }
  void unlock() { m_.unlock(); }
  bool try_lock() { return m_.try_lock(); }

 private:
  using WaitFn = int (*)(int);
  static WaitFn program_wait() {
    static const WaitFn fn = reinterpret_cast<WaitFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_program_wait"));
    return fn;
  }
  std::mutex m_;
};

}  // namespace gpuhook::sim
