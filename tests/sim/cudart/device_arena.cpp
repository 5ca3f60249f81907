#include "device_arena.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <utility>

namespace gpuhook::sim {

namespace {

constexpr char kMagic[8] = {'g', 'p', 'u', 'h', 'a', 'r', 'n', '1'};
// Address space only: the memfd is sparse and MAP_NORESERVE, a page costs memory once written
// and is given back (hole punched) when its allocation is freed. A program that outgrows it
// gets private memory (not exportable), as before the arena existed.
constexpr uint64_t kArenaBytes = uint64_t{1} << 40;
constexpr uint64_t kHeaderBytes = (sizeof(ArenaHeader) + 65535) & ~uint64_t{65535};
constexpr uint64_t kAlign = 256;  // cudaMalloc's alignment

struct Arena {
  std::mutex mu;
  int fd = -1;
  char* base = nullptr;
  uint64_t size = 0;
  // A fork child shares the parent's pages: it must neither hand them out again nor punch them
  // (CUDA is not usable across fork without exec anyway). Set in the child by pthread_atfork.
  bool inherited = false;
  std::map<uint64_t, uint64_t> free_by_offset;          // offset -> bytes
  std::set<std::pair<uint64_t, uint64_t>> free_by_size;  // (bytes, offset), best fit
  std::map<uint64_t, uint64_t> used;                     // offset -> bytes
  std::map<uint64_t, uint32_t> exported;                 // offset -> index in the exports table
};

Arena& arena() {
  static Arena* a = [] {
    auto* made = new Arena();
    const int fd = memfd_create("gpuhook-sim-device-memory", MFD_CLOEXEC);
    if (fd < 0) return made;
    if (ftruncate(fd, static_cast<off_t>(kArenaBytes)) != 0) {
      close(fd);
      return made;
    }
    void* p = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return made;
    }
    made->fd = fd;
    made->base = static_cast<char*>(p);
    made->size = kArenaBytes;
    auto* h = reinterpret_cast<ArenaHeader*>(p);
    std::random_device rd;
    h->nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
    h->size_bytes = kArenaBytes;
    std::memcpy(h->magic, kMagic, sizeof kMagic);
    made->free_by_offset[kHeaderBytes] = kArenaBytes - kHeaderBytes;
    made->free_by_size.insert({kArenaBytes - kHeaderBytes, kHeaderBytes});
    pthread_atfork(nullptr, nullptr, [] { arena().inherited = true; });
    return made;
  }();
  return *a;
}

void add_free(Arena& a, uint64_t off, uint64_t bytes) {
  a.free_by_offset[off] = bytes;
  a.free_by_size.insert({bytes, off});
}

void remove_free(Arena& a, std::map<uint64_t, uint64_t>::iterator it) {
  a.free_by_size.erase({it->second, it->first});
  a.free_by_offset.erase(it);
}

}  // namespace

ArenaHeader* arena_header() {
  Arena& a = arena();
  if (a.base == nullptr || a.inherited) return nullptr;
  return reinterpret_cast<ArenaHeader*>(a.base);
}

int arena_fd() { return arena().fd; }

void* arena_alloc(size_t bytes) {
  Arena& a = arena();
  if (a.base == nullptr) return nullptr;
  const uint64_t want = ((bytes == 0 ? 1 : bytes) + kAlign - 1) & ~(kAlign - 1);
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.inherited) return nullptr;
  auto fit = a.free_by_size.lower_bound({want, 0});
  if (fit == a.free_by_size.end()) return nullptr;
  auto it = a.free_by_offset.find(fit->second);
  const uint64_t start = it->first;
  const uint64_t have = it->second;
  remove_free(a, it);
  // From the top of the run: addresses fall as allocations are made, as they did when large
  // allocations were glibc's mmap chunks (an analysis that orders ties by address, the memory
  // peak's list, saw them in that order).
  const uint64_t off = start + have - want;
  if (have > want) add_free(a, start, have - want);
  a.used[off] = want;
  return a.base + off;
}

