// The exported NCCL entry points. As in the real libnccl.so.2, each nccl* symbol is a weak
// alias of its pnccl* twin, so an interposer sees the same symbol layout.
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <vector>

#include "comm.h"
#include "reduce.h"

#define SIMNCCL_EXPORT extern "C" __attribute__((visibility("default")))
#define SIMNCCL_ALIAS(name) extern "C" __attribute__((visibility("default"), weak, alias("p" #name)))

using simnccl::Kind;
using simnccl::Op;
using simnccl::P2p;

namespace {

constexpr char kIdMagic[] = "gpuhook-simnccl";

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int current_device() {
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  int dev = 0;
  if (fn && fn(&dev) != 0) dev = 0;
  return dev;
}

// A symbol of the simulated CUDA runtime (the only libcudart that defines
// gpuhook_sim_register_host_kernel), nullptr under any other.
void* sim_runtime_symbol(const char* name) {
  return dlsym(RTLD_DEFAULT, "gpuhook_sim_register_host_kernel") != nullptr ? dlsym(RTLD_DEFAULT, name) : nullptr;
}

// Operations between ncclGroupStart and ncclGroupEnd wait here, per thread, as in NCCL.
struct Pending {
  Op* op;
  cudaStream_t stream;
};
thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_pending;

// config.blocking: 0 asks for a non-blocking communicator; NCCL_CONFIG_UNDEF_INT (and no
// config) means the default, `fallback` (1 for a new communicator, the parent's for a child:
// "If config is NULL, the new communicator will inherit the original communicator's
// configuration", nccl.h at ncclCommSplit/ncclCommShrink).
bool blocking_of(const ncclConfig_t* config, bool fallback) {
  if (config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT) return fallback;
  return config->blocking != 0;
}

bool config_valid(const ncclConfig_t* config) { return config == nullptr || config->magic == 0xcafebeef; }

ncclResult_t init_rank(ncclComm_t* out, int nranks, uint64_t key, int rank, int device, bool blocking = true) {
  if (!out || nranks < 1 || nranks > simnccl::kMaxRanks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto* comm = new ncclComm();
  comm->key = key;
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->segment = simnccl::Segment::open(key, nranks);
  if (!comm->segment) {
    delete comm;
    return ncclSystemError;
  }
  *out = comm;
  if (!blocking) {
    // nccl.h, ncclCommInitRankConfig with config.blocking = 0: the call returns
    // ncclInProgress with *comm set; the app polls ncclCommGetAsyncError until ncclSuccess.
    comm->blocking = false;
    comm->pending_polls.store(1);
    return ncclInProgress;
  }
  return ncclSuccess;
}

// Queues or launches one operation.
ncclResult_t submit(Op* op, cudaStream_t stream) {
  if (t_group_depth > 0) {
    t_pending.push_back({op, stream});
    return ncclSuccess;
  }
  return simnccl::launch(op, stream);
}

ncclResult_t check_comm(ncclComm_t comm) {
  if (!comm || !comm->segment) return ncclInvalidArgument;
  // A non-blocking communicator used before ncclCommGetAsyncError said ncclSuccess: NCCL's
  // ncclCommEnsureReady (src/init.cc) warns "Attempt to use communicator before the previous
  // operation returned ncclSuccess" and fails the call.
  if (comm->pending_polls.load() > 0) return ncclInvalidArgument;
  int e = comm->async_error.load();
  return e == ncclSuccess ? ncclSuccess : static_cast<ncclResult_t>(e);
}

ncclResult_t coll(Kind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t redop,
                  int root, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  if (simnccl::dtype_bytes(dtype) == 0) return ncclInvalidArgument;
  ncclComm::PreMulSum premul;
  if (redop >= ncclNumOps) {
    // A PreMulSum operator of this communicator, made for this datatype (nccl.h).
    std::lock_guard<std::mutex> lock(comm->mu);
    const size_t index = static_cast<size_t>(redop - ncclNumOps);
    if (index >= comm->premul_ops.size() || !comm->premul_ops[index].live || comm->premul_ops[index].dtype != dtype) {
      return ncclInvalidArgument;
    }
    premul = comm->premul_ops[index];
  } else if (!simnccl::redop_valid(redop)) {
    return ncclInvalidArgument;
  }
  if (root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  if (count > 0 && (!send || !recv)) {
    // Reduce/gather leave recv unused off the root; broadcast/scatter leave send unused off it.
    bool recv_optional = (kind == Kind::kReduce || kind == Kind::kGather) && comm->rank != root;
    bool send_optional = (kind == Kind::kBroadcast || kind == Kind::kScatter) && comm->rank != root;
    if ((!send && !send_optional) || (!recv && !recv_optional)) return ncclInvalidArgument;
  }
  auto* op = new Op();
  op->kind = kind;
  op->send = send;
  op->recv = recv;
  op->count = count;
  op->dtype = dtype;
  op->redop = premul.live ? ncclSum : redop;
  op->premul = premul.live;
  op->premul_device_scalar = premul.device_scalar;
  std::memcpy(op->premul_value, premul.value, sizeof op->premul_value);
  op->root = root;
  op->comm = comm;
  return submit(op, stream);
}

ncclResult_t p2p(bool is_send, const void* buf, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                 cudaStream_t stream) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  if (simnccl::dtype_bytes(dtype) == 0 || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  if (count > 0 && !buf) return ncclInvalidArgument;
  auto* op = new Op();
  op->kind = Kind::kSendRecv;
  op->comm = comm;
  op->dtype = dtype;
  op->p2p.push_back({is_send, const_cast<void*>(buf), count * simnccl::dtype_bytes(dtype), peer});
  return submit(op, stream);
}

}  // namespace

SIMNCCL_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

SIMNCCL_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

SIMNCCL_EXPORT const char* pncclGetLastError(ncclComm_t) { return ""; }

SIMNCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  memset(id->internal, 0, sizeof id->internal);
  memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  uint64_t random[4] = {};
  if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    static std::atomic<uint64_t> counter{0};
    random[0] = static_cast<uint64_t>(getpid());
    random[1] = simnccl::monotonic_raw_ns();
    random[2] = counter.fetch_add(1);
  }
  memcpy(id->internal + 16, random, sizeof random);
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return ncclInvalidArgument;
  return init_rank(comm, nranks, fnv1a(id.internal, sizeof id.internal), rank, current_device());
}

SIMNCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                   ncclConfig_t* config) {
  if (!config_valid(config)) return ncclInvalidArgument;
  if (memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return ncclInvalidArgument;
  return init_rank(comm, nranks, fnv1a(id.internal, sizeof id.internal), rank, current_device(),
                   blocking_of(config, true));
}

// nccl.h: "Allows to use more than one ncclUniqueId (up to one per rank), indicated by nId ...
// The number of ncclUniqueIds and their order must be the same for every rank": the ids
// together name the communicator.
SIMNCCL_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId,
                                                     ncclUniqueId* ids, ncclConfig_t* config) {
  if (!config_valid(config) || nId < 1 || nId > nranks || !ids) return ncclInvalidArgument;
  uint64_t key = 1469598103934665603ull;
  for (int i = 0; i < nId; ++i) {
    if (memcmp(ids[i].internal, kIdMagic, sizeof kIdMagic) != 0) return ncclInvalidArgument;
    key = fnv1a(ids[i].internal, sizeof ids[i].internal, key);
  }
  return init_rank(comm, nranks, key, rank, current_device(), blocking_of(config, true));
}

SIMNCCL_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  uint64_t key = fnv1a(id.internal, sizeof id.internal);
  for (int i = 0; i < ndev; ++i) {
    if (ncclResult_t r = init_rank(&comms[i], ndev, key, i, devlist ? devlist[i] : i); r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  if (!newcomm || !config_valid(config)) return ncclInvalidArgument;
  // A host-side all-gather of (color, key) over the parent's host barrier.
  simnccl::SharedHeader* h = comm->segment->header();
  h->host_exchange[comm->rank][0] = color;
  h->host_exchange[comm->rank][1] = key;
  if (!simnccl::barrier_wait(h->host, comm->nranks, h->aborted)) return ncclRemoteError;
  int nranks = 0, rank = 0;
  for (int r = 0; r < comm->nranks; ++r) {
    if (h->host_exchange[r][0] != color) continue;
    ++nranks;
    int64_t k = h->host_exchange[r][1];
    if (k < key || (k == key && r < comm->rank)) ++rank;
  }
  if (!simnccl::barrier_wait(h->host, comm->nranks, h->aborted)) return ncclRemoteError;
  const uint32_t split = comm->splits++;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  uint64_t mix[3] = {comm->key, split, static_cast<uint64_t>(static_cast<int64_t>(color))};
  return init_rank(newcomm, nranks, fnv1a(mix, sizeof mix), rank, comm->device, blocking_of(config, comm->blocking));
}

// nccl.h: "Ranks in excludeRanksList will be removed form the existing communicator. Within
// the new communicator, ranks will be re-ordered to fill the gap of removed ones." The
// excluded ranks are the failed ones and do not call it; the survivors agree on the list, so
// no exchange is needed. An excluded rank that calls it anyway gets no communicator.
SIMNCCL_EXPORT ncclResult_t pncclCommShrink(ncclComm_t comm, int* exclude, int exclude_count, ncclComm_t* newcomm,
                                           ncclConfig_t* config, int flags) {
  if (!comm || !comm->segment || !newcomm || !config_valid(config)) return ncclInvalidArgument;
  if (exclude_count < 0 || (exclude_count > 0 && !exclude)) return ncclInvalidArgument;
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT) return ncclInvalidArgument;
  // NCCL_SHRINK_ABORT is for a parent with operations stuck on a dead peer; without it the
  // parent must be usable.
  if (flags == NCCL_SHRINK_DEFAULT) {
    if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  }
  std::vector<bool> excluded(static_cast<size_t>(comm->nranks), false);
  for (int i = 0; i < exclude_count; ++i) {
    if (exclude[i] < 0 || exclude[i] >= comm->nranks) return ncclInvalidArgument;
    excluded[static_cast<size_t>(exclude[i])] = true;
  }
  int nranks = 0, rank = 0;
  for (int r = 0; r < comm->nranks; ++r) {
    if (excluded[static_cast<size_t>(r)]) continue;
    if (r < comm->rank) ++rank;
    ++nranks;
  }
  const uint32_t shrink = comm->shrinks++;
  if (excluded[static_cast<size_t>(comm->rank)] || nranks == 0) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  uint64_t mix[2] = {comm->key, 0x5368726bull ^ (uint64_t{shrink} << 32)};
  uint64_t k = fnv1a(mix, sizeof mix);
  for (int r = 0; r < comm->nranks; ++r) {
    if (excluded[static_cast<size_t>(r)]) k = fnv1a(&r, sizeof r, k);
  }
  return init_rank(newcomm, nranks, k, rank, comm->device, blocking_of(config, comm->blocking));
}

