// NCCL interposition: the wrappers are generated from nccl_table.h. Each wrapper pushes a
// fresh CUPTI external correlation id, reads the clock, calls the real function (found with
// dlsym(RTLD_NEXT)), reads the clock again, pops the id and writes one HostRecord. errno and
// the return value are the real function's.
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include <gpuhook/nccl_types.h>

#include <gpuhook/v1/capture.pb.h>
#include "clock.h"
#include "comm_map.h"
#include "cupti_tracer.h"
#include "interpose.h"
#include "memory_use.h"
#include "nccl_table.h"
#include "recorder.h"
#include "visibility.h"

namespace gpuhook::hook {
namespace {

CommMap& comms() {
  static CommMap map;
  return map;
}

std::atomic<uint64_t> g_init_all_calls{0};

using CountFn = ncclResult_t (*)(const ncclComm_t, int*);


std::atomic<void*> g_real_comm_count{nullptr};
std::atomic<void*> g_real_user_rank{nullptr};
std::atomic<void*> g_real_cu_device{nullptr};

// The communicator's CUDA device, -1 when this NCCL cannot say.
int32_t query_device(ncclComm_t comm) {
  auto cu_device = resolve<CountFn>(g_real_cu_device, "ncclCommCuDevice");
  int v = -1;
  if (cu_device == nullptr || cu_device(comm, &v) != ncclSuccess) return -1;
  return v;
}

// nccl_types.h carries these numbers for the analysis, which cannot include nccl.h or the
// hook's generated enums.
constexpr bool same(int32_t ours, int32_t theirs) { return ours == theirs; }
static_assert(same(kNcclInt8, ncclInt8) && same(kNcclUint8, ncclUint8) && same(kNcclInt32, ncclInt32) &&
              same(kNcclUint32, ncclUint32) && same(kNcclInt64, ncclInt64) && same(kNcclUint64, ncclUint64) &&
              same(kNcclFloat16, ncclFloat16) && same(kNcclFloat32, ncclFloat32) &&
              same(kNcclFloat64, ncclFloat64) && same(kNcclBfloat16, ncclBfloat16) &&
              same(kNcclFloat8e4m3, ncclFloat8e4m3) && same(kNcclFloat8e5m2, ncclFloat8e5m2));
static_assert(same(kNcclAllReduce, v1::NCCL_ALL_REDUCE) && same(kNcclReduceScatter, v1::NCCL_REDUCE_SCATTER) &&
              same(kNcclSend, v1::NCCL_SEND) && same(kNcclRecv, v1::NCCL_RECV) &&
              same(kNcclAllToAll, v1::NCCL_ALL_TO_ALL) && same(kNcclScatter, v1::NCCL_SCATTER));

// Which counter of its communicator a call takes a number from (comm_map.h says why two).
SequenceKind sequence_kind(v1::NcclOp op) {
  if (nccl_op_is_point_to_point(op)) return SequenceKind::kPointToPoint;
  if (nccl_op_is_collective(op)) return SequenceKind::kCollective;
  return SequenceKind::kNone;
}

// Rank, size and device of a ready communicator; false while NCCL will not say (a
// non-blocking one still in progress: ncclCommEnsureReady fails the queries).
bool query_all(ncclComm_t comm, int32_t* rank, int32_t* nranks, int32_t* device) {
  auto count = resolve<CountFn>(g_real_comm_count, "ncclCommCount");
  auto user_rank = resolve<CountFn>(g_real_user_rank, "ncclCommUserRank");
  int r = -1, n = -1;
  if (count == nullptr || user_rank == nullptr || count(comm, &n) != ncclSuccess || user_rank(comm, &r) != ncclSuccess)
    return false;
  *rank = r;
  *nranks = n;
  *device = query_device(comm);
  return true;
}

// nccl.h: with config.blocking = 0, the creating calls return ncclInProgress with the
// communicator already set; it is as real as one returned with ncclSuccess.
bool created(ncclResult_t rc, const ncclComm_t* comm) {
  return (rc == ncclSuccess || rc == ncclInProgress) && comm != nullptr && *comm != nullptr;
}

// A communicator made from a parent (split, shrink): rank and size come from NCCL, now if it
// can say, else at its first collective (CommMap::resolve).
void register_child(ncclResult_t rc, ncclComm_t comm, uint64_t id) {
  int32_t rank = -1, nranks = -1, device = -1;
  const bool known = rc == ncclSuccess && query_all(comm, &rank, &nranks, &device);
  comms().insert(comm, id, rank, nranks, device, !known);
}

// The post-call actions named in the table's comm column. Each returns what the record says
// about the communicator.
CommInfo after_init_rank(ncclResult_t rc, ncclComm_t* comm, const ncclUniqueId& id, int rank, int nranks) {
  if (!created(rc, comm)) return {};
  uint64_t comm_id = fnv1a64(&id, sizeof(id));
  if (rc == ncclSuccess) comms().insert(*comm, comm_id, rank, nranks, query_device(*comm));
  else comms().insert(*comm, comm_id, rank, nranks, -1, true);  // the device once it is ready
  return comms().lookup(*comm);
}

// nccl.h: "The number of ncclUniqueIds and their order must be the same for every rank": the
// ids in order name the communicator (with one id, the same name ncclCommInitRank gives).
CommInfo after_init_scalable(ncclResult_t rc, ncclComm_t* comm, int nranks, int rank, int nid,
                             const ncclUniqueId* ids) {
  if (!created(rc, comm) || ids == nullptr || nid < 1) return {};
  uint64_t comm_id = 1469598103934665603ull;
  for (int i = 0; i < nid; ++i) comm_id = fnv1a64(&ids[i], sizeof(ids[i]), comm_id);
  if (rc == ncclSuccess) comms().insert(*comm, comm_id, rank, nranks, query_device(*comm));
  else comms().insert(*comm, comm_id, rank, nranks, -1, true);
  return comms().lookup(*comm);
}

CommInfo after_init_all(ncclResult_t rc, ncclComm_t* comm, int ndev) {
  if (rc != ncclSuccess || comm == nullptr || ndev <= 0) return {};
  // One process owns every rank: an id unique to this process and call is enough.
  uint64_t key[3] = {static_cast<uint64_t>(getpid()), g_init_all_calls.fetch_add(1), monotonic_raw_ns()};
  uint64_t comm_id = fnv1a64(key, sizeof(key));
  for (int i = 0; i < ndev; ++i) comms().insert(comm[i], comm_id, i, ndev, query_device(comm[i]));
  return comms().lookup(comm[0]);
}

CommInfo after_split(ncclResult_t rc, ncclComm_t parent, int color, ncclComm_t* newcomm) {
  CommInfo parent_info = comms().lookup(parent);
  uint64_t split = comms().next_split(parent);
  if (!created(rc, newcomm)) return parent_info;
  // Every rank of the parent splits in the same order with the same colour: same id.
  uint64_t key[3] = {parent_info.id, split, static_cast<uint64_t>(static_cast<int64_t>(color))};
  register_child(rc, *newcomm, fnv1a64(key, sizeof(key)));
  return comms().lookup(*newcomm);
}

// ncclCommShrink is called by the ranks that stay, with one list of the ranks that go.
CommInfo after_shrink(ncclResult_t rc, ncclComm_t parent, const int* exclude, int exclude_count,
                      ncclComm_t* newcomm) {
  CommInfo parent_info = comms().lookup(parent);
  uint64_t shrink = comms().next_shrink(parent);
  if (!created(rc, newcomm)) return parent_info;
  // The survivors agree on the set of excluded ranks, not necessarily on its order.
  uint64_t excluded = 0;
  for (int i = 0; exclude != nullptr && i < exclude_count; ++i) excluded += fnv1a64(&exclude[i], sizeof(exclude[i]));
  uint64_t key[4] = {parent_info.id, shrink, excluded, 0x736872696e6bull /* "shrink" */};
  register_child(rc, *newcomm, fnv1a64(key, sizeof(key)));
  return comms().lookup(*newcomm);
}

CommInfo forget_comm(ncclComm_t comm) {
  CommInfo info = comms().lookup(comm);
  comms().erase(comm);
  return info;
}

CommInfo to_info(CommInfo info, v1::NcclOp) { return info; }
CommInfo to_info(std::nullptr_t, v1::NcclOp) { return {}; }
CommInfo to_info(ncclComm_t comm, v1::NcclOp op) {
  const SequenceKind kind = sequence_kind(op);
  CommInfo info = comms().lookup(comm, kind);
  // A non-blocking communicator is ready by the time the app moves data over it.
  if (info.unresolved && kind != SequenceKind::kNone &&
      query_all(comm, &info.rank, &info.nranks, &info.device)) {
    comms().resolve(comm, info.rank, info.nranks, info.device);
    info.unresolved = false;
  }
  return info;
}

uint64_t stream_value(cudaStream_t s) { return reinterpret_cast<uint64_t>(s); }
uint64_t stream_value(std::nullptr_t) { return 0; }

void record_call(v1::NcclOp op, const char* function, uint64_t count, int dtype, int reduce_op, int root_or_peer,
                 const CommInfo& info, uint64_t stream, uint64_t start_ns, uint64_t end_ns, ncclResult_t rc,
                 uint64_t external_id) {
  HostRecord* r = begin_record();
  if (r == nullptr) return;
  r->kind = HostKind::kNccl;
  r->thread_id = this_thread_id();
  r->start_ns = start_ns;
  r->end_ns = end_ns;
  NcclPayload& p = r->nccl;
  p.function = function;
  p.count = count;
  p.bytes = count * nccl_datatype_bytes(dtype);
  p.comm_id = info.id;
  p.stream = stream;
  p.sequence = info.sequence;
  p.external_id = external_id;
  p.datatype = dtype;
  p.reduce_op = reduce_op;
  p.root_or_peer = root_or_peer;
  p.rank = info.rank;
  p.nranks = info.nranks;
  p.device = static_cast<int16_t>(info.device >= -1 && info.device < 32768 ? info.device : -1);
  p.return_value = static_cast<int32_t>(rc);
  p.group_depth = t_state.group_depth;
  p.op = static_cast<uint8_t>(op);
  end_record();
}

void adjust_group_depth(v1::NcclOp op) {
  if (op == v1::NCCL_GROUP_START) ++t_state.group_depth;
  if (op == v1::NCCL_GROUP_END && t_state.group_depth > 0) --t_state.group_depth;
}

void report_missing(const char* function) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr, "gpuhook: %s is not in the loaded NCCL; returning ncclInvalidUsage\n", function);
  }
}

}  // namespace

