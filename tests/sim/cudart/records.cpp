#include "records.h"
#include "stamps.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../sim_bridge.h"
#include "config.h"
#include "device_model.h"

namespace gpuhook::sim {
namespace {

std::atomic<uint32_t> g_next_correlation{1};

// Initialisation state: the thread that initialises may re-enter the runtime from the
// injection library's InitializeInjection(); others wait until it is done.
std::once_flag g_init_once;
thread_local bool t_initializing = false;

void load_injection() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "gpuhook-sim: cannot load CUDA_INJECTION64_PATH=%s: %s\n", path, dlerror());
    return;
  }
  using InitFn = int (*)(void);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "InitializeInjection"));
  if (init == nullptr) {
    std::fprintf(stderr, "gpuhook-sim: %s has no InitializeInjection()\n", path);
    return;
  }
  init();
}

// CUPTI_ACTIVITY_KIND_DEVICE (cupti_activity.h, CUpti_ActivityDevice5): one record per device,
// written when the runtime initialises, so a client learns the device without asking
// the runtime (which a static cudart does not expose to it).
void emit_device_record(int device) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_DEVICE)) return;
  CUpti_ActivityDevice5 r{};
  r.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  r.globalMemorySize = model::kGlobalMemBytes;
  r.numThreadsPerWarp = model::kWarpSize;
  r.coreClockRate = 1980000;  // kHz, as cudaDevAttrClockRate answers
  r.numMemcpyEngines = 2;
  r.numMultiprocessors = model::kSmCount;
  r.maxWarpsPerMultiprocessor = model::kMaxWarpsPerSm;
  r.maxBlocksPerMultiprocessor = model::kMaxBlocksPerSm;
  r.maxSharedMemoryPerMultiprocessor = static_cast<uint32_t>(model::kSharedPerSmBytes);
  r.maxRegistersPerMultiprocessor = model::kRegistersPerSm;
  r.maxRegistersPerBlock = 64 * 1024;
  r.maxSharedMemoryPerBlock = static_cast<uint32_t>(model::kSharedPerBlockBytes);
  r.maxThreadsPerBlock = model::kMaxThreadsPerBlock;
  r.maxBlockDimX = 1024;
  r.maxBlockDimY = 1024;
  r.maxBlockDimZ = 64;
  r.maxGridDimX = 2147483647u;
  r.maxGridDimY = 65535;
  r.maxGridDimZ = 65535;
  r.computeCapabilityMajor = 9;
  r.computeCapabilityMinor = 0;
  r.id = static_cast<uint32_t>(device);
  // Distinct per device, as real UUIDs are: "gpuhook-sim-dev" and the ordinal.
  std::memcpy(r.uuid.bytes, "gpuhook-sim-dev", 15);
  r.uuid.bytes[15] = static_cast<char>(device);
  r.name = "gpuhook simulator (H200 model)";  // CUPTI owns the string, valid for the process
  r.isCudaVisible = 1;
  gpuhook_sim_emit(&r, sizeof r);
}

}  // namespace

uint32_t current_process_id() {
  // getpid() is a real syscall since glibc 2.25 (620 ns on the build machine), and it
  // ran once per runtime record: most of the simulated CUPTI's cost per launch. CUPTI
  // itself does not ask the kernel per record; a fork child clears the cache.
  static std::atomic<uint32_t> pid{0};
  uint32_t p = pid.load(std::memory_order_relaxed);
  if (p != 0) return p;
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, [] { pid.store(0, std::memory_order_relaxed); }); });
  p = static_cast<uint32_t>(getpid());
  pid.store(p, std::memory_order_relaxed);
  return p;
}

cudaError_t& thread_last_error() {
  thread_local cudaError_t last = cudaSuccess;
  return last;
}

void ensure_initialized() {
  if (t_initializing) return;
  std::call_once(g_init_once, [] {
    t_initializing = true;
    const SimConfig& c = config();
    Engine::instance();
    if (c.verbose) {
      std::fprintf(stderr,
                   "gpuhook-sim: this is the gpuhook CPU simulator of the CUDA runtime, not a GPU "
                   "(costs: %s)\n",
                   c.costs_path.empty() ? "defaults" : c.costs_path.c_str());
    }
    load_injection();
    for (int d = 0; d < Engine::instance().device_count(); ++d) emit_device_record(d);
    t_initializing = false;
  });
}

