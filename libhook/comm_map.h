// Communicator pointer -> (id shared by every rank, rank, nranks, sequence), lock-free, fixed
// size. Inserted at init (not a hot path), read by every collective wrapper.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuhook::hook {

struct CommInfo {
  uint64_t id = 0;  // 0 = a communicator created before the hook saw it
  int32_t rank = -1;
  int32_t nranks = -1;
  int32_t device = -1;  // ncclCommCuDevice; -1 unknown
  uint64_t sequence = 0;
};

class CommMap {
 public:
  static constexpr uint32_t kSlots = 4096;

  // False when the table is full (the communicator is then recorded with id 0).
  bool insert(const void* comm, uint64_t id, int32_t rank, int32_t nranks, int32_t device);
  // The info; with `next_sequence`, also takes the communicator's next sequence number.
  CommInfo lookup(const void* comm, bool next_sequence);
  // Takes a new split index of a parent (ncclCommSplit is collective: every rank of the
  // parent calls it in the same order, so the index agrees across ranks).
  uint64_t next_split(const void* comm);
  void erase(const void* comm);

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};  // 0 empty, kTombstone erased
    std::atomic<uint64_t> id{0};
    std::atomic<int32_t> rank{-1};
    std::atomic<int32_t> nranks{-1};
    std::atomic<int32_t> device{-1};
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> splits{0};
  };
  static constexpr uintptr_t kTombstone = 1;
  static constexpr uintptr_t kBusy = 2;  // an insert is filling the slot
  Slot* find(const void* comm);
  Slot slots_[kSlots];
};

// FNV-1a over bytes: the id of a communicator from its ncclUniqueId, identical on every rank.
uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed = 1469598103934665603ull);

}  // namespace gpuhook::hook
