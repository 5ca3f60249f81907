#include "device_info.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

namespace gpuhook::hook {
namespace {

// Only ABI-stable entry points: integer attributes and a name. cudaGetDeviceProperties fills a
// struct whose layout changed between CUDA 12 and 13 (13 dropped clockRate and others), so a
// CUDA 12 runtime in the process would write past a CUDA 13-sized struct; and nvcc's default
// static cudart exports no symbol at all. The usual source is CUPTI's DEVICE record
// (cupti_convert.cpp); this query is the fallback when a record names a device first.
using CuDeviceGet = CUresult (*)(CUdevice*, int);
using CuDeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
using CuDeviceGetName = CUresult (*)(char*, int, CUdevice);
using CuDeviceTotalMem = CUresult (*)(size_t*, CUdevice);
using CuDeviceGetUuid = CUresult (*)(CUuuid*, CUdevice);
using CudaDeviceGetAttribute = cudaError_t (*)(int*, cudaDeviceAttr, int);
using CudaGetDeviceProperties = cudaError_t (*)(void*, int);

// One attribute, as the driver and the runtime number it (the same values, by design of the
// runtime headers, but each API is asked with its own enum).
struct Attribute {
  CUdevice_attribute driver;
  cudaDeviceAttr runtime;
  void (*set)(wire::DeviceInfo&, int);
};

#define GPUHOOK_ATTR(drv, rt, field) \
  {drv, rt, [](wire::DeviceInfo& d, int v) { d.set_##field(static_cast<decltype(d.field())>(v)); }}
const Attribute kAttributes[] = {
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cudaDevAttrMultiProcessorCount, sm_count),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cudaDevAttrComputeCapabilityMajor, cc_major),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cudaDevAttrComputeCapabilityMinor, cc_minor),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, cudaDevAttrMaxThreadsPerMultiProcessor,
                 max_threads_per_sm),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, cudaDevAttrMaxBlocksPerMultiprocessor,
                 max_blocks_per_sm),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, cudaDevAttrMaxThreadsPerBlock, max_threads_per_block),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, cudaDevAttrMaxRegistersPerMultiprocessor,
                 registers_per_sm),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, cudaDevAttrMaxRegistersPerBlock, registers_per_block),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                 shared_memory_per_sm_bytes),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, cudaDevAttrMaxSharedMemoryPerBlock,
                 shared_memory_per_block_bytes),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                 shared_memory_per_block_optin_bytes),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, cudaDevAttrReservedSharedMemoryPerBlock,
                 reserved_shared_memory_per_block_bytes),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE, cudaDevAttrWarpSize, warp_size),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, cudaDevAttrClockRate, core_clock_khz),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, cudaDevAttrMemoryClockRate, memory_clock_khz),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, cudaDevAttrAsyncEngineCount, async_engine_count),
    GPUHOOK_ATTR(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, cudaDevAttrPciBusId, pci_bus_id),
};
#undef GPUHOOK_ATTR

void finish(wire::DeviceInfo& d) {
  if (d.warp_size() > 0 && d.max_warps_per_sm() == 0) d.set_max_warps_per_sm(d.max_threads_per_sm() / d.warp_size());
}

// A library the process already loaded; the hook never loads CUDA itself.
void* loaded(const char* soname) { return dlopen(soname, RTLD_NOW | RTLD_NOLOAD); }

void* symbol(void* lib, const char* name) {
  if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
  return lib != nullptr ? dlsym(lib, name) : nullptr;
}

std::optional<wire::DeviceInfo> from_driver(uint32_t ordinal) {
  void* lib = loaded("libcuda.so.1");
  if (lib == nullptr) return std::nullopt;
  auto get = reinterpret_cast<CuDeviceGet>(symbol(lib, "cuDeviceGet"));
  auto attr = reinterpret_cast<CuDeviceGetAttribute>(symbol(lib, "cuDeviceGetAttribute"));
  auto name = reinterpret_cast<CuDeviceGetName>(symbol(lib, "cuDeviceGetName"));
  auto mem = reinterpret_cast<CuDeviceTotalMem>(symbol(lib, "cuDeviceTotalMem_v2"));
  auto uuid = reinterpret_cast<CuDeviceGetUuid>(symbol(lib, "cuDeviceGetUuid_v2"));
  dlclose(lib);  // NOLOAD took a reference; the process keeps its own
  CUdevice dev = 0;
  if (get == nullptr || attr == nullptr || get(&dev, static_cast<int>(ordinal)) != CUDA_SUCCESS) return std::nullopt;
  wire::DeviceInfo d;
  d.set_ordinal(ordinal);
  char text[256] = {};
  if (name != nullptr && name(text, sizeof(text) - 1, dev) == CUDA_SUCCESS) d.set_name(text);
  size_t bytes = 0;
  if (mem != nullptr && mem(&bytes, dev) == CUDA_SUCCESS) d.set_global_memory_bytes(bytes);
  CUuuid id{};
  if (uuid != nullptr && uuid(&id, dev) == CUDA_SUCCESS) d.set_uuid(std::string(id.bytes, sizeof(id.bytes)));
  for (const Attribute& a : kAttributes) {
    int v = 0;
    if (attr(&v, a.driver, dev) == CUDA_SUCCESS && v >= 0) a.set(d, v);
  }
  finish(d);
  return d;
}

