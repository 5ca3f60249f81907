// Device memory another process can map: cudaMalloc's memory lives in one memfd per process,
// mapped MAP_SHARED, so cudaIpcOpenMemHandle in another process maps the same bytes (through
// /proc/<pid>/fd/<fd>, which closes by itself when the exporter exits). The memfd's first
// pages hold the tables IPC needs in every process that maps it: the exported allocations
// (so a handle to freed memory is told apart) and the interprocess events' state (so a wait
// in one process sees a record made in another). rt_ipc.cpp is the only user of the tables.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuhook::sim {

// One exported allocation. Written by its process only; read by any process.
struct ArenaExport {
  std::atomic<uint32_t> generation;  // odd while the allocation is live and exported
  int32_t device;
  uint64_t offset;  // from the start of the memfd
  uint64_t bytes;
  uint64_t reserved;
};
static_assert(sizeof(ArenaExport) == 32, "four exports to a 128-byte line");

// One interprocess event (cudaEventInterprocess). Any process that opened it records it: a
// record takes the next `recorded` number at the call, and when its work is over the recording
// process raises `completed` to it and writes the planned end. A wait or a query made when
// `recorded` was N is over once `completed` >= N and the clock has reached `completed_end_ns`.
struct ArenaEvent {
  std::atomic<uint32_t> generation;  // odd while the exporting process's event exists
  std::atomic<uint32_t> wake;        // futex word: bumped at each completion
  std::atomic<uint64_t> recorded;
  std::atomic<uint64_t> completed;
  std::atomic<uint64_t> completed_end_ns;  // CUPTI clock (CLOCK_REALTIME, one per machine)
  std::atomic<int32_t> recorder_pid;       // who made the latest record: a dead one completes nothing
  int32_t device;
  uint64_t reserved[3];
};
static_assert(sizeof(ArenaEvent) == 64, "one event to a cache line");

constexpr uint32_t kArenaExports = 1024;
constexpr uint32_t kArenaEvents = 1024;

struct ArenaHeader {
  char magic[8];
  uint64_t nonce;  // random per process: tells a reused pid (and its fd numbers) from the exporter
  uint64_t size_bytes;
  uint64_t reserved[5];
  ArenaExport exports[kArenaExports];
  ArenaEvent events[kArenaEvents];
};

// This process's arena, made at first use; nullptr when memfd/mmap are refused (then device
// memory is private and IPC says so).
ArenaHeader* arena_header();
int arena_fd();
// Device memory from the arena, 256-byte aligned; nullptr when it is full or absent (the
// caller falls back to private memory). Freed pages go back to the system.
void* arena_alloc(size_t bytes);
// False when p is not arena memory (the caller frees it itself).
bool arena_free(void* p);
// p's offset in the memfd, or false when p is not arena memory.
bool arena_offset(const void* p, uint64_t* offset);
// Enters the allocation at `offset` in the exports table (once: a second export of it finds
// the same entry); its index and generation go in the handle. False when the table is full.
// arena_free ends the export: a handle to freed memory no longer opens.
bool arena_export(uint64_t offset, uint64_t bytes, int device, uint32_t* index, uint32_t* generation);

// Another process's arena, mapped read-write: its header, and an fd for mapping its memory.
// nullptr, with errno, when that process is gone, its arena is not the one `nonce` names, or
// /proc refuses. Cached (one entry per exporting process, kept while that process lives).
struct RemoteArena {
  pid_t pid = 0;
  uint64_t nonce = 0;
  int fd = -1;
  ArenaHeader* header = nullptr;
};
const RemoteArena* remote_arena(pid_t pid, int fd, uint64_t nonce);

}  // namespace gpuhook::sim