ApiScope::ApiScope(CUpti_CallbackId cbid, const char* name, const char* symbol,
                   CUpti_CallbackDomain domain, const void* params)
    : cbid_(cbid), domain_(domain), name_(name), symbol_(symbol), params_(params) {
  ensure_initialized();
  correlation_id_ = g_next_correlation.fetch_add(1);
  entry_ns_ = gpuhook_sim_now_ns();
  // Subscriber callbacks are simulated for the runtime domain only.
  if (domain_ != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  gpuhook_sim_api_callback(CUPTI_API_ENTER, cbid_, name_, symbol_, correlation_id_,
                           &correlation_data_, nullptr, params_);
}

cudaError_t ApiScope::ret(cudaError_t err) {
  result_ = err;
  // A driver call leaves the runtime's sticky last error alone.
  if (domain_ == CUPTI_CB_DOMAIN_RUNTIME_API && err != cudaSuccess && err != cudaErrorNotReady) {
    thread_last_error() = err;
  }
  return err;
}

ApiScope::~ApiScope() {
  const uint64_t exit_ns = gpuhook_sim_now_ns();
  const bool driver = domain_ == CUPTI_CB_DOMAIN_DRIVER_API;
  if (!driver) {
    gpuhook_sim_api_callback(CUPTI_API_EXIT, cbid_, name_, symbol_, correlation_id_,
                             &correlation_data_, &result_, params_);
  }
  if (!(driver ? gpuhook_sim_driver_api_enabled(cbid_) : gpuhook_sim_runtime_api_enabled(cbid_))) return;
  gpuhook_sim_emit_external_correlations(correlation_id_);
  CUpti_ActivityAPI r{};
  r.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  r.cbid = cbid_;
  r.start = entry_ns_;
  r.end = exit_ns;
  r.processId = current_process_id();
  r.threadId = gpuhook_sim_api_thread_id();
  r.correlationId = correlation_id_;
  r.returnValue = static_cast<uint32_t>(result_);
  gpuhook_sim_emit(&r, sizeof r);
}

uint64_t reserve_op_record(const Op& op) {
  size_t bytes = 0;
  switch (op.kind) {
    case OpKind::kKernel:
      if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
          gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
        bytes = sizeof(CUpti_ActivityKernel10);
      }
      break;
    case OpKind::kMemcpy:
      if (op.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP) {
        if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) bytes = sizeof(CUpti_ActivityMemcpyPtoP4);
      } else if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
        bytes = sizeof(CUpti_ActivityMemcpy6);
      }
      break;
    case OpKind::kMemset:
      if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET)) bytes = sizeof(CUpti_ActivityMemset4);
      break;
    default: break;
  }
  return bytes == 0 ? 0 : gpuhook_sim_reserve(bytes);
}

// The fields CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 share.
template <typename Record>
void fill_copy(Record& r, CUpti_ActivityKind kind, const Op& op, uint64_t start_ns, uint64_t end_ns, uint32_t device_id,
               uint32_t context_id, uint32_t stream_id) {
  r.kind = kind;
  r.copyKind = op.copy_kind;
  r.srcKind = op.src_kind;
  r.dstKind = op.dst_kind;
  r.flags = op.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
  r.bytes = op.bytes;
  r.start = start_ns;
  r.end = end_ns;
  r.deviceId = device_id;
  r.contextId = context_id;
  r.streamId = stream_id;
  r.correlationId = op.correlation_id;
  r.channelID = CUPTI_INVALID_CHANNEL_ID;
  r.channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
  r.graphId = op.graph_id;
  r.graphNodeId = op.graph_id != 0 ? op.graph_node_id : 0;
}