bool arena_free(void* p) {
  Arena& a = arena();
  const auto* c = static_cast<const char*>(p);
  if (a.base == nullptr || c < a.base || c >= a.base + a.size) return false;
  const uint64_t off = static_cast<uint64_t>(c - a.base);
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.inherited) return true;  // the parent's pages: leave them to it
  auto u = a.used.find(off);
  if (u == a.used.end()) return true;
  const uint64_t bytes = u->second;
  a.used.erase(u);
  if (auto e = a.exported.find(off); e != a.exported.end()) {
    // Even: no longer live. A handle made before carries the odd value and is refused.
    reinterpret_cast<ArenaHeader*>(a.base)->exports[e->second].generation.fetch_add(1);
    a.exported.erase(e);
  }
  uint64_t start = off;
  uint64_t end = off + bytes;
  auto next = a.free_by_offset.find(end);
  if (next != a.free_by_offset.end()) {
    end += next->second;
    remove_free(a, next);
  }
  auto prev = a.free_by_offset.lower_bound(start);
  if (prev != a.free_by_offset.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      start = prev->first;
      remove_free(a, prev);
    }
  }
  add_free(a, start, end - start);
  // Give back the whole pages of the freed block (within the free run, so no neighbour's byte).
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t lo = std::max((start + page - 1) & ~(page - 1), off & ~(page - 1));
  const uint64_t hi = std::min(end & ~(page - 1), (off + bytes + page - 1) & ~(page - 1));
  if (hi > lo) {
    fallocate(a.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(lo), static_cast<off_t>(hi - lo));
  }
  return true;
}

bool arena_offset(const void* p, uint64_t* offset) {
  Arena& a = arena();
  const auto* c = static_cast<const char*>(p);
  if (a.base == nullptr || c < a.base + kHeaderBytes || c >= a.base + a.size) return false;
  *offset = static_cast<uint64_t>(c - a.base);
  return true;
}

bool arena_export(uint64_t offset, uint64_t bytes, int device, uint32_t* index, uint32_t* generation) {
  Arena& a = arena();
  ArenaHeader* h = arena_header();
  if (h == nullptr) return false;
  std::lock_guard<std::mutex> lock(a.mu);
  if (auto e = a.exported.find(offset); e != a.exported.end()) {
    *index = e->second;
    *generation = h->exports[e->second].generation.load();
    return true;
  }
  for (uint32_t i = 0; i < kArenaExports; ++i) {
    ArenaExport& x = h->exports[i];
    const uint32_t g = x.generation.load();
    if ((g & 1u) != 0) continue;
    x.device = device;
    x.offset = offset;
    x.bytes = bytes;
    x.generation.store(g + 1);
    a.exported[offset] = i;
    *index = i;
    *generation = g + 1;
    return true;
  }
  return false;
}

const RemoteArena* remote_arena(pid_t pid, int fd, uint64_t nonce) {
  static std::mutex mu;
  // Entries are never freed: an opened event keeps pointing at its exporter's header.
  static auto* cache = new std::map<pid_t, RemoteArena*>();
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  // Only a simulator's memfd is opened: a forged handle must not make us open another
  // process's file, FIFO or device (the link of a memfd reads "/memfd:NAME (deleted)").
  char target[128] = {};
  const ssize_t n = readlink(path, target, sizeof target - 1);
  if (n < 0) return nullptr;
  if (std::strncmp(target, "/memfd:gpuhook-sim-device-memory", 32) != 0) {
    errno = ESRCH;
    return nullptr;
  }
  // Opened each time: the open fails once the exporter has exited, whatever we still map.
  const int opened = open(path, O_RDWR | O_CLOEXEC);
  if (opened < 0) return nullptr;
  struct stat st{};
  if (fstat(opened, &st) != 0 || static_cast<uint64_t>(st.st_size) < kHeaderBytes) {
    close(opened);
    errno = EINVAL;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(pid);
  if (it != cache->end()) {
    struct stat cached{};
    if (it->second->nonce == nonce && fstat(it->second->fd, &cached) == 0 && cached.st_ino == st.st_ino &&
        cached.st_dev == st.st_dev) {
      close(opened);
      return it->second;
    }
    // That pid's arena changed (the process exited and the pid was reused): a new entry. The
    // old one's header stays mapped (events opened from it may still read it), its fd goes.
    close(it->second->fd);
    it->second->fd = -1;
    cache->erase(it);
  }
  void* h = mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, opened, 0);
  if (h == MAP_FAILED) {
    close(opened);
    return nullptr;
  }
  auto* header = static_cast<ArenaHeader*>(h);
  if (std::memcmp(header->magic, kMagic, sizeof kMagic) != 0 || header->nonce != nonce) {
    munmap(h, kHeaderBytes);
    close(opened);
    errno = ESRCH;
    return nullptr;
  }
  auto* r = new RemoteArena{pid, nonce, opened, header};
  (*cache)[pid] = r;
  return r;
}

}  // namespace gpuhook::sim
