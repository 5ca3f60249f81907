// The simulated runtime's allocation table, shared by rt_memory.cpp (malloc, free, copies,
// registered and managed memory) and rt_pools.cpp (stream-ordered allocation and pools).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <mutex>

#include "records.h"

namespace gpuhook::sim {

// Guards the allocation table and every pool's PoolView.
std::mutex& allocation_mutex();

// What a release reports: the allocation's size, device, and its pool as it is after the release.
struct Released {
  size_t bytes = 0;
  CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
  int device = 0;
  bool from_pool = false;
  PoolView pool;
};

// The kind of memory at p, and whether [p, p+bytes) lies inside that allocation; *device (when
// asked) the device owning it, -1 for host memory.
CUpti_ActivityMemoryKind classify(const void* p, size_t bytes, bool* in_bounds, int* device = nullptr);
// Memory of `kind` on `device`, 256-byte aligned; counted in `pool` when it comes from one.
void* allocate(size_t bytes, CUpti_ActivityMemoryKind kind, int device = 0, PoolView* pool = nullptr);
// Releases p when it is an allocation of one of `kinds` (a bit per CUpti_ActivityMemoryKind).
bool release(void* p, unsigned kinds, Released* out);
bool release(void* p, CUpti_ActivityMemoryKind kind, size_t* bytes);
// Enters memory owned elsewhere (a graph's allocation, rt_graph_memory.cpp) in the table as
// `kind` on `device`; a release removes the entry and leaves the memory. False if p is there.
bool track(void* p, size_t bytes, CUpti_ActivityMemoryKind kind, int device);
// The device allocation holding p: its base, size and device; *pooled when it is not the
// program's own cudaMalloc memory (a pool's, a graph's, or memory opened by IPC).
bool find_allocation(const void* p, void** base, size_t* bytes, int* device, bool* pooled);
bool is_device(CUpti_ActivityMemoryKind k);
bool is_host_reachable(CUpti_ActivityMemoryKind k);

}  // namespace gpuhook::sim