void emit_op_record(const Stream& s, const Op& op, uint64_t start_ns, uint64_t end_ns) {
  auto put = [&op](const void* record, size_t bytes) {
    if (op.record_slot != 0) gpuhook_sim_complete(op.record_slot, record, bytes);
    else gpuhook_sim_emit(record, bytes);
  };
  const bool latency = gpuhook_sim_latency_timestamps_enabled() != 0;
  const auto device_id = static_cast<uint32_t>(s.device);
  const uint32_t context_id = context_id_of(s.device);
  const uint32_t stream_id = op.record_stream_id != 0 ? op.record_stream_id : s.id;
  switch (op.kind) {
    case OpKind::kKernel: {
      // Every other kernel's submitted stamp is read late (kSubmittedClockErrorNs says why).
      const uint64_t submitted_error = op.seq % 2 == 0 ? kSubmittedClockErrorNs : 0;
      CUpti_ActivityKind kind;
      if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
        kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      } else if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
        kind = CUPTI_ACTIVITY_KIND_KERNEL;
      } else if (op.record_slot != 0) {
        kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;  // placed at launch, while it was on
      } else {
        return;
      }
      CUpti_ActivityKernel10 r{};
      r.kind = kind;
      r.registersPerThread = static_cast<uint16_t>(op.registers_per_thread);
      r.start = start_ns;
      r.end = end_ns;
      r.completed = CUPTI_TIMESTAMP_UNKNOWN;
      r.deviceId = device_id;
      r.contextId = context_id;
      // A graph node reports the stream the graph was launched into, as GraphTrace2.streamId
      // does ("the stream where the graph is being launched", cupti_activity.h); that per-node
      // records do the same for branches the driver runs elsewhere is not verified on a GPU.
      r.streamId = stream_id;
      r.gridX = static_cast<int32_t>(op.grid.x);
      r.gridY = static_cast<int32_t>(op.grid.y);
      r.gridZ = static_cast<int32_t>(op.grid.z);
      r.blockX = static_cast<int32_t>(op.block.x);
      r.blockY = static_cast<int32_t>(op.block.y);
      r.blockZ = static_cast<int32_t>(op.block.z);
      r.staticSharedMemory = 0;
      r.dynamicSharedMemory = static_cast<int32_t>(op.dynamic_smem_bytes);
      r.correlationId = op.correlation_id;
      r.gridId = static_cast<int64_t>(op.seq);
      r.name = op.kernel != nullptr ? op.kernel->name.c_str() : "unknown";
      // CUPTI fills queued/submitted only when latency timestamps were enabled.
      // Graph kernels have none: CUPTI_TIMESTAMP_UNKNOWN, "could not be collected"
      // (cupti_activity.h, CUpti_ActivityKernel10 queued/submitted).
      const bool stamped = latency && op.graph_id == 0;
      r.queued = stamped ? op.queued_ns : CUPTI_TIMESTAMP_UNKNOWN;
      r.submitted = stamped ? op.submitted_ns + submitted_error : CUPTI_TIMESTAMP_UNKNOWN;
      r.graphId = op.graph_id;
      r.graphNodeId = op.graph_node_id;
      r.launchType = op.launch_type;
      r.channelID = CUPTI_INVALID_CHANNEL_ID;
      r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
      put(&r, sizeof r);
      break;
    }
    case OpKind::kMemcpy: {
      if (op.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP) {
        // A copy between two devices' memory is written as CUPTI_ACTIVITY_KIND_MEMCPY2 only, "A
        // peer to peer memory copy. The corresponding activity record structure is
        // CUpti_ActivityMemcpyPtoP4" (cupti_activity.h); deviceId/contextId are where it runs
        // (the stream's device), src/dst ids the memory's owners.
        if (op.record_slot == 0 && !gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) return;
        CUpti_ActivityMemcpyPtoP4 r{};
        fill_copy(r, CUPTI_ACTIVITY_KIND_MEMCPY2, op, start_ns, end_ns, device_id, context_id, stream_id);
        r.srcDeviceId = static_cast<uint32_t>(op.src_device);
        r.srcContextId = context_id_of(op.src_device);
        r.dstDeviceId = static_cast<uint32_t>(op.dst_device);
        r.dstContextId = context_id_of(op.dst_device);
        put(&r, sizeof r);
        break;
      }
      if (op.record_slot == 0 && !gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
      CUpti_ActivityMemcpy6 r{};
      fill_copy(r, CUPTI_ACTIVITY_KIND_MEMCPY, op, start_ns, end_ns, device_id, context_id, stream_id);
      r.copyCount = 1;
      put(&r, sizeof r);
      break;
    }
    case OpKind::kMemset: {
      if (op.record_slot == 0 && !gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET)) return;
      CUpti_ActivityMemset4 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      r.value = static_cast<uint32_t>(op.value);
      r.bytes = op.bytes;
      r.start = start_ns;
      r.end = end_ns;
      r.deviceId = device_id;
      r.contextId = context_id;
      r.streamId = stream_id;
      r.correlationId = op.correlation_id;
      r.flags = op.async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
      r.memoryKind = op.dst_kind;
      r.graphId = op.graph_id;
      r.graphNodeId = op.graph_node_id;
      r.channelID = CUPTI_INVALID_CHANNEL_ID;
      r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
      put(&r, sizeof r);
      break;
    }
    default: break;
  }
}

void emit_stream_record(int device, uint32_t stream_id, int priority, bool non_blocking, uint32_t correlation_id) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_STREAM)) return;
  CUpti_ActivityStream r{};
  r.kind = CUPTI_ACTIVITY_KIND_STREAM;
  r.contextId = context_id_of(device);
  r.streamId = stream_id;
  r.priority = static_cast<uint32_t>(priority);  // "the clamped priority": 0 or negative
  r.flag = non_blocking ? CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING : CUPTI_ACTIVITY_STREAM_CREATE_FLAG_DEFAULT;
  r.correlationId = correlation_id;
  gpuhook_sim_emit(&r, sizeof r);
}

