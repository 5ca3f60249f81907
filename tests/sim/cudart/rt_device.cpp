// Device query, errors, occupancy and profiler control of the simulated runtime.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "device_model.h"
#include "engine.h"
#include "records.h"
#include "registry.h"

using namespace gpuhook::sim;

namespace {

void fill_properties(cudaDeviceProp* p, int device) {
  std::memset(p, 0, sizeof *p);
  // Says what it is: no person or tool should take this for a GPU.
  std::snprintf(p->name, sizeof p->name, "gpuhook simulator (H200 model)");
  p->totalGlobalMem = model::kGlobalMemBytes;
  p->sharedMemPerBlock = model::kSharedPerBlockBytes;
  p->regsPerBlock = 64 * 1024;
  p->warpSize = model::kWarpSize;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = model::kMaxThreadsPerBlock;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 * 1024;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = model::kSmCount;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;  // one copy engine per direction
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 6144;
  p->l2CacheSize = 60 * 1024 * 1024;
  p->persistingL2CacheMaxSize = 0;
  p->maxThreadsPerMultiProcessor = model::kMaxThreadsPerSm;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = model::kSharedPerSmBytes;
  p->regsPerMultiprocessor = model::kRegistersPerSm;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = model::kSharedPerBlockOptinBytes;
  p->maxBlocksPerMultiProcessor = model::kMaxBlocksPerSm;
  p->reservedSharedMemPerBlock = model::kReservedSharedPerBlockBytes;
  p->pciBusID = model::pci_bus_id(device);
  p->pciDeviceID = 0;
  p->pciDomainID = 0;
  std::memcpy(p->uuid.bytes, "gpuhook-sim-dev", 15);  // as the DEVICE record's
  p->uuid.bytes[15] = static_cast<char>(device);
}

// The model's value of an attribute, or -1 when the simulator does not model it.
int attribute(cudaDeviceAttr attr, int device) {
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: return model::kMaxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX: return 1024;
    case cudaDevAttrMaxBlockDimY: return 1024;
    case cudaDevAttrMaxBlockDimZ: return 64;
    case cudaDevAttrMaxGridDimX: return 2147483647;
    case cudaDevAttrMaxGridDimY: return 65535;
    case cudaDevAttrMaxGridDimZ: return 65535;
    case cudaDevAttrMaxSharedMemoryPerBlock: return static_cast<int>(model::kSharedPerBlockBytes);
    case cudaDevAttrWarpSize: return model::kWarpSize;
    case cudaDevAttrMaxRegistersPerBlock: return 64 * 1024;
    case cudaDevAttrMultiProcessorCount: return model::kSmCount;
    case cudaDevAttrConcurrentKernels: return 1;
    case cudaDevAttrAsyncEngineCount: return 2;
    case cudaDevAttrUnifiedAddressing: return 1;
    case cudaDevAttrComputeCapabilityMajor: return 9;
    case cudaDevAttrComputeCapabilityMinor: return 0;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return model::kMaxThreadsPerSm;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return static_cast<int>(model::kSharedPerSmBytes);
    case cudaDevAttrMaxRegistersPerMultiprocessor: return model::kRegistersPerSm;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return static_cast<int>(model::kSharedPerBlockOptinBytes);
    case cudaDevAttrMaxBlocksPerMultiprocessor: return model::kMaxBlocksPerSm;
    case cudaDevAttrReservedSharedMemoryPerBlock: return static_cast<int>(model::kReservedSharedPerBlockBytes);
    case cudaDevAttrStreamPrioritiesSupported: return 1;
    case cudaDevAttrL2CacheSize: return 60 * 1024 * 1024;
    case cudaDevAttrGlobalMemoryBusWidth: return 6144;
    case cudaDevAttrCanMapHostMemory: return 1;
    case cudaDevAttrIntegrated: return 0;
    case cudaDevAttrPciBusId: return model::pci_bus_id(device);
    case cudaDevAttrPciDeviceId: return 0;
    case cudaDevAttrPciDomainId: return 0;
    // Clocks of the model (an H200's boost and HBM3e clocks), for tools that convert cycles.
    case cudaDevAttrClockRate: return 1980000;
    case cudaDevAttrMemoryClockRate: return 3201000;
    case cudaDevAttrTotalConstantMemory: return 64 * 1024;
    case cudaDevAttrMaxPitch: return 2147483647;
    case cudaDevAttrGpuOverlap: return 1;
    case cudaDevAttrKernelExecTimeout: return 0;
    case cudaDevAttrComputeMode: return cudaComputeModeDefault;
    case cudaDevAttrEccEnabled: return 0;
    // cudaMallocManaged: the memory, not its page migration (README.md, "Limits").
    case cudaDevAttrManagedMemory: return 1;
    case cudaDevAttrConcurrentManagedAccess: return 1;
    case cudaDevAttrCooperativeLaunch: return 1;
    case cudaDevAttrMemoryPoolsSupported: return 1;     // cudaMallocAsync, cudaMemPoolCreate
    default: return -1;
  }
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, "cudaGetDeviceCount");
  if (count == nullptr) return api.ret(cudaErrorInvalidValue);
  *count = Engine::instance().device_count();
  return api.ret(cudaSuccess);
}

