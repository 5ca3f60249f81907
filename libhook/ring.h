// Per-thread single-producer single-consumer rings of HostRecords, found by the writer
// through a lock-free list. A ring whose thread exited is retired and reused by a later
// thread once drained, so memory is bounded by the number of live threads.
#pragma once

#include <atomic>
#include <cstdint>

#include "host_record.h"

namespace gpuhook::hook {

class Ring {
 public:
  explicit Ring(uint32_t capacity_records);  // power of two
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Producer side (the owning thread only). reserve() returns nullptr when full.
  HostRecord* reserve() {
    uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ >= capacity_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ >= capacity_) return nullptr;
    }
    return &slots_[head & mask_];
  }
  // A record and the continuations of its long name: true when n records are free. They are
  // then slot(0) .. slot(n-1) and are published together by commit(n), so the writer, which
  // drains everything committed, never sees a head without all its continuations.
  bool has_room(uint64_t n) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    if (head + n - tail_cache_ > capacity_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head + n - tail_cache_ > capacity_) return false;
    }
    return true;
  }
  HostRecord* slot(uint64_t i) { return &slots_[(head_.load(std::memory_order_relaxed) + i) & mask_]; }
  // Returns the new head (records ever committed to this ring).
  uint64_t commit(uint64_t n = 1) {
    uint64_t head = head_.load(std::memory_order_relaxed) + n;
    head_.store(head, std::memory_order_release);
    return head;
  }
  void count_drop() { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // Consumer side (the writer only): calls fn(const HostRecord&) for up to max records.
  template <typename Fn>
  uint64_t drain(Fn&& fn, uint64_t max = UINT64_MAX) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t n = 0;
    while (tail != head && n < max) {
      fn(slots_[tail & mask_]);
      ++tail;
      ++n;
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }
  bool empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }
  // Records committed and not yet drained; any thread, signal handlers included.
  uint64_t pending() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
  }
  // Forgets unread records (fork child: they belong to the parent's file).
  void discard() { tail_.store(head_.load(std::memory_order_acquire), std::memory_order_release); }
  uint64_t take_dropped() { return dropped_.exchange(0, std::memory_order_relaxed); }
  uint32_t capacity() const { return static_cast<uint32_t>(capacity_); }

  // Ownership: kOwned by one thread, kRetired after it exited.
  enum State : int { kOwned = 1, kRetired = 2 };
  std::atomic<int> state{kOwned};
  Ring* next = nullptr;  // registry list, set once before publication

 private:
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t tail_cache_ = 0;
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
  uint64_t capacity_;
  uint64_t mask_;
  HostRecord* slots_;
};

// All rings ever created in this process.
class RingRegistry {
 public:
  // A ring for the calling thread: a drained retired one, or a new one.
  Ring* acquire(uint32_t capacity_records);
  static void retire(Ring* ring) { ring->state.store(Ring::kRetired, std::memory_order_release); }
  Ring* first() const { return head_.load(std::memory_order_acquire); }

 private:
  std::atomic<Ring*> head_{nullptr};
};

}  // namespace gpuhook::hook
