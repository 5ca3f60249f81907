// Streams, events and synchronisation of the simulated runtime.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "ipc.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

std::atomic<uint32_t> g_next_event_id{1};

EventImpl* event_of(cudaEvent_t e) { return reinterpret_cast<EventImpl*>(e); }

cudaError_t sync_stream(ApiScope& api, cudaStream_t stream) {
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal_sync(s); refused != cudaSuccess) return refused;
  // The legacy stream's last operation depends on earlier work of blocking streams, so
  // waiting for it covers that implicit synchronisation too.
  engine.wait(engine.last_of(s));
  emit_sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, api.correlation_id(),
                   api.entry_ns(), gpuhook_sim_now_ns(), s->id, CUPTI_SYNCHRONIZATION_INVALID_VALUE, 0,
                   s->device);
  return cudaSuccess;
}

cudaError_t create(const ApiScope& api, cudaStream_t* stream, unsigned flags, int priority) {
  if (stream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return cudaErrorInvalidValue;
  // "Any streams or events created from the host thread will be associated with that device"
  // (CUDA Programming Guide, "Device Selection": the current device).
  Stream* s = Engine::instance().create_stream(flags, priority);
  *stream = reinterpret_cast<cudaStream_t>(s);
  emit_stream_record(s->device, s->id, s->priority, (flags & cudaStreamNonBlocking) != 0, api.correlation_id());
  return cudaSuccess;
}

}  // namespace

namespace gpuhook::sim {

EventImpl* new_event(unsigned flags) {
  auto* e = new EventImpl();
  e->flags = flags;
  e->device = current_device();
  e->id = g_next_event_id.fetch_add(1);
  return e;
}

}  // namespace gpuhook::sim

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, "cudaStreamCreate");
  return api.ret(create(api, stream, cudaStreamDefault, 0));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000, "cudaStreamCreateWithFlags");
  return api.ret(create(api, stream, flags, 0));
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050,
               "cudaStreamCreateWithPriority");
  return api.ret(create(api, stream, flags, priority));
}

// CUDA 12.8's cudaStreamGetDevice: the device the stream belongs to.
cudaError_t cudaStreamGetDevice(cudaStream_t stream, int* device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_v12080, "cudaStreamGetDevice");
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (device == nullptr) return api.ret(cudaErrorInvalidValue);
  *device = s->device;
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_v5050, "cudaStreamGetPriority");
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (priority == nullptr) return api.ret(cudaErrorInvalidValue);
  *priority = s->priority;
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050, "cudaStreamDestroy");
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr || s->legacy || engine.per_thread_handle(stream)) {
    return api.ret(cudaErrorInvalidResourceHandle);
  }
  engine.destroy_stream(s);
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, "cudaStreamQuery");
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t refused = capture_refusal_sync(s); refused != cudaSuccess) return api.ret(refused);
  const bool ready = engine.done(engine.last_of(s));
  emit_query_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, api.correlation_id(), api.entry_ns(),
                    s->id, CUPTI_SYNCHRONIZATION_INVALID_VALUE, ready, s->device);
  return api.ret(ready ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize");
  return api.ret(sync_stream(api, stream));
}

