#include "ring.h"

#include <unistd.h>

#include <cstdlib>
#include <new>

namespace gpuhook::hook {

namespace {

// One write per page makes the kernel back it with a page of its own (the slots start zeroed,
// as calloc gives them). A memset of zeros is not enough: GCC turns malloc+memset(0) into
// calloc, which on fresh mmap'd memory touches nothing (found: every page of a new ring was
// still absent, ring_test.cpp). Volatile stores cannot be folded away.
void touch_pages(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  volatile char* c = static_cast<volatile char*>(p);
  for (size_t off = 0; off < bytes; off += page) c[off] = 0;
  if (bytes != 0) c[bytes - 1] = 0;
}

}  // namespace

Ring::Ring(uint32_t capacity_records) : capacity_(capacity_records), mask_(capacity_records - 1) {
  // Touched once here, at the thread's first record, so the hot path never takes a page
  // fault (measured: a fresh 1M-record ring added ~150 ns per NVTX push+pop in faults).
  const size_t bytes = size_t{capacity_records} * sizeof(HostRecord);
  slots_ = static_cast<HostRecord*>(std::calloc(capacity_records, sizeof(HostRecord)));
  if (slots_ != nullptr) touch_pages(slots_, bytes);
  if (slots_ == nullptr) {
    capacity_ = 0;  // reserve() always reports full: records are dropped and counted
    mask_ = 0;
  }
}

Ring::~Ring() { std::free(slots_); }

Ring* RingRegistry::acquire(uint32_t capacity_records) {
  for (Ring* r = first(); r != nullptr; r = r->next) {
    int expected = Ring::kRetired;
    if (r->capacity() == capacity_records && r->empty() &&
        r->state.compare_exchange_strong(expected, Ring::kOwned, std::memory_order_acq_rel)) {
      return r;
    }
  }
  auto* ring = new (std::nothrow) Ring(capacity_records);
  if (ring == nullptr) return nullptr;
  Ring* head = head_.load(std::memory_order_relaxed);
  do {
    ring->next = head;
  } while (!head_.compare_exchange_weak(head, ring, std::memory_order_release, std::memory_order_relaxed));
  return ring;
}

}  // namespace gpuhook::hook
