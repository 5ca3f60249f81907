#include "device_info.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <string>

namespace gpuhook::hook {
namespace {

using GetPropertiesFn = cudaError_t (*)(cudaDeviceProp*, int);
using GetAttributeFn = cudaError_t (*)(int*, cudaDeviceAttr, int);

void* find_runtime_symbol(const char* name) {
  if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
  // A runtime loaded RTLD_LOCAL (dlopen'd by a framework) is only reachable by its name.
  static void* handle = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

}  // namespace

bool is_simulator_device_name(const std::string& name) {
  return name.find("gpuhook simulator") != std::string::npos;
}

std::optional<v1::DeviceInfo> query_device(uint32_t ordinal) {
  auto get_props = reinterpret_cast<GetPropertiesFn>(find_runtime_symbol("cudaGetDeviceProperties"));
  if (get_props == nullptr) {
    get_props = reinterpret_cast<GetPropertiesFn>(find_runtime_symbol("cudaGetDeviceProperties_v2"));
  }
  if (get_props == nullptr) return std::nullopt;
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof(p));
  if (get_props(&p, static_cast<int>(ordinal)) != cudaSuccess) return std::nullopt;
  v1::DeviceInfo d;
  d.set_ordinal(ordinal);
  d.set_name(std::string(p.name, strnlen(p.name, sizeof(p.name))));
  d.set_uuid(std::string(p.uuid.bytes, sizeof(p.uuid.bytes)));
  d.set_sm_count(static_cast<uint32_t>(p.multiProcessorCount));
  d.set_cc_major(static_cast<uint32_t>(p.major));
  d.set_cc_minor(static_cast<uint32_t>(p.minor));
  d.set_max_threads_per_sm(static_cast<uint32_t>(p.maxThreadsPerMultiProcessor));
  if (p.warpSize > 0) d.set_max_warps_per_sm(static_cast<uint32_t>(p.maxThreadsPerMultiProcessor / p.warpSize));
  d.set_max_blocks_per_sm(static_cast<uint32_t>(p.maxBlocksPerMultiProcessor));
  d.set_max_threads_per_block(static_cast<uint32_t>(p.maxThreadsPerBlock));
  d.set_registers_per_sm(static_cast<uint32_t>(p.regsPerMultiprocessor));
  d.set_registers_per_block(static_cast<uint32_t>(p.regsPerBlock));
  d.set_shared_memory_per_sm_bytes(p.sharedMemPerMultiprocessor);
  d.set_shared_memory_per_block_bytes(p.sharedMemPerBlock);
  d.set_shared_memory_per_block_optin_bytes(p.sharedMemPerBlockOptin);
  d.set_reserved_shared_memory_per_block_bytes(p.reservedSharedMemPerBlock);
  d.set_warp_size(static_cast<uint32_t>(p.warpSize));
  d.set_global_memory_bytes(p.totalGlobalMem);
  d.set_async_engine_count(static_cast<uint32_t>(p.asyncEngineCount));
  d.set_pci_bus_id(static_cast<uint32_t>(p.pciBusID));
  // CUDA 13 dropped the clock fields from cudaDeviceProp; they are attributes now. The test
  // simulator models no clocks and treats the question as a fatal error, so it is not asked.
  if (is_simulator_device_name(d.name())) return d;
  if (auto get_attr = reinterpret_cast<GetAttributeFn>(find_runtime_symbol("cudaDeviceGetAttribute"))) {
    int khz = 0;
    if (get_attr(&khz, cudaDevAttrClockRate, static_cast<int>(ordinal)) == cudaSuccess && khz > 0) {
      d.set_core_clock_khz(static_cast<uint32_t>(khz));
    }
    if (get_attr(&khz, cudaDevAttrMemoryClockRate, static_cast<int>(ordinal)) == cudaSuccess && khz > 0) {
      d.set_memory_clock_khz(static_cast<uint32_t>(khz));
    }
  }
  return d;
}

}  // namespace gpuhook::hook