namespace {
ncclResult_t release(ncclComm_t comm, bool abort) {
  if (!comm) return ncclInvalidArgument;
  if (abort && comm->segment) {
    comm->segment->header()->aborted.store(1);
    simnccl::futex_wake_all(comm->segment->header()->coll.generation);
  }
  // Operations still on a stream use the segment: wait for them unless aborting.
  while (!abort && comm->in_flight.load() > 0) usleep(100);
  if (comm->segment) {
    if (comm->segment->header()->detached.fetch_add(1) + 1 == static_cast<uint32_t>(comm->nranks))
      comm->segment->unlink_name();
    delete comm->segment;
    comm->segment = nullptr;
  }
  if (!abort || comm->in_flight.load() == 0) delete comm;
  return ncclSuccess;
}
}  // namespace

SIMNCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  // nccl.h: "ncclCommFinalize flushes all issued communications, and marks communicator state
  // as ncclInProgress"; a non-blocking communicator says so.
  if (!comm->blocking) {
    comm->pending_polls.store(1);
    return ncclInProgress;
  }
  return ncclSuccess;
}
SIMNCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) { return release(comm, false); }
SIMNCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) { return release(comm, true); }

SIMNCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return ncclInvalidArgument;
  int pending = comm->pending_polls.load();
  while (pending > 0 && !comm->pending_polls.compare_exchange_weak(pending, pending - 1)) {
  }
  *error = pending > 0 ? ncclInProgress : static_cast<ncclResult_t>(comm->async_error.load());
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count || comm->pending_polls.load() > 0) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device || comm->pending_polls.load() > 0) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank || comm->pending_polls.load() > 0) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kAllReduce, send, recv, count, dtype, op, 0, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root,
                                          ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kBroadcast, send, recv, count, dtype, ncclSum, root, comm, stream);
}

