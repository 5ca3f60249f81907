// The hot-path side of recording: the calling thread's ring, the re-entry guard, the
// capture-range switch. No lock, no allocation after a thread's first record, no syscall
// other than the vDSO clock.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"
#include "host_record.h"
#include "ring.h"

namespace gpuhook::hook {

struct Recorder {
  const Config* config = nullptr;
  RingRegistry rings;
  std::atomic<bool> enabled{false};      // start() done and not stopped
  std::atomic<bool> writer_alive{false};  // block mode waits only while someone drains
  std::atomic<void (*)()> wake_writer{nullptr};  // block mode: ask for a drain now
};

Recorder& recorder();

struct DomainStacks;  // nvtx_hooks.cpp

// Everything a hook keeps per thread, in one initial-exec TLS block: one TLS access per call
// instead of a __tls_get_addr per variable (measured on the NVTX path). 40 bytes fit the
// static TLS surplus glibc keeps for libraries loaded by dlopen (CUDA_INJECTION64_PATH).
struct ThreadState {
  Ring* ring;
  uint64_t tid;
  int32_t nvtx_depth;     // NVTX push/pop depth of the global domain (NVTX returns it)
  int32_t close_depth;    // capture window: depth whose pop closes it, -1 = none
  uint32_t group_depth;   // NCCL ncclGroupStart nesting
  bool ring_failed;
  bool in_hook;
  DomainStacks* domains;  // push/pop depths in named NVTX domains, allocated at the first push
};
static_assert(sizeof(ThreadState) <= 40, "ThreadState must fit the static TLS surplus");
extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

// Linux thread id, cached per thread (gettid is a syscall).
uint64_t this_thread_id();

// Reserves a record in this thread's ring; nullptr when recording is off or the ring is full
// (then the drop is counted, or with ON_FULL=block the call waits for the writer).
HostRecord* begin_record();
// Publishes the record begun on this thread.
void end_record();
// A record and the n-1 continuation records of its name, published together by end_records(n)
// (see Ring::has_room). nullptr when they do not fit: in block mode after waiting for the
// writer as begin_record does, in drop mode at once and without counting a drop, so that the
// caller can still write one record with a cut name.
HostRecord* begin_records(uint32_t n);
HostRecord* reserved_record(uint32_t i);  // record i of those begun, 0 = the first
void end_records(uint32_t n);

// Marks this thread's ring retired (thread exit) and forgets it.
void release_thread_ring();
// Fork child: the parent's unread records and the other threads' rings are not ours.
void reset_rings_after_fork();

// A thread-local re-entry guard: a hook that calls into code that may call a hook again.
class ReentryGuard {
 public:
  ReentryGuard();
  ~ReentryGuard();
  bool entered() const { return entered_; }

 private:
  bool entered_;
};

}  // namespace gpuhook::hook