void emit_cuda_event_record(int device, uint32_t event_id, uint32_t stream_id, uint32_t correlation_id) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_CUDA_EVENT)) return;
  CUpti_ActivityCudaEvent2 r{};
  r.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
  r.correlationId = correlation_id;
  r.contextId = context_id_of(device);
  r.streamId = stream_id;
  r.eventId = event_id;
  r.deviceId = static_cast<uint32_t>(device);
  r.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  gpuhook_sim_emit(&r, sizeof r);
}

void emit_sync_record(CUpti_ActivitySynchronizationType type, uint32_t correlation_id,
                      uint64_t start_ns, uint64_t end_ns, uint32_t stream_id, uint32_t event_id,
                      uint32_t return_value, int device) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) return;
  CUpti_ActivitySynchronization2 r{};
  r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  r.type = type;
  r.start = start_ns;
  r.end = end_ns;
  r.correlationId = correlation_id;
  r.contextId = context_id_of(device < 0 ? current_device() : device);
  r.streamId = stream_id;
  r.cudaEventId = event_id;
  r.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  r.returnValue = return_value;
  gpuhook_sim_emit(&r, sizeof r);
}

void emit_query_record(CUpti_ActivitySynchronizationType type, uint32_t correlation_id,
                       uint64_t start_ns, uint32_t stream_id, uint32_t event_id, bool ready, int device) {
  // By default every query is recorded; cuptiActivityEnableAllSyncRecords(0) keeps only the
  // ones whose work had completed.
  if (!ready && !gpuhook_sim_all_sync_records()) return;
  constexpr uint32_t kCudaErrorNotReady = 600;  // CUDA_ERROR_NOT_READY, a CUresult
  emit_sync_record(type, correlation_id, start_ns, gpuhook_sim_now_ns(), stream_id, event_id,
                   ready ? 0 : kCudaErrorNotReady, device);
}

void emit_memory_record(bool allocation, CUpti_ActivityMemoryKind kind, const void* address,
                        size_t bytes, uint32_t correlation_id, int device, uint32_t stream_id,
                        const PoolView* pool, uint64_t timestamp_ns) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2)) return;
  CUpti_ActivityMemory4 r{};
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  r.memoryOperationType = allocation ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                     : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  r.memoryKind = kind;
  r.correlationId = correlation_id;
  r.address = reinterpret_cast<uint64_t>(address);
  r.bytes = bytes;
  r.timestamp = timestamp_ns != 0 ? timestamp_ns : gpuhook_sim_now_ns();
  r.processId = current_process_id();
  r.deviceId = static_cast<uint32_t>(device);
  r.contextId = context_id_of(device);
  // "If memory operation is not async, streamId is set to CUPTI_INVALID_STREAM_ID"; "isAsync is
  // set if memory operation happens through async memory APIs" (cupti_activity.h, Memory4).
  r.streamId = stream_id;
  r.isAsync = pool != nullptr ? 1 : 0;
  if (pool != nullptr) {
    // "The memory pool configuration used for the memory operations": a local pool; size and
    // utilizedSize are "valid for CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL".
    r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    r.memoryPoolConfig.address = pool->address;
    r.memoryPoolConfig.releaseThreshold = pool->release_threshold;
    r.memoryPoolConfig.pool.size = pool->size;
    r.memoryPoolConfig.utilizedSize = pool->utilized;
  }
  gpuhook_sim_emit(&r, sizeof r);
}

// CUPTI_ACTIVITY_KIND_MEMORY_POOL, "Memory pool activity tracking creation, destruction and
// trimming of the memory pool", one CUpti_ActivityMemoryPool3 per operation, with the API
// call's correlation id (cupti_activity.h).
void emit_memory_pool_record(CUpti_ActivityMemoryPoolOperationType op, int device, const PoolView& pool,
                             size_t min_bytes_to_keep, uint32_t correlation_id) {
  if (!gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL)) return;
  CUpti_ActivityMemoryPool3 r{};
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  r.memoryPoolOperationType = op;
  r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  r.address = pool.address;
  r.correlationId = correlation_id;
  r.processId = current_process_id();
  r.deviceId = static_cast<uint32_t>(device);
  // "minBytesToKeep is valid for CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED".
  r.minBytesToKeep = op == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED ? min_bytes_to_keep : 0;
  r.size = pool.size;
  r.releaseThreshold = pool.release_threshold;
  r.timestamp = gpuhook_sim_now_ns();
  r.utilizedSize = pool.utilized;
  r.isManagedPool = 0;
  gpuhook_sim_emit(&r, sizeof r);
}

}  // namespace gpuhook::sim
