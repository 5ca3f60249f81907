// Kineto's names and fields as the capture's enums and records (TRACE-FORMATS.md, part A).
#include "kineto_mapping.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include <gpuhook/nccl_types.h>

namespace gantt::scan::kineto {

namespace v1 = gpuhook::v1;

// An integer field: JSON number text, or a string holding one (Kineto quotes some).
bool as_int(const JsonScalar* s, int64_t* out) {
  if (s == nullptr || !s->present || s->text.empty()) return false;
  const std::string& t = s->text;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end == t.c_str()) return false;
  // "4.0" or "1e3" as an integer: only an exact integral value passes.
  if (*end == '.') {
    for (const char* p = end + 1; *p != '\0'; ++p) {
      if (*p != '0') return false;
    }
  } else if (*end != '\0') {
    return false;
  }
  *out = v;
  return true;
}

int64_t int_or(const JsonScalar* s, int64_t fallback) {
  int64_t v = 0;
  return as_int(s, &v) ? v : fallback;
}

uint32_t u32_or(const JsonScalar* s, uint32_t fallback) {
  int64_t v = 0;
  if (!as_int(s, &v)) return fallback;
  // CUPTI's "none" (-1, 4294967295) and other negatives fold to their 32-bit pattern, as the
  // capture's unsigned fields hold them.
  return static_cast<uint32_t>(v);
}

bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync" ||
         cat == "gpu_user_annotation" || cat == "cuda_event";
}

bool is_host_category(std::string_view cat) {
  return cat == "cpu_op" || cat == "cuda_runtime" || cat == "cuda_driver" || cat == "user_annotation" ||
         cat == "python_function";
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_nccl_kernel(std::string_view name) {
  return starts_with(name, "ncclDevKernel_") || starts_with(name, "ncclKernel_");
}

v1::CopyKind copy_kind_of(std::string_view name) {
  // "Memcpy HtoD (Pinned -> Device)"
  static const std::pair<std::string_view, v1::CopyKind> kinds[] = {
      {"HtoD", v1::COPY_HTOD}, {"DtoH", v1::COPY_DTOH}, {"DtoD", v1::COPY_DTOD}, {"HtoH", v1::COPY_HTOH},
      {"PtoP", v1::COPY_PTOP}, {"HtoA", v1::COPY_HTOA}, {"AtoH", v1::COPY_ATOH}, {"AtoA", v1::COPY_ATOA},
      {"AtoD", v1::COPY_ATOD}, {"DtoA", v1::COPY_DTOA}};
  const size_t space = name.find(' ');
  if (space == std::string_view::npos) return v1::COPY_UNKNOWN;
  const std::string_view word = name.substr(space + 1, 4);
  for (const auto& [text, kind] : kinds) {
    if (word == text) return kind;
  }
  return v1::COPY_UNKNOWN;
}

v1::MemoryKind memory_kind_of(std::string_view text) {
  static const std::pair<std::string_view, v1::MemoryKind> kinds[] = {
      {"Pageable", v1::MEMORY_PAGEABLE},       {"Pinned", v1::MEMORY_PINNED},
      {"Device Static", v1::MEMORY_DEVICE_STATIC}, {"Managed Static", v1::MEMORY_MANAGED_STATIC},
      {"Device", v1::MEMORY_DEVICE},           {"Array", v1::MEMORY_ARRAY},
      {"Managed", v1::MEMORY_MANAGED}};
  for (const auto& [name, kind] : kinds) {
    if (text == name) return kind;
  }
  return v1::MEMORY_UNKNOWN;
}

// "(Pinned -> Device)" in a copy's name, "(Device)" in a memset's.
std::pair<v1::MemoryKind, v1::MemoryKind> memory_kinds_in(std::string_view name) {
  const size_t open = name.find('(');
  const size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return {v1::MEMORY_UNKNOWN, v1::MEMORY_UNKNOWN};
  }
  const std::string_view inside = name.substr(open + 1, close - open - 1);
  const size_t arrow = inside.find(" -> ");
  if (arrow == std::string_view::npos) return {memory_kind_of(inside), v1::MEMORY_UNKNOWN};
  return {memory_kind_of(inside.substr(0, arrow)), memory_kind_of(inside.substr(arrow + 4))};
}

