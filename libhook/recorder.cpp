#include "recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace gpuhook::hook {

int64_t g_clock_offset_ns = 0;
__thread ThreadState t_state __attribute__((tls_model("initial-exec"))) = {nullptr, 0, 0, -1, 0, false, false, nullptr};

namespace {


pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit(void*) { release_thread_ring(); }
void make_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

Ring* first_ring_for_this_thread();

// Inlined into begin_record and begin_records: the hot path is one TLS load.
inline Ring* ring_for_this_thread() {
  if (t_state.ring != nullptr) return t_state.ring;
  return first_ring_for_this_thread();
}

__attribute__((noinline)) Ring* first_ring_for_this_thread() {
  if (t_state.ring_failed) return nullptr;
  Recorder& r = recorder();
  // First record of this thread: the one allocation a thread pays, outside the steady state.
  t_state.ring = r.rings.acquire(r.config->ring_records);
  if (t_state.ring == nullptr) {
    t_state.ring_failed = true;
    return nullptr;
  }
  pthread_once(&g_key_once, make_key);
  pthread_setspecific(g_exit_key, t_state.ring);  // non-null value so the destructor runs
  return t_state.ring;
}

}  // namespace

Recorder& recorder() {
  static Recorder r;
  return r;
}

uint64_t this_thread_id() {
  if (t_state.tid == 0) t_state.tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return t_state.tid;
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

void end_record() {
  // Every half ring, ask the writer to drain now rather than at its next tick: a burst then
  // fills rings without dropping. One futex wake per capacity/2 records, never per record.
  if (t_state.ring->commit() % (t_state.ring->capacity() / 2) == 0) {
    if (auto wake = recorder().wake_writer.load(std::memory_order_relaxed)) wake();
  }
}

HostRecord* begin_records(uint32_t n) {
  Recorder& r = recorder();
  if (!r.enabled.load(std::memory_order_acquire)) return nullptr;
  Ring* ring = ring_for_this_thread();
  if (ring == nullptr || n > ring->capacity()) return nullptr;
  if (ring->has_room(n)) return ring->slot(0);
  if (r.config->on_full != OnFull::kBlock) return nullptr;
  while (r.writer_alive.load(std::memory_order_acquire)) {
    if (auto wake = r.wake_writer.load(std::memory_order_acquire)) wake();
    timespec pause{0, 50'000};
    nanosleep(&pause, nullptr);
    if (ring->has_room(n)) return ring->slot(0);
  }
  return nullptr;
}

HostRecord* reserved_record(uint32_t i) { return t_state.ring->slot(i); }

void end_records(uint32_t n) {
  // As end_record: a wake each time the head passes a half-ring mark.
  uint64_t half = t_state.ring->capacity() / 2;
  uint64_t head = t_state.ring->commit(n);
  if (head / half != (head - n) / half) {
    if (auto wake = recorder().wake_writer.load(std::memory_order_relaxed)) wake();
  }
}

void release_thread_ring() {
  if (t_state.ring != nullptr) {
    RingRegistry::retire(t_state.ring);
    t_state.ring = nullptr;
  }
}

void reset_rings_after_fork() {
  t_state.tid = 0;
  for (Ring* ring = recorder().rings.first(); ring != nullptr; ring = ring->next) {
    ring->discard();
    ring->take_dropped();
    if (ring != t_state.ring) RingRegistry::retire(ring);
  }
}

ReentryGuard::ReentryGuard() : entered_(!t_state.in_hook) { t_state.in_hook = true; }
ReentryGuard::~ReentryGuard() {
  if (entered_) t_state.in_hook = false;
}

}  // namespace gpuhook::hook
