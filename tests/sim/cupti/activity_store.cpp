#include "activity_store.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstring>

#include "../cudart/paused_clock.h"

namespace gpuhook::sim {
namespace {
constexpr size_t kAlign = 8;  // CUPTI records are 8-byte aligned (cupti_common.h PACKED_ALIGNMENT)
size_t align_up(size_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }

uint64_t reservation_of(uint64_t id, size_t offset) { return id << 32 | static_cast<uint64_t>(offset); }
}  // namespace

ActivityStore& ActivityStore::instance() {
  // Never destroyed: a client's atexit handler may flush after static destructors ran.
  static ActivityStore* store = new ActivityStore();
  return *store;
}

void ActivityStore::register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                       CUpti_BuffersCallbackCompleteFunc complete) {
  // The last registration wins, as with CUPTI: a second client in the process takes over the
  // buffers from here on, and the buffers the first one handed out come back to the second.
  request_.store(request);
  complete_.store(complete);
  std::lock_guard<PausingMutex> lock(mu_);
  if (!worker_started_) {
    worker_started_ = true;
    std::thread([this] { worker_main(); }).detach();
  }
}

bool ActivityStore::obtain_buffer(std::unique_lock<PausingMutex>& lock, uint64_t* id) {
  auto request = request_.load();
  if (request == nullptr) return false;
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  lock.unlock();  // the client's request callback runs without our lock
  request(&data, &size, &max_records);
  lock.lock();
  if (data == nullptr || size == 0) return false;
  Buffer fresh;
  fresh.data = data;
  fresh.size_bytes = size;
  fresh.max_records = max_records;
  // Records start 8-byte aligned even if the client's buffer is not.
  fresh.used_bytes = align_up(reinterpret_cast<uintptr_t>(data)) - reinterpret_cast<uintptr_t>(data);
  *id = next_id_++;
  buffers_.emplace(*id, fresh);
  return true;
}

bool ActivityStore::place(std::unique_lock<PausingMutex>& lock, size_t slot, uint64_t* id, size_t* offset) {
  const std::thread::id self = std::this_thread::get_id();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto cur = current_.find(self);
    if (cur == current_.end()) {
      uint64_t fresh = 0;
      if (!obtain_buffer(lock, &fresh)) return false;
      cur = current_.emplace(self, fresh).first;  // only this thread adds its own entry
    }
    Buffer& b = buffers_.at(cur->second);
    const bool full_by_count = b.max_records != 0 && b.records >= b.max_records;
    if (!full_by_count && b.used_bytes + slot <= b.size_bytes) {
      *id = cur->second;
      *offset = b.used_bytes;
      b.used_bytes += slot;
      ++b.records;
      return true;
    }
    // Full: it goes back once its records are complete; this thread takes a new one.
    b.full = true;
    current_.erase(cur);
    worker_cv_.notify_one();
    if (b.records == 0) return false;  // the client's buffer cannot hold even one record
  }
  return false;
}

void ActivityStore::append(const void* record, size_t record_bytes) {
  std::unique_lock<PausingMutex> lock(mu_);
  uint64_t id = 0;
  size_t offset = 0;
  if (!place(lock, align_up(record_bytes), &id, &offset)) {
    ++dropped_;  // no buffer from the client: the record is lost and counted
    return;
  }
  std::memcpy(buffers_.at(id).data + offset, record, record_bytes);
}

uint64_t ActivityStore::reserve(size_t record_bytes) {
  std::unique_lock<PausingMutex> lock(mu_);
  uint64_t id = 0;
  size_t offset = 0;
  if (!place(lock, align_up(record_bytes), &id, &offset)) {
    ++dropped_;
    return 0;
  }
  Buffer& b = buffers_.at(id);
  // Until it completes, the record reads as CUPTI_ACTIVITY_KIND_INVALID: GetNextRecord stops
  // there with CUPTI_ERROR_INVALID_KIND ("incomplete or invalid").
  std::memset(b.data + offset, 0, record_bytes);
  ++b.pending;
  return reservation_of(id, offset);
}

