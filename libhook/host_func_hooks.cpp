// Host functions in stream order: cudaLaunchHostFunc and cudaStreamAddCallback, interposed.
// CUPTI writes no record for the function itself (cupti_activity.h has no activity kind for
// host functions; only the enqueueing call's API record), yet a host function blocks its
// stream while it runs, and a slow one is a classic stall. So the wrapper hands the runtime a
// trampoline that times the program's function on the runtime thread that runs it and writes
// one HostRecord (kHostFunc), tied to the enqueueing call by a CUPTI external correlation id
// and to its stream by CUPTI's stream id.
//
// Enqueued while its stream is being captured, the call becomes a host node of the captured
// graph: it runs at every launch of every executable graph made from that graph or its
// clones, with the same argument, or never. Its trampoline context then belongs to the graph
// through a CUDA user object (cudaUserObjectCreate, cudaGraphRetainUserObject; "CUDA User
// Objects" in the CUDA C++ Programming Guide), which frees it once the graph, its clones and
// their executable graphs are all destroyed; every run is recorded.
//
// Only a program that reaches these calls through the dynamic linker is seen: with
// LD_PRELOAD and a shared libcudart. nvcc's default static cudart binds them inside the
// program and the hook never sees them (docs/limits.md, "Host functions").
#include <cuda_runtime_api.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <new>

#include <gpuhook/v1/capture.pb.h>
#include "clock.h"
#include "config.h"
#include "cupti_tracer.h"
#include "interpose.h"
#include "recorder.h"
#include "visibility.h"

