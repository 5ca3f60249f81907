// Device query, errors, occupancy and profiler control of the simulated runtime.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device_model.h"
#include "engine.h"
#include "records.h"
#include "registry.h"

using namespace gpuhook::sim;

namespace {

thread_local int t_device = 0;

void fill_properties(cudaDeviceProp* p) {
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
  p->managedMemory = 0;
  p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 0;
  p->sharedMemPerBlockOptin = model::kSharedPerBlockOptinBytes;
  p->maxBlocksPerMultiProcessor = model::kMaxBlocksPerSm;
  p->reservedSharedMemPerBlock = model::kReservedSharedPerBlockBytes;
  p->pciBusID = 0;
}

// The model's value of an attribute, or -1 when the simulator does not model it.
int attribute(cudaDeviceAttr attr) {
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
    case cudaDevAttrPciBusId: return 0;
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
    case cudaDevAttrManagedMemory: return 0;            // cudaMallocManaged is not simulated
    case cudaDevAttrConcurrentManagedAccess: return 0;
    case cudaDevAttrCooperativeLaunch: return 0;        // nor cooperative launches
    case cudaDevAttrMemoryPoolsSupported: return 0;     // nor cudaMallocAsync
    default: return -1;
  }
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, "cudaGetDeviceCount");
  if (count == nullptr) return api.ret(cudaErrorInvalidValue);
  *count = 1;
  return api.ret(cudaSuccess);
}

cudaError_t cudaSetDevice(int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020, "cudaSetDevice");
  if (device != 0) return api.ret(cudaErrorInvalidDevice);
  t_device = device;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetDevice(int* device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice");
  if (device == nullptr) return api.ret(cudaErrorInvalidValue);
  *device = t_device;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000, "cudaGetDeviceProperties");
  if (prop == nullptr) return api.ret(cudaErrorInvalidValue);
  if (device != 0) return api.ret(cudaErrorInvalidDevice);
  fill_properties(prop);
  return api.ret(cudaSuccess);
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, "cudaDeviceGetAttribute");
  if (value == nullptr) return api.ret(cudaErrorInvalidValue);
  if (device != 0) return api.ret(cudaErrorInvalidDevice);
  const int v = attribute(attr);
  if (v < 0) {
    // Loud but not fatal: the caller may be a profiler asking on the program's behalf.
    std::fprintf(stderr, "gpuhook-sim: cudaDeviceGetAttribute: attribute %d is not simulated\n",
                 static_cast<int>(attr));
    return api.ret(cudaErrorInvalidValue);
  }
  *value = v;
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

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorMissingConfiguration: return "cudaErrorMissingConfiguration";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    default: return "cudaErrorUnknown";
  }
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
    default: return "unknown error (gpuhook simulator)";
  }
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
  Engine::instance().synchronize_device();
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
