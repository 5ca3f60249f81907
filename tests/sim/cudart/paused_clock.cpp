#include "paused_clock.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace gpuhook::sim {

namespace {

using ClockGettime = int (*)(clockid_t, timespec*);

// libc's clock_gettime, the next definition after this library's.
ClockGettime real_clock_gettime() {
  static std::atomic<ClockGettime> real{nullptr};
  ClockGettime fn = real.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
    if (fn == nullptr) {
      fn = [](clockid_t id, timespec* ts) { return static_cast<int>(syscall(SYS_clock_gettime, id, ts)); };
    }
    real.store(fn, std::memory_order_release);
  }
  return fn;
}

int64_t raw_ns() {
  timespec ts{};
  real_clock_gettime()(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A sequence lock: pause and resume (rare) write, every clock read reads. The paused time line
// is the real one less the time spent paused, or, while paused, the moment it stopped.
std::atomic<uint64_t> g_seq{0};
std::atomic<int64_t> g_paused_total_ns{0};
std::atomic<int64_t> g_stopped_at_ns{-1};  // the paused clock's reading while it stands
std::mutex g_writer;
int g_depth = 0;               // guarded by g_writer

template <class Write>
void write_locked(Write write) {
  const uint64_t s = g_seq.load(std::memory_order_relaxed);
  g_seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  write();
  g_seq.store(s + 2, std::memory_order_release);
}

int64_t paused_ns() {
  for (;;) {
    const uint64_t before = g_seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    const int64_t stopped = g_stopped_at_ns.load(std::memory_order_relaxed);
    const int64_t total = g_paused_total_ns.load(std::memory_order_relaxed);
    const int64_t real = raw_ns();  // inside the window: a reading never runs ahead of a stop
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_seq.load(std::memory_order_relaxed) == before) return stopped >= 0 ? stopped : real - total;
  }
}

}  // namespace

void pause_clock() {
  if (!clock_pauses()) return;
  std::lock_guard<std::mutex> lock(g_writer);
  if (g_depth++ > 0) return;
  write_locked([] {
    g_stopped_at_ns.store(raw_ns() - g_paused_total_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
  });
}

void resume_clock() {
  if (!clock_pauses()) return;
  std::lock_guard<std::mutex> lock(g_writer);
  if (g_depth == 0 || --g_depth > 0) return;
  write_locked([] {
    // On from where it stood (an advance while it stood included).
    g_paused_total_ns.store(raw_ns() - g_stopped_at_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_stopped_at_ns.store(-1, std::memory_order_relaxed);
  });
}

void advance_clock(int64_t delta_ns) {
  if (!clock_pauses() || delta_ns <= 0) return;
  std::lock_guard<std::mutex> lock(g_writer);
  write_locked([&] {
    if (g_depth > 0) g_stopped_at_ns.store(g_stopped_at_ns.load(std::memory_order_relaxed) + delta_ns, std::memory_order_relaxed);
    else g_paused_total_ns.fetch_sub(delta_ns, std::memory_order_relaxed);
  });
}

}  // namespace gpuhook::sim

// The process's clock_gettime (libcudart.so.13 comes before libc in a CUDA program's search
// order): CLOCK_MONOTONIC_RAW on the paused time line where the setting asks for it.
extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t id, timespec* ts) {
  if (id != CLOCK_MONOTONIC_RAW || !gpuhook::sim::clock_pauses()) return gpuhook::sim::real_clock_gettime()(id, ts);
  const int64_t ns = gpuhook::sim::paused_ns();
  ts->tv_sec = static_cast<time_t>(ns / 1000000000);
  ts->tv_nsec = static_cast<long>(ns % 1000000000);
  return 0;
}
