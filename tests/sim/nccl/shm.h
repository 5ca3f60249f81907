// The shared-memory side of the simulated NCCL: one POSIX shared-memory segment per
// communicator, named from a hash of its ncclUniqueId, mapped by every rank (one process
// each, or several ranks of one process with ncclCommInitAll). Zero-filled memory is a
// valid initial state, so ranks may map it in any order without a set-up handshake.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace simnccl {

inline constexpr int kMaxRanks = 64;
// Staging bytes per rank for one chunk of a collective. Larger messages are moved in
// chunks, so the segment size does not grow with the message.
inline constexpr size_t kStageBytesPerRank = 1u << 20;
// Bytes per point-to-point mailbox (one per ordered pair of ranks).
inline constexpr size_t kMailboxBytes = 64u << 10;

// A reusable barrier across processes: a futex on the generation word (shared, not
// FUTEX_PRIVATE, because the waiters live in different processes).
struct Barrier {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
};

struct Mailbox {
  std::atomic<uint32_t> written;   // chunks the sender has put in
  std::atomic<uint32_t> consumed;  // chunks the receiver has taken out
  uint64_t bytes;                  // size of the chunk in the buffer
  uint64_t sender_start_ns;        // CLOCK_MONOTONIC_RAW when the sending kernel started
  uint64_t receiver_start_ns;      // ... when the kernel that took the last chunk out started
};

struct SharedHeader {
  Barrier coll;  // collectives, run by stream workers
  Barrier host;  // host-side exchanges (ncclCommSplit), never mixed with `coll`
  std::atomic<uint32_t> aborted;
  std::atomic<uint32_t> detached;
  std::atomic<uint32_t> unlinked;
  uint64_t arrival_ns[kMaxRanks];  // CLOCK_MONOTONIC_RAW when each rank's kernel started
  int64_t host_exchange[kMaxRanks][2];
  std::atomic<uint32_t> doorbell[kMaxRanks];  // bumped on every mailbox change that concerns a rank
  Mailbox mailbox[kMaxRanks][kMaxRanks];      // [src][dst]
};

// One mapped segment.
class Segment {
 public:
  // Maps (creating if needed) the segment for `key` sized for `nranks`. nullptr on failure,
  // with one line on stderr.
  static Segment* open(uint64_t key, int nranks);
  ~Segment();

  SharedHeader* header() const { return header_; }
  unsigned char* stage(int rank) const;
  unsigned char* mailbox_buffer(int src, int dst) const;
  int nranks() const { return nranks_; }
  // Removes the name once every rank has mapped it; safe to call more than once.
  void unlink_name();

 private:
  Segment() = default;
  SharedHeader* header_ = nullptr;
  size_t bytes_ = 0;
  int nranks_ = 0;
  char name_[64] = {};
};

// Waits until all `nranks` arrive. Returns false on abort or when a peer has not arrived
// within the timeout (GPUHOOK_SIM_NCCL_TIMEOUT_S, default 120 s): a hung test fails.
bool barrier_wait(Barrier& b, int nranks, const std::atomic<uint32_t>& aborted);

// Futex helpers on a 32-bit word in shared memory.
void futex_wake_all(std::atomic<uint32_t>& word);
// Waits while word == expected, at most timeout_ns.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns);

uint64_t monotonic_raw_ns();
// Sleeps until CLOCK_MONOTONIC_RAW reaches target_ns (coarse sleep, then a short spin so
// every rank returns at nearly the same instant).
void sleep_until_raw(uint64_t target_ns);
uint64_t timeout_ns();

}  // namespace simnccl
