#include "recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace gpuhook::hook {

int64_t g_clock_offset_ns = 0;

namespace {

thread_local Ring* t_ring = nullptr;
thread_local bool t_ring_failed = false;
thread_local uint64_t t_tid = 0;
thread_local bool t_in_hook = false;

pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit(void*) { release_thread_ring(); }
void make_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

Ring* ring_for_this_thread() {
  if (t_ring != nullptr) return t_ring;
  if (t_ring_failed) return nullptr;
  Recorder& r = recorder();
  // First record of this thread: the one allocation a thread pays, outside the steady state.
  t_ring = r.rings.acquire(r.config->ring_records);
  if (t_ring == nullptr) {
    t_ring_failed = true;
    return nullptr;
  }
  pthread_once(&g_key_once, make_key);
  pthread_setspecific(g_exit_key, t_ring);  // non-null value so the destructor runs
  return t_ring;
}

}  // namespace

Recorder& recorder() {
  static Recorder r;
  return r;
}

uint64_t this_thread_id() {
  if (t_tid == 0) t_tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return t_tid;
}

HostRecord* begin_record() {
  Recorder& r = recorder();
  if (!r.enabled.load(std::memory_order_acquire)) return nullptr;
  Ring* ring = ring_for_this_thread();
  if (ring == nullptr) return nullptr;
  HostRecord* rec = ring->reserve();
  if (rec != nullptr) return rec;
  if (r.config->on_full == OnFull::kBlock) {
    // Wait for the writer, but never forever: once it is gone nobody will drain.
    while (rec == nullptr && r.writer_alive.load(std::memory_order_acquire)) {
      if (auto wake = r.wake_writer.load(std::memory_order_acquire)) wake();
      timespec pause{0, 50'000};
      nanosleep(&pause, nullptr);
      rec = ring->reserve();
    }
    if (rec != nullptr) return rec;
  }
  ring->count_drop();
  return nullptr;
}

void end_record() { t_ring->commit(); }

void release_thread_ring() {
  if (t_ring != nullptr) {
    RingRegistry::retire(t_ring);
    t_ring = nullptr;
  }
}

void reset_rings_after_fork() {
  t_tid = 0;
  for (Ring* ring = recorder().rings.first(); ring != nullptr; ring = ring->next) {
    ring->discard();
    ring->take_dropped();
    if (ring != t_ring) RingRegistry::retire(ring);
  }
}

ReentryGuard::ReentryGuard() : entered_(!t_in_hook) { t_in_hook = true; }
ReentryGuard::~ReentryGuard() {
  if (entered_) t_in_hook = false;
}

}  // namespace gpuhook::hook