std::atomic<bool> g_nccl_enabled{false};

#define GPUHOOK_NCCL_REAL(name, ...) std::atomic<void*> g_real_##name{nullptr};
GPUHOOK_NCCL_TABLE(GPUHOOK_NCCL_REAL)
#undef GPUHOOK_NCCL_REAL

// Resolves every row at start so the first call pays nothing; rows the library lacks stay null.
int resolve_nccl() {
  int found = 0;
#define GPUHOOK_NCCL_RESOLVE(name, ...) found += resolve_early(g_real_##name, #name);
  GPUHOOK_NCCL_TABLE(GPUHOOK_NCCL_RESOLVE)
#undef GPUHOOK_NCCL_RESOLVE
  return found;
}

// GPUHOOK_MEM_USE: the buffers of a call (its leading void* arguments: sendbuff, recvbuff).
// NCCL's kernels get them packed in one argument block (ncclDevKernelArgs, through `extra`),
// which the launch callback cannot read.
template <class... A>
void note_nccl_buffers(const A&... a) {
  if (!memory_use_on()) return;
  const void* buffers[2] = {nullptr, nullptr};
  size_t n = 0;
  bool leading = true;
  auto take = [&](const auto& v) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, void*> || std::is_same_v<T, const void*>) {
      if (leading && n < 2) buffers[n++] = v;
    } else {
      leading = false;
    }
  };
  (take(a), ...);
  (void)take;  // a call without arguments (ncclGroupStart)
  if (n != 0) note_buffers_used(buffers[0], buffers[1]);
}

}  // namespace gpuhook::hook

