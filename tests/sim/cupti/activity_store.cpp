#include "activity_store.h"

#include <pthread.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace gpuhook::sim {
namespace {
constexpr size_t kAlign = 8;  // CUPTI records are 8-byte aligned (cupti_common.h PACKED_ALIGNMENT)
size_t align_up(size_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }
}  // namespace

ActivityStore& ActivityStore::instance() {
  // Never destroyed: a client's atexit handler may flush after static destructors ran.
  static ActivityStore* store = new ActivityStore();
  return *store;
}

void ActivityStore::register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                       CUpti_BuffersCallbackCompleteFunc complete) {
  request_.store(request);
  complete_.store(complete);
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker_started_) {
    worker_started_ = true;
    std::thread([this] { worker_main(); }).detach();
  }
}

bool ActivityStore::obtain_buffer(std::unique_lock<std::mutex>& lock) {
  if (!spares_.empty()) {
    current_ = spares_.front();
    spares_.pop_front();
    return true;
  }
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
  if (current_.data == nullptr) {
    current_ = fresh;
  } else {
    spares_.push_back(fresh);
  }
  return true;
}

void ActivityStore::append(const void* record, size_t record_bytes) {
  const size_t slot = align_up(record_bytes);
  std::unique_lock<std::mutex> lock(mu_);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (current_.data == nullptr && !obtain_buffer(lock)) {
      ++dropped_;  // no buffer from the client: the record is lost and counted
      return;
    }
    if (current_.data == nullptr) continue;
    const bool full_by_count = current_.max_records != 0 && current_.records >= current_.max_records;
    if (!full_by_count && current_.used_bytes + slot <= current_.size_bytes) {
      std::memcpy(current_.data + current_.used_bytes, record, record_bytes);
      current_.used_bytes += slot;
      ++current_.records;
      return;
    }
    if (current_.records == 0) {
      // The client's buffer cannot hold even one record: return it empty, count the drop.
      full_.push_back(current_);
      current_ = Buffer{};
      worker_cv_.notify_one();
      ++dropped_;
      return;
    }
    full_.push_back(current_);
    current_ = Buffer{};
    worker_cv_.notify_one();
  }
  ++dropped_;
}

void ActivityStore::deliver(const Buffer& buffer) {
  auto complete = complete_.load();
  if (complete == nullptr) return;
  // The "valid size" covers the alignment padding at the front, as CUPTI's does: it is the
  // number of bytes from the buffer start that GetNextRecord may read.
  const size_t valid = buffer.records == 0 ? 0 : buffer.used_bytes;
  complete(nullptr, 0, buffer.data, buffer.size_bytes, valid);
}

void ActivityStore::flush_all() {
  std::vector<Buffer> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : full_) out.push_back(b);
    full_.clear();
    if (current_.data != nullptr && current_.records > 0) {
      out.push_back(current_);
      current_ = Buffer{};
    }
  }
  for (const auto& b : out) deliver(b);
}

void ActivityStore::set_flush_period_ms(uint32_t period_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_period_ms_ = period_ms;
  worker_cv_.notify_one();
}

uint64_t ActivityStore::take_dropped() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t n = dropped_;
  dropped_ = 0;
  return n;
}

void ActivityStore::worker_main() {
  pthread_setname_np(pthread_self(), "cupti_worker");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Like CUPTI's worker: hand back buffers that filled up; with a flush period, wake that
    // often (the real worker also returns only full, complete buffers on its period).
    const auto wait = std::chrono::milliseconds(flush_period_ms_ == 0 ? 100 : flush_period_ms_);
    worker_cv_.wait_for(lock, wait, [this] { return !full_.empty(); });
    while (!full_.empty()) {
      Buffer b = full_.front();
      full_.pop_front();
      lock.unlock();
      deliver(b);
      lock.lock();
    }
  }
}

}  // namespace gpuhook::sim
