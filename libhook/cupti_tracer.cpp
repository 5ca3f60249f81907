#include "cupti_tracer.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "api_groups.h"
#include "cbid_names.h"
#include "clock.h"
#include "message_text.h"
#include "recorder.h"
#include "memory_use.h"
#include "nvtx_range_window.h"

namespace gpuhook::hook {
namespace {

std::atomic<CuptiTracer*> g_tracer{nullptr};
// Kept for the process's life, see start(). Atomic so the store is not optimised away as
// dead (LeakSanitizer then saw the tracer as leaked).
std::atomic<CuptiTracer*> g_refused_tracer{nullptr};

constexpr CUpti_CallbackId kBlockingSyncs[] = {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                                               CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                                               CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020};

// The calls that may run a context's first kernel: launches, and graph launches (a program that
// captured its work runs no kernel launch after the capture).
constexpr CUpti_CallbackId kGraphLaunches[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                                               CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
bool starts_kernels(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return is_kernel_launch(domain, cbid) ||
         (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
          std::find(std::begin(kGraphLaunches), std::end(kGraphLaunches), cbid) != std::end(kGraphLaunches));
}

bool is_blocking_sync(CUpti_CallbackId cbid) {
  return std::find(std::begin(kBlockingSyncs), std::end(kBlockingSyncs), cbid) != std::end(kBlockingSyncs);
}

void emit_notice(RecordSink& sink, v1::NoticeKind kind, const std::string& text) {
  wire::Record rec;
  auto* n = rec.mutable_notice();
  n->set_kind(kind);
  n->set_time_ns(static_cast<int64_t>(now_ns()));
  n->set_text(text);
  sink.emit(rec);
}

}  // namespace

// Buffers are allocated the first time CUPTI needs each one, up to the fixed count: a CUPTI
// that refuses costs no buffer at all, and a quiet process only the few it used.
BufferPool::BufferPool(uint32_t count, uint64_t bytes) : count_(count), bytes_(bytes), slots_(new Slot[count]) {}

BufferPool::~BufferPool() {
  for (uint32_t i = 0; i < count_; ++i) std::free(slots_[i].data);
}

uint8_t* BufferPool::acquire() {
  for (uint32_t i = 0; i < count_; ++i) {
    Slot& s = slots_[i];
    int expected = kFree;
    if (!s.state.compare_exchange_strong(expected, kWithCupti, std::memory_order_acq_rel)) continue;
    // Only the thread that won the slot touches data, so the first allocation is race-free.
    if (s.data == nullptr) s.data = static_cast<uint8_t*>(std::aligned_alloc(8, bytes_));  // CUPTI: 8-aligned
    if (s.data != nullptr) return s.data;
    s.state.store(kFree, std::memory_order_release);
    return nullptr;
  }
  return nullptr;
}

bool BufferPool::complete(uint8_t* buffer, size_t valid_bytes) {
  for (uint32_t i = 0; i < count_; ++i) {
    Slot& s = slots_[i];
    if (s.data != buffer) continue;
    s.valid_bytes.store(valid_bytes, std::memory_order_relaxed);
    s.order.store(next_order_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
    s.state.store(kCompleted, std::memory_order_release);
    return true;
  }
  return false;
}

bool push_external_correlation(uint64_t id) {
  CuptiTracer* t = CuptiTracer::instance();
  if (t == nullptr || t->api().cuptiActivityPushExternalCorrelationId == nullptr ||
      t->api().cuptiActivityPopExternalCorrelationId == nullptr) {
    return false;
  }
  return t->api().cuptiActivityPushExternalCorrelationId(kHookExternalKind, id) == CUPTI_SUCCESS;
}

void pop_external_correlation() {
  CuptiTracer* t = CuptiTracer::instance();
  if (t == nullptr || t->api().cuptiActivityPopExternalCorrelationId == nullptr) return;
  uint64_t last = 0;
  t->api().cuptiActivityPopExternalCorrelationId(kHookExternalKind, &last);
}

namespace {
std::atomic<uint64_t> g_last_external_id{0};
}  // namespace

uint64_t next_external_id() { return g_last_external_id.fetch_add(1, std::memory_order_relaxed) + 1; }

uint32_t cupti_stream_id(void* stream, bool per_thread) {
  CuptiTracer* t = CuptiTracer::instance();
  if (t == nullptr || t->api().cuptiGetStreamIdEx == nullptr) return 0;
  uint32_t id = 0;
  if (t->api().cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(stream), per_thread ? 1 : 0, &id) != CUPTI_SUCCESS) {
    return 0;
  }
  return id;
}

bool CuptiTracer::simulated() const { return dlsym(api_.handle, "gpuhook_sim_now_ns") != nullptr; }

CuptiTracer* CuptiTracer::instance() { return g_tracer.load(std::memory_order_acquire); }

CuptiTracer::CuptiTracer(const Config& config, const CuptiApi& api)
    : config_(config), api_(api), pool_(config.buffers, config.buffer_bytes) {
  convert_.callback_name = [this](CUpti_CallbackDomain d, uint32_t cbid) { return callback_name(d, cbid); };
}

uint64_t CUPTIAPI CuptiTracer::timestamp() { return now_ns(); }

void CUPTIAPI CuptiTracer::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiTracer* self = instance();
  *max_records = 0;  // fill the buffer
  uint8_t* b = self != nullptr ? self->pool_.acquire() : nullptr;
  if (b == nullptr) {
    // CUPTI 13 drops the records it cannot place (a NULL buffer crashed CUPTI before 12.9).
    if (self != nullptr) self->no_buffer_drops_.fetch_add(1, std::memory_order_relaxed);
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = b;
  *size = self->pool_.buffer_bytes();
}

void CUPTIAPI CuptiTracer::buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiTracer* self = instance();
  if (self == nullptr || buffer == nullptr) return;
  self->pool_.complete(buffer, valid);
}

void CUPTIAPI CuptiTracer::on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && is_blocking_sync(cbid)) {
    // Remembered for the takeover check: a synchronize that returned has a SYNCHRONIZATION
    // record, unless another client took the activity API away.
    CuptiTracer* self = instance();
    if (self != nullptr) self->note_sync(info->callbackSite == CUPTI_API_ENTER, cbid);
    const auto* rc = static_cast<const cudaError_t*>(info->functionReturnValue);
    if (self != nullptr && info->callbackSite == CUPTI_API_EXIT && rc != nullptr && *rc == cudaSuccess) {
      const uint32_t slot = self->recent_sync_next_.fetch_add(1, std::memory_order_relaxed) % kRecentSyncs;
      self->recent_syncs_[slot].store(info->correlationId, std::memory_order_relaxed);
    }
    return;
  }
  const bool profiler = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
                                                                     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) ||
                        (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
                         (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart || cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
  if (!profiler) {
    note_memory_use(domain, cbid, *info);  // the launches, copies and memsets GPUHOOK_MEM_USE watches
    CuptiTracer* self = instance();
    if (self != nullptr && self->sectors_ != nullptr && info->callbackSite == CUPTI_API_ENTER && starts_kernels(domain, cbid))
      self->sectors_->on_launch(info->context);
    return;
  }
  bool start = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) ||
               (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  // The window opens when Start returns and closes when Stop is entered.
  if (start && info->callbackSite == CUPTI_API_EXIT) profiler_window_start();
  if (!start && info->callbackSite == CUPTI_API_ENTER) profiler_window_stop();
}

namespace {
thread_local int32_t t_sync_slot = -1;  // -2: no slot left for this thread
}  // namespace

void CuptiTracer::note_sync(bool enter, CUpti_CallbackId cbid) {
  if (t_sync_slot == -1) {
    const uint32_t i = sync_slots_used_.fetch_add(1, std::memory_order_relaxed);
    t_sync_slot = i < kSyncSlots ? static_cast<int32_t>(i) : -2;
  }
  if (t_sync_slot < 0) return;
  SyncSlot& s = sync_slots_[t_sync_slot];
  if (enter) {
    s.cbid.store(cbid, std::memory_order_relaxed);
    s.thread_id.store(this_thread_id(), std::memory_order_relaxed);
    s.since_ns.store(now_ns(), std::memory_order_release);
  } else {
    s.since_ns.store(0, std::memory_order_release);
  }
}

uint64_t CuptiTracer::blocked_since_ns(std::string* what) const {
  uint64_t oldest = 0;
  const uint32_t used = std::min(sync_slots_used_.load(std::memory_order_acquire), kSyncSlots);
  for (uint32_t i = 0; i < used; ++i) {
    const uint64_t since = sync_slots_[i].since_ns.load(std::memory_order_acquire);
    if (since == 0 || (oldest != 0 && since >= oldest)) continue;
    oldest = since;
    const char* name = builtin_callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, sync_slots_[i].cbid.load(std::memory_order_relaxed));
    *what = std::string(name != nullptr ? name : "a synchronize call") +
            " on thread " + std::to_string(sync_slots_[i].thread_id.load(std::memory_order_relaxed));
  }
  return oldest;
}