// The current device only: "Blocks until the device has completed all preceding requested
// tasks" (cuda_runtime_api.h), the device being the calling thread's current one.
cudaError_t cudaDeviceSynchronize(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize");
  if (const cudaError_t refused = capture_refusal_device_sync(); refused != cudaSuccess) return api.ret(refused);
  Engine::instance().synchronize_device(current_device());
  emit_sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, api.correlation_id(),
                   api.entry_ns(), gpuhook_sim_now_ns(), CUPTI_INVALID_STREAM_ID,
                   CUPTI_SYNCHRONIZATION_INVALID_VALUE);
  return api.ret(cudaSuccess);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020, "cudaEventCreateWithFlags");
  if (event == nullptr) return api.ret(cudaErrorInvalidValue);
  EventImpl* e = new_event(flags);
  if ((flags & cudaEventInterprocess) != 0) ipc_event_created(e);
  *event = reinterpret_cast<cudaEvent_t>(e);
  return api.ret(cudaSuccess);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020, "cudaEventDestroy");
  if (event == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  // Pending waits hold their own reference to the completion, so the event itself can go.
  ipc_event_destroyed(event_of(event));
  delete event_of(event);
  return api.ret(cudaSuccess);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord");
  if (event == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  // "cudaEventRecord() will fail if the input event and input stream are associated to
  // different devices" (CUDA Programming Guide, "Stream and Event Behavior").
  if (s->device != event_of(event)->device) return api.ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return api.ret(refused);
  if (capture_event_record(event_of(event), s)) return api.ret(cudaSuccess);
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kMarker;
  op->correlation_id = api.correlation_id();
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns + config().submit_ns;
  event_of(event)->completion = engine.enqueue(s, std::move(op));
  if ((event_of(event)->flags & cudaEventInterprocess) != 0) {
    ipc_event_recorded(api, event_of(event), s, event_of(event)->completion);
  }
  emit_cuda_event_record(s->device, event_of(event)->id, s->id, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery");
  if (event == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  // cudaErrorCapturedEvent: "not permitted on an event which was last recorded in a capturing
  // stream" (driver_types.h).
  if (event_in_active_capture(event_of(event))) return api.ret(cudaErrorCapturedEvent);
  bool ready = false;
  if (!ipc_event_query(event_of(event), &ready)) ready = Engine::instance().done(event_of(event)->completion);
  emit_query_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, api.correlation_id(), api.entry_ns(),
                    CUPTI_INVALID_STREAM_ID, event_of(event)->id, ready);
  return api.ret(ready ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize");
  if (event == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (event_in_active_capture(event_of(event))) return api.ret(cudaErrorCapturedEvent);
  if (!ipc_event_synchronize(event_of(event))) Engine::instance().wait(event_of(event)->completion);
  emit_sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, api.correlation_id(),
                   api.entry_ns(), gpuhook_sim_now_ns(), CUPTI_INVALID_STREAM_ID,
                   event_of(event)->id);
  return api.ret(cudaSuccess);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080, "cudaEventElapsedTime");
  if (ms == nullptr) return api.ret(cudaErrorInvalidValue);
  if (start == nullptr || end == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  EventImpl* a = event_of(start);
  EventImpl* b = event_of(end);
  // "cudaEventElapsedTime() will fail if the two input events are associated to different
  // devices" (CUDA Programming Guide, "Stream and Event Behavior").
  if (a->device != b->device) return api.ret(cudaErrorInvalidResourceHandle);
  if (((a->flags | b->flags) & cudaEventDisableTiming) != 0) {
    return api.ret(cudaErrorInvalidResourceHandle);
  }
  Engine& engine = Engine::instance();
  if (!a->completion || !b->completion) return api.ret(cudaErrorInvalidResourceHandle);
  if (!engine.done(a->completion) || !engine.done(b->completion)) return api.ret(cudaErrorNotReady);
  const double diff = static_cast<double>(engine.end_ns(b->completion)) -
                      static_cast<double>(engine.end_ns(a->completion));
  *ms = static_cast<float>(diff / 1e6);
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, "cudaStreamWaitEvent");
  if (event == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  EventImpl* e = event_of(event);
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return api.ret(refused);
  bool captured = false;
  if (const cudaError_t err = capture_event_wait(s, e, &captured); captured) return api.ret(err);
  if (s->capture == nullptr && ipc_event_wait(api, e, s)) {
    // Its latest record was made by another process: the wait is on that (rt_ipc.cpp).
  } else if (e->completion) {
    // The wait is on the event's work as recorded now; a later re-record does not move it. It
    // may be another device's event: "cudaStreamWaitEvent() will succeed even if the input stream
    // and input event are associated to different devices" (CUDA Programming Guide).
    auto op = std::make_unique<Op>();
    op->kind = OpKind::kMarker;
    op->correlation_id = api.correlation_id();
    op->deps.push_back(e->completion);
    op->queued_ns = gpuhook_sim_now_ns();
    op->submitted_ns = op->queued_ns;
    engine.enqueue(s, std::move(op));
  }
  emit_sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, api.correlation_id(),
                   api.entry_ns(), gpuhook_sim_now_ns(), s->id, e->id, 0, s->device);
  return api.ret(cudaSuccess);
}

// For the simulated CUPTI's cuptiGetStreamIdEx (sim_bridge.h): the id the records give the
// stream. `per_thread`: a NULL handle passed to a _ptsz entry point is the per-thread stream.
uint32_t gpuhook_sim_stream_id(const void* stream, int per_thread) {
  auto handle = static_cast<cudaStream_t>(const_cast<void*>(stream));
  if (per_thread != 0 && handle == nullptr) handle = cudaStreamPerThread;
  Stream* s = Engine::instance().resolve(handle);
  return s != nullptr ? s->id : 0;
}

// For the simulated NCCL and CUPTI (sim_bridge.h): the device a stream handle belongs to, -1 when
// the handle is unknown. `per_thread` as for gpuhook_sim_stream_id.
int gpuhook_sim_stream_device(const void* stream, int per_thread) {
  auto handle = static_cast<cudaStream_t>(const_cast<void*>(stream));
  if (per_thread != 0 && handle == nullptr) handle = cudaStreamPerThread;
  Stream* s = Engine::instance().resolve(handle);
  return s != nullptr ? s->device : -1;
}

}  // extern "C"