void ActivityStore::complete(uint64_t reservation, const void* record, size_t record_bytes) {
  if (reservation == 0) return;  // dropped and counted at launch
  std::lock_guard<PausingMutex> lock(mu_);
  auto it = buffers_.find(reservation >> 32);
  if (it == buffers_.end()) {
    ++dropped_;  // its buffer was forced out incomplete: the record has nowhere to go
    return;
  }
  std::memcpy(it->second.data + (reservation & 0xFFFFFFFFu), record, record_bytes);
  if (--it->second.pending == 0 && it->second.full) worker_cv_.notify_one();
}

void ActivityStore::deliver(const Buffer& buffer) {
  auto complete = complete_.load();
  if (complete == nullptr) return;
  // The "valid size" covers the alignment padding at the front, as CUPTI's does: it is the
  // number of bytes from the buffer start that GetNextRecord may read.
  const size_t valid = buffer.records == 0 ? 0 : buffer.used_bytes;
  complete(nullptr, 0, buffer.data, buffer.size_bytes, valid);
}

std::vector<ActivityStore::Buffer> ActivityStore::take_deliverable(bool forced) {
  std::vector<Buffer> out;
  for (auto it = buffers_.begin(); it != buffers_.end();) {
    const Buffer& b = it->second;
    const bool flushable = forced || b.pending == 0;
    // A full buffer goes back on its own; a thread's current one only on a flush.
    if (!flushable || (b.records == 0 && !b.full)) {
      ++it;
      continue;
    }
    out.push_back(b);
    for (auto c = current_.begin(); c != current_.end(); ++c) {
      if (c->second == it->first) {
        current_.erase(c);
        break;
      }
    }
    it = buffers_.erase(it);
  }
  return out;
}

void ActivityStore::flush_all(bool forced) {
  std::vector<Buffer> out;
  {
    std::lock_guard<PausingMutex> lock(mu_);
    out = take_deliverable(forced);
  }
  for (const auto& b : out) deliver(b);
}

void ActivityStore::set_flush_period_ms(uint32_t period_ms) {
  std::lock_guard<PausingMutex> lock(mu_);
  flush_period_ms_ = period_ms;
  worker_cv_.notify_one();
}

uint64_t ActivityStore::take_dropped() {
  std::lock_guard<PausingMutex> lock(mu_);
  const uint64_t n = dropped_;
  dropped_ = 0;
  return n;
}

void ActivityStore::worker_main() {
  pthread_setname_np(pthread_self(), "cupti_worker");
  // The simulator's thread, not the program's: its waits do not stop the clock (resolved
  // through the process's symbols, as PausingMutex resolves gpuhook_sim_program_wait).
  if (auto own = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gpuhook_sim_own_thread"))) own();
  // Under the paused clock (cudart/paused_clock.h) the simulator's threads take only the cores
  // the program leaves: on two cores this one, handing full buffers to the client, held the
  // program's launch thread off its core for 50-700 us in one recording in five.
  if (clock_pauses()) {
    sched_param none{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
  }
  std::unique_lock<PausingMutex> lock(mu_);
  for (;;) {
    // Like CUPTI's worker: hand back buffers that filled up once their records are complete
    // (the real worker also returns only full, complete buffers on its period).
    const auto wait = std::chrono::milliseconds(flush_period_ms_ == 0 ? 100 : flush_period_ms_);
    worker_cv_.wait_for(lock, wait);
    std::vector<Buffer> out;
    for (auto it = buffers_.begin(); it != buffers_.end();) {
      if (it->second.full && it->second.pending == 0) {
        out.push_back(it->second);
        it = buffers_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (const auto& b : out) deliver(b);
    lock.lock();
  }
}

}  // namespace gpuhook::sim