CuptiTracer* CuptiTracer::start(const Config& config, std::string* why) {
  if (CuptiTracer* t = instance()) return t;
  CuptiApi api;
  if (!load_cupti(config.cupti_path, &api, why)) {
    *why += "; GPU tracing off";
    return nullptr;
  }
  auto* tracer = new (std::nothrow) CuptiTracer(config, api);
  if (tracer == nullptr) {
    *why = "out of memory for the CUPTI buffer pool; GPU tracing off";
    return nullptr;
  }
  uint32_t version = 0;
  if (api.cuptiGetVersion(&version) == CUPTI_SUCCESS) tracer->version_ = std::to_string(version);
  // Published before enabling: CUPTI may call the buffer callbacks as soon as a kind is on.
  g_tracer.store(tracer, std::memory_order_release);
  if (!tracer->enable(why)) {
    g_tracer.store(nullptr, std::memory_order_release);
    if (tracer->callbacks_registered_) {
      // A CUPTI that half-accepted may still call back or hold a buffer: keep it alive.
      g_refused_tracer.store(tracer, std::memory_order_release);
    } else {
      delete tracer;
    }
    return nullptr;
  }
  return tracer;
}

bool CuptiTracer::enable(std::string* why) {
  auto refused = [&](const char* call, CUptiResult r) {
    const char* who = (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_COMPATIBLE)
                          ? "CUPTI is in use by another profiler"
                          : "CUPTI refused";
    *why = std::string(who) + " (" + call + ": " + cupti_result_text(api_, r) + ", " + shown(api_.path) + "); GPU tracing off";
    return false;
  };
  std::string holder;
  CUptiResult r = subscribe_first(&holder);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    *why = "CUPTI is in use by " + (holder.empty() ? std::string("another profiler") : holder) +
           ": GPU tracing off, recording host, NCCL and NVTX only";
    return false;
  }
  // A CUPTI without a driver refuses everything (CUPTI_ERROR_UNKNOWN): said by the next call.
  if (r != CUPTI_SUCCESS) subscriber_ = nullptr;
  // First and once per process: re-registering corrupts the first kernel records
  // (pytorch#192021), and it must precede every enabled kind.
  r = api_.cuptiActivityRegisterTimestampCallback(&CuptiTracer::timestamp);
  if (r != CUPTI_SUCCESS) return refused("cuptiActivityRegisterTimestampCallback", r);
  // API records carry pthread_self() unless told otherwise (cupti_activity.h,
  // CUpti_ActivityThreadIdType: DEFAULT is pthread_self() on Linux, SYSTEM is SYS_gettid),
  // while NVTX and NCCL records carry the Linux tid: without this an API row and an NVTX row
  // of one thread land in two lanes and the NCCL-to-kernel join finds no thread in common.
  r = api_.cuptiSetThreadIdType != nullptr ? api_.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
                                           : CUPTI_ERROR_NOT_SUPPORTED;
  system_thread_ids_ = r == CUPTI_SUCCESS;
  if (!system_thread_ids_) {
    notes_ += "CUPTI thread ids stay pthread_self() values (cuptiSetThreadIdType: " + cupti_result_text(api_, r) +
              "): API rows and NVTX/NCCL rows of one thread are not joined. ";
  }
  // queued/submitted exist only when asked for before CUDA initialises its contexts.
  r = api_.cuptiActivityEnableLatencyTimestamps(1);
  latency_ = r == CUPTI_SUCCESS;
  if (!latency_) notes_ += "latency timestamps refused: " + cupti_result_text(api_, r) + ". ";
  convert_.latency_timestamps = latency_;
  r = api_.cuptiActivityRegisterCallbacks(&CuptiTracer::buffer_requested, &CuptiTracer::buffer_completed);
  if (r != CUPTI_SUCCESS) return refused("cuptiActivityRegisterCallbacks", r);
  callbacks_registered_ = true;

  // The kinds in their table's order (cupti_convert.h, activity_kinds()).
  size_t kind_count = 0;
  const ActivityKindRow* kinds = activity_kinds(&kind_count);
  std::vector<CUpti_ActivityKind> enabled;
  for (size_t i = 0; i < kind_count; ++i) {
    const ActivityKindRow& k = kinds[i];
    if (k.enable == KindEnable::kNotByTracer) continue;
    if (k.enable == KindEnable::kWithAllocApi && (config_.api_mask & kApiAlloc) == 0) continue;
    r = api_.cuptiActivityEnable(k.kind);
    if (r == CUPTI_SUCCESS) {
      enabled.push_back(k.kind);
      continue;
    }
    if (k.required) {
      for (CUpti_ActivityKind e : enabled) api_.cuptiActivityDisable(e);
      return refused("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    }
    notes_ += "activity kind " + std::to_string(static_cast<int>(k.kind)) + " refused. ";
  }
  // CUDA 13 writes a SYNCHRONIZATION record for every cudaEventQuery/cudaStreamQuery, also
  // for those that found work pending and returned at once (cuptiActivityEnableAllSyncRecords):
  // a polling loop would fill the capture with records of waits that never blocked. Only
  // queries that found the work done stay; each keeps its returnValue.
  if (api_.cuptiActivityEnableAllSyncRecords == nullptr || api_.cuptiActivityEnableAllSyncRecords(0) != CUPTI_SUCCESS) {
    notes_ += "query records that found work pending stay on (cuptiActivityEnableAllSyncRecords refused). ";
  }
  // Kernels launched from the device by a device graph launch get records only with this on.
  if (api_.cuptiActivityEnableDeviceGraph != nullptr && api_.cuptiActivityEnableDeviceGraph(1) != CUPTI_SUCCESS) {
    notes_ += "device graph launches untraced (cuptiActivityEnableDeviceGraph refused). ";
  }
  // The takeover check's witness: the blocking synchronize calls, a few per step at most.
  if (subscriber_ != nullptr && api_.cuptiEnableCallback != nullptr &&
      std::find(enabled.begin(), enabled.end(), CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != enabled.end()) {
    sync_watch_ = true;
    for (CUpti_CallbackId cbid : kBlockingSyncs) {
      if (api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid) != CUPTI_SUCCESS) sync_watch_ = false;
    }
  }
  enable_api_records();
  if (config_.range.kind == RangeKind::kProfilerApi) subscribe_profiler_range(&notes_);
  // The counter first: the memory-use callbacks pass the launches to it once it is set.
  if (config_.sectors) subscribe_sectors(&notes_);
  if (config_.mem_use) subscribe_memory_use(&notes_);
  return true;
}

constexpr uint32_t kMaxCallbackId = 8192;

// Runtime and driver API records only for the configured groups, one callback id at a time:
// whole-domain API tracing is the costly part of CUPTI's host overhead.
void CuptiTracer::enable_api_records() {
  if (config_.api_mask == 0) return;
  if (api_.cuptiActivityEnableRuntimeApi == nullptr || api_.cuptiActivityEnableDriverApi == nullptr) {
    api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    return;
  }
  struct Domain {
    CUpti_CallbackDomain domain;
    uint32_t size;
    decltype(api_.cuptiActivityEnableRuntimeApi) enable;
  };
  const Domain domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, api_.cuptiActivityEnableRuntimeApi},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, api_.cuptiActivityEnableDriverApi},
  };
  for (const Domain& d : domains) {
    uint32_t enabled = 0;
    // Up to what the loaded CUPTI names, which may be a newer one than these headers: past
    // the compiled-in count, go on while it still names ids (a gap of 64 ends the table).
    uint32_t unnamed_run = 0;
    for (uint32_t cbid = 1; cbid < kMaxCallbackId && (cbid < d.size || unnamed_run < 64); ++cbid) {
      const char* name = callback_name(d.domain, cbid);
      unnamed_run = name == nullptr ? unnamed_run + 1 : 0;
      if (name == nullptr) continue;
      if ((api_group_of(name) & config_.api_mask) == 0) continue;
      if (d.enable(cbid, 1) == CUPTI_SUCCESS) ++enabled;
    }
    if (enabled == 0) {
      // A CUPTI that names no callback: take the whole domain rather than nothing.
      api_.cuptiActivityEnable(d.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
                                                                        : CUPTI_ACTIVITY_KIND_DRIVER);
    }
  }
}

