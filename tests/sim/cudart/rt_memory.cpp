// Memory of the simulated runtime. Device memory is host memory the simulator tracks, so a
// copy or memset really moves bytes and a host twin can compute on device pointers. Copies
// wait for the copy engine of their direction; the host blocks on copies from pageable memory.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "ops.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

struct Allocation {
  size_t bytes;
  CUpti_ActivityMemoryKind kind;  // DEVICE or PINNED
  bool owned = true;              // false: the program's memory, registered (cudaHostRegister)
};

std::mutex g_alloc_mu;
std::map<uintptr_t, Allocation>& allocations() {
  static auto* map = new std::map<uintptr_t, Allocation>();
  return *map;
}

// The kind of memory at p, and whether [p, p+bytes) lies inside that allocation.
CUpti_ActivityMemoryKind classify(const void* p, size_t bytes, bool* in_bounds) {
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations().upper_bound(addr);
  *in_bounds = true;
  if (it == allocations().begin()) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  --it;
  if (addr >= it->first + it->second.bytes) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  *in_bounds = addr + bytes <= it->first + it->second.bytes;
  return it->second.kind;
}

void* allocate(size_t bytes, CUpti_ActivityMemoryKind kind) {
  const size_t rounded = ((bytes == 0 ? 1 : bytes) + 255) & ~size_t{255};
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  allocations()[reinterpret_cast<uintptr_t>(p)] = {bytes, kind};
  return p;
}

bool release(void* p, CUpti_ActivityMemoryKind kind, size_t* bytes) {
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations().end() || it->second.kind != kind) return false;
  *bytes = it->second.bytes;
  const bool owned = it->second.owned;
  allocations().erase(it);
  if (owned) std::free(p);
  return true;
}

bool is_device(CUpti_ActivityMemoryKind k) { return k == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE; }

}  // namespace