namespace gpuhook::hook {

std::atomic<bool> g_host_func_enabled{false};  // entry.cpp turns it on with CUDA tracing

namespace {

namespace v1 = gpuhook::v1;

// Trampolines alive at once (queued, not yet run). Past this the program's own function is
// queued unwrapped: memory stays bounded if a stream never runs its work.
constexpr uint32_t kMaxPending = 1u << 16;
std::atomic<uint32_t> g_pending{0};

struct PendingCall {
  cudaHostFn_t host_fn;                // cudaLaunchHostFunc
  cudaStreamCallback_t stream_fn;      // cudaStreamAddCallback
  void* user_data;
  uint64_t launch_thread_id;
  uint64_t external_id;
  uint32_t stream;
  bool graph_owned;  // a captured graph's host node: run any number of times, freed with the graph
};

void record_run(const PendingCall& call, uint64_t start_ns, uint64_t end_ns) {
  HostRecord* r = begin_record();
  if (r == nullptr) return;
  r->kind = HostKind::kHostFunc;
  r->thread_id = this_thread_id();
  r->start_ns = start_ns;
  r->end_ns = end_ns;
  HostFuncPayload& p = r->host_func;
  p.function = call.host_fn != nullptr ? reinterpret_cast<const void*>(call.host_fn)
                                       : reinterpret_cast<const void*>(call.stream_fn);
  p.launch_thread_id = call.launch_thread_id;
  p.external_id = call.external_id;
  p.stream = call.stream;
  p.api = static_cast<uint8_t>(call.host_fn != nullptr ? v1::HOST_FUNCTION_API_LAUNCH
                                                       : v1::HOST_FUNCTION_API_STREAM_CALLBACK);
  end_record();
}

void free_call(PendingCall* call) {
  delete call;
  g_pending.fetch_sub(1, std::memory_order_relaxed);
}

// The user object's destructor: the last graph that could run the node is gone. CUDA runs it
// on an internal thread where no CUDA call is allowed; it only frees.
void CUDART_CB free_graph_call(void* arg) { free_call(static_cast<PendingCall*>(arg)); }

// Takes a one-shot call out of the pending set before the program's function runs: the
// function may end the process. A graph's call stays: the graph may run it again.
PendingCall take(void* arg) {
  auto* heap = static_cast<PendingCall*>(arg);
  PendingCall call = *heap;
  if (!call.graph_owned) free_call(heap);
  return call;
}

void CUDART_CB run_host_fn(void* arg) {
  const PendingCall call = take(arg);
  const uint64_t start_ns = now_ns();
  call.host_fn(call.user_data);
  const int saved_errno = errno;
  record_run(call, start_ns, now_ns());
  errno = saved_errno;
}

void CUDART_CB run_stream_fn(cudaStream_t stream, cudaError_t status, void* arg) {
  const PendingCall call = take(arg);
  const uint64_t start_ns = now_ns();
  call.stream_fn(stream, status, call.user_data);
  const int saved_errno = errno;
  record_run(call, start_ns, now_ns());
  errno = saved_errno;
}

std::atomic<void*> g_real_capture_info{nullptr};
std::atomic<void*> g_real_capture_info_v2{nullptr};
std::atomic<void*> g_real_capture_info_ptsz{nullptr};
std::atomic<void*> g_real_capture_info_v2_ptsz{nullptr};
std::atomic<void*> g_real_user_object_create{nullptr};
std::atomic<void*> g_real_user_object_release{nullptr};
std::atomic<void*> g_real_graph_retain_user_object{nullptr};

// The graph's fourth parameter in CUDA 13's cudaStreamGetCaptureInfo and in CUDA 11.3-12's
// cudaStreamGetCaptureInfo_v2; CUDA 12's unversioned cudaStreamGetCaptureInfo takes three,
// ignores the rest (SysV passes them in registers) and leaves the graph null, which reads as
// "cannot adopt" below. The trailing parameters are never asked for.
using CaptureInfoFn = cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus*, unsigned long long*, cudaGraph_t*,
                                      const void*, const void*, const void*);
using UserObjectCreateFn = cudaError_t (*)(cudaUserObject_t*, void*, cudaHostFn_t, unsigned int, unsigned int);
using UserObjectReleaseFn = cudaError_t (*)(cudaUserObject_t, unsigned int);
using GraphRetainUserObjectFn = cudaError_t (*)(cudaGraph_t, cudaUserObject_t, unsigned int, unsigned int);

CaptureInfoFn capture_info(bool per_thread) {
  if (per_thread) {
    if (auto f = resolve<CaptureInfoFn>(g_real_capture_info_v2_ptsz, "cudaStreamGetCaptureInfo_v2_ptsz")) return f;
    return resolve<CaptureInfoFn>(g_real_capture_info_ptsz, "cudaStreamGetCaptureInfo_ptsz");
  }
  if (auto f = resolve<CaptureInfoFn>(g_real_capture_info_v2, "cudaStreamGetCaptureInfo_v2")) return f;
  return resolve<CaptureInfoFn>(g_real_capture_info, "cudaStreamGetCaptureInfo");
}

// kRefused: capturing, but the graph could not take the call, which is still ours; kFreed:
// nor could it, and the call is already freed.
enum class Adoption { kNotCapturing, kAdopted, kRefused, kFreed };

// When `stream` is being captured, hands `call` to the graph under construction, which then
// owns it.
//
// The legacy stream is never queried: it cannot be captured, and asking about it while
// another stream captures is cudaErrorStreamCaptureImplicit. These queries can fail only on a
// handle the enqueue itself then refuses, so the thread's last error (cudaGetLastError) is
// the program's own call's.
Adoption adopt_by_capture(PendingCall* call, cudaStream_t stream, bool per_thread) {
  if (!per_thread && (stream == nullptr || stream == cudaStreamLegacy)) return Adoption::kNotCapturing;
  const CaptureInfoFn info = capture_info(per_thread);
  if (info == nullptr) return Adoption::kNotCapturing;  // a runtime from before stream capture
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  if (info(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr) != cudaSuccess) return Adoption::kRefused;
  if (status == cudaStreamCaptureStatusNone) return Adoption::kNotCapturing;
  // Invalidated: the enqueue fails and no graph will run it.
  if (status != cudaStreamCaptureStatusActive || graph == nullptr) return Adoption::kRefused;
  auto create = resolve<UserObjectCreateFn>(g_real_user_object_create, "cudaUserObjectCreate");
  auto release = resolve<UserObjectReleaseFn>(g_real_user_object_release, "cudaUserObjectRelease");
  auto retain = resolve<GraphRetainUserObjectFn>(g_real_graph_retain_user_object, "cudaGraphRetainUserObject");
  if (create == nullptr || release == nullptr || retain == nullptr) return Adoption::kRefused;  // before CUDA 11.3
  call->graph_owned = true;
  cudaUserObject_t object = nullptr;
  if (create(&object, call, &free_graph_call, 1, cudaUserObjectNoDestructorSync) != cudaSuccess) {
    call->graph_owned = false;
    return Adoption::kRefused;
  }
  if (retain(graph, object, 1, cudaGraphUserObjectMove) != cudaSuccess) {
    // Our reference is still ours: releasing it runs free_graph_call. Nothing else holds one.
    release(object, 1);
    return Adoption::kFreed;
  }
  return Adoption::kAdopted;
}

// A trampoline for this call, or nullptr when the hook stays out of it (recording off,
// re-entered, too many pending, no memory, a capture whose graph cannot own it).
PendingCall* prepare(cudaStream_t stream, bool per_thread, cudaHostFn_t host_fn, cudaStreamCallback_t stream_fn,
                     void* user_data) {
  if (!g_host_func_enabled.load(std::memory_order_relaxed) ||
      !recorder().enabled.load(std::memory_order_relaxed) || (host_fn == nullptr && stream_fn == nullptr)) {
    return nullptr;
  }
  if (g_pending.fetch_add(1, std::memory_order_relaxed) >= kMaxPending) {
    g_pending.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto* call = new (std::nothrow) PendingCall{host_fn, stream_fn, user_data, this_thread_id(), 0,
                                              cupti_stream_id(stream, per_thread), false};
  if (call == nullptr) {
    g_pending.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  const int saved_errno = errno;
  const Adoption adoption = adopt_by_capture(call, stream, per_thread);
  errno = saved_errno;
  switch (adoption) {
    case Adoption::kNotCapturing:
    case Adoption::kAdopted: return call;
    case Adoption::kRefused: free_call(call); return nullptr;
    case Adoption::kFreed: return nullptr;
  }
  return nullptr;
}

// Calls `enqueue` with the trampoline (or the program's own function when there is none),
// inside a pushed external correlation id; errno and the result are the real call's.
template <typename Enqueue>
cudaError_t enqueue_wrapped(PendingCall* call, Enqueue enqueue) {
  const int entry_errno = errno;
  if (call == nullptr) return enqueue(nullptr);
  call->external_id = next_external_id();
  const bool pushed = push_external_correlation(call->external_id);
  if (!pushed) call->external_id = 0;
  errno = entry_errno;
  const cudaError_t rc = enqueue(call);
  const int saved_errno = errno;
  if (pushed) pop_external_correlation();
  // Refused: the runtime will never run it. A graph's call is freed with the graph.
  if (rc != cudaSuccess && !call->graph_owned) free_call(call);
  errno = saved_errno;
  return rc;
}

std::atomic<void*> g_real_launch{nullptr};
std::atomic<void*> g_real_launch_ptsz{nullptr};
std::atomic<void*> g_real_callback{nullptr};
std::atomic<void*> g_real_callback_ptsz{nullptr};

using LaunchFn = cudaError_t (*)(cudaStream_t, cudaHostFn_t, void*);
using CallbackFn = cudaError_t (*)(cudaStream_t, cudaStreamCallback_t, void*, unsigned int);

cudaError_t launch_host_func(std::atomic<void*>& slot, const char* name, bool per_thread, cudaStream_t stream,
                             cudaHostFn_t fn, void* user_data) {
  auto real = resolve<LaunchFn>(slot, name);
  if (real == nullptr) return cudaErrorNotSupported;  // no runtime loaded defines it
  ReentryGuard guard;
  PendingCall* call = guard.entered() ? prepare(stream, per_thread, fn, nullptr, user_data) : nullptr;
  return enqueue_wrapped(call, [&](PendingCall* c) {
    return c == nullptr ? real(stream, fn, user_data) : real(stream, &run_host_fn, c);
  });
}

cudaError_t add_callback(std::atomic<void*>& slot, const char* name, bool per_thread, cudaStream_t stream,
                         cudaStreamCallback_t fn, void* user_data, unsigned int flags) {
  auto real = resolve<CallbackFn>(slot, name);
  if (real == nullptr) return cudaErrorNotSupported;
  ReentryGuard guard;
  PendingCall* call = guard.entered() ? prepare(stream, per_thread, nullptr, fn, user_data) : nullptr;
  return enqueue_wrapped(call, [&](PendingCall* c) {
    return c == nullptr ? real(stream, fn, user_data, flags) : real(stream, &run_stream_fn, c, flags);
  });
}

}  // namespace
}  // namespace gpuhook::hook

using namespace gpuhook::hook;

// The _ptsz forms are what a program compiled with --default-stream per-thread calls
// (cuda_runtime_api.h, __CUDART_API_PTSZ); the header declares them only then.
extern "C" {
GPUHOOK_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t, cudaHostFn_t, void*);
GPUHOOK_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t, cudaStreamCallback_t, void*, unsigned int);

GPUHOOK_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return launch_host_func(g_real_launch, "cudaLaunchHostFunc", false, stream, fn, user_data);
}

GPUHOOK_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return launch_host_func(g_real_launch_ptsz, "cudaLaunchHostFunc_ptsz", true, stream, fn, user_data);
}

GPUHOOK_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t fn, void* user_data,
                                                 unsigned int flags) {
  return add_callback(g_real_callback, "cudaStreamAddCallback", false, stream, fn, user_data, flags);
}

GPUHOOK_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t fn, void* user_data,
                                                      unsigned int flags) {
  return add_callback(g_real_callback_ptsz, "cudaStreamAddCallback_ptsz", true, stream, fn, user_data, flags);
}
}  // extern "C"