// GPUHOOK_MEM_USE: a callback on each launch, copy and memset (memory_use.h).
void CuptiTracer::subscribe_memory_use(std::string* note) {
  uint32_t enabled = 0;
  if (subscriber_ != nullptr && api_.cuptiEnableCallback != nullptr) {
    for (size_t i = 0; i < kUseCallbackCount; ++i)
      if (api_.cuptiEnableCallback(1, subscriber_, kUseCallbacks[i].domain, kUseCallbacks[i].cbid) == CUPTI_SUCCESS)
        ++enabled;
  }
  if (enabled == 0) {
    *note += "GPUHOOK_MEM_USE off: no CUPTI subscription for the launch callbacks. ";
    return;
  }
  start_memory_use(now_ns());
}

// GPUHOOK_SECTORS: the launch callbacks turn counting on for each context (sass_sectors.h).
void CuptiTracer::subscribe_sectors(std::string* note) {
  std::string missing = SectorCounter::missing_entry_points(api_);
  if (missing.empty() && (subscriber_ == nullptr || api_.cuptiEnableCallback == nullptr))
    missing = "no CUPTI subscription for the launch callbacks";
  if (!missing.empty()) {
    sectors_note_ = "sectors not counted (GPUHOOK_SECTORS): " + missing;
    *note += sectors_note_ + ". ";
    return;
  }
  sectors_.reset(new (std::nothrow) SectorCounter(api_));
  if (sectors_ == nullptr) return;
  for (size_t i = 0; i < kUseCallbackCount; ++i)
    if (kUseCallbacks[i].kernel_launch)
      api_.cuptiEnableCallback(1, subscriber_, kUseCallbacks[i].domain, kUseCallbacks[i].cbid);
  for (CUpti_CallbackId cbid : kGraphLaunches) api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
}

