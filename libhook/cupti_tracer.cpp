#include "cupti_tracer.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "api_groups.h"
#include "cbid_names.h"
#include "clock.h"
#include "nvtx_range_window.h"

namespace gpuhook::hook {
namespace {

std::atomic<CuptiTracer*> g_tracer{nullptr};
// Kept for the process's life, see start(). Atomic so the store is not optimised away as
// dead (LeakSanitizer then saw the tracer as leaked).
std::atomic<CuptiTracer*> g_refused_tracer{nullptr};

// The activity kinds, in the order they are enabled. CONCURRENT_KERNEL, never KERNEL, which
// serialises every kernel of the process (cupti_activity.h, CUPTI_ACTIVITY_KIND_KERNEL).
struct KindToEnable {
  CUpti_ActivityKind kind;
  bool required;  // its refusal means GPU tracing is off
};

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
  bool start = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) ||
               (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  // The window opens when Start returns and closes when Stop is entered.
  if (start && info->callbackSite == CUPTI_API_EXIT) profiler_window_start();
  if (!start && info->callbackSite == CUPTI_API_ENTER) profiler_window_stop();
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
    *why = std::string(who) + " (" + call + ": " + cupti_result_text(api_, r) + ", " + api_.path + "); GPU tracing off";
    return false;
  };
  // First and once per process: re-registering corrupts the first kernel records
  // (pytorch#192021), and it must precede every enabled kind.
  CUptiResult r = api_.cuptiActivityRegisterTimestampCallback(&CuptiTracer::timestamp);
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

  // DEVICE first: its records are written when a context is created, which may be at once.
  std::vector<KindToEnable> kinds = {
      {CUPTI_ACTIVITY_KIND_DEVICE, false},
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true}, {CUPTI_ACTIVITY_KIND_MEMCPY, false},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, false},          {CUPTI_ACTIVITY_KIND_MEMSET, false},
      {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, false},  {CUPTI_ACTIVITY_KIND_OVERHEAD, false},
      {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, false}, {CUPTI_ACTIVITY_KIND_STREAM, false},
  };
  if (config_.api_mask & kApiAlloc) kinds.push_back({CUPTI_ACTIVITY_KIND_MEMORY2, false});
  std::vector<CUpti_ActivityKind> enabled;
  for (const KindToEnable& k : kinds) {
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
  enable_api_records();
  if (config_.range.kind == RangeKind::kProfilerApi) subscribe_profiler_range(&notes_);
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

void CuptiTracer::subscribe_profiler_range(std::string* note) {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult r = api_.cuptiSubscribe != nullptr
                      ? api_.cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_callback), nullptr)
                      : CUPTI_ERROR_NOT_SUPPORTED;
  if (r == CUPTI_SUCCESS && api_.cuptiEnableCallback != nullptr) {
    api_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    api_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    api_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    api_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    return;
  }
  *note += "cudaProfilerApi range unavailable (cuptiSubscribe: " + cupti_result_text(api_, r) +
           "): only gpuhook_capture_start/stop open the window. ";
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
  if (flush) api_.cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  pool_.drain([&](uint8_t* buffer, uint64_t valid) {
    CUpti_Activity* record = nullptr;
    while (api_.cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      convert_activity(record, convert_, sink);
    }
  });
}

uint64_t CuptiTracer::take_cupti_dropped() {
  size_t dropped = 0;
  if (api_.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  return dropped;
}

uint64_t CuptiTracer::take_no_buffer_dropped() { return no_buffer_drops_.exchange(0, std::memory_order_relaxed); }

}  // namespace gpuhook::hook
