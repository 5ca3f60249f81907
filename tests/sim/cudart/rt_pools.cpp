// Stream-ordered allocation and memory pools of the simulated runtime: cudaMallocAsync,
// cudaFreeAsync and the cudaMemPool* calls, each writing the records CUPTI writes for them.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "../sim_bridge.h"
#include "allocations.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "ops.h"
#include "records.h"

using namespace gpuhook::sim;

extern "C" {

// Stream-ordered allocation: the memory is there at once (a pool hands it out), and a free
// happens when the stream reaches it, so earlier work on the stream may still use it.
// A pool belongs to one device; each device has a default one.
struct MemPool {
  int device = 0;
  bool is_default = false;
  PoolView view;  // guarded by allocation_mutex()
};

namespace {

MemPool* default_pool(int device) {
  static MemPool* pools = [] {
    auto* p = new MemPool[16];
    for (int d = 0; d < 16; ++d) {
      p[d].device = d;
      p[d].is_default = true;
      p[d].view.address = reinterpret_cast<uint64_t>(&p[d]);
    }
    return p;
  }();
  return &pools[device];
}

// "Allocates memory ... from the memory pool current to the stream's device" (cuda_runtime_api.h,
// cudaMallocAsync): the memory belongs to the stream's device.
cudaError_t malloc_async(ApiScope& api, void** ptr, size_t bytes, MemPool* pool, cudaStream_t stream) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return refused;
  // Captured, it is a graph's memory alloc node: allocated, and recorded, when a launch runs it.
  if (s->capture != nullptr) return capture_malloc(*s, bytes, ptr);
  if (pool == nullptr) pool = default_pool(s->device);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, pool->device, &pool->view);
  if (*ptr == nullptr) return cudaErrorMemoryAllocation;
  PoolView view;
  {
    std::lock_guard<std::mutex> lock(allocation_mutex());
    view = pool->view;
  }
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, *ptr, bytes, api.correlation_id(), pool->device,
                     s->id, &view);
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, "cudaMallocAsync");
  return api.ret(malloc_async(api, ptr, bytes, nullptr, stream));
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, "cudaMallocFromPoolAsync");
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  return api.ret(malloc_async(api, ptr, bytes, reinterpret_cast<MemPool*>(pool), stream));
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, "cudaFreeAsync");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  bool in_bounds = false;
  Stream* s = Engine::instance().resolve(stream);
  if (s != nullptr && s->capture != nullptr) {
    if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return api.ret(refused);
    return api.ret(capture_free(*s, ptr));  // a memory free node
  }
  if (s != nullptr && classify(ptr, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    return api.ret(cudaErrorInvalidValue);
  }
  const uint32_t correlation = api.correlation_id();
  const uint32_t stream_id = s != nullptr ? s->id : CUPTI_INVALID_STREAM_ID;
  return api.ret(enqueue_host(api, stream, [ptr, correlation, stream_id] {
    Released r;
    if (release(ptr, 1u << CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &r)) {
      emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, ptr, r.bytes, correlation, r.device,
                         r.from_pool ? stream_id : CUPTI_INVALID_STREAM_ID, r.from_pool ? &r.pool : nullptr);
    }
  }, /*bookkeeping=*/true));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetDefaultMemPool_v11020, "cudaDeviceGetDefaultMemPool");
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(default_pool(device));
  return api.ret(cudaSuccess);
}

// Pool creation, destruction and trimming each write a MEMORY_POOL record (records.cpp).
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020, "cudaMemPoolCreate");
  if (pool == nullptr || props == nullptr) return api.ret(cudaErrorInvalidValue);
  if (props->location.type != cudaMemLocationTypeDevice || !Engine::instance().valid_device(props->location.id)) {
    return api.ret(cudaErrorInvalidDevice);
  }
  auto* p = new MemPool();
  p->device = props->location.id;
  p->view.address = reinterpret_cast<uint64_t>(p);
  *pool = reinterpret_cast<cudaMemPool_t>(p);
  emit_memory_pool_record(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, p->device, p->view, 0,
                          api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020, "cudaMemPoolDestroy");
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  auto* p = reinterpret_cast<MemPool*>(pool);
  if (p->is_default) return api.ret(cudaErrorInvalidValue);
  PoolView view;
  {
    std::lock_guard<std::mutex> lock(allocation_mutex());
    view = p->view;
  }
  emit_memory_pool_record(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED, p->device, view, 0,
                          api.correlation_id());
  // Allocations still out keep pointing at the view; the pool object stays (a few bytes).
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolSetAttribute_v11020, "cudaMemPoolSetAttribute");
  if (pool == nullptr || value == nullptr) return api.ret(cudaErrorInvalidValue);
  // The release threshold is kept (CUPTI reports it); the rest is accepted and not modelled,
  // as the simulator's pools keep nothing cached.
  if (attr == cudaMemPoolAttrReleaseThreshold) {
    std::lock_guard<std::mutex> lock(allocation_mutex());
    reinterpret_cast<MemPool*>(pool)->view.release_threshold = *static_cast<uint64_t*>(value);
  }
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolGetAttribute_v11020, "cudaMemPoolGetAttribute");
  if (pool == nullptr || value == nullptr) return api.ret(cudaErrorInvalidValue);
  const PoolView& v = reinterpret_cast<MemPool*>(pool)->view;
  std::lock_guard<std::mutex> lock(allocation_mutex());
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: *static_cast<uint64_t*>(value) = v.release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent: *static_cast<uint64_t*>(value) = v.utilized; break;
    // Every other attribute is a 64-bit value or smaller: 0 (nothing kept, no high-water mark).
    default: *static_cast<uint64_t*>(value) = 0; break;
  }
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t min_bytes_to_keep) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020, "cudaMemPoolTrimTo");
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  auto* p = reinterpret_cast<MemPool*>(pool);
  PoolView view;
  {
    std::lock_guard<std::mutex> lock(allocation_mutex());
    view = p->view;
  }
  emit_memory_pool_record(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, p->device, view, min_bytes_to_keep,
                          api.correlation_id());
  return api.ret(cudaSuccess);
}

}  // extern "C"
