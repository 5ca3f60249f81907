// What the hook's sampler threads (NVML, PM sampling) share: a detached thread that no signal of
// the program's lands on, and a bounded, async-signal-safe wait for it to end.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "clock.h"

namespace gpuhook::hook {

// Starts fn(arg) on a detached thread with every signal blocked (as the writer: a program's
// SIGINT or SIGPROF never runs its handler on a thread of the hook's). 0, or pthread_create's error.
inline int start_sampler_thread(void* (*fn)(void*), void* arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const int err = pthread_create(&thread, nullptr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err == 0) pthread_detach(thread);
  return err;
}

// Sleeps ns, through signals' interruptions.
inline void sampler_sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000u), static_cast<long>(ns % 1'000'000'000u)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Asks the thread to end (`stop`) and waits up to timeout_ms for it to say so (`finished`). By
// the clock, not by counting sleeps (writer.cpp: sleeps run long on a loaded machine). An atomic
// store, then nanosleep: safe in a signal handler. True when it ended.
inline bool stop_sampler_thread(std::atomic<bool>& stop, const std::atomic<bool>& finished, uint32_t timeout_ms) {
  stop.store(true, std::memory_order_release);
  const uint64_t deadline_ns = now_ns() + uint64_t{timeout_ms} * 1'000'000u;
  while (!finished.load(std::memory_order_acquire)) {
    if (now_ns() > deadline_ns) return false;
    timespec pause{0, 200'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

}  // namespace gpuhook::hook
