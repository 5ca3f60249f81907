// __device__ and __constant__ variables. nvcc's host code registers each one with
// __cudaRegisterVar, naming its host shadow (the address the program passes as `symbol`) and
// its size; the program reaches the variable through cudaMemcpyTo/FromSymbol[Async],
// cudaGetSymbolAddress and cudaGetSymbolSize. Each device gets its own copy, as each loads its
// own module: tracked device memory, made on first use. It starts as the device image
// initialises it (fatbin_image.h: the host shadow holds zeros), else zeroed.
#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "allocations.h"
#include "engine.h"
#include "fatbin_image.h"
#include "ops.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

struct DeviceVar {
  size_t bytes = 0;
  std::vector<unsigned char> initial;  // empty: zeroed
  std::map<int, void*> copies;  // device -> its copy
};

std::mutex g_vars_mu;
std::map<const void*, DeviceVar>& vars() {
  static auto* m = new std::map<const void*, DeviceVar>();
  return *m;
}

// The current device's copy of the variable whose shadow is `symbol`, its size in *bytes;
// cudaErrorInvalidSymbol when nothing was registered there.
cudaError_t resolve(const void* symbol, void** address, size_t* bytes) {
  std::lock_guard<std::mutex> lock(g_vars_mu);
  auto it = vars().find(symbol);
  if (symbol == nullptr || it == vars().end()) return cudaErrorInvalidSymbol;
  DeviceVar& v = it->second;
  const int device = current_device();
  void*& copy = v.copies[device];
  if (copy == nullptr) {
    copy = allocate(v.bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
    if (copy == nullptr) return cudaErrorMemoryAllocation;
    if (v.initial.size() == v.bytes) {
      std::memcpy(copy, v.initial.data(), v.bytes);
    } else {
      std::memset(copy, 0, v.bytes);
    }
  }
  *address = copy;
  *bytes = v.bytes;
  return cudaSuccess;
}

// [offset, offset + count) of the variable, or the error the call fails with.
cudaError_t range(const void* symbol, size_t count, size_t offset, char** at) {
  void* base = nullptr;
  size_t bytes = 0;
  if (const cudaError_t err = resolve(symbol, &base, &bytes); err != cudaSuccess) return err;
  if (offset > bytes || count > bytes - offset) return cudaErrorInvalidValue;
  *at = static_cast<char*>(base) + offset;
  return cudaSuccess;
}

// "kind: Type of transfer": to a symbol from the host or the device, from one to either
// (cuda_runtime_api.h); the copy itself checks the pointers against it.
cudaError_t to_symbol(ApiScope& api, const void* symbol, const void* src, size_t count, size_t offset,
                      cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  char* at = nullptr;
  if (const cudaError_t err = range(symbol, count, offset, &at); err != cudaSuccess) return err;
  return copy(api, at, src, count, kind, stream, async);
}

cudaError_t from_symbol(ApiScope& api, void* dst, const void* symbol, size_t count, size_t offset,
                        cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  char* at = nullptr;
  if (const cudaError_t err = range(symbol, count, offset, &at); err != cudaSuccess) return err;
  return copy(api, dst, at, count, kind, stream, async);
}

}  // namespace

extern "C" {

// Called from the program's static constructors, before any runtime call: only noted here.
void __cudaRegisterVar(void** fat_cubin_handle, char* host_var, char*, const char* device_name, int, size_t size, int,
                       int) {
  // The handle is __cudaRegisterFatBinary's: its one slot holds the fat binary.
  std::vector<unsigned char> initial =
      fat_cubin_handle != nullptr ? variable_initialiser(fat_cubin_handle[0], device_name, size) : std::vector<unsigned char>{};
  std::lock_guard<std::mutex> lock(g_vars_mu);
  DeviceVar& v = vars()[host_var];
  v.bytes = size;
  v.initial = std::move(initial);
}

cudaError_t cudaGetSymbolAddress(void** address, const void* symbol) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetSymbolAddress_v3020, "cudaGetSymbolAddress");
  if (address == nullptr) return api.ret(cudaErrorInvalidValue);
  size_t bytes = 0;
  return api.ret(resolve(symbol, address, &bytes));
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetSymbolSize_v3020, "cudaGetSymbolSize");
  if (size == nullptr) return api.ret(cudaErrorInvalidValue);
  void* address = nullptr;
  return api.ret(resolve(symbol, &address, size));
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, "cudaMemcpyToSymbol");
  return api.ret(to_symbol(api, symbol, src, count, offset, kind, nullptr, false));
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, "cudaMemcpyFromSymbol");
  return api.ret(from_symbol(api, dst, symbol, count, offset, kind, nullptr, false));
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020, "cudaMemcpyToSymbolAsync");
  return api.ret(to_symbol(api, symbol, src, count, offset, kind, stream, true));
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020, "cudaMemcpyFromSymbolAsync");
  return api.ret(from_symbol(api, dst, symbol, count, offset, kind, stream, true));
}

// Per-thread default stream forms (nvcc --default-stream per-thread).
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000, "cudaMemcpyToSymbol_ptds");
  return api.ret(to_symbol(api, symbol, src, count, offset, kind, cudaStreamPerThread, false));
}

cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000, "cudaMemcpyFromSymbol_ptds");
  return api.ret(from_symbol(api, dst, symbol, count, offset, kind, cudaStreamPerThread, false));
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000, "cudaMemcpyToSymbolAsync_ptsz");
  return api.ret(to_symbol(api, symbol, src, count, offset, kind, per_thread(stream), true));
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000, "cudaMemcpyFromSymbolAsync_ptsz");
  return api.ret(from_symbol(api, dst, symbol, count, offset, kind, per_thread(stream), true));
}

}  // extern "C"