// At exit, after the last activity records: the counts, or why there are none, in the capture.
void CuptiTracer::finish_sectors(RecordSink& sink) {
  if (!config_.sectors || sectors_finished_) return;
  sectors_finished_ = true;
  if (sectors_ != nullptr) {
    const std::string why = sectors_->finish(sink);
    if (!why.empty()) sectors_note_ = why;
  }
  if (!sectors_note_.empty()) emit_notice(sink, v1::NOTICE_SECTORS_NOT_COUNTED, sectors_note_);
}

void CuptiTracer::subscribe_profiler_range(std::string* note) {
  if (subscriber_ == nullptr || api_.cuptiEnableCallback == nullptr) {
    *note += "cudaProfilerApi range unavailable (no CUPTI subscription): only gpuhook_capture_start/stop open "
             "the window. ";
    return;
  }
  api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
  api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
}

// First of all: CUPTI allows one subscriber (cupti_callbacks.h, cuptiSubscribe), and a tool
// that holds CUPTI from outside (Nsight Systems, Nsight Compute) makes it refuse, naming
// itself through cuptiSubscribe_v2. The activity API is shared without a word, so this is the
// one place where another profiler can be noticed before both corrupt each other's records.
CUptiResult CuptiTracer::subscribe_first(std::string* holder) {
  const CuptiApi& api = api_;
  CUpti_SubscriberHandle* out = &subscriber_;
  auto callback = reinterpret_cast<CUpti_CallbackFunc>(&on_callback);
  if (api.cuptiSubscribe_v2 != nullptr) {
    char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "gpuhook";
    params.oldSubscriberName = old_name;
    params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
    CUptiResult r = api.cuptiSubscribe_v2(out, callback, nullptr, &params);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) *holder = old_name;
    return r;
  }
  if (api.cuptiSubscribe != nullptr) return api.cuptiSubscribe(out, callback, nullptr);
  return CUPTI_ERROR_NOT_SUPPORTED;
}

