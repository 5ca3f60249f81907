#include "shm.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "../cpu_relax.h"

namespace simnccl {

namespace {

size_t segment_bytes(int nranks) {
  size_t n = static_cast<size_t>(nranks);
  size_t header = (sizeof(SharedHeader) + 4095) & ~size_t{4095};
  return header + n * kStageBytesPerRank + n * n * kMailboxBytes;
}

}  // namespace

uint64_t monotonic_raw_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t timeout_ns() {
  static const uint64_t value = [] {
    const char* s = getenv("GPUHOOK_SIM_NCCL_TIMEOUT_S");
    long v = s ? strtol(s, nullptr, 10) : 0;
    return static_cast<uint64_t>(v > 0 ? v : 120) * 1'000'000'000ull;
  }();
  return value;
}

void sleep_until_raw(uint64_t target_ns) {
  // CLOCK_MONOTONIC_RAW cannot be slept on with clock_nanosleep: sleep most of the way on
  // a relative timer, then spin until the target so wake-up latency does not skew ranks.
  constexpr uint64_t kSpin_ns = 200'000;
  uint64_t now = monotonic_raw_ns();
  if (target_ns > now + kSpin_ns) {
    uint64_t d = target_ns - now - kSpin_ns;
    timespec ts{static_cast<time_t>(d / 1'000'000'000ull), static_cast<long>(d % 1'000'000'000ull)};
    nanosleep(&ts, nullptr);
  }
  // Spun, not yielded: beside a busy neighbour sched_yield() gave the core away for a whole
  // time slice (the runtime's waits came back 1-4 ms late so, cudart/engine.cpp).
  while (monotonic_raw_ns() < target_ns) gpuhook::sim::cpu_relax();
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout) {
  timespec ts{static_cast<time_t>(timeout / 1'000'000'000ull), static_cast<long>(timeout % 1'000'000'000ull)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

bool barrier_wait(Barrier& b, int nranks, const std::atomic<uint32_t>& aborted) {
  uint32_t gen = b.generation.load(std::memory_order_acquire);
  if (b.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(nranks)) {
    b.arrived.store(0, std::memory_order_relaxed);
    b.generation.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(b.generation);
    return true;
  }
  uint64_t deadline = monotonic_raw_ns() + timeout_ns();
  while (b.generation.load(std::memory_order_acquire) == gen) {
    if (aborted.load(std::memory_order_relaxed)) return false;
    uint64_t now = monotonic_raw_ns();
    if (now > deadline) {
      fprintf(stderr, "simnccl: a peer did not arrive within %llu s (GPUHOOK_SIM_NCCL_TIMEOUT_S)\n",
              static_cast<unsigned long long>(timeout_ns() / 1'000'000'000ull));
      return false;
    }
    futex_wait(b.generation, gen, 50'000'000);
  }
  return true;
}

Segment* Segment::open(uint64_t key, int nranks) {
  auto* seg = new (std::nothrow) Segment();
  if (!seg) return nullptr;
  snprintf(seg->name_, sizeof seg->name_, "/gpuhook-simnccl-%d-%016llx", static_cast<int>(getuid()),
           static_cast<unsigned long long>(key));
  seg->nranks_ = nranks;
  seg->bytes_ = segment_bytes(nranks);
  int fd = shm_open(seg->name_, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "simnccl: shm_open %s: %s\n", seg->name_, strerror(errno));
    delete seg;
    return nullptr;
  }
  // Every rank truncates to the same size: idempotent, and the pages start zeroed.
  if (ftruncate(fd, static_cast<off_t>(seg->bytes_)) != 0) {
    fprintf(stderr, "simnccl: ftruncate %s: %s\n", seg->name_, strerror(errno));
    close(fd);
    delete seg;
    return nullptr;
  }
  void* p = mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    fprintf(stderr, "simnccl: mmap %s: %s\n", seg->name_, strerror(errno));
    delete seg;
    return nullptr;
  }
  seg->header_ = static_cast<SharedHeader*>(p);
  return seg;
}

Segment::~Segment() {
  if (header_) munmap(header_, bytes_);
}

unsigned char* Segment::stage(int rank) const {
  size_t header = (sizeof(SharedHeader) + 4095) & ~size_t{4095};
  return reinterpret_cast<unsigned char*>(header_) + header + static_cast<size_t>(rank) * kStageBytesPerRank;
}

unsigned char* Segment::mailbox_buffer(int src, int dst) const {
  return stage(nranks_) + (static_cast<size_t>(src) * static_cast<size_t>(nranks_) + static_cast<size_t>(dst)) * kMailboxBytes;
}

void Segment::unlink_name() {
  if (header_->unlinked.exchange(1) == 0) shm_unlink(name_);
}

}  // namespace simnccl
