#include "memory_use.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>  // with the *_params structs (generated_cuda_meta.h, generated_cuda_runtime_api_meta.h)
#include <dlfcn.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <unordered_map>

#include "clock.h"
#include "host_record.h"
#include "interpose.h"
#include "recorder.h"

namespace gpuhook::hook {

bool UseFilter::admit(uint64_t address, uint64_t now_ns, uint64_t pause_ns) {
  Slot& s = slots_[((address >> 3) * 0x9E3779B97F4A7C15ull) >> 54];  // 10 bits: kSlots
  static_assert(kSlots == 1024);
  if (s.address == address && now_ns - s.written_ns < pause_ns) return false;
  s.address = address;
  s.written_ns = now_ns;
  return true;
}

void UseCollector::add(uint64_t value) {
  if (count_ == kMaxPerCall || !may_be_address(value)) return;
  for (uint32_t i = 0; i < count_; ++i)
    if (addresses_[i] == value) return;  // twice in one call (in and out the same buffer)
  if (filter_.admit(value, now_ns_, pause_ns_)) addresses_[count_++] = value;
}

void UseCollector::add_kernel_args(const ParamLayout& layout, void* const* args) {
  if (args == nullptr) return;
  for (uint32_t i = 0; i < layout.count; ++i) {
    const auto* bytes = static_cast<const unsigned char*>(args[i]);
    if (bytes == nullptr) continue;
    const uint32_t size = layout.size[i] < 64 ? layout.size[i] : 64;
    for (uint32_t at = 0; at + 8 <= size; at += 8) {
      uint64_t v;
      std::memcpy(&v, bytes + at, sizeof v);  // the argument's copy may not be 8-aligned
      add(v);
    }
  }
}

void UseCollector::write(uint32_t correlation_id, uint64_t thread_id) const {
  for (uint32_t first = 0; first < count_; first += kUsesPerRecord) {
    HostRecord* r = begin_record();
    if (r == nullptr) return;
    r->kind = HostKind::kMemoryUse;
    r->thread_id = thread_id;
    r->start_ns = now_ns_;
    r->end_ns = now_ns_;
    MemoryUsePayload& p = r->memory_use;
    p.correlation_id = correlation_id;
    p.count = count_ - first < kUsesPerRecord ? count_ - first : static_cast<uint32_t>(kUsesPerRecord);
    for (uint32_t i = 0; i < p.count; ++i) p.address[i] = addresses_[first + i];
    end_record();
  }
}

const UseCallback kUseCallbacks[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, true},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, false},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, false},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, true},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, true},
};
const size_t kUseCallbackCount = sizeof(kUseCallbacks) / sizeof(kUseCallbacks[0]);

bool is_kernel_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  for (const UseCallback& c : kUseCallbacks)
    if (c.domain == domain && c.cbid == cbid) return c.kernel_launch;
  return false;
}