// The current device is per host thread, 0 until the thread sets one (cuda_runtime_api.h,
// cudaSetDevice: "Sets device as the current device for the calling host thread").
cudaError_t cudaSetDevice(int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020, "cudaSetDevice");
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  set_current_device(device);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetDevice(int* device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice");
  if (device == nullptr) return api.ret(cudaErrorInvalidValue);
  *device = current_device();
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000, "cudaGetDeviceProperties");
  if (prop == nullptr) return api.ret(cudaErrorInvalidValue);
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  fill_properties(prop, device);
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, "cudaDeviceGetAttribute");
  if (value == nullptr) return api.ret(cudaErrorInvalidValue);
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  const int v = attribute(attr, device);
  if (v < 0) {
    // Loud but not fatal: the caller may be a profiler asking on the program's behalf.
    std::fprintf(stderr, "gpuhook-sim: cudaDeviceGetAttribute: attribute %d is not simulated\n",
                 static_cast<int>(attr));
    return api.ret(cudaErrorInvalidValue);
  }
  *value = v;
  return api.ret(cudaSuccess);
}

// "domain:bus:device.function", hexadecimal, as cudaDeviceGetPCIBusId writes it
// (cuda_runtime_api.h: "[domain]:[bus]:[device].[function] where domain, bus, device, and
// function are all hexadecimal values").
cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetPCIBusId_v4010, "cudaDeviceGetPCIBusId");
  if (pci_bus_id == nullptr || len <= 0) return api.ret(cudaErrorInvalidValue);
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  std::snprintf(pci_bus_id, static_cast<size_t>(len), "%08X:%02X:00.0", 0u,
                static_cast<unsigned>(model::pci_bus_id(device)));
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pci_bus_id) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetByPCIBusId_v4010, "cudaDeviceGetByPCIBusId");
  if (device == nullptr || pci_bus_id == nullptr) return api.ret(cudaErrorInvalidValue);
  // Accepts the forms the header names: domain:bus:device.function, domain:bus:device, bus:device.function.
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) < 3 &&
      std::sscanf(pci_bus_id, "%x:%x.%x", &bus, &dev, &function) < 2) {
    return api.ret(cudaErrorInvalidValue);
  }
  for (int d = 0; d < Engine::instance().device_count(); ++d) {
    if (domain == 0 && dev == 0 && bus == static_cast<unsigned>(model::pci_bus_id(d))) {
      *device = d;
      return api.ret(cudaSuccess);
    }
  }
  return api.ret(cudaErrorInvalidDevice);
}

// Peer access: every pair of distinct simulated devices can reach each other (as NVLink-connected
// GPUs can). Enabling is per (current device, peer) and one way, as in cuda_runtime_api.h:
// "Access granted by this call is unidirectional"; enabling twice is
// cudaErrorPeerAccessAlreadyEnabled, disabling what was not enabled cudaErrorPeerAccessNotEnabled,
// the current device itself cudaErrorInvalidDevice, flags other than 0 cudaErrorInvalidValue.
// Copies between devices work without it (through unified addressing), as in CUDA.
namespace {
std::mutex g_peer_mu;
bool g_peer_enabled[16][16] = {};
}  // namespace

cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer_device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceCanAccessPeer_v4000, "cudaDeviceCanAccessPeer");
  if (can_access == nullptr) return api.ret(cudaErrorInvalidValue);
  Engine& engine = Engine::instance();
  if (!engine.valid_device(device) || !engine.valid_device(peer_device)) return api.ret(cudaErrorInvalidDevice);
  *can_access = device != peer_device ? 1 : 0;
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceEnablePeerAccess(int peer_device, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceEnablePeerAccess_v4000, "cudaDeviceEnablePeerAccess");
  const int device = current_device();
  if (!Engine::instance().valid_device(peer_device) || peer_device == device) return api.ret(cudaErrorInvalidDevice);
  if (flags != 0) return api.ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_peer_mu);
  if (g_peer_enabled[device][peer_device]) return api.ret(cudaErrorPeerAccessAlreadyEnabled);
  g_peer_enabled[device][peer_device] = true;
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceDisablePeerAccess(int peer_device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceDisablePeerAccess_v4000, "cudaDeviceDisablePeerAccess");
  const int device = current_device();
  if (!Engine::instance().valid_device(peer_device) || peer_device == device) return api.ret(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(g_peer_mu);
  if (!g_peer_enabled[device][peer_device]) return api.ret(cudaErrorPeerAccessNotEnabled);
  g_peer_enabled[device][peer_device] = false;
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetStreamPriorityRange_v5050,
               "cudaDeviceGetStreamPriorityRange");
  if (least != nullptr) *least = model::kStreamPriorityLeast;
  if (greatest != nullptr) *greatest = model::kStreamPriorityGreatest;
  return api.ret(cudaSuccess);
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return cudaErrorInvalidValue;
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return cudaErrorInvalidValue;
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, "cudaGetLastError");
  const cudaError_t e = thread_last_error();
  thread_last_error() = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, "cudaPeekAtLastError");
  return thread_last_error();
}

// Every enumerator of the toolkit's cudaError, generated from driver_types.h (CMakeLists.txt);
// "If the error code is not recognized, "unrecognized error code" is returned"
// (cuda_runtime_api.h).
const char* cudaGetErrorName(cudaError_t error) {
  static constexpr struct {
    int code;
    const char* name;
  } kNames[] = {
#include "error_names.inc"
  };
  for (const auto& n : kNames) {
    if (n.code == static_cast<int>(error)) return n.name;
  }
  return "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorMissingConfiguration: return "__global__ function call is not configured";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    // The real descriptions are not in the headers; a code without one here is named instead,
    // so a program's message still says which error it was.
    default: return cudaGetErrorName(error);
  }
}

// What cudaCreateChannelDesc<T>() calls: a plain description, no runtime state (arrays
// themselves are not simulated).
cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020, "cudaFuncGetAttributes");
  KernelInfo* k = find_kernel(func);
  if (attr == nullptr) return api.ret(cudaErrorInvalidValue);
  if (k == nullptr) return api.ret(cudaErrorInvalidDeviceFunction);
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = model::kMaxThreadsPerBlock;
  attr->numRegs = registers_for(*k);
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = static_cast<int>(model::kSharedPerBlockBytes);
  return api.ret(cudaSuccess);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                   int block_size,
                                                                   size_t dynamic_smem,
                                                                   unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
  KernelInfo* k = find_kernel(func);
  if (blocks == nullptr) return api.ret(cudaErrorInvalidValue);
  if (k == nullptr) return api.ret(cudaErrorInvalidDeviceFunction);
  *blocks = model::blocks_per_sm(block_size, registers_for(*k), dynamic_smem);
  return api.ret(cudaSuccess);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int block_size, size_t dynamic_smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size,
                                                                dynamic_smem, 0);
}

cudaError_t cudaProfilerStart(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "cudaProfilerStart");
  return api.ret(cudaSuccess);  // a CUPTI client sees the call through its API record/callback
}

cudaError_t cudaProfilerStop(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "cudaProfilerStop");
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceReset(void) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset");
  Engine::instance().synchronize_device(current_device());
  return api.ret(cudaSuccess);
}

cudaError_t cudaSetDeviceFlags(unsigned int) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaSetDeviceFlags_v3020, "cudaSetDeviceFlags");
  return api.ret(cudaSuccess);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemGetInfo_v3020, "cudaMemGetInfo");
  if (free_bytes != nullptr) *free_bytes = model::kGlobalMemBytes;
  if (total_bytes != nullptr) *total_bytes = model::kGlobalMemBytes;
  return api.ret(cudaSuccess);
}

}  // extern "C"
