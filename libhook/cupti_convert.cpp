#include "cupti_convert.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpuhook::hook {
namespace {

// CUPTI stamps records with our timestamp callback, so these are already capture times.
int64_t t(uint64_t ns) { return static_cast<int64_t>(ns); }

// CUPTI's synchronisation records name their context but not its device
// (CUpti_ActivitySynchronization2 has no deviceId), while the GPU records of a context name
// both. Each context's device as those records said, for the syncs: without it a
// cudaStreamWaitEvent on device 1 was written as device 0's and readers put the wait on a
// stream device 0 does not have. Context ids are small numbers the driver hands out in order;
// a sync of a context past the table or not seen yet keeps device 0, and readers take its
// context's device from the capture's other records (whatif does).
constexpr uint32_t kContexts = 1024;
std::atomic<uint32_t> g_device_of_context[kContexts];  // device + 1; 0 = not seen

void note_context(uint32_t context, uint32_t device) {
  if (context < kContexts) g_device_of_context[context].store(device + 1, std::memory_order_relaxed);
}

// Checks a start/end pair; clears both when either is unknown or they are reversed.
bool check_pair(uint64_t* start, uint64_t* end) {
  if (*start == 0 || *end == 0 || *end < *start) {
    *start = 0;
    *end = 0;
    return false;
  }
  return true;
}

void convert_kernel(const CUpti_ActivityKernel10* k, const ConvertOptions& o, RecordSink& sink) {
  uint64_t start = k->start, end = k->end, queued = k->queued, submitted = k->submitted;
  bool valid = check_pair(&start, &end);
  if (o.latency_timestamps) {
    // 0 is CUPTI_TIMESTAMP_UNKNOWN, "could not be collected" (cupti_activity.h): graph and
    // device-launched kernels have none. An unknown stage, not a broken record.
    // queued and submitted are CPU stamps, start a GPU stamp converted to the CPU clock, so
    // submitted may pass start by a little: that stage becomes unknown, the record stays.
    if (queued != 0 && submitted != 0 && queued > submitted) {
      // Two CPU stamps out of order: nothing to trust in either.
      queued = 0;
      submitted = 0;
      valid = false;
    }
    if (start != 0 && submitted > start) submitted = 0;
    if (start != 0 && queued > start) queued = 0;
  }
  if (!valid) sink.invalid_time();
  sink.device_seen(k->deviceId);
  note_context(k->contextId, k->deviceId);
  KernelFields r;
  r.name_id = k->name != nullptr ? sink.intern(k->name) : 0;
  r.device = k->deviceId;
  r.context = k->contextId;
  r.stream = k->streamId;
  r.correlation_id = k->correlationId;
  r.queued_ns = t(queued);
  r.submitted_ns = t(submitted);
  r.start_ns = t(start);
  r.end_ns = t(end);
  r.grid_x = k->gridX;
  r.grid_y = k->gridY;
  r.grid_z = k->gridZ;
  r.block_x = k->blockX;
  r.block_y = k->blockY;
  r.block_z = k->blockZ;
  r.registers_per_thread = k->registersPerThread;
  r.static_shared_memory_bytes = k->staticSharedMemory;
  r.dynamic_shared_memory_bytes = k->dynamicSharedMemory;
  r.local_memory_per_thread_bytes = k->localMemoryPerThread;
  r.graph_id = k->graphId;
  r.graph_node_id = k->graphNodeId;
  r.launch_type = k->launchType <= 3 ? k->launchType : 0;
  r.channel_id = k->channelID;
  r.device_launched = k->isDeviceLaunched != 0;
  sink.emit(r);
}

v1::MemoryKind memory_kind(uint32_t k) { return static_cast<v1::MemoryKind>(k <= 7 ? k : 0); }

// MEMCPY (on one device) and MEMCPY2 (peer to peer) records share every field but the two
// devices.
template <class Copy>
void convert_copy(const Copy* m, uint32_t src_device, uint32_t dst_device, RecordSink& sink) {
  uint64_t start = m->start, end = m->end;
  if (!check_pair(&start, &end)) sink.invalid_time();
  sink.device_seen(m->deviceId);
  note_context(m->contextId, m->deviceId);
  wire::Record rec;
  auto* r = rec.mutable_memcpy();
  r->set_copy_kind(static_cast<v1::CopyKind>(m->copyKind <= 10 ? m->copyKind : 0));
  r->set_src_kind(memory_kind(m->srcKind));
  r->set_dst_kind(memory_kind(m->dstKind));
  r->set_bytes(m->bytes);
  r->set_start_ns(t(start));
  r->set_end_ns(t(end));
  r->set_device(m->deviceId);
  r->set_context(m->contextId);
  r->set_stream(m->streamId);
  r->set_correlation_id(m->correlationId);
  r->set_src_device(src_device);
  r->set_dst_device(dst_device);
  r->set_async((m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0);
  r->set_graph_id(m->graphId);
  r->set_channel_id(m->channelID);
  r->set_graph_node_id(m->graphNodeId);
  sink.emit(rec);
}

void convert_memset(const CUpti_ActivityMemset4* m, RecordSink& sink) {
  uint64_t start = m->start, end = m->end;
  if (!check_pair(&start, &end)) sink.invalid_time();
  sink.device_seen(m->deviceId);
  note_context(m->contextId, m->deviceId);
  wire::Record rec;
  auto* r = rec.mutable_memset();
  r->set_value(m->value);
  r->set_bytes(m->bytes);
  r->set_start_ns(t(start));
  r->set_end_ns(t(end));
  r->set_device(m->deviceId);
  r->set_context(m->contextId);
  r->set_stream(m->streamId);
  r->set_correlation_id(m->correlationId);
  r->set_memory_kind(memory_kind(m->memoryKind));
  r->set_async((m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0);
  r->set_graph_id(m->graphId);
  r->set_graph_node_id(m->graphNodeId);
  sink.emit(rec);
}

void convert_api(const CUpti_ActivityAPI* a, v1::ApiDomain domain, const ConvertOptions& o, RecordSink& sink) {
  uint64_t start = a->start, end = a->end;
  if (!check_pair(&start, &end)) sink.invalid_time();
  ApiFields r;
  r.domain = domain;
  r.cbid = a->cbid;
  r.thread_id = a->threadId;
  r.start_ns = t(start);
  r.end_ns = t(end);
  r.correlation_id = a->correlationId;
  r.return_value = static_cast<int32_t>(a->returnValue);
  const char* name = nullptr;
  if (o.callback_name) {
    name = o.callback_name(domain == v1::API_DOMAIN_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                           a->cbid);
  }
  r.name_id = name != nullptr ? sink.intern(name) : 0;
  sink.emit(r);
}

void convert_sync(const CUpti_ActivitySynchronization2* s, RecordSink& sink) {
  uint64_t start = s->start, end = s->end;
  if (!check_pair(&start, &end)) sink.invalid_time();
  wire::Record rec;
  auto* r = rec.mutable_sync();
  r->set_type(static_cast<v1::SyncType>(s->type <= 4 ? s->type : 0));
  r->set_start_ns(t(start));
  r->set_end_ns(t(end));
  r->set_context(s->contextId);
  if (s->contextId < kContexts) {
    if (const uint32_t d = g_device_of_context[s->contextId].load(std::memory_order_relaxed)) r->set_device(d - 1);
  }
  r->set_stream(s->streamId);
  r->set_event_id(s->cudaEventId);
  r->set_correlation_id(s->correlationId);
  r->set_return_value(static_cast<int32_t>(s->returnValue));
  sink.emit(rec);
}

void convert_memory(const CUpti_ActivityMemory4* m, RecordSink& sink) {
  if (m->timestamp == 0) sink.invalid_time();
  wire::Record rec;
  auto* r = rec.mutable_memory();
  r->set_op(m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? v1::MEMORY_OP_ALLOC
            : m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE  ? v1::MEMORY_OP_FREE
                                                                                      : v1::MEMORY_OP_UNKNOWN);
  r->set_address(m->address);
  r->set_bytes(m->bytes);
  r->set_time_ns(t(m->timestamp));
  r->set_device(m->deviceId);
  r->set_memory_kind(memory_kind(m->memoryKind));
  r->set_correlation_id(m->correlationId);
  r->set_stream(m->streamId);
  if (m->isAsync != 0) {
    r->set_async(true);
    r->set_pool_address(m->memoryPoolConfig.address);
    r->set_pool_utilized_bytes(m->memoryPoolConfig.utilizedSize);
  }
  sink.emit(rec);
}

void convert_overhead(const CUpti_ActivityOverhead3* o, RecordSink& sink) {
  uint64_t start = o->start, end = o->end;
  if (!check_pair(&start, &end)) sink.invalid_time();
  wire::Record rec;
  auto* r = rec.mutable_overhead();
  r->set_kind(static_cast<uint32_t>(o->overheadKind));
  r->set_object_kind(static_cast<uint32_t>(o->objectKind));
  r->set_object_id(o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
                       ? o->objectId.pt.threadId
                       : o->objectId.dcs.deviceId);
  r->set_start_ns(t(start));
  r->set_end_ns(t(end));
  r->set_correlation_id(o->correlationId);
  sink.emit(rec);
}

// CUPTI_ACTIVITY_KIND_DEVICE: what the CLI needs for occupancy, from CUPTI itself. A program
// built with nvcc's default static cudart exports no runtime symbol to ask instead.
void convert_device(const CUpti_ActivityDevice5* d, RecordSink& sink) {
  wire::Record rec;
  auto* r = rec.mutable_device();
  r->set_ordinal(d->id);
  if (d->name != nullptr) r->set_name(std::string(d->name, strnlen(d->name, 256)));
  r->set_uuid(std::string(reinterpret_cast<const char*>(d->uuid.bytes), sizeof(d->uuid.bytes)));
  r->set_sm_count(d->numMultiprocessors);
  r->set_cc_major(d->computeCapabilityMajor);
  r->set_cc_minor(d->computeCapabilityMinor);
  r->set_max_warps_per_sm(d->maxWarpsPerMultiprocessor);
  r->set_max_threads_per_sm(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
  r->set_max_blocks_per_sm(d->maxBlocksPerMultiprocessor);
  r->set_max_threads_per_block(d->maxThreadsPerBlock);
  r->set_registers_per_sm(d->maxRegistersPerMultiprocessor);
  r->set_registers_per_block(d->maxRegistersPerBlock);
  r->set_shared_memory_per_sm_bytes(d->maxSharedMemoryPerMultiprocessor);
  r->set_shared_memory_per_block_bytes(d->maxSharedMemoryPerBlock);
  r->set_warp_size(d->numThreadsPerWarp);
  r->set_core_clock_khz(d->coreClockRate);
  r->set_global_memory_bytes(d->globalMemorySize);
  r->set_async_engine_count(d->numMemcpyEngines);
  sink.emit(rec);
}

void convert_cuda_event(const CUpti_ActivityCudaEvent2* e, RecordSink& sink) {
  wire::Record rec;
  auto* r = rec.mutable_cuda_event();
  note_context(e->contextId, e->deviceId);
  r->set_event_id(e->eventId);
  r->set_context(e->contextId);
  r->set_stream(e->streamId);
  r->set_device(e->deviceId);
  r->set_correlation_id(e->correlationId);
  r->set_sync_id(e->cudaEventSyncId);
  sink.emit(rec);
}

void convert_external(const CUpti_ActivityExternalCorrelation* e, RecordSink& sink) {
  wire::Record rec;
  auto* r = rec.mutable_external_correlation();
  r->set_kind(static_cast<uint32_t>(e->externalKind));
  r->set_external_id(e->externalId);
  r->set_correlation_id(e->correlationId);
  sink.emit(rec);
}

void convert_stream(const CUpti_ActivityStream* s, RecordSink& sink) {
  wire::Record rec;
  auto* r = rec.mutable_stream();
  r->set_context(s->contextId);
  r->set_stream(s->streamId);
  // The clamped priority, as cudaStreamGetPriority returns it: 0 or negative (higher).
  r->set_priority(static_cast<int32_t>(s->priority));
  r->set_flags(static_cast<uint32_t>(s->flag));
  r->set_correlation_id(s->correlationId);
  sink.emit(rec);
}

// One adapter per kind: the record's struct, and the converter above.
template <typename T, void (*Convert)(const T*, RecordSink&)>
void plain(const CUpti_Activity* a, const ConvertOptions&, RecordSink& sink) {
  Convert(reinterpret_cast<const T*>(a), sink);
}

void kernel_row(const CUpti_Activity* a, const ConvertOptions& o, RecordSink& sink) {
  convert_kernel(reinterpret_cast<const CUpti_ActivityKernel10*>(a), o, sink);
}
void memcpy_row(const CUpti_Activity* a, const ConvertOptions&, RecordSink& sink) {
  auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
  convert_copy(m, m->deviceId, m->deviceId, sink);
}
void peer_copy_row(const CUpti_Activity* a, const ConvertOptions&, RecordSink& sink) {
  auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(a);
  convert_copy(m, m->srcDeviceId, m->dstDeviceId, sink);
}
void runtime_row(const CUpti_Activity* a, const ConvertOptions& o, RecordSink& sink) {
  convert_api(reinterpret_cast<const CUpti_ActivityAPI*>(a), v1::API_DOMAIN_RUNTIME, o, sink);
}
void driver_row(const CUpti_Activity* a, const ConvertOptions& o, RecordSink& sink) {
  convert_api(reinterpret_cast<const CUpti_ActivityAPI*>(a), v1::API_DOMAIN_DRIVER, o, sink);
}
void overhead_row(const CUpti_Activity* a, const ConvertOptions&, RecordSink& sink) {
  auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(a);
  convert_overhead(o, sink);
  // CUPTI hands ownership of the detail block to the client (cupti_activity.h, Overhead3).
  std::free(o->overheadData);
}

// CONCURRENT_KERNEL, never KERNEL, which serialises every kernel of the process
// (cupti_activity.h, CUPTI_ACTIVITY_KIND_KERNEL).
constexpr ActivityKindRow kKinds[] = {
    {CUPTI_ACTIVITY_KIND_DEVICE, false, KindEnable::kAlways, &plain<CUpti_ActivityDevice5, convert_device>},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true, KindEnable::kAlways, &kernel_row},
    {CUPTI_ACTIVITY_KIND_MEMCPY, false, KindEnable::kAlways, &memcpy_row},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, false, KindEnable::kAlways, &peer_copy_row},
    {CUPTI_ACTIVITY_KIND_MEMSET, false, KindEnable::kAlways, &plain<CUpti_ActivityMemset4, convert_memset>},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, false, KindEnable::kAlways,
     &plain<CUpti_ActivitySynchronization2, convert_sync>},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, false, KindEnable::kAlways, &overhead_row},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, false, KindEnable::kAlways,
     &plain<CUpti_ActivityExternalCorrelation, convert_external>},
    {CUPTI_ACTIVITY_KIND_STREAM, false, KindEnable::kAlways, &plain<CUpti_ActivityStream, convert_stream>},
    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, false, KindEnable::kAlways, &plain<CUpti_ActivityCudaEvent2, convert_cuda_event>},
    {CUPTI_ACTIVITY_KIND_MEMORY2, false, KindEnable::kWithAllocApi, &plain<CUpti_ActivityMemory4, convert_memory>},
    {CUPTI_ACTIVITY_KIND_RUNTIME, false, KindEnable::kNotByTracer, &runtime_row},
    {CUPTI_ACTIVITY_KIND_DRIVER, false, KindEnable::kNotByTracer, &driver_row},
    {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, false, KindEnable::kNotByTracer, &driver_row},
    {CUPTI_ACTIVITY_KIND_KERNEL, false, KindEnable::kNotByTracer, &kernel_row},
};

// Converter by kind number, for the per-record lookup (kinds are small numbers).
using Converter = void (*)(const CUpti_Activity*, const ConvertOptions&, RecordSink&);
constexpr size_t kKindSlots = 64;
struct ConverterIndex {
  Converter by_kind[kKindSlots] = {};
  constexpr ConverterIndex() {
    for (const ActivityKindRow& row : kKinds) by_kind[static_cast<size_t>(row.kind)] = row.convert;
  }
};
constexpr ConverterIndex kIndex;
static_assert([] {
  for (const ActivityKindRow& row : kKinds)
    if (static_cast<size_t>(row.kind) >= kKindSlots) return false;
  return true;
}(), "an activity kind past the converter index: raise kKindSlots");

}  // namespace

const ActivityKindRow* activity_kinds(size_t* count) {
  *count = sizeof(kKinds) / sizeof(kKinds[0]);
  return kKinds;
}

bool convert_activity(const CUpti_Activity* a, const ConvertOptions& options, RecordSink& sink) {
  const auto kind = static_cast<size_t>(a->kind);
  if (kind >= kKindSlots || kIndex.by_kind[kind] == nullptr) return false;
  kIndex.by_kind[kind](a, options, sink);
  return true;
}

}  // namespace gpuhook::hook
