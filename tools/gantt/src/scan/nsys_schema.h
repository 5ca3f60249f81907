// What the tables of an Nsight Systems SQLite export mean (TRACE-FORMATS.md, part B): the
// columns read from each, the ENUM_* texts and CUPTI numbers they hold, and how global ids
// pack a process and a thread. Facts only: nsys_import.cpp and nsys_rows.cpp decide what to write.
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpuhook/capture.h>

namespace gantt::scan::nsys {

namespace v1 = gpuhook::v1;

inline constexpr int64_t kUnknownPid = -1;  // a row without globalPid/globalTid

// NVTX_EVENTS.eventType (B3).
inline constexpr int64_t kNvtxMark = 34, kNvtxPushPop = 59, kNvtxStartEnd = 60, kNvtxDomain = 75;

// Upper-case letters and digits only: "Host-to-Device" and "CUDA_MEMCPY_KIND_HTOD" compare alike.
inline std::string normalized(std::string_view text) {
  std::string n;
  for (unsigned char c : text) {
    if (std::isalnum(c)) n += static_cast<char>(std::toupper(c));
  }
  return n;
}

// The columns read from each table, by their nsys names (TRACE-FORMATS.md, B2). `start` first
// where there is one: the merge reads it as column 0.
#define NSYS_ENUM(name) name,
#define NSYS_NAME(name) #name,
#define NSYS_COLUMNS(Table, LIST)                                                      \
  struct Table {                                                                       \
    enum { LIST(NSYS_ENUM) kCount };                                                   \
    static std::vector<std::string_view> names() { return {LIST(NSYS_NAME)}; }         \
  };
#define NSYS_KERNEL_COLUMNS(X)                                                                                  \
  X(start) X(end) X(deviceId) X(contextId) X(streamId) X(correlationId) X(globalPid) X(demangledName)      \
  X(shortName) X(mangledName) X(launchType) X(registersPerThread) X(gridX) X(gridY) X(gridZ) X(blockX)     \
  X(blockY) X(blockZ) X(staticSharedMemory) X(dynamicSharedMemory) X(localMemoryPerThread) X(graphId)      \
  X(graphNodeId) X(queued) X(submitted)
#define NSYS_MEMCPY_COLUMNS(X)                                                                                  \
  X(start) X(end) X(deviceId) X(contextId) X(streamId) X(correlationId) X(globalPid) X(bytes) X(copyKind) \
  X(srcKind) X(dstKind) X(srcDeviceId) X(dstDeviceId) X(graphNodeId)
#define NSYS_MEMSET_COLUMNS(X)                                                                                  \
  X(start) X(end) X(deviceId) X(contextId) X(streamId) X(correlationId) X(globalPid) X(value) X(bytes)     \
  X(memKind) X(memoryKind) X(graphNodeId)
#define NSYS_API_COLUMNS(X) X(start) X(end) X(globalTid) X(correlationId) X(nameId) X(returnValue)
#define NSYS_SYNC_COLUMNS(X)                                                                                    \
  X(start) X(end) X(deviceId) X(contextId) X(streamId) X(correlationId) X(globalPid) X(syncType) X(type)  \
  X(deprecatedSyncType) X(eventId)
#define NSYS_NVTX_COLUMNS(X) \
  X(start) X(end) X(eventType) X(category) X(color) X(text) X(textId) X(globalTid) X(domainId)
#define NSYS_GPU_COLUMNS(X)                                                                                     \
  X(id) X(name) X(busLocation) X(totalMemory) X(clockRate) X(smCount) X(uuid) X(cuDevice)                 \
  X(maxRegistersPerBlock) X(maxShmemPerBlock) X(maxShmemPerBlockOptin) X(maxShmemPerSm)                   \
  X(maxRegistersPerSm) X(threadsPerWarp) X(asyncEngines) X(maxWarpsPerSm) X(maxBlocksPerSm)               \
  X(maxThreadsPerBlock) X(computeMajor) X(computeMinor)
#define NSYS_CUDA_DEVICE_COLUMNS(X) X(gpuId) X(cudaId) X(pid) X(uuid) X(numMultiprocessors)
#define NSYS_STREAM_COLUMNS(X) X(streamId) X(processId) X(contextId) X(priority) X(flag)
#define NSYS_THREAD_COLUMNS(X) X(globalTid) X(nameId)
#define NSYS_ENUM_COLUMNS(X) X(id) X(name) X(label)
NSYS_COLUMNS(KernelCol, NSYS_KERNEL_COLUMNS)
NSYS_COLUMNS(MemcpyCol, NSYS_MEMCPY_COLUMNS)
NSYS_COLUMNS(MemsetCol, NSYS_MEMSET_COLUMNS)
NSYS_COLUMNS(ApiCol, NSYS_API_COLUMNS)
NSYS_COLUMNS(SyncCol, NSYS_SYNC_COLUMNS)
NSYS_COLUMNS(NvtxCol, NSYS_NVTX_COLUMNS)
NSYS_COLUMNS(GpuCol, NSYS_GPU_COLUMNS)
NSYS_COLUMNS(CudaDeviceCol, NSYS_CUDA_DEVICE_COLUMNS)
NSYS_COLUMNS(StreamCol, NSYS_STREAM_COLUMNS)
NSYS_COLUMNS(ThreadCol, NSYS_THREAD_COLUMNS)
NSYS_COLUMNS(EnumCol, NSYS_ENUM_COLUMNS)
#undef NSYS_KERNEL_COLUMNS
#undef NSYS_MEMCPY_COLUMNS
#undef NSYS_MEMSET_COLUMNS
#undef NSYS_API_COLUMNS
#undef NSYS_SYNC_COLUMNS
#undef NSYS_NVTX_COLUMNS
#undef NSYS_GPU_COLUMNS
#undef NSYS_CUDA_DEVICE_COLUMNS
#undef NSYS_STREAM_COLUMNS
#undef NSYS_THREAD_COLUMNS
#undef NSYS_ENUM_COLUMNS
#undef NSYS_COLUMNS
#undef NSYS_ENUM
#undef NSYS_NAME


// An ENUM_* table: id -> its `name` and its `label`, whichever exist (B2, B5.4).
using EnumText = std::map<int64_t, std::pair<std::string, std::string>>;
using Patterns = std::vector<std::pair<std::string_view, int>>;

// The value the enum's name (else its label) spells, else the CUPTI number itself when in
// range: an export without the enum table, or with a text we do not know, still reads.
inline int enum_value(const EnumText& e, std::optional<int64_t> raw, int max_cupti, const Patterns& patterns) {
  if (!raw) return 0;
  if (const auto it = e.find(*raw); it != e.end()) {
    for (const std::string* text : {&it->second.first, &it->second.second}) {
      const std::string n = normalized(*text);
      for (const auto& [pattern, value] : patterns) {
        if (n.find(pattern) != std::string::npos) return value;
      }
    }
  }
  return *raw >= 0 && *raw <= max_cupti ? static_cast<int>(*raw) : 0;
}

inline const Patterns kCopyPatterns = {
    {"HTOD", v1::COPY_HTOD}, {"HOSTTODEVICE", v1::COPY_HTOD}, {"DTOH", v1::COPY_DTOH}, {"DEVICETOHOST", v1::COPY_DTOH},
    {"HTOA", v1::COPY_HTOA}, {"HOSTTOARRAY", v1::COPY_HTOA}, {"ATOH", v1::COPY_ATOH}, {"ARRAYTOHOST", v1::COPY_ATOH},
    {"ATOA", v1::COPY_ATOA}, {"ARRAYTOARRAY", v1::COPY_ATOA}, {"ATOD", v1::COPY_ATOD}, {"ARRAYTODEVICE", v1::COPY_ATOD},
    {"DTOA", v1::COPY_DTOA}, {"DEVICETOARRAY", v1::COPY_DTOA}, {"DTOD", v1::COPY_DTOD},
    {"DEVICETODEVICE", v1::COPY_DTOD}, {"HTOH", v1::COPY_HTOH}, {"HOSTTOHOST", v1::COPY_HTOH},
    {"PTOP", v1::COPY_PTOP}, {"PEERTOPEER", v1::COPY_PTOP}};
// The specific kinds before the words they contain ("Managed Static" before "Managed").
inline const Patterns kMemoryPatterns = {
    {"MANAGEDSTATIC", v1::MEMORY_MANAGED_STATIC}, {"DEVICESTATIC", v1::MEMORY_DEVICE_STATIC},
    {"PAGEABLE", v1::MEMORY_PAGEABLE}, {"PINNED", v1::MEMORY_PINNED}, {"ARRAY", v1::MEMORY_ARRAY},
    {"MANAGED", v1::MEMORY_MANAGED}, {"DEVICE", v1::MEMORY_DEVICE}};
// Newer exports number ENUM_CUPTI_SYNC_TYPE their own way (the schema keeps the old column as
// deprecatedSyncType), so the enum's words decide when the table is there.
inline const Patterns kSyncPatterns = {
    {"WAIT", v1::SYNC_STREAM_WAIT_EVENT}, {"CONTEXT", v1::SYNC_CONTEXT_SYNCHRONIZE},
    {"DEVICE", v1::SYNC_CONTEXT_SYNCHRONIZE}, {"STREAM", v1::SYNC_STREAM_SYNCHRONIZE},
    {"EVENT", v1::SYNC_EVENT_SYNCHRONIZE}};
inline const Patterns kLaunchPatterns = {
    {"MULTI", v1::LAUNCH_COOPERATIVE_MULTI}, {"COOPERATIVE", v1::LAUNCH_COOPERATIVE_SINGLE},
    {"CBL", v1::LAUNCH_CBL}, {"REGULAR", v1::LAUNCH_REGULAR}};

// Without a SYNCHRONIZATION table (CUDA tracing without it): the blocking calls themselves.
inline v1::SyncType sync_type_of_call(std::string_view name) {
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize") return v1::SYNC_STREAM_SYNCHRONIZE;
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize") return v1::SYNC_CONTEXT_SYNCHRONIZE;
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize") return v1::SYNC_EVENT_SYNCHRONIZE;
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") return v1::SYNC_STREAM_WAIT_EVENT;
  return v1::SYNC_UNKNOWN;
}

// CUPTI's API names carry the version of the function's signature: cudaLaunchKernel_v7000.
inline std::string_view without_version(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 == name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  }
  return name.substr(0, v);
}

// globalTid and globalPid: the PID in bits 24-47, the TID in bits 0-23 (B3).
inline int64_t pid_of(std::optional<int64_t> global) {
  return global ? static_cast<int64_t>((static_cast<uint64_t>(*global) >> 24) & 0xFFFFFF) : kUnknownPid;
}
inline uint64_t tid_of(std::optional<int64_t> global) { return global ? static_cast<uint64_t>(*global) & 0xFFFFFF : 0; }

inline uint32_t clamp_u32(int64_t v) { return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

// "0000:07:00.0" (domain:bus:device.function) -> the bus, as CUDA's PCI bus id attribute gives it.
inline uint32_t pci_bus_of(std::string_view location) {
  const size_t colon = location.find(':');
  if (colon == std::string_view::npos) return 0;
  uint32_t bus = 0;
  const std::string_view rest = location.substr(colon + 1);
  std::from_chars(rest.data(), rest.data() + rest.size(), bus, 16);
  return bus;
}

}  // namespace gantt::scan::nsys
