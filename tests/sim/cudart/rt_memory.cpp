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
#include "allocations.h"
#include "device_activity.h"
#include "device_arena.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

struct Allocation {
  size_t bytes;
  CUpti_ActivityMemoryKind kind;  // DEVICE, MANAGED or PINNED
  bool owned = true;              // false: the program's memory, registered (cudaHostRegister)
  // The device that owns it (current at allocation, or the stream's for cudaMallocAsync): with
  // unified addressing the runtime knows every pointer's device, so a copy between two devices'
  // memory is a peer copy whatever direction it was given.
  int device = 0;
  PoolView* pool = nullptr;  // stream-ordered allocations: the pool it came from
};

std::mutex g_alloc_mu;
std::map<uintptr_t, Allocation>& allocations() {
  static auto* map = new std::map<uintptr_t, Allocation>();
  return *map;
}

}  // namespace

namespace gpuhook::sim {

std::mutex& allocation_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

// The kind of memory at p, and whether [p, p+bytes) lies inside that allocation; *device (when
// asked) the device owning it, -1 for host memory.
CUpti_ActivityMemoryKind classify(const void* p, size_t bytes, bool* in_bounds, int* device) {
  std::lock_guard<std::mutex> lock(allocation_mutex());
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations().upper_bound(addr);
  *in_bounds = true;
  if (device != nullptr) *device = -1;
  if (it == allocations().begin()) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  --it;
  if (addr >= it->first + it->second.bytes) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  *in_bounds = addr + bytes <= it->first + it->second.bytes;
  if (device != nullptr && it->second.kind != CUPTI_ACTIVITY_MEMORY_KIND_PINNED) *device = it->second.device;
  return it->second.kind;
}

void* allocate(size_t bytes, CUpti_ActivityMemoryKind kind, int device, PoolView* pool) {
  const size_t rounded = ((bytes == 0 ? 1 : bytes) + 255) & ~size_t{255};
  // Device memory outside pools may be exported (cudaIpcGetMemHandle takes "an existing device
  // memory allocation created with cudaMalloc"), so it lives where another process can map it.
  void* p = kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && pool == nullptr ? arena_alloc(rounded) : nullptr;
  if (p == nullptr) p = std::aligned_alloc(256, rounded);
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(allocation_mutex());
  allocations()[reinterpret_cast<uintptr_t>(p)] = {bytes, kind, true, device, pool};
  if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) note_device_bytes(device, static_cast<int64_t>(bytes));
  if (pool != nullptr) {
    pool->utilized += bytes;
    pool->size = pool->utilized;
  }
  return p;
}

// Releases p when it is an allocation of one of `kinds` (a bit per CUpti_ActivityMemoryKind).
bool release(void* p, unsigned kinds, Released* out) {
  // A deferred move may still write or read it (Engine::deferrable).
  Engine::instance().settle();
  std::lock_guard<std::mutex> lock(allocation_mutex());
  auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations().end() || (kinds & (1u << it->second.kind)) == 0) return false;
  out->bytes = it->second.bytes;
  out->kind = it->second.kind;
  out->device = it->second.device;
  if (PoolView* pool = it->second.pool) {
    pool->utilized -= it->second.bytes;
    pool->size = pool->utilized;
    out->from_pool = true;
    out->pool = *pool;
  }
  const bool owned = it->second.owned;
  if (it->second.kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
    note_device_bytes(it->second.device, -static_cast<int64_t>(it->second.bytes));
  allocations().erase(it);
  if (owned && !arena_free(p)) std::free(p);
  return true;
}

bool find_allocation(const void* p, void** base, size_t* bytes, int* device, bool* pooled) {
  std::lock_guard<std::mutex> lock(allocation_mutex());
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations().upper_bound(addr);
  if (it == allocations().begin()) return false;
  --it;
  if (addr >= it->first + it->second.bytes) return false;
  *base = reinterpret_cast<void*>(it->first);
  *bytes = it->second.bytes;
  *device = it->second.device;
  *pooled = it->second.pool != nullptr || !it->second.owned;
  return it->second.kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
}

bool track(void* p, size_t bytes, CUpti_ActivityMemoryKind kind, int device) {
  std::lock_guard<std::mutex> lock(allocation_mutex());
  if (!allocations().emplace(reinterpret_cast<uintptr_t>(p), Allocation{bytes, kind, false, device}).second) return false;
  if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) note_device_bytes(device, static_cast<int64_t>(bytes));
  return true;
}

bool release(void* p, CUpti_ActivityMemoryKind kind, size_t* bytes) {
  Released r;
  if (!release(p, 1u << kind, &r)) return false;
  *bytes = r.bytes;
  return true;
}

