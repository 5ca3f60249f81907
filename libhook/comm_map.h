// Communicator pointer -> (id shared by every rank, rank, nranks, sequence), lock-free, fixed
// size. Inserted at init (not a hot path), read by every collective wrapper.
//
// Two counters per communicator: collectives and point-to-point calls are numbered apart.
// Every rank calls every collective, so the collective number names the same collective on
// all ranks; send/recv are between some ranks only (ranks 0 and 1 may trade ten messages
// while rank 2 trades none), and counted with the collectives they would shift the numbers
// of every later collective on some ranks and not on others.
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
  // Created non-blocking (ncclInProgress): NCCL answers ncclCommCount/UserRank/CuDevice only
  // once the communicator is ready (ncclCommEnsureReady), so what the hook could not ask at
  // creation is still to be asked (see CommMap::resolve).
  bool unresolved = false;
};

enum class SequenceKind : uint8_t { kNone, kCollective, kPointToPoint };

class CommMap {
 public:
  static constexpr uint32_t kSlots = 4096;

  // False when the table is full (the communicator is then recorded with id 0).
  bool insert(const void* comm, uint64_t id, int32_t rank, int32_t nranks, int32_t device,
              bool unresolved = false);
  // The info; with kCollective or kPointToPoint, also takes the communicator's next number of
  // that kind (into `sequence`).
  CommInfo lookup(const void* comm, SequenceKind next = SequenceKind::kNone);
  // Fills in what a non-blocking communicator could not say at creation.
  void resolve(const void* comm, int32_t rank, int32_t nranks, int32_t device);
  // Takes a new split index of a parent (ncclCommSplit is collective: every rank of the
  // parent calls it in the same order, so the index agrees across ranks).
  uint64_t next_split(const void* comm);
  // The same for ncclCommShrink, counted apart: the ranks it excludes do not call it, and a
  // shared counter would make their later splits disagree with the survivors'.
  uint64_t next_shrink(const void* comm);
  void erase(const void* comm);

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};  // 0 empty, kTombstone erased
    std::atomic<uint64_t> id{0};
    std::atomic<int32_t> rank{-1};
    std::atomic<int32_t> nranks{-1};
    std::atomic<int32_t> device{-1};
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> p2p_sequence{0};
    std::atomic<uint64_t> splits{0};
    std::atomic<uint64_t> shrinks{0};
    std::atomic<bool> unresolved{false};
  };
  static constexpr uintptr_t kTombstone = 1;
  static constexpr uintptr_t kBusy = 2;  // an insert is filling the slot
  Slot* find(const void* comm);
  Slot slots_[kSlots];
};

// FNV-1a over bytes: the id of a communicator from its ncclUniqueId, identical on every rank.
uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed = 1469598103934665603ull);

}  // namespace gpuhook::hook
