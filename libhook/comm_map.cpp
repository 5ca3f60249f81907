#include "comm_map.h"

namespace gpuhook::hook {
namespace {
uint32_t slot_of(const void* comm) {
  auto k = reinterpret_cast<uintptr_t>(comm);
  return static_cast<uint32_t>((k >> 4) ^ (k >> 16)) & (CommMap::kSlots - 1);
}
}  // namespace

uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed) {
  auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;  // 0 means "unknown communicator"
}

bool CommMap::insert(const void* comm, uint64_t id, int32_t rank, int32_t nranks, int32_t device, bool unresolved) {
  auto key = reinterpret_cast<uintptr_t>(comm);
  if (key <= kBusy) return false;
  uint32_t start = slot_of(comm);
  for (uint32_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[(start + i) & (kSlots - 1)];
    uintptr_t cur = s.key.load(std::memory_order_acquire);
    if (cur == key || cur == 0 || cur == kTombstone) {
      // Fill the values before publishing the key so readers never see a half entry.
      if (cur != key) {
        if (!s.key.compare_exchange_strong(cur, kBusy, std::memory_order_acq_rel)) continue;
      }
      s.id.store(id, std::memory_order_relaxed);
      s.rank.store(rank, std::memory_order_relaxed);
      s.nranks.store(nranks, std::memory_order_relaxed);
      s.device.store(device, std::memory_order_relaxed);
      s.sequence.store(0, std::memory_order_relaxed);
      s.p2p_sequence.store(0, std::memory_order_relaxed);
      s.splits.store(0, std::memory_order_relaxed);
      s.shrinks.store(0, std::memory_order_relaxed);
      s.unresolved.store(unresolved, std::memory_order_relaxed);
      s.key.store(key, std::memory_order_release);
      return true;
    }
  }
  return false;
}

CommMap::Slot* CommMap::find(const void* comm) {
  auto key = reinterpret_cast<uintptr_t>(comm);
  if (key <= kBusy) return nullptr;
  uint32_t start = slot_of(comm);
  for (uint32_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[(start + i) & (kSlots - 1)];
    uintptr_t cur = s.key.load(std::memory_order_acquire);
    if (cur == key) return &s;
    if (cur == 0) return nullptr;
  }
  return nullptr;
}

CommInfo CommMap::lookup(const void* comm, SequenceKind next) {
  CommInfo info;
  Slot* s = find(comm);
  if (s == nullptr) return info;
  info.id = s->id.load(std::memory_order_relaxed);
  // Acquire: a resolve() that cleared the flag published rank, nranks and device before it.
  info.unresolved = s->unresolved.load(std::memory_order_acquire);
  info.rank = s->rank.load(std::memory_order_relaxed);
  info.nranks = s->nranks.load(std::memory_order_relaxed);
  info.device = s->device.load(std::memory_order_relaxed);
  if (next == SequenceKind::kCollective) info.sequence = s->sequence.fetch_add(1, std::memory_order_relaxed);
  if (next == SequenceKind::kPointToPoint) info.sequence = s->p2p_sequence.fetch_add(1, std::memory_order_relaxed);
  return info;
}

void CommMap::resolve(const void* comm, int32_t rank, int32_t nranks, int32_t device) {
  Slot* s = find(comm);
  if (s == nullptr) return;
  // Two threads resolving at once store the same answers.
  s->rank.store(rank, std::memory_order_relaxed);
  s->nranks.store(nranks, std::memory_order_relaxed);
  s->device.store(device, std::memory_order_relaxed);
  s->unresolved.store(false, std::memory_order_release);
}

uint64_t CommMap::next_split(const void* comm) {
  Slot* s = find(comm);
  return s == nullptr ? 0 : s->splits.fetch_add(1, std::memory_order_relaxed);
}

uint64_t CommMap::next_shrink(const void* comm) {
  Slot* s = find(comm);
  return s == nullptr ? 0 : s->shrinks.fetch_add(1, std::memory_order_relaxed);
}

void CommMap::erase(const void* comm) {
  if (Slot* s = find(comm)) s->key.store(kTombstone, std::memory_order_release);
}

}  // namespace gpuhook::hook