using namespace gpuhook::hook;
namespace v1 = gpuhook::v1;

// The id the wrapper pushes as CUPTI external correlation id around the real call: CUPTI then
// writes one EXTERNAL_CORRELATION record (id, correlation id) for each CUDA call made inside
// on this thread, NCCL's cuLaunchKernelEx among them. That ties the call to its kernel with no
// guess by thread or time. Grouped calls launch nothing themselves: NCCL launches the group's
// kernels inside the outermost ncclGroupEnd, whose record carries its own id and ends the
// group (group_depth 0); the CLI gives the group's calls the kernels of that id.
// The ids come from next_external_id() (cupti_tracer.h).
#define GPUHOOK_NCCL_WRAPPER(name, op, params, args, count_expr, dtype_expr, redop_expr, root_expr, comm_expr,   \
                             stream_expr)                                                                         \
  extern "C" GPUHOOK_EXPORT ncclResult_t name params {                                                            \
    using Fn = ncclResult_t(*) params;                                                                            \
    auto real = resolve<Fn>(g_real_##name, #name);                                                                \
    if (real == nullptr) {                                                                                        \
      report_missing(#name);                                                                                      \
      return ncclInvalidUsage;                                                                                    \
    }                                                                                                             \
    ReentryGuard guard;                                                                                           \
    if (!g_nccl_enabled.load(std::memory_order_relaxed) || !guard.entered()) return real args;                    \
    const uint64_t external_id = next_external_id();                                                              \
    const int entry_errno = errno; /* CUPTI's push must not change what the real call sees */                     \
    const bool pushed = push_external_correlation(external_id);                                                   \
    errno = entry_errno;                                                                                          \
    uint64_t start_ns = now_ns();                                                                                 \
    ncclResult_t rc = real args;                                                                                  \
    uint64_t end_ns = now_ns();                                                                                   \
    int saved_errno = errno;                                                                                      \
    if (pushed) pop_external_correlation();                                                                       \
    adjust_group_depth(v1::op);                                                                                   \
    if (rc == ncclSuccess || rc == ncclInProgress) note_nccl_buffers args;                                        \
    record_call(v1::op, #name, static_cast<uint64_t>(count_expr), static_cast<int>(dtype_expr),                   \
                static_cast<int>(redop_expr), static_cast<int>(root_expr), to_info(comm_expr, v1::op),            \
                stream_value(stream_expr), start_ns, end_ns, rc, pushed ? external_id : 0);                       \
    errno = saved_errno;                                                                                          \
    return rc;                                                                                                    \
  }
GPUHOOK_NCCL_TABLE(GPUHOOK_NCCL_WRAPPER)
#undef GPUHOOK_NCCL_WRAPPER