// Memory a device reaches as its own: device memory, and managed memory (which the device
// and the host both reach, so it passes as either end of a copy).
bool is_device(CUpti_ActivityMemoryKind k) {
  return k == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || k == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
}
bool is_host_reachable(CUpti_ActivityMemoryKind k) { return k != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE; }

}  // namespace gpuhook::sim

namespace {

// cudaMemPrefetchAsync / cudaMemAdvise: the range must lie in one managed allocation, and a
// device location must name a device.
cudaError_t check_managed_range(const void* ptr, size_t bytes, const cudaMemLocation& location) {
  bool in_bounds = false;
  if (ptr == nullptr || classify(ptr, bytes, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_MANAGED || !in_bounds) {
    return cudaErrorInvalidValue;
  }
  if (location.type == cudaMemLocationTypeDevice && !Engine::instance().valid_device(location.id)) {
    return cudaErrorInvalidDevice;
  }
  return cudaSuccess;
}

}  // namespace

namespace gpuhook::sim {

cudaError_t build_copy_op(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, Op& op, bool* pageable) {
  if (bytes != 0 && (dst == nullptr || src == nullptr)) return cudaErrorInvalidValue;
  bool dst_ok = true;
  bool src_ok = true;
  int dst_device = -1;
  int src_device = -1;
  const auto dst_kind = classify(dst, bytes, &dst_ok, &dst_device);
  const auto src_kind = classify(src, bytes, &src_ok, &src_device);
  if (!dst_ok || !src_ok) return cudaErrorInvalidValue;
  const bool dst_dev = is_device(dst_kind);
  const bool src_dev = is_device(src_kind);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (!is_host_reachable(src_kind) || !dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToHost:
      if (!src_dev || !is_host_reachable(dst_kind)) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyDeviceToDevice:
      if (!src_dev || !dst_dev) return cudaErrorInvalidValue;
      break;
    case cudaMemcpyHostToHost:
      if (!is_host_reachable(src_kind) || !is_host_reachable(dst_kind)) return cudaErrorInvalidValue;
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
  if (src_dev && dst_dev && src_device != dst_device) {
    // Two devices' memory: "A peer to peer memory copy across different devices"
    // (CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, cupti_activity.h), run by the stream's device.
    op.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    op.engine = CopyEngine::kDeviceToDevice;
    op.src_device = src_device;
    op.dst_device = dst_device;
    gbps = c.peer_gbps;
  } else if (src_dev && dst_dev) {
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

namespace gpuhook::sim {

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
  // capture_refusal_sync in graph.h). An async copy from or to pageable memory is captured as a
  // memcpy node like any other, as CUDA does (simpleCudaGraphs copies its result into a stack
  // variable so); the wait below then returns at once, since nothing runs during a capture.
  if (!async) {
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

}  // namespace gpuhook::sim

namespace {

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
  // "Any device memory subsequently allocated from the host thread using cudaMalloc() will be
  // physically resident on that device" (CUDA Programming Guide, "Device Selection").
  const int device = current_device();
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, *ptr, bytes, api.correlation_id(), device);
  return api.ret(cudaSuccess);
}

// Managed memory is host memory both sides reach, recorded as MANAGED (MEMORY2). Where its
// pages live is not modelled: no migration, no page faults, no unified memory counters.
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, "cudaMallocManaged");
  // "flags: Must be either cudaMemAttachGlobal or cudaMemAttachHost"; "If size is 0,
  // cudaMallocManaged returns cudaErrorInvalidValue" (cuda_runtime_api.h).
  if (ptr == nullptr || bytes == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)) {
    return api.ret(cudaErrorInvalidValue);
  }
  const int device = current_device();
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, device);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, *ptr, bytes, api.correlation_id(), device);
  return api.ret(cudaSuccess);
}

cudaError_t cudaFree(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  if (const cudaError_t refused = capture_refusal_unsafe(); refused != cudaSuccess) return api.ret(refused);
  // cudaFree synchronises; here with every device, since no queued op anywhere (a peer copy
  // too) may still use the memory the simulator is about to give back.
  Engine::instance().synchronize_device(-1);
  Released r;
  if (!release(ptr, (1u << CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) | (1u << CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), &r)) {
    return api.ret(cudaErrorInvalidValue);
  }
  emit_memory_record(false, r.kind, ptr, r.bytes, api.correlation_id(), r.device);
  return api.ret(cudaSuccess);
}

// Registered host memory is pinned for copies; the device reaches it at the same address.
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, "cudaHostRegister");
  if (ptr == nullptr || bytes == 0) return api.ret(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lock(allocation_mutex());
    auto [it, added] = allocations().emplace(reinterpret_cast<uintptr_t>(ptr),
                                             Allocation{bytes, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false});
    if (!added) return api.ret(cudaErrorHostMemoryAlreadyRegistered);
  }
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id(), current_device());
  return api.ret(cudaSuccess);
}

