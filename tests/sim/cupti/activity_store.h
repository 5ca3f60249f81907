// The CUPTI activity buffer contract, simulated: client buffers requested through the
// registered callback, records packed 8-byte aligned, full buffers handed back from a CUPTI
// worker thread, the rest on cuptiActivityFlushAll, drops counted when no buffer is given.
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace gpuhook::sim {

class ActivityStore {
 public:
  static ActivityStore& instance();

  void register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                          CUpti_BuffersCallbackCompleteFunc complete);
  bool has_callbacks() const { return request_.load() != nullptr; }
  void append(const void* record, size_t record_bytes);
  // Hands every non-empty buffer back on the calling thread (FlushAll).
  void flush_all();
  void set_flush_period_ms(uint32_t period_ms);
  uint64_t take_dropped();

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size_bytes = 0;
    size_t used_bytes = 0;
    size_t max_records = 0;
    size_t records = 0;
  };
  void deliver(const Buffer& buffer);
  void worker_main();
  bool obtain_buffer(std::unique_lock<std::mutex>& lock);

  std::atomic<CUpti_BuffersCallbackRequestFunc> request_{nullptr};
  std::atomic<CUpti_BuffersCallbackCompleteFunc> complete_{nullptr};
  // Lock order: mu_ is never held while a client callback runs, so a client that calls
  // CUPTI from its callbacks cannot deadlock with us.
  std::mutex mu_;
  std::condition_variable worker_cv_;
  Buffer current_;
  std::deque<Buffer> full_;
  std::deque<Buffer> spares_;  // buffers obtained by two threads at once; used next
  uint64_t dropped_ = 0;
  uint32_t flush_period_ms_ = 0;
  bool worker_started_ = false;
};

}  // namespace gpuhook::sim