namespace gpuhook::sim {

cudaError_t build_copy_op(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, Op& op, bool* pageable) {
  if (bytes != 0 && (dst == nullptr || src == nullptr)) return cudaErrorInvalidValue;
  bool dst_ok = true;
  bool src_ok = true;
  const auto dst_kind = classify(dst, bytes, &dst_ok);
  const auto src_kind = classify(src, bytes, &src_ok);
  if (!dst_ok || !src_ok) return cudaErrorInvalidValue;
  const bool dst_dev = is_device(dst_kind);
  const bool src_dev = is_device(src_kind);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (src_dev || !dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToHost:
      if (!src_dev || dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToDevice:
      if (!src_dev || !dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyHostToHost:
      if (src_dev || dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  const SimConfig& c = config();
  op.kind = OpKind::kMemcpy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  op.src_kind = static_cast<uint8_t>(src_kind);
  op.dst_kind = static_cast<uint8_t>(dst_kind);
  *pageable = (!src_dev && src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) ||
              (!dst_dev && dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  double gbps = *pageable ? c.pageable_gbps : c.pinned_gbps;
  if (src_dev && dst_dev) {
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    op.engine = CopyEngine::kDeviceToDevice;
    gbps = c.device_gbps;
  } else if (dst_dev) {
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    op.engine = CopyEngine::kHostToDevice;
  } else if (src_dev) {
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    op.engine = CopyEngine::kDeviceToHost;
  } else {
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    op.engine = CopyEngine::kNone;
  }
  op.duration_ns = c.copy_fixed_ns + static_cast<uint64_t>(static_cast<double>(bytes) / gbps);
  return cudaSuccess;
}

cudaError_t build_set_op(void* dst, int value, size_t bytes, Op& op) {
  bool ok = true;
  const auto kind = classify(dst, bytes, &ok);
  if (dst == nullptr || !ok || !is_device(kind)) return cudaErrorInvalidValue;
  op.kind = OpKind::kMemset;
  op.dst = dst;
  op.value = value;
  op.bytes = bytes;
  op.dst_kind = static_cast<uint8_t>(kind);
  op.duration_ns = 1000 + static_cast<uint64_t>(static_cast<double>(bytes) / config().device_gbps);
  return cudaSuccess;
}

}  // namespace gpuhook::sim

namespace {

cudaError_t copy(ApiScope& api, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async) {
  auto op = std::make_unique<Op>();
  bool pageable = false;
  if (const cudaError_t err = build_copy_op(dst, src, bytes, kind, *op, &pageable); err != cudaSuccess) return err;
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return refused;
  // A synchronous copy waits for its work, which a capture cannot give it (the capture rules,
  // capture_refusal_sync in graph.h).
  if (!async || pageable) {
    if (const cudaError_t refused = capture_refusal_sync(s); refused != cudaSuccess) return refused;
  }
  op->async = async;
  op->correlation_id = api.correlation_id();
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns + config().submit_ns;
  CompletionPtr done = engine.enqueue(s, std::move(op));
  // A synchronous copy, and an async one from or to pageable memory (it must go through a
  // staging buffer), return only when the data has arrived.
  if (!async || pageable) engine.wait(done);
  return cudaSuccess;
}

cudaError_t set(ApiScope& api, void* dst, int value, size_t bytes, cudaStream_t stream, bool async) {
  auto op = std::make_unique<Op>();
  if (const cudaError_t err = build_set_op(dst, value, bytes, *op); err != cudaSuccess) return err;
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return refused;
  op->async = async;
  op->correlation_id = api.correlation_id();
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns + config().submit_ns;
  engine.enqueue(s, std::move(op));  // asynchronous for device memory, even cudaMemset
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc");
  if (ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  // "some actions, such as a call to cudaMalloc, may be unsafe" during stream capture, and the
  // thread's capture mode decides (cudaThreadExchangeStreamCaptureMode, cuda_runtime_api.h).
  if (const cudaError_t refused = capture_refusal_unsafe(); refused != cudaSuccess) return api.ret(refused);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, *ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaFree(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  if (const cudaError_t refused = capture_refusal_unsafe(); refused != cudaSuccess) return api.ret(refused);
  Engine::instance().synchronize_device();  // cudaFree synchronises, and no queued op may still use it
  size_t bytes = 0;
  if (!release(ptr, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &bytes)) return api.ret(cudaErrorInvalidValue);
  emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

// Stream-ordered allocation: the memory is there at once (a pool hands it out), and a free
// happens when the stream reaches it, so earlier work on the stream may still use it.
// Pools are one per device plus those created; their handles only need to be distinct.
struct MemPool {
  int device = 0;
};

cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, "cudaMallocAsync");
  if (ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  if (Engine::instance().resolve(stream) == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, *ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) {
  if (pool == nullptr) return cudaErrorInvalidValue;
  return cudaMallocAsync(ptr, bytes, stream);
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, "cudaFreeAsync");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  bool in_bounds = false;
  if (Engine::instance().resolve(stream) != nullptr &&
      classify(ptr, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    return api.ret(cudaErrorInvalidValue);
  }
  const uint32_t correlation = api.correlation_id();
  return api.ret(enqueue_host(api, stream, [ptr, correlation] {
    size_t bytes = 0;
    if (release(ptr, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &bytes)) {
      emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, ptr, bytes, correlation);
    }
  }));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetDefaultMemPool_v11020, "cudaDeviceGetDefaultMemPool");
  static MemPool default_pool;
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  if (device != 0) return api.ret(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(&default_pool);
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolCreate_v11020, "cudaMemPoolCreate");
  if (pool == nullptr || props == nullptr) return api.ret(cudaErrorInvalidValue);
  if (props->location.id != 0) return api.ret(cudaErrorInvalidDevice);
  *pool = reinterpret_cast<cudaMemPool_t>(new MemPool());
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolDestroy_v11020, "cudaMemPoolDestroy");
  if (pool == nullptr) return api.ret(cudaErrorInvalidValue);
  cudaMemPool_t def = nullptr;
  if (cudaDeviceGetDefaultMemPool(&def, 0) == cudaSuccess && def == pool) return api.ret(cudaErrorInvalidValue);
  delete reinterpret_cast<MemPool*>(pool);
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolSetAttribute_v11020, "cudaMemPoolSetAttribute");
  // Accepted and not modelled: the simulator's pools keep nothing cached.
  return api.ret(pool == nullptr || value == nullptr ? cudaErrorInvalidValue : cudaSuccess);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolGetAttribute_v11020, "cudaMemPoolGetAttribute");
  if (pool == nullptr || value == nullptr) return api.ret(cudaErrorInvalidValue);
  // Every attribute is a 64-bit value or smaller: 0 (nothing reserved, used, or kept).
  *static_cast<uint64_t*>(value) = 0;
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPoolTrimTo_v11020, "cudaMemPoolTrimTo");
  return api.ret(pool == nullptr ? cudaErrorInvalidValue : cudaSuccess);
}

// Registered host memory is pinned for copies; the device reaches it at the same address.
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, "cudaHostRegister");
  if (ptr == nullptr || bytes == 0) return api.ret(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    auto [it, added] = allocations().emplace(reinterpret_cast<uintptr_t>(ptr),
                                             Allocation{bytes, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false});
    if (!added) return api.ret(cudaErrorHostMemoryAlreadyRegistered);
  }
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaHostUnregister(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, "cudaHostUnregister");
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  auto it = allocations().find(reinterpret_cast<uintptr_t>(ptr));
  if (it == allocations().end() || it->second.owned) return api.ret(cudaErrorHostMemoryNotRegistered);
  const size_t bytes = it->second.bytes;
  allocations().erase(it);
  emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostGetDevicePointer_v3020, "cudaHostGetDevicePointer");
  if (device_ptr == nullptr || flags != 0) return api.ret(cudaErrorInvalidValue);
  bool in_bounds = false;
  if (classify(host_ptr, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_PINNED) return api.ret(cudaErrorInvalidValue);
  *device_ptr = host_ptr;  // unified addressing: the same address
  return api.ret(cudaSuccess);
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, "cudaMallocHost");
  if (ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, *ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, "cudaHostAlloc");
  if (ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, *ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaFreeHost(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  Engine::instance().synchronize_device();
  size_t bytes = 0;
  if (!release(ptr, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, &bytes)) return api.ret(cudaErrorInvalidValue);
  emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id());
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy");
  return api.ret(copy(api, dst, src, bytes, kind, nullptr, false));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync");
  return api.ret(copy(api, dst, src, bytes, kind, stream, true));
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset");
  return api.ret(set(api, dst, value, bytes, nullptr, false));
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync");
  return api.ret(set(api, dst, value, bytes, stream, true));
}

}  // extern "C"