const char* CuptiTracer::callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  const char* name = nullptr;
  if (api_.cuptiGetCallbackName == nullptr || api_.cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS) {
    name = builtin_callback_name(domain, cbid);
  }
  names_.emplace(key, name);
  return name;
}

void CuptiTracer::poll(RecordSink& sink, bool flush, bool final) {
  // FlushAll runs bufferCompleted on this thread; that only marks pool slots, so no lock of
  // ours is involved. FORCED at the end also returns buffers with incomplete records.
  const CUptiResult flushed =
      flush ? api_.cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0) : CUPTI_SUCCESS;
  // Counted before the drain: converting records may call the runtime (a device query), whose
  // API records take a fresh buffer that no later flush returns.
  const uint32_t not_returned = final ? pool_.with_cupti() : 0;
  pool_.drain([&](uint8_t* buffer, uint64_t valid) {
    CUpti_Activity* record = nullptr;
    CUptiResult r;
    while ((r = api_.cuptiActivityGetNextRecord(buffer, valid, &record)) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) {
        const uint32_t id = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record)->correlationId;
        sync_seen_[(id / 64) % sync_seen_.size()] |= uint64_t{1} << (id % 64);
      }
      convert_activity(record, convert_, sink);
    }
    // MAX_LIMIT_REACHED is the end of the buffer. INVALID_KIND is "incomplete or invalid"
    // (cupti_activity.h, cuptiActivityGetNextRecord): the documented loop stops there, and
    // so does the record's size, so that record and any after it are lost (a FORCED flush
    // returns buffers with work still running).
    if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) ++incomplete_;
  });
  if (final && flushed == CUPTI_SUCCESS) note_takeover(sink, not_returned);
  if (final) finish_sectors(sink);
}

