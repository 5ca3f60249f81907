// libcupti.so.13 of the simulator: the activity and callback entry points a CUPTI client
// (libgpuhook, kineto, NVIDIA's samples) calls, with the real signatures from <cupti.h>.
#include <dlfcn.h>

#include <cupti.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../sim_bridge.h"
#include "activity_store.h"

namespace {
using gpuhook::sim::ActivityStore;

constexpr size_t kMaxCbid = 1024;  // runtime cbids end near 520 in CUDA 13.0

struct CuptiState {
  std::array<std::atomic<bool>, CUPTI_ACTIVITY_KIND_COUNT> kind_on{};
  std::array<std::atomic<bool>, kMaxCbid> runtime_on{};
  std::atomic<bool> latency{false};
  std::atomic<CUpti_TimestampCallbackFunc> clock{nullptr};
  std::mutex sub_mu;
  bool subscribed = false;
  CUpti_CallbackFunc sub_fn = nullptr;
  std::string sub_name;  // "CUPTI for <subscriberName>"
  void* sub_data = nullptr;
  std::atomic<bool> runtime_domain_on{false};
  // cupti_activity.h, CUpti_ActivityThreadIdType: DEFAULT is pthread_self() on Linux, SYSTEM
  // is SYS_gettid. CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT unless the client sets it.
  std::atomic<int> thread_id_type{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT};
  // cuptiActivityEnableAllSyncRecords: "By default, the record is generated for all CUDA
  // events and stream irrespective of whether the operations have been completed".
  std::atomic<bool> all_sync_records{true};
  std::array<std::atomic<bool>, kMaxCbid> runtime_cb_on{};
};

CuptiState& state() {
  static CuptiState* s = new CuptiState();  // never destroyed: used from atexit flushes
  return *s;
}

// Emulates a tool that holds CUPTI from outside the program (Nsight Systems through
// CUDA_INJECTION64_PATH): subscribing is refused, naming it. "1" names Nsight Systems.
const char* busy_holder() {
  const char* v = std::getenv("GPUHOOK_SIM_CUPTI_BUSY");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return nullptr;
  return std::strcmp(v, "1") == 0 ? "Nsight Systems" : v;
}

size_t record_bytes(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(CUpti_ActivityStream);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    default: return 0;
  }
}

// cuptiActivityEnableDriverApi, per driver cbid (runtime cbids live in CuptiState).
std::array<std::atomic<bool>, kMaxCbid>& driver_api_on() {
  static auto* on = new std::array<std::atomic<bool>, kMaxCbid>();
  return *on;
}

// External correlation ids pushed by this thread, per kind (CUSTOM0..2, ...).
thread_local std::array<std::vector<uint64_t>, 8> t_external;
}  // namespace

extern "C" {

uint64_t gpuhook_sim_now_ns(void) {
  if (auto clock = state().clock.load()) return clock();
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int gpuhook_sim_kind_enabled(CUpti_ActivityKind kind) {
  return kind >= 0 && kind < CUPTI_ACTIVITY_KIND_COUNT && state().kind_on[kind].load();
}

int gpuhook_sim_runtime_api_enabled(CUpti_CallbackId cbid) {
  return cbid < kMaxCbid && state().runtime_on[cbid].load();
}

// Driver API records: the simulated NCCL launches through cuLaunchKernelEx as the real one
// does. cupti_activity.h (cuptiActivityEnableDriverApi): the DRIVER kind takes every driver
// API, the per-cbid call picks some; here either one turns a cbid on (the simulator does not
// model "enable DRIVER, then switch single cbids off", which no client of ours does).
int gpuhook_sim_driver_api_enabled(CUpti_CallbackId cbid) {
  return cbid < kMaxCbid && (state().kind_on[CUPTI_ACTIVITY_KIND_DRIVER].load() || driver_api_on()[cbid].load());
}

int gpuhook_sim_latency_timestamps_enabled(void) { return state().latency.load(); }

int gpuhook_sim_all_sync_records(void) { return state().all_sync_records.load() ? 1 : 0; }

uint32_t gpuhook_sim_api_thread_id(void) {
  // CUpti_ActivityAPI.threadId is 32 bits: CUPTI stores pthread_self() truncated, which on
  // glibc is the low half of the thread's TCB address, never its Linux tid.
  if (state().thread_id_type.load(std::memory_order_relaxed) == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
    return tid;
  }
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(reinterpret_cast<void*>(pthread_self())));
}

uint64_t gpuhook_sim_reserve(size_t bytes) { return ActivityStore::instance().reserve(bytes); }

void gpuhook_sim_complete(uint64_t reservation, const void* record, size_t bytes) {
  ActivityStore::instance().complete(reservation, record, bytes);
}

void gpuhook_sim_emit(const void* record, size_t bytes) {
  ActivityStore::instance().append(record, bytes);
}

void gpuhook_sim_emit_external_correlations(uint32_t correlation_id) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) return;
  for (size_t kind = 0; kind < t_external.size(); ++kind) {
    if (t_external[kind].empty()) continue;
    CUpti_ActivityExternalCorrelation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(kind);
    r.externalId = t_external[kind].back();
    r.correlationId = correlation_id;
    gpuhook_sim_emit(&r, sizeof r);
  }
}

