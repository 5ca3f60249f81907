// Turns simulated work and runtime calls into CUPTI activity records (the toolkit's structs)
// and runtime-API callbacks.
#pragma once

#include <cupti.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "engine.h"

namespace gpuhook::sim {

// Room for the op's record in the calling (launching) thread's buffer; 0 when none is wanted.
uint64_t reserve_op_record(const Op& op);
void emit_op_record(const Stream& s, const Op& op, uint64_t start_ns, uint64_t end_ns);
// CUPTI_ACTIVITY_KIND_STREAM at a stream's creation, with its clamped priority, and
// CUPTI_ACTIVITY_KIND_CUDA_EVENT at a cudaEventRecord.
// Each carries the context (and device) of the stream or the calling thread's current device.
void emit_stream_record(int device, uint32_t stream_id, int priority, bool non_blocking, uint32_t correlation_id);
void emit_cuda_event_record(int device, uint32_t event_id, uint32_t stream_id, uint32_t correlation_id);
// `device` < 0: the calling thread's current device.
void emit_sync_record(CUpti_ActivitySynchronizationType type, uint32_t correlation_id,
                      uint64_t start_ns, uint64_t end_ns, uint32_t stream_id, uint32_t event_id,
                      uint32_t return_value = 0, int device = -1);
// cudaEventQuery / cudaStreamQuery: CUDA 13 writes a SYNCHRONIZATION record for each query,
// with returnValue CUDA_ERROR_NOT_READY when work was pending (cupti_activity.h,
// CUpti_ActivitySynchronization2.returnValue and cuptiActivityEnableAllSyncRecords).
void emit_query_record(CUpti_ActivitySynchronizationType type, uint32_t correlation_id,
                       uint64_t start_ns, uint32_t stream_id, uint32_t event_id, bool ready,
                       int device = -1);

// What CUPTI reports of a memory pool (CUpti_ActivityMemory4.memoryPoolConfig and
// CUpti_ActivityMemoryPool3): the simulator's pools reserve no address range and keep nothing
// cached, so their size is what is allocated from them.
struct PoolView {
  // memoryPoolConfig.address, "The base address of the memory pool": on a GPU the start of the
  // range it reserves; the simulator's pools reserve none, so the pool's handle stands in (one
  // per pool, the same in MEMORY2 and MEMORY_POOL records).
  uint64_t address = 0;
  uint64_t release_threshold = 0;
  uint64_t size = 0;
  uint64_t utilized = 0;
};
// MEMORY2: `device` owns the memory (the current device for host memory); a stream-ordered
// operation (cudaMallocAsync/FreeAsync) names its stream and its pool. `timestamp_ns` 0: now.
void emit_memory_record(bool allocation, CUpti_ActivityMemoryKind kind, const void* address,
                        size_t bytes, uint32_t correlation_id, int device,
                        uint32_t stream_id = CUPTI_INVALID_STREAM_ID, const PoolView* pool = nullptr,
                        uint64_t timestamp_ns = 0);
// MEMORY_POOL: a pool created, destroyed or trimmed.
void emit_memory_pool_record(CUpti_ActivityMemoryPoolOperationType op, int device, const PoolView& pool,
                             size_t min_bytes_to_keep, uint32_t correlation_id);

// One runtime call: takes its correlation id, fires the ENTER/EXIT callbacks and writes its
// API record on exit. Every entry point starts with one; the first one ever also initialises
// the runtime (and with it the injection library, as the driver does).
class ApiScope {
 public:
  // `domain` DRIVER: a driver call (cbid from cupti_driver_cbid.h), written as a DRIVER-kind
  // record; the simulated NCCL launches that way, as the real one does (cuLaunchKernelEx).
  // `params`: the call's *_params struct for the subscriber's callbacks (CUpti_CallbackData::
  // functionParams), alive until the scope ends; nullptr where none is built.
  ApiScope(CUpti_CallbackId cbid, const char* name, const char* symbol = nullptr,
           CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_RUNTIME_API, const void* params = nullptr);
  ~ApiScope();
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;
  // Records the result (and the thread's last error when it is one) and returns it.
  cudaError_t ret(cudaError_t err);
  uint32_t correlation_id() const { return correlation_id_; }
  uint64_t entry_ns() const { return entry_ns_; }
  void set_symbol(const char* symbol) { symbol_ = symbol; }

 private:
  CUpti_CallbackId cbid_;
  CUpti_CallbackDomain domain_;
  const char* name_;
  const char* symbol_;
  const void* params_;
  uint32_t correlation_id_;
  uint64_t entry_ns_;
  uint64_t correlation_data_ = 0;
  cudaError_t result_ = cudaSuccess;
};

// Host work in stream order (cudaLaunchHostFunc, cudaStreamAddCallback, cudaFreeAsync's free):
// run on the stream's worker once its earlier work is done (rt_host.cpp). A host function
// holds the stream for as long as it runs; the simulator's own bookkeeping (the free of
// cudaFreeAsync, which a GPU does in stream order at no cost) takes no time on the stream.
cudaError_t enqueue_host(const ApiScope& api, cudaStream_t stream, std::function<void()> work,
                         bool bookkeeping = false);

void ensure_initialized();
uint32_t current_process_id();
cudaError_t& thread_last_error();

}  // namespace gpuhook::sim
