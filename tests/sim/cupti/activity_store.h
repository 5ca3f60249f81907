// The CUPTI activity buffer contract, simulated as CUDA 13 behaves (cupti_activity.h):
// - one buffer per producing thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, default
//   1): each thread that writes records asks the client for a buffer of its own;
// - a GPU record is placed in its launching thread's buffer at launch and completed when the
//   work ends; a buffer is handed back only once every record in it is complete, so buffers
//   come back out of order;
// - cuptiActivityFlushAll(0) returns only buffers whose records are all complete;
//   CUPTI_ACTIVITY_FLAG_FLUSH_FORCED returns the others too, where GetNextRecord stops with
//   CUPTI_ERROR_INVALID_KIND at the first incomplete record;
// - a record with no buffer to go to is dropped and counted (cuptiActivityGetNumDroppedRecords).
#pragma once

#include <cupti.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "../pausing_mutex.h"

namespace gpuhook::sim {

class ActivityStore {
 public:
  static ActivityStore& instance();

  void register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                          CUpti_BuffersCallbackCompleteFunc complete);
  bool has_callbacks() const { return request_.load() != nullptr; }
  // A complete record, into the calling thread's buffer.
  void append(const void* record, size_t record_bytes);
  // Room for a record that completes later (a kernel at its launch); 0 when dropped.
  uint64_t reserve(size_t record_bytes);
  // Fills a reserved record; a reservation whose buffer was forced out meanwhile is dropped.
  void complete(uint64_t reservation, const void* record, size_t record_bytes);
  // FlushAll on the calling thread: every buffer whose records are complete; with `forced`,
  // the others too.
  void flush_all(bool forced);
  void set_flush_period_ms(uint32_t period_ms);
  uint64_t take_dropped();

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size_bytes = 0;
    size_t used_bytes = 0;
    size_t max_records = 0;
    size_t records = 0;
    size_t pending = 0;  // reserved records not yet complete
    bool full = false;   // takes no more records
  };
  // Reserves `slot` bytes in this thread's buffer; the buffer's id and the offset, or false.
  bool place(std::unique_lock<PausingMutex>& lock, size_t slot, uint64_t* id, size_t* offset);
  bool obtain_buffer(std::unique_lock<PausingMutex>& lock, uint64_t* id);
  void deliver(const Buffer& buffer);
  void worker_main();
  std::vector<Buffer> take_deliverable(bool forced);

  std::atomic<CUpti_BuffersCallbackRequestFunc> request_{nullptr};
  std::atomic<CUpti_BuffersCallbackCompleteFunc> complete_{nullptr};
  // Lock order: mu_ is never held while a client callback runs, so a client that calls
  // CUPTI from its callbacks cannot deadlock with us.
  PausingMutex mu_;
  std::condition_variable_any worker_cv_;
  std::map<uint64_t, Buffer> buffers_;           // every buffer CUPTI holds, by id
  std::map<std::thread::id, uint64_t> current_;  // each producing thread's buffer
  uint64_t next_id_ = 1;
  uint64_t dropped_ = 0;
  uint32_t flush_period_ms_ = 0;
  bool worker_started_ = false;
};

}  // namespace gpuhook::sim
