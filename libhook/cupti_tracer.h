// The CUPTI side: set-up at InitializeInjection, the buffer pool CUPTI writes into, and the
// GpuSource the writer polls. Lock order: the pool has no lock; CUPTI is only ever called
// from the writer thread (flush, dropped counts) and from start()/stop(), never while any
// hook lock is held, so bufferCompleted (which runs inside FlushAll) can never wait on us.
// The one exception, GPUHOOK_SECTORS, turns counting on from a launch callback once per
// context under SectorCounter's own lock, which no CUPTI callback of ours takes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "cupti_api.h"
#include "cupti_convert.h"
#include "gpu_source.h"
#include "sass_sectors.h"

namespace gpuhook::hook {

// Buffers handed to CUPTI and back. Fixed count, allocated once: bounded memory.
class BufferPool {
 public:
  BufferPool(uint32_t count, uint64_t bytes);
  ~BufferPool();
  // CUPTI's request: a free buffer, or nullptr (the caller counts a drop).
  uint8_t* acquire();
  // CUPTI's completion: remembers the valid size and order; false if not ours.
  bool complete(uint8_t* buffer, size_t valid_bytes);
  // The writer: each completed buffer in completion order, then released.
  template <typename Fn>
  void drain(Fn&& fn);
  uint64_t buffer_bytes() const { return bytes_; }
  uint32_t count() const { return count_; }
  // Buffers handed to CUPTI and not given back.
  uint32_t with_cupti() const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < count_; ++i) n += slots_[i].state.load(std::memory_order_acquire) == kWithCupti;
    return n;
  }

 private:
  enum : int { kFree = 0, kWithCupti = 1, kCompleted = 2 };
  struct Slot {
    uint8_t* data = nullptr;
    std::atomic<int> state{kFree};
    std::atomic<uint64_t> valid_bytes{0};
    std::atomic<uint64_t> order{0};
  };
  uint32_t count_;
  uint64_t bytes_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> next_order_{1};
};

template <typename Fn>
void BufferPool::drain(Fn&& fn) {
  for (;;) {
    Slot* oldest = nullptr;
    for (uint32_t i = 0; i < count_; ++i) {
      Slot& s = slots_[i];
      if (s.state.load(std::memory_order_acquire) != kCompleted) continue;
      if (oldest == nullptr || s.order.load(std::memory_order_relaxed) < oldest->order.load(std::memory_order_relaxed)) {
        oldest = &s;
      }
    }
    if (oldest == nullptr) return;
    fn(oldest->data, oldest->valid_bytes.load(std::memory_order_relaxed));
    oldest->state.store(kFree, std::memory_order_release);
  }
}

// The kind the hook pushes its external correlation ids under. Kineto (torch.profiler) uses
// CUSTOM0 and CUSTOM1 (libkineto CuptiActivityApi.cpp), so the hook takes CUSTOM2 and the two
// never pop each other's ids.
inline constexpr CUpti_ExternalCorrelationKind kHookExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// Marks the CUDA calls this thread makes until the matching pop with `id`: CUPTI then writes
// an EXTERNAL_CORRELATION record (kind, id, correlation id) for each of them, which ties the
// kernels an NCCL call launches to that call. False (and nothing to pop) when GPU tracing is
// off or this CUPTI lacks the entry points.
bool push_external_correlation(uint64_t id);
void pop_external_correlation();
// A fresh id for push_external_correlation: one counter for every caller (NCCL calls, host
// functions), so no two of the hook's ids are ever the same in one process.
uint64_t next_external_id();
// CUPTI's id of a stream handle (cuptiGetStreamIdEx with no context: "Typically this parameter
// should be null", cupti_activity.h); `per_thread`: the handle was passed to a _ptsz entry
// point. 0 when GPU tracing is off or CUPTI cannot tell.
uint32_t cupti_stream_id(void* stream, bool per_thread);

class CuptiTracer final : public GpuSource {
 public:
  // Loads CUPTI and enables tracing. nullptr when CUPTI is missing or refuses; *why is then
  // the one line to print (without "gpuhook: ").
  static CuptiTracer* start(const Config& config, std::string* why);
  // The tracer started in this process, if any.
  static CuptiTracer* instance();

  void poll(RecordSink& sink, bool flush, bool final) override;
  uint64_t blocked_since_ns(std::string* what) const override;
  uint64_t take_cupti_dropped() override;
  uint64_t take_no_buffer_dropped() override;
  uint64_t take_incomplete() override;
  std::string final_note() const override {
    return takeover_.empty() || sectors_note_.empty() ? takeover_ + sectors_note_ : takeover_ + "; " + sectors_note_;
  }

  std::string version() const { return version_; }
  std::string notes() const { return notes_; }
  bool latency_timestamps() const { return latency_; }
  bool system_thread_ids() const { return system_thread_ids_; }
  const CuptiApi& api() const { return api_; }
  // The loaded libcupti is the test simulator's (it exports gpuhook_sim_* entry points).
  bool simulated() const;

 private:
  CuptiTracer(const Config& config, const CuptiApi& api);
  bool enable(std::string* why);
  void enable_api_records();
  void subscribe_profiler_range(std::string* note);
  void subscribe_memory_use(std::string* note);
  void subscribe_sectors(std::string* note);
  void finish_sectors(RecordSink& sink);
  CUptiResult subscribe_first(std::string* holder);
  // `missing`: our buffers CUPTI kept through the final FORCED flush.
  void note_takeover(RecordSink& sink, uint32_t missing);
  const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid);

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);
  static uint64_t CUPTIAPI timestamp();
  static void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data);

  const Config& config_;
  CuptiApi api_;
  BufferPool pool_;
  ConvertOptions convert_;
  std::string version_;
  std::string notes_;
  bool latency_ = false;
  bool system_thread_ids_ = false;  // API records carry Linux tids
  CUpti_SubscriberHandle subscriber_ = nullptr;  // ours, taken before anything else
  bool callbacks_registered_ = false;
  std::atomic<uint64_t> no_buffer_drops_{0};
  uint64_t incomplete_ = 0;  // writer thread only
  std::string takeover_;     // writer thread only: set by the final poll
  std::unique_ptr<SectorCounter> sectors_;  // GPUHOOK_SECTORS; set before the callbacks are on
  std::string sectors_note_;  // writer thread only: set by the final poll
  bool sectors_finished_ = false;  // writer thread only
  // The takeover check (note_takeover): the correlation ids of the last synchronize calls, and
  // which correlation ids had a SYNCHRONIZATION record (a bitmap; a collision only hides).
  static constexpr uint32_t kRecentSyncs = 4;
  std::atomic<uint32_t> recent_syncs_[kRecentSyncs] = {};
  std::atomic<uint32_t> recent_sync_next_{0};
  // Synchronize calls in progress, one slot per calling thread (the first kSyncSlots threads):
  // GPUHOOK_HANG's witness that queued work has not finished.
  static constexpr uint32_t kSyncSlots = 256;
  struct SyncSlot {
    std::atomic<uint64_t> since_ns{0};
    std::atomic<uint32_t> cbid{0};
    std::atomic<uint64_t> thread_id{0};
  };
  SyncSlot sync_slots_[kSyncSlots];
  std::atomic<uint32_t> sync_slots_used_{0};
  void note_sync(bool enter, CUpti_CallbackId cbid);
  std::vector<uint64_t> sync_seen_ = std::vector<uint64_t>(1024, 0);  // writer thread only
  bool sync_watch_ = false;
  std::unordered_map<uint64_t, const char*> names_;  // writer thread only
};

}  // namespace gpuhook::hook