// As in NCCL (src/collectives.cc), the deprecated in-place ncclBcast is a call of the public
// ncclBroadcast, through the PLT: an interposer of ncclBroadcast sees it too.
SIMNCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t dtype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, dtype, root, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kReduce, send, recv, count, dtype, op, root, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t dtype,
                                          ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kAllGather, send, recv, sendcount, dtype, ncclSum, 0, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t dtype,
                                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kReduceScatter, send, recv, recvcount, dtype, op, 0, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                         ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kAlltoAll, send, recv, count, dtype, ncclSum, 0, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclGather(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root,
                                       ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kGather, send, recv, count, dtype, ncclSum, root, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  return coll(Kind::kScatter, send, recv, count, dtype, ncclSum, root, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclSend(const void* send, size_t count, ncclDataType_t dtype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  return p2p(true, send, count, dtype, peer, comm, stream);
}

SIMNCCL_EXPORT ncclResult_t pncclRecv(void* recv, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                                     cudaStream_t stream) {
  return p2p(false, recv, count, dtype, peer, comm, stream);
}

// nccl.h: "NCCL malloc and free function for all types of NCCL optimizations (e.g. user
// buffer registration). The actual allocated size might be larger than requested due to
// granularity requirement." Device memory of the simulated runtime when it is loaded (NCCL
// maps it with the driver's cuMem* calls), host memory otherwise.
SIMNCCL_EXPORT ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (!ptr || size == 0) return ncclInvalidArgument;
  constexpr size_t kGranularity = 2u << 20;
  size = (size + kGranularity - 1) / kGranularity * kGranularity;
  using MallocFn = int (*)(void**, size_t);
  if (auto cuda_malloc = reinterpret_cast<MallocFn>(sim_runtime_symbol("cudaMalloc"))) {
    return cuda_malloc(ptr, size) == 0 ? ncclSuccess : ncclUnhandledCudaError;
  }
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0) return ncclSystemError;
  *ptr = p;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclMemFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  using FreeFn = int (*)(void*);
  if (auto cuda_free = reinterpret_cast<FreeFn>(sim_runtime_symbol("cudaFree"))) {
    return cuda_free(ptr) == 0 ? ncclSuccess : ncclUnhandledCudaError;
  }
  free(ptr);
  return ncclSuccess;
}

// Registration makes a buffer zero-copy for NCCL's transports; the simulated collectives copy
// through shared memory whatever the buffer, so a handle only has to be valid until deregistered.
namespace {
ncclResult_t register_buffer(ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  if (!buff || size == 0 || !handle) return ncclInvalidArgument;
  *handle = new char;  // unique until deregistered
  std::lock_guard<std::mutex> lock(comm->mu);
  comm->registrations.push_back(*handle);
  return ncclSuccess;
}

ncclResult_t deregister_buffer(ncclComm_t comm, void* handle) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  std::lock_guard<std::mutex> lock(comm->mu);
  auto& v = comm->registrations;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != handle) continue;
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    delete static_cast<char*>(handle);
    return ncclSuccess;
  }
  return ncclInvalidArgument;
}
}  // namespace

SIMNCCL_EXPORT ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return register_buffer(comm, buff, size, handle);
}
SIMNCCL_EXPORT ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  return deregister_buffer(comm, handle);
}
SIMNCCL_EXPORT ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                   int) {
  return register_buffer(comm, buff, size, reinterpret_cast<void**>(win));
}
SIMNCCL_EXPORT ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return deregister_buffer(comm, win);
}

SIMNCCL_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                     ncclScalarResidence_t residence, ncclComm_t comm) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  const size_t bytes = simnccl::dtype_bytes(datatype);
  // fp8 reductions are not simulated (reduce.h).
  if (!op || !scalar || bytes == 0 || datatype == ncclFloat8e4m3 || datatype == ncclFloat8e5m2) {
    return ncclInvalidArgument;
  }
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) return ncclInvalidArgument;
  ncclComm::PreMulSum p;
  p.live = true;
  p.dtype = datatype;
  // "ncclScalarHostImmediate: ... dereferenced before the ncclRedOpCreate***() function returns".
  if (residence == ncclScalarHostImmediate) std::memcpy(p.value, scalar, bytes);
  else p.device_scalar = scalar;
  std::lock_guard<std::mutex> lock(comm->mu);
  size_t index = 0;
  while (index < comm->premul_ops.size() && comm->premul_ops[index].live) ++index;
  if (static_cast<long long>(index) + ncclNumOps > ncclMaxRedOp) return ncclInvalidUsage;
  if (index == comm->premul_ops.size()) comm->premul_ops.push_back(p);
  else comm->premul_ops[index] = p;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (ncclResult_t r = check_comm(comm); r != ncclSuccess) return r;
  std::lock_guard<std::mutex> lock(comm->mu);
  // "The operator must have been created by ncclRedOpCreatePreMul with the matching
  // communicator *comm*" (nccl.h); a built-in operator is not one.
  if (op < ncclNumOps) return ncclInvalidArgument;
  const size_t index = static_cast<size_t>(op - ncclNumOps);
  if (index >= comm->premul_ops.size() || !comm->premul_ops[index].live) return ncclInvalidArgument;
  comm->premul_ops[index].live = false;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclGroupStart() {
  ++t_group_depth;
  return ncclSuccess;
}

