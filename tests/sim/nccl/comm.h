// Process-local state of the simulated NCCL: communicators and the operations that run as
// "kernels" on a stream.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "shm.h"

struct ncclComm {
  uint64_t key = 0;  // hash of the ncclUniqueId: names the shared segment
  int nranks = 0;
  int rank = 0;
  int device = 0;
  simnccl::Segment* segment = nullptr;
  uint32_t splits = 0;  // ncclCommSplit calls so far: part of the child's key
  // ncclCommShrink calls so far, counted apart: the excluded ranks do not call it, so a shared
  // counter would give them different keys for later splits than the survivors.
  uint32_t shrinks = 0;
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<int> in_flight{0};  // launched, not yet finished operations
  // config.blocking = 0 (nccl.h, ncclConfig_t): creation and ncclCommFinalize return
  // ncclInProgress with *comm already set, and the communicator is usable only once
  // ncclCommGetAsyncError has said ncclSuccess. Until then (pending_polls > 0) each poll
  // answers ncclInProgress once, and every other call on it fails as NCCL's
  // ncclCommEnsureReady makes it (ncclInvalidArgument).
  bool blocking = true;
  std::atomic<int> pending_polls{0};
  // ncclRedOpCreatePreMulSum's operators: ncclRedOp_t ncclNumOps + index, "for use only with
  // collectives launched against *comm* and *datatype*" (nccl.h). A destroyed one stays a hole.
  struct PreMulSum {
    bool live = false;
    ncclDataType_t dtype = ncclFloat32;
    const void* device_scalar = nullptr;  // ncclScalarDevice: read while the collective runs
    unsigned char value[8] = {};          // ncclScalarHostImmediate: read at creation
  };
  std::vector<PreMulSum> premul_ops;
  // ncclCommRegister/ncclCommWindowRegister handles still registered (nothing is mapped: the
  // simulated collectives copy through shared memory whatever the buffer).
  std::vector<void*> registrations;
  std::mutex mu;  // guards premul_ops and registrations
};

namespace simnccl {

enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter, kSendRecv };

struct P2p {
  bool send = false;
  void* buffer = nullptr;  // const for sends
  size_t bytes = 0;
  int peer = 0;
};

struct Op {
  Kind kind = Kind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements per block (see collectives.cpp)
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;  // a PreMulSum operator runs as ncclSum on scaled inputs
  // PreMulSum: each rank multiplies its own input by its scalar (of type dtype) before the sum.
  bool premul = false;
  const void* premul_device_scalar = nullptr;  // else premul_value
  unsigned char premul_value[8] = {};
  int root = 0;
  ncclComm* comm = nullptr;
  std::vector<P2p> p2p;  // kSendRecv only
};

// Runs `op` to completion: waits for every rank, moves and reduces the data, then waits
// until the modelled end time so that all ranks finish together. Called on the stream's
// worker thread (or the caller's thread when no simulated runtime is loaded).
ncclResult_t execute(const Op& op);

// The kernel name real NCCL would launch, mangled as CUPTI reports it, e.g.
// _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE.
std::string kernel_name(const Op& op);
// Modelled transfer time: latency plus bytes over bus bandwidth with NCCL's factors.
uint64_t model_ns(const Op& op);

// Puts `op` on `stream` (takes ownership). See launch.cpp for how it reaches the stream.
ncclResult_t launch(Op* op, cudaStream_t stream);

// Ends the running operation at `end_raw_ns` (CLOCK_MONOTONIC_RAW): tells the simulated
// runtime when its kernel ends, when the runtime can be told; otherwise sleeps until then.
void end_at(uint64_t end_raw_ns);
// CLOCK_MONOTONIC_RAW when the running kernel started on the simulated timeline (now, outside
// a host twin): a rank's arrival at an operation.
uint64_t kernel_start_raw();

}  // namespace simnccl
