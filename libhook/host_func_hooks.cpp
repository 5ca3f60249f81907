// Host functions in stream order: cudaLaunchHostFunc and cudaStreamAddCallback, interposed.
// CUPTI writes no record for the function itself (cupti_activity.h has no activity kind for
// host functions; only the enqueueing call's API record), yet a host function blocks its
// stream while it runs, and a slow one is a classic stall. So the wrapper hands the runtime a
// trampoline that times the program's function on the runtime thread that runs it and writes
// one HostRecord (kHostFunc), tied to the enqueueing call by a CUPTI external correlation id
// and to its stream by CUPTI's stream id.
//
// Only a program that reaches these calls through the dynamic linker is seen: with
// LD_PRELOAD and a shared libcudart. nvcc's default static cudart binds them inside the
// program and the hook never sees them (README.md, "Host functions").
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

// Takes the call out of the pending set before the program's function runs: the function
// may end the process.
PendingCall take(void* arg) {
  auto* heap = static_cast<PendingCall*>(arg);
  PendingCall call = *heap;
  delete heap;
  g_pending.fetch_sub(1, std::memory_order_relaxed);
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

// A trampoline for this call, or nullptr when the hook stays out of it (recording off,
// re-entered, too many pending, no memory).
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
                                              cupti_stream_id(stream, per_thread)};
  if (call == nullptr) g_pending.fetch_sub(1, std::memory_order_relaxed);
  return call;
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
  if (rc != cudaSuccess) take(call);  // refused: the runtime will never run it
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