SIMNCCL_EXPORT ncclResult_t pncclGroupEnd() {
  if (t_group_depth == 0) return ncclInvalidUsage;
  if (--t_group_depth > 0) return ncclSuccess;
  // As NCCL does, the point-to-point calls of a group on one communicator and stream become
  // one SendRecv kernel; collectives keep their own kernels, in call order.
  std::vector<Pending> pending;
  pending.swap(t_pending);
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < pending.size(); ++i) {
    Op* op = pending[i].op;
    if (!op) continue;
    if (op->kind == Kind::kSendRecv) {
      for (size_t j = i + 1; j < pending.size(); ++j) {
        Op* other = pending[j].op;
        if (other && other->kind == Kind::kSendRecv && other->comm == op->comm && pending[j].stream == pending[i].stream) {
          op->p2p.insert(op->p2p.end(), other->p2p.begin(), other->p2p.end());
          delete other;
          pending[j].op = nullptr;
        }
      }
    }
    ncclResult_t r = simnccl::launch(op, pending[i].stream);
    if (r != ncclSuccess && result == ncclSuccess) result = r;
  }
  return result;
}

SIMNCCL_ALIAS(ncclGetVersion) ncclResult_t ncclGetVersion(int*);
SIMNCCL_ALIAS(ncclGetErrorString) const char* ncclGetErrorString(ncclResult_t);
SIMNCCL_ALIAS(ncclGetLastError) const char* ncclGetLastError(ncclComm_t);
SIMNCCL_ALIAS(ncclGetUniqueId) ncclResult_t ncclGetUniqueId(ncclUniqueId*);
SIMNCCL_ALIAS(ncclCommInitRank) ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
SIMNCCL_ALIAS(ncclCommInitRankConfig) ncclResult_t ncclCommInitRankConfig(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
SIMNCCL_ALIAS(ncclCommInitAll) ncclResult_t ncclCommInitAll(ncclComm_t*, int, const int*);
SIMNCCL_ALIAS(ncclCommInitRankScalable) ncclResult_t ncclCommInitRankScalable(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*);
SIMNCCL_ALIAS(ncclCommSplit) ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
SIMNCCL_ALIAS(ncclCommShrink) ncclResult_t ncclCommShrink(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
SIMNCCL_ALIAS(ncclMemAlloc) ncclResult_t ncclMemAlloc(void**, size_t);
SIMNCCL_ALIAS(ncclMemFree) ncclResult_t ncclMemFree(void*);
SIMNCCL_ALIAS(ncclCommFinalize) ncclResult_t ncclCommFinalize(ncclComm_t);
SIMNCCL_ALIAS(ncclCommDestroy) ncclResult_t ncclCommDestroy(ncclComm_t);
SIMNCCL_ALIAS(ncclCommAbort) ncclResult_t ncclCommAbort(ncclComm_t);
SIMNCCL_ALIAS(ncclCommGetAsyncError) ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t*);
SIMNCCL_ALIAS(ncclCommCount) ncclResult_t ncclCommCount(const ncclComm_t, int*);
SIMNCCL_ALIAS(ncclCommCuDevice) ncclResult_t ncclCommCuDevice(const ncclComm_t, int*);
SIMNCCL_ALIAS(ncclCommUserRank) ncclResult_t ncclCommUserRank(const ncclComm_t, int*);
SIMNCCL_ALIAS(ncclAllReduce) ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclBroadcast) ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclBcast) ncclResult_t ncclBcast(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclReduce) ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclAllGather) ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclReduceScatter) ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclAlltoAll) ncclResult_t ncclAlltoAll(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclGather) ncclResult_t ncclGather(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclScatter) ncclResult_t ncclScatter(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclSend) ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclRecv) ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
SIMNCCL_ALIAS(ncclGroupStart) ncclResult_t ncclGroupStart();
SIMNCCL_ALIAS(ncclGroupEnd) ncclResult_t ncclGroupEnd();
SIMNCCL_ALIAS(ncclCommRegister) ncclResult_t ncclCommRegister(const ncclComm_t, void*, size_t, void**);
SIMNCCL_ALIAS(ncclCommDeregister) ncclResult_t ncclCommDeregister(const ncclComm_t, void*);
SIMNCCL_ALIAS(ncclCommWindowRegister) ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t*, int);
SIMNCCL_ALIAS(ncclCommWindowDeregister) ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t);
SIMNCCL_ALIAS(ncclRedOpCreatePreMulSum) ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t);
SIMNCCL_ALIAS(ncclRedOpDestroy) ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t);