cudaError_t cudaHostUnregister(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, "cudaHostUnregister");
  std::lock_guard<std::mutex> lock(allocation_mutex());
  auto it = allocations().find(reinterpret_cast<uintptr_t>(ptr));
  if (it == allocations().end() || it->second.owned) return api.ret(cudaErrorHostMemoryNotRegistered);
  const size_t bytes = it->second.bytes;
  allocations().erase(it);
  emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id(), current_device());
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
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, *ptr, bytes, api.correlation_id(), current_device());
  return api.ret(cudaSuccess);
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, "cudaHostAlloc");
  if (ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  *ptr = allocate(bytes, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  if (*ptr == nullptr) return api.ret(cudaErrorMemoryAllocation);
  emit_memory_record(true, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, *ptr, bytes, api.correlation_id(), current_device());
  return api.ret(cudaSuccess);
}

cudaError_t cudaFreeHost(void* ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost");
  if (ptr == nullptr) return api.ret(cudaSuccess);
  Engine::instance().synchronize_device(-1);
  size_t bytes = 0;
  if (!release(ptr, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, &bytes)) return api.ret(cudaErrorInvalidValue);
  emit_memory_record(false, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, ptr, bytes, api.correlation_id(), current_device());
  return api.ret(cudaSuccess);
}

// Accepted and checked, not modelled: where managed pages live is not simulated, so a prefetch
// moves nothing and takes no time. CUDA 13's signature (a cudaMemLocation, cuda_runtime_api.h).
// CUPTI shows a prefetch only in unified memory counter records, which the simulator does not
// write, so there is no record beyond the API call.
cudaError_t cudaMemPrefetchAsync(const void* ptr, size_t bytes, cudaMemLocation location, unsigned int flags,
                                 cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020, "cudaMemPrefetchAsync");
  (void)flags;
  if (Engine::instance().resolve(stream) == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  return api.ret(check_managed_range(ptr, bytes, location));
}

cudaError_t cudaMemAdvise(const void* ptr, size_t bytes, cudaMemoryAdvise advice, cudaMemLocation location) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020, "cudaMemAdvise");
  (void)advice;
  return api.ret(check_managed_range(ptr, bytes, location));
}

namespace {

// dst and src must be device memory of dstDevice and srcDevice ("dst is the base device pointer
// of the destination memory and dstDevice is the destination device", cuda_runtime_api.h).
cudaError_t check_peer_pointers(void* dst, int dst_device, const void* src, int src_device, size_t bytes) {
  Engine& engine = Engine::instance();
  if (!engine.valid_device(dst_device) || !engine.valid_device(src_device)) return cudaErrorInvalidDevice;
  bool dst_ok = false;
  bool src_ok = false;
  int dst_owner = -1;
  int src_owner = -1;
  if (!is_device(classify(dst, bytes, &dst_ok, &dst_owner)) || !is_device(classify(src, bytes, &src_ok, &src_owner)) ||
      !dst_ok || !src_ok || dst_owner != dst_device || src_owner != src_device) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

}  // namespace

// "asynchronous with respect to the host, but serialized with respect all pending and future
// asynchronous work in to the current device, srcDevice, and dstDevice" (cuda_runtime_api.h):
// modelled by waiting for both devices' work first and for the copy after (its \note_sync).
cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t bytes) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, "cudaMemcpyPeer");
  if (const cudaError_t err = check_peer_pointers(dst, dst_device, src, src_device, bytes); err != cudaSuccess) {
    return api.ret(err);
  }
  Engine::instance().synchronize_device(src_device);
  Engine::instance().synchronize_device(dst_device);
  return api.ret(copy(api, dst, src, bytes, cudaMemcpyDefault, nullptr, false));
}

// "asynchronous with respect to the host and all work on other devices".
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, "cudaMemcpyPeerAsync");
  if (const cudaError_t err = check_peer_pointers(dst, dst_device, src, src_device, bytes); err != cudaSuccess) {
    return api.ret(err);
  }
  return api.ret(copy(api, dst, src, bytes, cudaMemcpyDefault, stream, true));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaMemcpy_v3020_params params{dst, src, bytes, kind};
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, &params);
  return api.ret(copy(api, dst, src, bytes, kind, nullptr, false));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  const cudaMemcpyAsync_v3020_params params{dst, src, bytes, kind, stream};
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", nullptr, CUPTI_CB_DOMAIN_RUNTIME_API,
               &params);
  return api.ret(copy(api, dst, src, bytes, kind, stream, true));
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  const cudaMemset_v3020_params params{dst, value, bytes};
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, &params);
  return api.ret(set(api, dst, value, bytes, nullptr, false));
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  const cudaMemsetAsync_v3020_params params{dst, value, bytes, stream};
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", nullptr, CUPTI_CB_DOMAIN_RUNTIME_API,
               &params);
  return api.ret(set(api, dst, value, bytes, stream, true));
}

}  // extern "C"