void gpuhook_sim_api_callback(int site, CUpti_CallbackId cbid, const char* function_name,
                              const char* symbol_name, uint32_t correlation_id,
                              uint64_t* correlation_data, void* return_value, const void* params) {
  auto& s = state();
  if (cbid >= kMaxCbid || !s.runtime_domain_on.load() || !s.runtime_cb_on[cbid].load()) return;
  CUpti_CallbackFunc fn;
  void* data;
  {
    std::lock_guard<std::mutex> lock(s.sub_mu);
    fn = s.sub_fn;
    data = s.sub_data;
  }
  if (fn == nullptr) return;
  CUpti_CallbackData cb{};
  cb.callbackSite = static_cast<CUpti_ApiCallbackSite>(site);
  cb.functionName = function_name;
  // Built for the launches, copies and memsets (ApiScope's `params`); nullptr for the rest.
  cb.functionParams = params;
  cb.functionReturnValue = return_value;
  cb.symbolName = symbol_name;
  cb.context = nullptr;
  cb.contextUid = 1;
  cb.correlationData = correlation_data;
  cb.correlationId = correlation_id;
  fn(data, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &cb);
}

CUptiResult CUPTIAPI cuptiActivityEnableDeviceGraph(uint8_t enable) {
  // The simulator launches nothing from the device: accepted, nothing changes.
  (void)enable;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableAllSyncRecords(uint8_t enable) {
  state().all_sync_records.store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  state().thread_id_type.store(type);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (type == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *type = static_cast<CUpti_ActivityThreadIdType>(state().thread_id_type.load());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  // Stands in for an older CUPTI on the library path (CUDA 12.x's say 18..26: cupti_version.h).
  if (const char* v = std::getenv("GPUHOOK_SIM_CUPTI_VERSION")) *version = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = gpuhook_sim_now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    // The PM sampling calls' (pm_sampling.cpp).
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
    case CUPTI_ERROR_INVALID_METRIC_NAME: *str = "CUPTI_ERROR_INVALID_METRIC_NAME"; break;
    case CUPTI_ERROR_INVALID_OPERATION: *str = "CUPTI_ERROR_INVALID_OPERATION"; break;
    case CUPTI_ERROR_INVALID_DEVICE: *str = "CUPTI_ERROR_INVALID_DEVICE"; break;
    case CUPTI_ERROR_OUT_OF_MEMORY: *str = "CUPTI_ERROR_OUT_OF_MEMORY"; break;
    default: *str = "CUPTI_ERROR (simulated CUPTI: no text for this code)"; break;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  ActivityStore::instance().register_callbacks(request, complete);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (fn == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  state().clock.store(fn);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable) {
  state().latency.store(enable != 0);
  return CUPTI_SUCCESS;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, bool on) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) {
    return CUPTI_ERROR_INVALID_KIND;
  }
  auto& s = state();
  s.kind_on[kind].store(on);
  // The RUNTIME kind switches every runtime API on or off; per-cbid calls refine it later.
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    for (auto& c : s.runtime_on) c.store(on);
  }
  return CUPTI_SUCCESS;
}

