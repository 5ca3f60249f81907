// CUDA IPC handles. Within one process a handle names the exporter's own allocation or event,
// so opening it gives the same memory (same address) or the same event. Across processes the
// simulator cannot share: its device memory is private host memory of the exporting process,
// so opening another process's handle fails with cudaErrorNotSupported and one line saying why.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "allocations.h"
#include "engine.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

constexpr char kMagic[8] = {'g', 'p', 'u', 'h', 'i', 'p', 'c', '1'};

// What a handle's 64 reserved bytes hold.
struct Payload {
  char magic[8];
  int64_t pid;
  uint64_t address;  // the allocation's base, or the EventImpl
  uint64_t bytes;
};
static_assert(sizeof(Payload) <= CUDA_IPC_HANDLE_SIZE, "an IPC handle holds 64 bytes");

template <class Handle>
void encode(Handle* h, const void* address, size_t bytes) {
  Payload p{};
  std::memcpy(p.magic, kMagic, sizeof kMagic);
  p.pid = static_cast<int64_t>(getpid());
  p.address = reinterpret_cast<uint64_t>(address);
  p.bytes = bytes;
  std::memset(h->reserved, 0, sizeof h->reserved);
  std::memcpy(h->reserved, &p, sizeof p);
}

// The payload of a handle this simulator made in this process; cudaErrorNotSupported (with a
// line) for one made in another, cudaErrorInvalidValue for anything else.
template <class Handle>
cudaError_t decode(const Handle& h, const char* call, Payload* p) {
  std::memcpy(p, h.reserved, sizeof *p);
  if (std::memcmp(p->magic, kMagic, sizeof kMagic) != 0) return cudaErrorInvalidValue;
  if (p->pid != static_cast<int64_t>(getpid())) {
    std::fprintf(stderr,
                 "gpuhook-sim: %s: the handle comes from process %lld; the simulator's device memory and "
                 "events are private to their process and cannot be shared: cudaErrorNotSupported\n",
                 call, static_cast<long long>(p->pid));
    return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

std::mutex g_open_mu;
std::map<const void*, int>& opened() {  // address -> times opened and not closed
  static auto* m = new std::map<const void*, int>();
  return *m;
}

}  // namespace

extern "C" {

// "Takes a pointer to the base of an existing device memory allocation created with cudaMalloc"
// (cuda_runtime_api.h).
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* dev_ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetMemHandle_v4010, "cudaIpcGetMemHandle");
  if (handle == nullptr) return api.ret(cudaErrorInvalidValue);
  bool in_bounds = false;
  if (dev_ptr == nullptr || classify(dev_ptr, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    return api.ret(cudaErrorInvalidValue);
  }
  encode(handle, dev_ptr, 0);
  return api.ret(cudaSuccess);
}

cudaError_t cudaIpcOpenMemHandle(void** dev_ptr, cudaIpcMemHandle_t handle, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010, "cudaIpcOpenMemHandle");
  // "flags: Flags for this operation. Must be specified as cudaIpcMemLazyEnablePeerAccess".
  if (dev_ptr == nullptr || flags != cudaIpcMemLazyEnablePeerAccess) return api.ret(cudaErrorInvalidValue);
  Payload p;
  if (const cudaError_t err = decode(handle, "cudaIpcOpenMemHandle", &p); err != cudaSuccess) return api.ret(err);
  void* address = reinterpret_cast<void*>(p.address);
  bool in_bounds = false;
  if (classify(address, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) return api.ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_open_mu);
  ++opened()[address];
  *dev_ptr = address;
  return api.ret(cudaSuccess);
}

cudaError_t cudaIpcCloseMemHandle(void* dev_ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010, "cudaIpcCloseMemHandle");
  std::lock_guard<std::mutex> lock(g_open_mu);
  auto it = opened().find(dev_ptr);
  if (it == opened().end()) return api.ret(cudaErrorInvalidValue);
  if (--it->second == 0) opened().erase(it);
  return api.ret(cudaSuccess);
}

// "The event must have been created with the cudaEventInterprocess and cudaEventDisableTiming
// flags set" (cuda_runtime_api.h).
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetEventHandle_v4010, "cudaIpcGetEventHandle");
  if (handle == nullptr || event == nullptr) return api.ret(cudaErrorInvalidValue);
  const auto* e = reinterpret_cast<const EventImpl*>(event);
  const unsigned needed = cudaEventInterprocess | cudaEventDisableTiming;
  if ((e->flags & needed) != needed) return api.ret(cudaErrorInvalidResourceHandle);
  encode(handle, e, 0);
  return api.ret(cudaSuccess);
}

// In one process the opened event is the exporter's own event: records, waits and queries on
// either are the same, and destroying one destroys it.
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010, "cudaIpcOpenEventHandle");
  if (event == nullptr) return api.ret(cudaErrorInvalidValue);
  Payload p;
  if (const cudaError_t err = decode(handle, "cudaIpcOpenEventHandle", &p); err != cudaSuccess) return api.ret(err);
  *event = reinterpret_cast<cudaEvent_t>(p.address);
  return api.ret(cudaSuccess);
}

}  // extern "C"