uint64_t CuptiTracer::take_cupti_dropped() {
  size_t dropped = 0;
  if (api_.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  return dropped;
}

// The activity API is shared silently between the CUPTI clients of a process: the last
// cuptiActivityRegisterCallbacks wins and a client that stops disables its kinds for everyone
// (torch.profiler's kineto does both around a profiling window). Two traces of that, read
// after the FORCED flush at exit, which gives back every buffer CUPTI holds
// (cupti_activity.h, cuptiActivityFlushAll):
// - buffers of ours that still did not come back went to the other client;
// - the last synchronize calls (seen through our subscription) have no SYNCHRONIZATION record.
void CuptiTracer::note_takeover(RecordSink& sink, uint32_t missing) {
  if (!takeover_.empty()) return;
  // The most recent synchronize calls first; stopped when the last two have no record (one
  // alone could be a record CUPTI dropped, and those are counted).
  const uint32_t calls = recent_sync_next_.load(std::memory_order_relaxed);
  uint32_t syncs = 0;
  for (uint32_t k = 1; k <= std::min(calls, kRecentSyncs); ++k) {
    const uint32_t id = recent_syncs_[(calls - k) % kRecentSyncs].load(std::memory_order_relaxed);
    if ((sync_seen_[(id / 64) % sync_seen_.size()] & (uint64_t{1} << (id % 64))) != 0) break;
    ++syncs;
  }
  const bool records_stopped = sync_watch_ && syncs >= 2;
  if (missing == 0 && !records_stopped) return;
  takeover_ = "another CUPTI client in this process (torch.profiler?) took over the activity API (";
  takeover_ += missing != 0 ? std::to_string(missing) + " CUPTI buffer" + (missing == 1 ? "" : "s") + " never came back"
                            : "the last " + std::to_string(syncs) + " synchronize calls have no GPU record";
  takeover_ += "): GPU records stop where it did";
  emit_notice(sink, v1::NOTICE_CUPTI_TAKEN_OVER, takeover_);
}

uint64_t CuptiTracer::take_incomplete() { return std::exchange(incomplete_, 0); }

uint64_t CuptiTracer::take_no_buffer_dropped() { return no_buffer_drops_.exchange(0, std::memory_order_relaxed); }

}  // namespace gpuhook::hook