namespace {

std::atomic<uint64_t> g_start_ns{0};

// What one thread keeps: its filter and the layouts of the kernels it launched.
struct ThreadUses {
  UseFilter filter;
  std::unordered_map<const void*, ParamLayout> runtime_layouts, driver_layouts;
};
constexpr size_t kMaxLayouts = 4096;  // kernels per thread remembered; past it the cache starts over

struct ThreadUsesHolder {
  ThreadUses* uses = nullptr;
  bool failed = false;
  ~ThreadUsesHolder() { delete uses; }
};
thread_local ThreadUsesHolder t_uses;

struct PendingLaunch {
  const void* kernel = nullptr;
  void** args = nullptr;
};
thread_local PendingLaunch t_pending;

ThreadUses* thread_uses() {
  if (t_uses.uses == nullptr && !t_uses.failed) {
    t_uses.uses = new (std::nothrow) ThreadUses();
    t_uses.failed = t_uses.uses == nullptr;
  }
  return t_uses.uses;
}

// The runtime's and the driver's parameter queries, from the libraries the program loaded
// (the hook never loads CUDA itself), in the global scope or loaded with RTLD_LOCAL (a Python
// import: interpose.h). A program linked with the static cudart exports neither
// cudaFuncGetParamInfo nor its kernels' stubs to the dynamic linker: its launches through the
// runtime are then not looked into.
using RuntimeInfo = cudaError_t (*)(const void*, size_t, size_t*, size_t*);
using DriverInfo = CUresult (*)(CUfunction, size_t, size_t*, size_t*);

void* find_symbol(const char* name) {
  if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
  return find_real(name);
}

// `name` from the library that defines `of` (the runtime's error calls from the runtime whose
// cudaFuncGetParamInfo is used: each runtime keeps its own last error).
void* sibling(void* of, const char* name) {
  Dl_info info{};
  if (of == nullptr || dladdr(of, &info) == 0 || info.dli_fname == nullptr) return nullptr;
  void* lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  void* p = dlsym(lib, name);
  dlclose(lib);  // NOLOAD took a reference; the process keeps its own
  return p;
}

using RuntimeError = cudaError_t (*)();
struct Runtime {
  void* info = find_symbol("cudaFuncGetParamInfo");
  RuntimeInfo param_info = reinterpret_cast<RuntimeInfo>(info);
  RuntimeError peek = reinterpret_cast<RuntimeError>(sibling(info, "cudaPeekAtLastError"));
  RuntimeError get = reinterpret_cast<RuntimeError>(sibling(info, "cudaGetLastError"));
};
const Runtime& runtime() {
  static const Runtime rt;  // looked up at the first launch, when the runtime is loaded
  return rt;
}

bool runtime_param(const void* function, size_t index, size_t* size) {
  size_t offset = 0;
  return runtime().param_info != nullptr && runtime().param_info(function, index, &offset, size) == cudaSuccess;
}

// The runtime keeps the last error of each thread (cudaGetLastError), and the query past the
// last parameter is one: the program would see it. So the layout is learnt only while the
// thread has none, and the query's error is taken back at once (cudaGetLastError "resets it to
// cudaSuccess"), leaving the thread as it was.
bool runtime_layout_allowed() {
  const Runtime& rt = runtime();
  return rt.param_info != nullptr && rt.peek != nullptr && rt.get != nullptr && rt.peek() == cudaSuccess;
}
void runtime_layout_done() {
  if (runtime().get != nullptr) runtime().get();
}

bool driver_param(const void* function, size_t index, size_t* size) {
  static const auto fn = reinterpret_cast<DriverInfo>(find_symbol("cuFuncGetParamInfo"));
  size_t offset = 0;
  return fn != nullptr && fn(static_cast<CUfunction>(const_cast<void*>(function)), index, &offset, size) == CUDA_SUCCESS;
}

const ParamLayout kUnknownLayout;

const ParamLayout& layout_of(std::unordered_map<const void*, ParamLayout>& cache, const void* function, bool driver) {
  auto it = cache.find(function);
  if (it != cache.end()) return it->second;
  if (!driver && !runtime_layout_allowed()) return kUnknownLayout;  // another launch will learn it
  if (cache.size() >= kMaxLayouts) cache.clear();
  const ParamInfoFn info = driver ? &driver_param : &runtime_param;
  ParamLayout layout;
  size_t size = 0;
  while (layout.count < ParamLayout::kMaxParams && info(function, layout.count, &size))
    layout.size[layout.count++] = static_cast<uint32_t>(size);
  if (!driver) runtime_layout_done();
  return cache.emplace(function, layout).first->second;
}

}  // namespace

void start_memory_use(uint64_t start_ns) { g_start_ns.store(start_ns, std::memory_order_relaxed); }
bool memory_use_on() { return g_start_ns.load(std::memory_order_relaxed) != 0; }

void set_pending_launch(const void* kernel, void** args) { t_pending = {kernel, args}; }

