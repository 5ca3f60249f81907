// Kineto's names and fields as the capture's enums and records (TRACE-FORMATS.md, part A): what
// kineto_import.cpp maps, each a pure function of the text, tested through the importer.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include <gpuhook/capture.h>

#include "kineto_json.h"

namespace gantt::scan::kineto {

// An integer field: JSON number text, or a string holding one (Kineto quotes some); an
// integral "4.0" passes, "4.5" and "1e3" do not.
bool as_int(const JsonScalar* s, int64_t* out);
int64_t int_or(const JsonScalar* s, int64_t fallback);
// CUPTI's "none" (-1, 4294967295) and other negatives fold to their 32-bit pattern.
uint32_t u32_or(const JsonScalar* s, uint32_t fallback);
uint32_t clamp_u32(int64_t v);

bool is_gpu_category(std::string_view cat);   // kernel, gpu_memcpy, gpu_memset, cuda_sync, ...
bool is_host_category(std::string_view cat);  // cpu_op, cuda_runtime, cuda_driver, ...
bool starts_with(std::string_view s, std::string_view prefix);
bool is_nccl_kernel(std::string_view name);   // ncclDevKernel_*, ncclKernel_*

// "Memcpy HtoD (Pinned -> Device)": the direction, and the memory kinds in the parentheses
// ("Memset (Device)": the first only).
gpuhook::v1::CopyKind copy_kind_of(std::string_view name);
std::pair<gpuhook::v1::MemoryKind, gpuhook::v1::MemoryKind> memory_kinds_in(std::string_view name);

gpuhook::v1::SyncType sync_type_of_event(std::string_view name);  // a cuda_sync event's name
gpuhook::v1::SyncType sync_type_of_call(std::string_view name);   // a blocking CUDA/HIP call

// c10d's "Collective name", else the NCCL kernel's own name.
gpuhook::v1::NcclOp nccl_op_of(std::string_view collective, std::string_view kernel);
int32_t nccl_datatype_of(std::string_view dtype);  // c10::ScalarType name; -1 when unknown
std::string_view nccl_entry_point(gpuhook::v1::NcclOp op);  // as the hook names its calls
uint64_t fnv1a(std::string_view s);  // a process group's name as a communicator id

// A deviceProperties entry (ROCm's names too).
gpuhook::v1::DeviceInfo device_info_of(const JsonObject& o);

}  // namespace gantt::scan::kineto
