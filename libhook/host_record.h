// The fixed-size record that hot paths (NCCL wrappers, NVTX callbacks, gpuhook.h) write into
// their thread's ring. Plain data: no constructor, no pointer the writer must free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuhook::hook {

// kNameMore: the continuation of a long name (see RangePayload). kMemoryTag: gpuhook_mem_tag(),
// a RangePayload whose name is the category and whose range_id is the address. kMemoryUse:
// addresses a launch, copy or memset was given (memory_use.h). kGpuMetrics: one NVML read or
// one PM sample of one device (nvml_sampler.cpp, pm_sampler.cpp).
enum class HostKind : uint8_t { kNone = 0, kNccl = 1, kRange = 2, kThreadName = 3, kNameMore = 4, kHostFunc = 5,
                                kMemoryTag = 6, kMemoryUse = 7, kGpuMetrics = 8 };

// Range names are copied into the record because NVTX strings live only for the call. Most
// names fit the record itself; a longer one (up to kMaxNameBytes, below) continues in
// kNameMore records that follow it in the same ring and are committed with it in one step, so
// the writer always drains the head and all its continuations together. Short names cost
// nothing more; the hot path never allocates for any name.
inline constexpr size_t kInlineNameBytes = 56;
inline constexpr size_t kMoreNameBytes = 96;  // name bytes in one kNameMore record
// The longest name kept whole (docs/limits.md, "NVTX names"). A longer one keeps its first
// kMaxNameBytes bytes, cut back to a whole UTF-8 character, with name_truncated set; the writer
// then ends it with kCutMarker. 56 + 43 * 96 bytes hold it: 44 records, well inside the
// smallest ring (64).
inline constexpr size_t kMaxNameBytes = 4096;
inline constexpr char kCutMarker[] = "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS

struct NcclPayload {
  const char* function;  // static string: the entry point's name
  uint64_t count;
  uint64_t bytes;
  uint64_t comm_id;
  uint64_t stream;
  uint64_t sequence;  // send/recv: the communicator's point-to-point number; else its collective number
  uint64_t external_id;  // pushed as CUPTI external correlation id around the call; 0 = none
  int32_t datatype;
  int32_t reduce_op;
  int32_t root_or_peer;
  int32_t rank;
  int32_t nranks;
  int32_t return_value;
  uint32_t group_depth;
  uint8_t op;  // gpuhook::v1::NcclOp
  uint8_t pad;
  int16_t device;  // CUDA device of the communicator (ncclCommCuDevice), -1 unknown
};

struct RangePayload {
  const void* domain;             // an InternedName* (nvtx_names.h), nullptr = the global domain
  const void* registered_name;    // an InternedName*, when the name was registered
  uint64_t range_id;              // START/END pairing
  uint32_t color;
  uint32_t category;
  uint8_t type;                   // gpuhook::v1::RangeType
  uint8_t source;                 // 0 NVTX, 1 gpuhook.h
  uint8_t name_bytes;             // bytes used in name[]
  uint8_t name_truncated;         // the name was cut: the writer marks it
  uint16_t name_total_bytes;      // the whole name: name[] and the continuations
  uint16_t more_records;          // kNameMore records that follow this one
  char name[kInlineNameBytes];
};

// A host function queued in stream order, as it ran (host_func_hooks.cpp). thread_id is the
// runtime thread that ran it, start_ns/end_ns its run.
struct HostFuncPayload {
  const void* function;       // the program's function: the writer names it (dladdr)
  uint64_t launch_thread_id;  // the thread that queued it
  uint64_t external_id;       // pushed around the enqueueing call; 0 = none
  uint32_t stream;            // CUPTI stream id; 0 = unknown
  uint8_t api;                // gpuhook::v1::HostFunctionApi
};

// Addresses one call was given (GPUHOOK_MEM_USE, memory_use.h): the writer writes a MemoryUse
// record for each. A call with more writes several records.
inline constexpr size_t kUsesPerRecord = 10;
struct MemoryUsePayload {
  uint32_t correlation_id;  // the call's CUPTI correlation id, 0 = none
  uint32_t count;           // addresses used in address[]
  uint64_t address[kUsesPerRecord];
};

// One read of a device's counters: value[m - 1] is GpuMetric m + metric_offset (capture.proto),
// present when bit m of `present` is set. start_ns is the read's time. NVML reads have offset
// 0 (GpuMetric 1..10), PM samples kPmMetricOffset (11..20).
inline constexpr uint32_t kGpuMetricSlots = 11;
inline constexpr uint16_t kPmMetricOffset = 10;
struct GpuMetricsPayload {
  uint16_t device;         // CUDA ordinal
  uint16_t metric_offset;  // added to the slot's number
  uint32_t present;        // bit m: slot m was read
  uint64_t value[kGpuMetricSlots];
};

// The next kMoreNameBytes of a name; the last one holds the rest.
struct NameMorePayload {
  char text[kMoreNameBytes];
};

struct HostRecord {
  HostKind kind;
  uint8_t pad[7];
  uint64_t thread_id;
  uint64_t start_ns;  // enter / time of a range event
  uint64_t end_ns;    // exit (NCCL)
  union {
    NcclPayload nccl;
    RangePayload range;
    NameMorePayload name_more;
    HostFuncPayload host_func;
    MemoryUsePayload memory_use;
    GpuMetricsPayload metrics;
  };
};

// One cache-line pair per record: small enough that a ring of 8192 is 1 MiB, large enough
// for a short range name without a pointer into the app's memory.
static_assert(sizeof(HostRecord) == 128, "HostRecord must stay 128 bytes");
static_assert(sizeof(RangePayload) <= 96 && sizeof(NcclPayload) <= 96 && sizeof(NameMorePayload) <= 96 &&
              sizeof(MemoryUsePayload) <= 96 && sizeof(GpuMetricsPayload) <= 96);

}  // namespace gpuhook::hook
