// GPUHOOK_MEM_USE=1: which addresses each kernel launch, copy, memset and NCCL call is given,
// so the reader can tell memory still in use from memory held but idle (diagnose memory-idle:
// an allocation that lives through the run but was last used early).
//
// Where the addresses come from:
// - CUPTI's API callbacks with parameters (cupti_callbacks.h, CUpti_CallbackData::
//   functionParams, "See generated_cuda_runtime_api_meta.h and generated_cuda_meta.h"):
//   cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel, cuLaunchKernel[Ex],
//   cudaMemcpy[Async], cudaMemset[Async], read at the call's EXIT, when it succeeded.
// - CUDA 13's <<<>>> calls __cudaLaunchKernel, whose callback has no parameter struct
//   (cupti_runtime_cbid.h names CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000;
//   generated_cuda_runtime_api_meta.h has no params for it); memory_use_hooks.cpp interposes it
//   (shared cudart and LD_PRELOAD only) and leaves the kernel and its arguments for the callback.
// - A kernel's parameters are laid out by cudaFuncGetParamInfo / cuFuncGetParamInfo
//   (cuda_runtime_api.h, cuda.h; CUDA 12.4+). Every aligned 8 bytes of a parameter (its first
//   64) is a candidate, so a pointer inside a struct argument counts too.
// - A candidate is kept when it may be a device address (may_be_address) and this thread has
//   not written it within the pause (UseFilter): the capture holds, per address, about
//   32 x ln(run / 32 ms) records at most, and an allocation's last record is within
//   max(1 ms, run so far / 32) of its last use (diagnose memory-idle asks for half the run).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace gpuhook::hook {

// Device addresses on 64-bit Linux lie above 4 GiB and below the 57-bit virtual address limit;
// small integers, sizes and doubles (whose exponent bits put them above 2^57) do not.
inline bool may_be_address(uint64_t v) { return v >= (uint64_t{1} << 32) && v < (uint64_t{1} << 57); }

// The pause after which an address is written again: 1 ms, or 1/32 of the run so far.
inline uint64_t use_pause_ns(uint64_t since_start_ns) {
  const uint64_t share = since_start_ns / 32;
  return share > 1'000'000 ? share : 1'000'000;
}

// Which addresses this thread wrote lately: a direct-mapped table, so a collision only makes
// an address be written again sooner.
class UseFilter {
 public:
  // True when `address` should be written now (and remembers it as written at now_ns).
  bool admit(uint64_t address, uint64_t now_ns, uint64_t pause_ns);

 private:
  static constexpr size_t kSlots = 1024;
  struct Slot {
    uint64_t address = 0, written_ns = 0;
  };
  Slot slots_[kSlots];
};

// A kernel's parameter sizes, as its launch API reports them; count 0 = unknown.
struct ParamLayout {
  static constexpr uint32_t kMaxParams = 48;  // parameters past these are not looked at
  uint32_t count = 0;
  uint32_t size[kMaxParams] = {};
};
// Returns false past the last parameter or when the function cannot say.
using ParamInfoFn = bool (*)(const void* function, size_t index, size_t* size);

// The addresses of one call, collected and then written as HostRecords.
class UseCollector {
 public:
  UseCollector(UseFilter& filter, uint64_t now_ns, uint64_t pause_ns) : filter_(filter), now_ns_(now_ns), pause_ns_(pause_ns) {}
  void add(uint64_t value);
  // Every aligned 8 bytes of each parameter (the first 64 of each) that may be an address.
  void add_kernel_args(const ParamLayout& layout, void* const* args);
  // Writes them into this thread's ring (kMemoryUse, kUsesPerRecord each).
  void write(uint32_t correlation_id, uint64_t thread_id) const;
  uint32_t count() const { return count_; }
  uint64_t address(uint32_t i) const { return addresses_[i]; }

 private:
  static constexpr uint32_t kMaxPerCall = 64;
  UseFilter& filter_;
  uint64_t now_ns_, pause_ns_;
  uint32_t count_ = 0;
  uint64_t addresses_[kMaxPerCall] = {};
};

// Which callbacks to enable (runtime and driver domains) and what to do in one.
struct UseCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  bool kernel_launch;  // else a copy or memset
};
extern const UseCallback kUseCallbacks[];
extern const size_t kUseCallbackCount;
// Of those, the kernel launches (GPUHOOK_SECTORS takes these alone).
bool is_kernel_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// The hook's start time, from which the pause grows; 0 = memory use off.
void start_memory_use(uint64_t start_ns);
bool memory_use_on();
// From CuptiTracer::on_callback for the ids above.
void note_memory_use(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& info);
// memory_use_hooks.cpp: the kernel and arguments of the __cudaLaunchKernel in progress on this
// thread (nullptr: none), for its callback to read.
void set_pending_launch(const void* kernel, void** args);
// gpuhook's NCCL wrappers: the buffers of a call, written at once (no correlation id).
void note_buffers_used(const void* a, const void* b);

}  // namespace gpuhook::hook
