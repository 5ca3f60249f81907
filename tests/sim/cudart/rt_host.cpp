// Host work queued on a stream: cudaLaunchHostFunc and cudaStreamAddCallback. As in CUDA, the
// function runs on a runtime thread (the stream's worker) once the stream's earlier work is
// done, and the stream's later work waits for it to return.
#include <cuda_runtime_api.h>

#include <memory>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "records.h"

using namespace gpuhook::sim;

namespace gpuhook::sim {

cudaError_t enqueue_host(const ApiScope& api, cudaStream_t stream, std::function<void()> work, bool bookkeeping) {
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return refused;
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kHost;
  op->correlation_id = api.correlation_id();
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns + config().submit_ns;
  op->host_work = std::move(work);
  op->bookkeeping = bookkeeping;
  engine.enqueue(s, std::move(op));
  return cudaSuccess;
}

}  // namespace gpuhook::sim

extern "C" {

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc");
  if (fn == nullptr) return api.ret(cudaErrorInvalidValue);
  return api.ret(enqueue_host(api, stream, [fn, user_data] { fn(user_data); }));
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                  unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000, "cudaStreamAddCallback");
  // "flags: Reserved for future use, must be 0" (cuda_runtime_api.h).
  if (callback == nullptr || flags != 0) return api.ret(cudaErrorInvalidValue);
  return api.ret(enqueue_host(api, stream, [callback, stream, user_data] {
    callback(stream, cudaSuccess, user_data);
  }));
}

}  // extern "C"