v1::SyncType sync_type_of_event(std::string_view name) {
  if (name == "Event Sync") return v1::SYNC_EVENT_SYNCHRONIZE;
  if (name == "Stream Wait Event") return v1::SYNC_STREAM_WAIT_EVENT;
  if (name == "Stream Sync") return v1::SYNC_STREAM_SYNCHRONIZE;
  if (name == "Context Sync") return v1::SYNC_CONTEXT_SYNCHRONIZE;
  return v1::SYNC_UNKNOWN;
}

// Traces from before Kineto wrote cuda_sync (2023-06): the blocking calls themselves.
v1::SyncType sync_type_of_call(std::string_view name) {
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize" || name == "hipStreamSynchronize") {
    return v1::SYNC_STREAM_SYNCHRONIZE;
  }
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize" || name == "hipDeviceSynchronize") {
    return v1::SYNC_CONTEXT_SYNCHRONIZE;
  }
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize" || name == "hipEventSynchronize") {
    return v1::SYNC_EVENT_SYNCHRONIZE;
  }
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent" || name == "hipStreamWaitEvent") {
    return v1::SYNC_STREAM_WAIT_EVENT;
  }
  return v1::SYNC_UNKNOWN;
}

// c10d's "Collective name", or the NCCL kernel's own name ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
// "ncclKernel_AllGather_RING_LL_Sum_int8_t").
v1::NcclOp nccl_op_of(std::string_view collective, std::string_view kernel) {
  std::string c(collective);
  c.erase(std::remove(c.begin(), c.end(), '_'), c.end());
  std::transform(c.begin(), c.end(), c.begin(), [](char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::pair<std::string_view, v1::NcclOp> by_collective[] = {
      {"allreduce", v1::NCCL_ALL_REDUCE},   {"allreducecoalesced", v1::NCCL_ALL_REDUCE},
      {"allgather", v1::NCCL_ALL_GATHER},   {"allgatherbase", v1::NCCL_ALL_GATHER},
      {"allgatherintotensorcoalesced", v1::NCCL_ALL_GATHER},
      {"reducescatter", v1::NCCL_REDUCE_SCATTER}, {"reducescatterbase", v1::NCCL_REDUCE_SCATTER},
      {"reducescattertensorcoalesced", v1::NCCL_REDUCE_SCATTER},
      {"broadcast", v1::NCCL_BROADCAST},    {"reduce", v1::NCCL_REDUCE},
      {"send", v1::NCCL_SEND},              {"recv", v1::NCCL_RECV},
      {"alltoall", v1::NCCL_ALL_TO_ALL},    {"alltoallbase", v1::NCCL_ALL_TO_ALL},
      {"gather", v1::NCCL_GATHER},          {"scatter", v1::NCCL_SCATTER}};
  for (const auto& [name, op] : by_collective) {
    if (c == name) return op;
  }
  static const std::pair<std::string_view, v1::NcclOp> by_kernel[] = {
      {"AllReduce", v1::NCCL_ALL_REDUCE}, {"AllGather", v1::NCCL_ALL_GATHER},
      {"ReduceScatter", v1::NCCL_REDUCE_SCATTER}, {"Broadcast", v1::NCCL_BROADCAST},
      {"Reduce", v1::NCCL_REDUCE}, {"SendRecv", v1::NCCL_SEND}, {"Send", v1::NCCL_SEND}, {"Recv", v1::NCCL_RECV},
      {"AllToAll", v1::NCCL_ALL_TO_ALL}};
  const size_t underscore = kernel.find('_');
  if (underscore == std::string_view::npos) return v1::NCCL_OP_UNKNOWN;
  const std::string_view rest = kernel.substr(underscore + 1);
  for (const auto& [name, op] : by_kernel) {
    if (starts_with(rest, name)) return op;
  }
  return v1::NCCL_OP_UNKNOWN;
}

// c10d's dtype names (c10::ScalarType) as ncclDataType_t; -1 when unknown.
int32_t nccl_datatype_of(std::string_view dtype) {
  static const std::pair<std::string_view, int32_t> types[] = {
      {"Float", gpuhook::kNcclFloat32},    {"Half", gpuhook::kNcclFloat16},  {"BFloat16", gpuhook::kNcclBfloat16},
      {"Double", gpuhook::kNcclFloat64},   {"Int", gpuhook::kNcclInt32},     {"Long", gpuhook::kNcclInt64},
      {"Char", gpuhook::kNcclInt8},        {"Byte", gpuhook::kNcclUint8},    {"Bool", gpuhook::kNcclUint8},
      {"Float8_e4m3fn", gpuhook::kNcclFloat8e4m3}, {"Float8_e5m2", gpuhook::kNcclFloat8e5m2}};
  for (const auto& [name, type] : types) {
    if (dtype == name) return type;
  }
  return -1;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint32_t clamp_u32(int64_t v) { return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

namespace {

// The most blocks an SM holds, by compute capability (the CUDA C Programming Guide's table of
// compute capabilities): Kineto's deviceProperties does not say it.
uint32_t max_blocks_per_sm(uint32_t major, uint32_t minor) {
  if (major == 7 && minor == 5) return 16;
  if (major == 8 && (minor == 6 || minor == 7)) return 16;
  if (major == 8 && minor == 9) return 24;
  if (major >= 5) return 32;
  return 16;
}

}  // namespace

v1::DeviceInfo device_info_of(const JsonObject& o) {
  v1::DeviceInfo d;
  auto u = [&](std::string_view key) { return static_cast<uint64_t>(std::max<int64_t>(0, int_or(o.get(key), 0))); };
  d.set_ordinal(clamp_u32(int_or(o.get("id"), 0)));
  if (const JsonScalar* n = o.get("name")) d.set_name(n->text);
  d.set_sm_count(clamp_u32(static_cast<int64_t>(u("numSms"))));
  d.set_cc_major(clamp_u32(static_cast<int64_t>(u("computeMajor"))));
  d.set_cc_minor(clamp_u32(static_cast<int64_t>(u("computeMinor"))));
  const uint32_t warp = clamp_u32(static_cast<int64_t>(u("warpSize")));
  d.set_warp_size(warp);
  d.set_max_threads_per_sm(clamp_u32(static_cast<int64_t>(u("maxThreadsPerMultiprocessor"))));
  if (warp != 0) d.set_max_warps_per_sm(d.max_threads_per_sm() / warp);
  d.set_max_blocks_per_sm(max_blocks_per_sm(d.cc_major(), d.cc_minor()));
  d.set_max_threads_per_block(clamp_u32(static_cast<int64_t>(u("maxThreadsPerBlock"))));
  d.set_registers_per_sm(clamp_u32(static_cast<int64_t>(u("regsPerMultiprocessor"))));
  d.set_registers_per_block(clamp_u32(static_cast<int64_t>(u("regsPerBlock"))));
  uint64_t smem_sm = u("sharedMemPerMultiprocessor");
  if (smem_sm == 0) smem_sm = u("maxSharedMemoryPerMultiProcessor");  // ROCm's name
  d.set_shared_memory_per_sm_bytes(smem_sm);
  d.set_shared_memory_per_block_bytes(u("sharedMemPerBlock"));
  d.set_shared_memory_per_block_optin_bytes(u("sharedMemPerBlockOptin"));
  d.set_global_memory_bytes(u("totalGlobalMem"));
  return d;
}

// The NCCL entry point a collective comes from, as the hook names its calls.
std::string_view nccl_entry_point(v1::NcclOp op) {
  switch (op) {
    case v1::NCCL_ALL_REDUCE: return "ncclAllReduce";
    case v1::NCCL_BROADCAST: return "ncclBroadcast";
    case v1::NCCL_REDUCE: return "ncclReduce";
    case v1::NCCL_ALL_GATHER: return "ncclAllGather";
    case v1::NCCL_REDUCE_SCATTER: return "ncclReduceScatter";
    case v1::NCCL_SEND: return "ncclSend";
    case v1::NCCL_RECV: return "ncclRecv";
    case v1::NCCL_ALL_TO_ALL: return "ncclAlltoAll";
    case v1::NCCL_GATHER: return "ncclGather";
    case v1::NCCL_SCATTER: return "ncclScatter";
    default: return "nccl (collective unknown)";
  }
}

}  // namespace gantt::scan::kineto