// What a call on this thread was given: `collect` adds the addresses to a collector over the
// thread's filter, and what it kept is written. errno stays the program's (its call is under
// way); nothing when memory use is off or the thread has no state.
template <typename Collect>
void collect_uses(uint32_t correlation_id, Collect collect) {
  const uint64_t start_ns = g_start_ns.load(std::memory_order_relaxed);
  if (start_ns == 0 || !recorder().enabled.load(std::memory_order_relaxed)) return;
  ThreadUses* t = thread_uses();
  if (t == nullptr) return;
  const int saved_errno = errno;
  const uint64_t now = now_ns();
  UseCollector uses(t->filter, now, use_pause_ns(now > start_ns ? now - start_ns : 0));
  collect(uses, *t);
  uses.write(correlation_id, this_thread_id());
  errno = saved_errno;
}

void note_memory_use(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& info) {
  if (info.callbackSite != CUPTI_API_EXIT) return;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  // A call that failed used nothing.
  if (info.functionReturnValue == nullptr) return;
  if (runtime ? *static_cast<const cudaError_t*>(info.functionReturnValue) != cudaSuccess
              : *static_cast<const CUresult*>(info.functionReturnValue) != CUDA_SUCCESS) {
    return;
  }
  collect_uses(info.correlationId, [&](UseCollector& uses, ThreadUses& thread) {
    ThreadUses* t = &thread;
    const void* p = info.functionParams;
    auto kernel = [&](const void* function, void** args, bool driver) {
      if (function == nullptr || args == nullptr) return;
      uses.add_kernel_args(layout_of(driver ? t->driver_layouts : t->runtime_layouts, function, driver), args);
    };
    if (runtime) {
      switch (cbid) {
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
          // No parameter struct: what memory_use_hooks.cpp left for this call, if it saw it.
          kernel(t_pending.kernel, t_pending.args, false);
          t_pending = {};
          break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:  // the same members
          if (p) kernel(static_cast<const cudaLaunchKernel_v7000_params*>(p)->func,
                        static_cast<const cudaLaunchKernel_v7000_params*>(p)->args, false);
          break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
          if (p) kernel(static_cast<const cudaLaunchKernelExC_v11060_params*>(p)->func,
                        static_cast<const cudaLaunchKernelExC_v11060_params*>(p)->args, false);
          break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
          if (p) kernel(static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(p)->func,
                        static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(p)->args, false);
          break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:  // dst, src first in each
          if (p) {
            uses.add(reinterpret_cast<uintptr_t>(static_cast<const cudaMemcpy_v3020_params*>(p)->dst));
            uses.add(reinterpret_cast<uintptr_t>(static_cast<const cudaMemcpy_v3020_params*>(p)->src));
          }
          break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:  // devPtr first in each
          if (p) uses.add(reinterpret_cast<uintptr_t>(static_cast<const cudaMemset_v3020_params*>(p)->devPtr));
          break;
        default:
          break;
      }
    } else if (p != nullptr) {
      switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
          kernel(static_cast<const cuLaunchKernel_params*>(p)->f, static_cast<const cuLaunchKernel_params*>(p)->kernelParams,
                 true);
          break;
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
          kernel(static_cast<const cuLaunchKernelEx_params*>(p)->f,
                 static_cast<const cuLaunchKernelEx_params*>(p)->kernelParams, true);
          break;
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
          kernel(static_cast<const cuLaunchCooperativeKernel_params*>(p)->f,
                 static_cast<const cuLaunchCooperativeKernel_params*>(p)->kernelParams, true);
          break;
        default:
          break;
      }
    }
  });
}

void note_buffers_used(const void* a, const void* b) {
  collect_uses(0, [&](UseCollector& uses, ThreadUses&) {
    uses.add(reinterpret_cast<uintptr_t>(a));
    uses.add(reinterpret_cast<uintptr_t>(b));
  });
}

}  // namespace gpuhook::hook