// The activity API is shared silently between the CUPTI clients of a process: enabling
// never fails for another client's sake (only cuptiSubscribe refuses, cupti_callbacks.h), and
// a client that disables a kind disables it for every client.
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, true); }

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, false); }

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid >= kMaxCbid) return CUPTI_ERROR_INVALID_PARAMETER;
  state().runtime_on[cbid].store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid >= kMaxCbid) return CUPTI_ERROR_INVALID_PARAMETER;
  driver_api_on()[cbid].store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  // 0: only buffers whose records are all complete; FORCED: the others too (cupti_activity.h,
  // cuptiActivityFlushAll).
  ActivityStore::instance().flush_all((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time_ms) {
  ActivityStore::instance().set_flush_period_ms(time_ms);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = static_cast<size_t>(ActivityStore::instance().take_dropped());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                                CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const uintptr_t base = reinterpret_cast<uintptr_t>(buffer);
  uintptr_t pos;
  if (*record == nullptr) {
    pos = (base + 7) & ~uintptr_t{7};
  } else {
    const size_t bytes = record_bytes((*record)->kind);
    if (bytes == 0) return CUPTI_ERROR_INVALID_KIND;
    pos = reinterpret_cast<uintptr_t>(*record) + ((bytes + 7) & ~size_t{7});
  }
  if (pos + sizeof(CUpti_Activity) > base + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(pos);
  const size_t bytes = record_bytes(next->kind);
  if (bytes == 0) return CUPTI_ERROR_INVALID_KIND;
  if (pos + bytes > base + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t* size, void* value) {
  // Device-buffer sizing has no meaning without a device; accept it like CUPTI does.
  if (size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t id) {
  if (kind < 0 || static_cast<size_t>(kind) >= t_external.size()) return CUPTI_ERROR_INVALID_KIND;
  t_external[kind].push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t* last_id) {
  if (kind < 0 || static_cast<size_t>(kind) >= t_external.size()) return CUPTI_ERROR_INVALID_KIND;
  if (t_external[kind].empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last_id != nullptr) *last_id = t_external[kind].back();
  t_external[kind].pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext, uint32_t* device_id) {
  if (device_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *device_id = 0;  // one simulated device
  return CUPTI_SUCCESS;
}

// cupti_activity.h: "context: If non-NULL then the stream is checked to ensure that it belongs
// to this context. Typically this parameter should be null." An unknown stream is
// CUPTI_ERROR_INVALID_STREAM.
CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream stream, uint8_t per_thread_stream, uint32_t* stream_id) {
  if (stream_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  using StreamIdFn = uint32_t (*)(const void*, int);
  auto fn = reinterpret_cast<StreamIdFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_stream_id"));
  if (fn == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  const uint32_t id = fn(stream, per_thread_stream);
  if (id == 0) return CUPTI_ERROR_INVALID_STREAM;
  *stream_id = id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext, uint32_t* context_id) {
  if (context_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *context_id = 1;  // one primary context; records carry the same id
  return CUPTI_SUCCESS;
}

// One subscriber at a time (cupti_callbacks.h, cuptiSubscribe): a second one is refused with
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and cuptiSubscribe_v2 names the holder as
// "CUPTI for <name>" (the 10-byte prefix CUPTI_SUBSCRIBER_NAME_MAX_LEN speaks of).
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc fn,
                                       void* userdata, CUpti_SubscriberParams* params) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.sub_mu);
  const char* outside = busy_holder();
  if (outside != nullptr || s.subscribed) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
                    outside != nullptr ? outside : s.sub_name.c_str());
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  s.subscribed = true;
  s.sub_fn = fn;
  s.sub_data = userdata;
  s.sub_name = "CUPTI for ";
  s.sub_name += params != nullptr && params->subscriberName != nullptr ? params->subscriberName : "an unnamed client";
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc fn,
                                    void* userdata) {
  return cuptiSubscribe_v2(subscriber, fn, userdata, nullptr);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  auto& s = state();
  if (subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(s.sub_mu);
  s.subscribed = false;
  s.sub_fn = nullptr;
  s.sub_data = nullptr;
  s.runtime_domain_on.store(false);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  auto& s = state();
  if (subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    s.runtime_domain_on.store(enable != 0);
    for (auto& c : s.runtime_cb_on) c.store(enable != 0);
  }
  return CUPTI_SUCCESS;  // other domains never fire in the simulator
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  auto& s = state();
  if (subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < kMaxCbid) {
    s.runtime_cb_on[cbid].store(enable != 0);
    if (enable != 0) s.runtime_domain_on.store(true);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  ActivityStore::instance().flush_all(true);
  auto& s = state();
  for (auto& k : s.kind_on) k.store(false);
  for (auto& c : s.runtime_on) c.store(false);
  return CUPTI_SUCCESS;
}

}  // extern "C"