std::optional<wire::DeviceInfo> from_runtime(uint32_t ordinal) {
  void* lib = loaded("libcudart.so.13");
  auto attr = reinterpret_cast<CudaDeviceGetAttribute>(symbol(lib, "cudaDeviceGetAttribute"));
  auto props = reinterpret_cast<CudaGetDeviceProperties>(symbol(lib, "cudaGetDeviceProperties"));
  if (lib != nullptr) dlclose(lib);
  if (attr == nullptr) return std::nullopt;
  wire::DeviceInfo d;
  d.set_ordinal(ordinal);
  int sm = 0;
  if (attr(&sm, cudaDevAttrMultiProcessorCount, static_cast<int>(ordinal)) != cudaSuccess) return std::nullopt;
  for (const Attribute& a : kAttributes) {
    int v = 0;
    if (attr(&v, a.runtime, static_cast<int>(ordinal)) == cudaSuccess && v >= 0) a.set(d, v);
  }
  if (props != nullptr) {
    // Only the name, the first member of cudaDeviceProp in every CUDA version; the buffer is
    // far larger than any version's struct, so an older runtime's layout cannot overrun it.
    std::vector<unsigned char> buffer(16384, 0);
    if (props(buffer.data(), static_cast<int>(ordinal)) == cudaSuccess) {
      const char* name = reinterpret_cast<const char*>(buffer.data());
      d.set_name(std::string(name, strnlen(name, 256)));
    }
  }
  finish(d);
  return d;
}

using CuDeviceGetCount = CUresult (*)(int*);
using CuDeviceGetPciBusId = CUresult (*)(char*, int, CUdevice);
using CudaGetDeviceCount = cudaError_t (*)(int*);
using CudaDeviceGetPciBusId = cudaError_t (*)(char*, int, int);

// A symbol of the driver, else of the runtime, from a library the process already loaded.
template <class Fn>
Fn driver_symbol(const char* name) {
  void* lib = loaded("libcuda.so.1");
  auto f = reinterpret_cast<Fn>(symbol(lib, name));
  if (lib != nullptr) dlclose(lib);
  return f;
}

template <class Fn>
Fn runtime_symbol(const char* name) {
  void* lib = loaded("libcudart.so.13");
  auto f = reinterpret_cast<Fn>(symbol(lib, name));
  if (lib != nullptr) dlclose(lib);
  return f;
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (auto count = driver_symbol<CuDeviceGetCount>("cuDeviceGetCount"); count != nullptr && count(&n) == CUDA_SUCCESS)
    return n;
  n = 0;
  if (auto count = runtime_symbol<CudaGetDeviceCount>("cudaGetDeviceCount"); count != nullptr && count(&n) == cudaSuccess)
    return n;
  return 0;
}

std::string cuda_pci_bus_id(uint32_t ordinal) {
  char text[64] = {};
  auto get = driver_symbol<CuDeviceGet>("cuDeviceGet");
  auto bus = driver_symbol<CuDeviceGetPciBusId>("cuDeviceGetPCIBusId");
  CUdevice dev = 0;
  if (get != nullptr && bus != nullptr && get(&dev, static_cast<int>(ordinal)) == CUDA_SUCCESS &&
      bus(text, sizeof(text) - 1, dev) == CUDA_SUCCESS)
    return text;
  auto rt_bus = runtime_symbol<CudaDeviceGetPciBusId>("cudaDeviceGetPCIBusId");
  if (rt_bus != nullptr && rt_bus(text, sizeof(text) - 1, static_cast<int>(ordinal)) == cudaSuccess) return text;
  return {};
}

std::string cuda_uuid_text(uint32_t ordinal) {
  auto get = driver_symbol<CuDeviceGet>("cuDeviceGet");
  auto uuid = driver_symbol<CuDeviceGetUuid>("cuDeviceGetUuid_v2");
  CUdevice dev = 0;
  CUuuid id{};
  if (get == nullptr || uuid == nullptr || get(&dev, static_cast<int>(ordinal)) != CUDA_SUCCESS ||
      uuid(&id, dev) != CUDA_SUCCESS)
    return {};
  // NVML's form: GPU-8-4-4-4-12 hex digits (nvmlDeviceGetUUID).
  static const char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    const auto b = static_cast<unsigned char>(id.bytes[i]);
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  return text;
}

bool is_simulator_device_name(const std::string& name) {
  return name.find("gpuhook simulator") != std::string::npos;
}

std::optional<wire::DeviceInfo> query_device(uint32_t ordinal) {
  if (auto d = from_driver(ordinal)) return d;
  return from_runtime(ordinal);
}

}  // namespace gpuhook::hook
