// Kernel registration and launch: the entry points nvcc's host code calls (CUDA 13 <<<>>>
// goes through __cudaGetKernel + __cudaLaunchKernel) and cudaLaunchKernel.
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../sim_bridge.h"
#include "config.h"
#include "device_model.h"
#include "engine.h"
#include "graph.h"
#include "ops.h"
#include "records.h"
#include "registry.h"

namespace gpuhook::sim {
namespace {

std::mutex g_registry_mu;
std::unordered_map<const void*, KernelInfo*>& registry() {
  static auto* map = new std::unordered_map<const void*, KernelInfo*>();
  return *map;
}

struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> t_call_configs;

std::atomic<uint64_t> g_launch_count{0};

// splitmix64: a per-launch noise draw that depends only on the seed and the launch's
// position in the program, so two runs with one seed give identical durations.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void spin_ns(uint64_t ns) {
  // A short busy wait: sleeping would overshoot a few-microsecond launch cost many times.
  const uint64_t until = gpuhook_sim_now_ns() + ns;
  while (gpuhook_sim_now_ns() < until) {
  }
}

}  // namespace

cudaError_t build_kernel_op(KernelInfo* k, dim3 grid, dim3 block, void** args, size_t shared_bytes, Op& op) {
  if (k == nullptr) return cudaErrorInvalidDeviceFunction;
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (threads == 0 || threads > model::kMaxThreadsPerBlock || blocks == 0 || grid.y > 65535 ||
      grid.z > 65535 || block.z > 64) {
    return cudaErrorInvalidConfiguration;
  }
  if (shared_bytes > model::kSharedPerBlockOptinBytes) return cudaErrorInvalidValue;
  const SimConfig& c = config();
  op.kind = OpKind::kKernel;
  op.kernel = k;
  op.grid = grid;
  op.block = block;
  op.dynamic_smem_bytes = shared_bytes;
  op.registers_per_thread = registers_for(*k);
  const int per_sm = model::blocks_per_sm(static_cast<int>(threads), op.registers_per_thread,
                                          shared_bytes);
  if (per_sm == 0) return cudaErrorLaunchOutOfResources;
  const double capacity = static_cast<double>(per_sm) * model::kSmCount;
  op.share = std::min(1.0, static_cast<double>(blocks) / capacity);
  // CUPTI's KERNEL kind (unlike CONCURRENT_KERNEL) serialises kernels: each takes the device.
  if (gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL) &&
      !gpuhook_sim_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    op.share = 1.0;
  }
  // The simulated PM sampling's view of it: warp slots in use on the SMs it holds, and the
  // cost file's stall, tensor and DRAM figures.
  const int warps_per_block = (static_cast<int>(threads) + model::kWarpSize - 1) / model::kWarpSize;
  op.load = KernelLoad{};
  op.load.warps = std::min(1.0, static_cast<double>(per_sm * warps_per_block) / model::kMaxWarpsPerSm);
  if (const KernelCost* cost = c.cost_for(k->name)) {
    op.load.active = cost->sm_active;
    op.load.tensor = cost->tensor;
    op.load.dram_read = cost->dram_read;
    op.load.dram_write = cost->dram_write;
    if (cost->sectors_per_warp > 0) {
      const double warps = static_cast<double>(blocks) * warps_per_block;
      gpuhook_sim_sass_count(k->name.c_str(), static_cast<uint64_t>(warps * cost->sectors_per_warp),
                             static_cast<uint64_t>(warps * cost->load_ideal_per_warp),
                             static_cast<uint64_t>(warps * cost->store_ideal_per_warp));
    }
  }
  const double waves = std::ceil(static_cast<double>(blocks) / capacity);
  double duration = waves * c.block_ns_for(k->name, nullptr) * c.scale_for(k->name);
  const uint64_t launch_index = g_launch_count.fetch_add(1);
  if (c.noise > 0) {
    const double u = static_cast<double>(mix(c.seed * 0x100000001b3ull + launch_index) >> 11) /
                         static_cast<double>(1ull << 53) * 2.0 - 1.0;
    duration *= 1.0 + c.noise * u;
  }
  op.duration_ns = static_cast<uint64_t>(std::max(1.0, duration));
  op.arg_offsets.clear();
  op.arg_bytes.clear();
  if (k->twin != nullptr && args != nullptr) {
    // Arguments are copied now: the caller's stack frame is gone when the kernel runs.
    size_t total = 0;
    for (size_t size : k->arg_sizes) {
      op.arg_offsets.push_back(total);
      total += (size + 15) & ~size_t{15};
    }
    op.arg_bytes.resize(total);
    for (size_t i = 0; i < k->arg_sizes.size(); ++i) {
      std::memcpy(op.arg_bytes.data() + op.arg_offsets[i], args[i], k->arg_sizes[i]);
    }
  }
  return cudaSuccess;
}

namespace {

// `cooperative`: cudaLaunchCooperativeKernel, or cudaLaunchKernelExC with
// cudaLaunchAttributeCooperative.
cudaError_t launch(CUpti_CallbackId cbid, const char* api_name, KernelInfo* k, dim3 grid,
                   dim3 block, void** args, size_t shared_bytes, cudaStream_t stream,
                   bool per_thread, CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_RUNTIME_API,
                   bool cooperative = false, const void* params = nullptr) {
  ApiScope api(cbid, api_name, k != nullptr ? k->name.c_str() : nullptr, domain, params);
  if (k == nullptr) return api.ret(cudaErrorInvalidDeviceFunction);
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(per_thread && stream == nullptr ? cudaStreamPerThread : stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  // "A kernel launch will fail if it is issued to a stream that is not associated to the
  // current device" (CUDA Programming Guide, "Stream and Event Behavior"); the runtime says
  // cudaErrorInvalidResourceHandle (the stream is not a handle of the current context).
  if (s->device != current_device()) return api.ret(cudaErrorInvalidResourceHandle);
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return api.ret(refused);
  auto op = std::make_unique<Op>();
  if (const cudaError_t err = build_kernel_op(k, grid, block, args, shared_bytes, *op); err != cudaSuccess) {
    return api.ret(err);
  }
  if (cooperative) {
    // Every block must be resident at once: "The total number of blocks launched cannot exceed
    // the maximum number of blocks per multiprocessor as returned by
    // cudaOccupancyMaxActiveBlocksPerMultiprocessor (or cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
    // times the number of multiprocessors as specified by the device attribute
    // cudaDevAttrMultiProcessorCount" (cuda_runtime_api.h, cudaLaunchCooperativeKernel).
    const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
    const int per_sm = model::blocks_per_sm(static_cast<int>(block.x * block.y * block.z), op->registers_per_thread,
                                            shared_bytes);
    if (blocks > static_cast<uint64_t>(per_sm) * model::kSmCount) return api.ret(cudaErrorCooperativeLaunchTooLarge);
    op->launch_type = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
  }
  op->correlation_id = api.correlation_id();
  const SimConfig& c = config();
  spin_ns(c.launch_ns);
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns + c.submit_ns;
  engine.enqueue(s, std::move(op));
  return api.ret(cudaSuccess);
}

// The driver's cuLaunchKernelEx, handed out by cudaGetDriverEntryPoint[ByVersion] only: NCCL
// fetches it that way and launches every kernel with it (NCCL 2.28 src/misc/cudawrap.cc,
// src/enqueue.cc), so CUPTI shows its kernels under a DRIVER record (cbid
// CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, cupti_driver_cbid.h), never a runtime one.
// Launch attributes are accepted and ignored. NCCL passes its one kernel argument (the
// ncclDevKernelArgs block) packed through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), not
// `kernelParams`; both ways work here.
CUresult sim_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  auto* k = reinterpret_cast<KernelInfo*>(f);
  std::vector<void*> unpacked;
  if (extra != nullptr && params == nullptr && k != nullptr) {
    unsigned char* buffer = nullptr;
    size_t buffer_bytes = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<unsigned char*>(extra[i + 1]);
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) buffer_bytes = *static_cast<size_t*>(extra[i + 1]);
    }
    // The buffer holds the arguments at their natural alignment, as the kernel's ABI lays them out.
    size_t offset = 0;
    for (size_t size : k->arg_sizes) {
      const size_t align = size >= 16 ? 16 : size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
      offset = (offset + align - 1) & ~(align - 1);
      if (buffer == nullptr || offset + size > buffer_bytes) {
        unpacked.clear();
        break;
      }
      unpacked.push_back(buffer + offset);
      offset += size;
    }
    if (unpacked.size() == k->arg_sizes.size()) params = unpacked.data();
  }
  if (config == nullptr || (params == nullptr && k != nullptr && !k->arg_sizes.empty())) {
    ApiScope api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", nullptr, CUPTI_CB_DOMAIN_DRIVER_API);
    api.ret(cudaErrorInvalidValue);
    return CUDA_ERROR_INVALID_VALUE;
  }
  const cudaError_t err =
      launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", k,
             dim3(config->gridDimX, config->gridDimY, config->gridDimZ),
             dim3(config->blockDimX, config->blockDimY, config->blockDimZ), params, config->sharedMemBytes,
             reinterpret_cast<cudaStream_t>(config->hStream), false, CUPTI_CB_DOMAIN_DRIVER_API);
  switch (err) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidDeviceFunction: case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorLaunchOutOfResources: return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

cudaError_t driver_entry_point(CUpti_CallbackId cbid, const char* api_name, const char* symbol, void** fn,
                               cudaDriverEntryPointQueryResult* status) {
  ApiScope api(cbid, api_name);
  if (symbol == nullptr || fn == nullptr) return api.ret(cudaErrorInvalidValue);
  // Only what the simulated NCCL needs; any other symbol is "not found", as for a driver
  // too old to have it.
  const bool found = std::strcmp(symbol, "cuLaunchKernelEx") == 0;
  *fn = found ? reinterpret_cast<void*>(&sim_cuLaunchKernelEx) : nullptr;
  if (status != nullptr) *status = found ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return api.ret(found ? cudaSuccess : cudaErrorSymbolNotFound);
}

}  // namespace

KernelInfo* find_kernel(const void* stub) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  auto it = registry().find(stub);
  return it == registry().end() ? nullptr : it->second;
}

KernelInfo* kernel_of_handle(const void* handle) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (const auto& [stub, k] : registry()) {
    if (k == handle) return k;
  }
  return nullptr;
}

KernelInfo* kernel_entry(const void* stub) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  KernelInfo*& k = registry()[stub];
  if (k == nullptr) {
    k = new KernelInfo();
    k->stub = stub;
  }
  return k;
}

int registers_for(const KernelInfo& k) {
  int regs = config().registers_per_thread;
  config().block_ns_for(k.name, &regs);
  return regs;
}

}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

void** __cudaRegisterFatBinary(void* fat_cubin) {
  // The device code is never run; the handle only has to be unique and stable.
  auto** handle = new void*[1];
  handle[0] = fat_cubin;
  return handle;
}

void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void** handle) { delete[] handle; }  // at exit, as the program ends
char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  KernelInfo* k = kernel_entry(host_fun);
  k->name = device_name;
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes,
                                     struct CUstream_st* stream) {
  t_call_configs.push_back({grid, block, shared_bytes, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_bytes, void* stream) {
  if (t_call_configs.empty()) return cudaErrorMissingConfiguration;
  const CallConfig c = t_call_configs.back();
  t_call_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_bytes = c.shared_bytes;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* stub) {
  KernelInfo* k = find_kernel(stub);
  if (kernel == nullptr || k == nullptr) return cudaErrorInvalidDeviceFunction;
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream) {
  return launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "__cudaLaunchKernel",
                reinterpret_cast<KernelInfo*>(kernel), grid, block, args, shared_bytes, stream,
                false);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                    size_t shared_bytes, cudaStream_t stream) {
  return launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, "__cudaLaunchKernel_ptsz",
                reinterpret_cast<KernelInfo*>(kernel), grid, block, args, shared_bytes, stream,
                true);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                             size_t shared_bytes, cudaStream_t stream) {
  const cudaLaunchKernel_v7000_params params{func, grid, block, args, shared_bytes, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
                find_kernel(func), grid, block, args, shared_bytes, stream, false, CUPTI_CB_DOMAIN_RUNTIME_API,
                false, &params);
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                        size_t shared_bytes, cudaStream_t stream) {
  const cudaLaunchCooperativeKernel_v9000_params params{func, grid, block, args, shared_bytes, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, "cudaLaunchCooperativeKernel",
                find_kernel(func), grid, block, args, shared_bytes, stream, false, CUPTI_CB_DOMAIN_RUNTIME_API,
                true, &params);
}

// What the cudaLaunchKernelEx template calls. Of the launch attributes only
// cudaLaunchAttributeCooperative changes anything here; the others are accepted and ignored.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (config == nullptr) {
    ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC");
    return api.ret(cudaErrorInvalidValue);
  }
  bool cooperative = false;
  for (unsigned i = 0; config->attrs != nullptr && i < config->numAttrs; ++i) {
    if (config->attrs[i].id == cudaLaunchAttributeCooperative) cooperative = config->attrs[i].val.cooperative != 0;
  }
  // func is the kernel's stub, or (\note_cudaKernel_t) a cudaKernel_t from cudaGetKernel.
  KernelInfo* k = find_kernel(func);
  if (k == nullptr) k = kernel_of_handle(func);
  const cudaLaunchKernelExC_v11060_params params{config, func, args};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC", k, config->gridDim,
                config->blockDim, args, config->dynamicSmemBytes, config->stream, false,
                CUPTI_CB_DOMAIN_RUNTIME_API, cooperative, &params);
}

// "Returns the offset and size of a kernel parameter in the device-side parameter layout"
// (cuda_runtime_api.h, cudaFuncGetParamInfo; func may be a cudaKernel_t, \note_cudaKernel_t).
// The simulator knows the sizes of the kernels examples gave a host twin (HOST_TWIN); each
// parameter is placed at the next multiple of the smaller of its size and 8. For any other
// kernel it cannot say: cudaErrorInvalidDeviceFunction.
cudaError_t cudaFuncGetParamInfo(const void* func, size_t index, size_t* offset, size_t* size) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetParamInfo_v12040, "cudaFuncGetParamInfo");
  KernelInfo* k = find_kernel(func);
  if (k == nullptr) k = kernel_of_handle(func);
  if (k == nullptr || k->twin == nullptr) return api.ret(cudaErrorInvalidDeviceFunction);
  if (offset == nullptr || size == nullptr || index >= k->arg_sizes.size()) return api.ret(cudaErrorInvalidValue);
  size_t at = 0;
  for (size_t i = 0; i <= index; ++i) {
    const size_t align = std::min<size_t>(std::max<size_t>(k->arg_sizes[i], 1), 8);
    at = (at + align - 1) / align * align;
    if (i < index) at += k->arg_sizes[i];
  }
  *offset = at;
  *size = k->arg_sizes[index];
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t* function, const void* symbol) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000, "cudaGetFuncBySymbol");
  KernelInfo* k = find_kernel(symbol);
  if (function == nullptr || k == nullptr) return api.ret(cudaErrorInvalidDeviceFunction);
  *function = reinterpret_cast<cudaFunction_t>(k);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long,
                                    cudaDriverEntryPointQueryResult* status) {
  return driver_entry_point(CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_v11030, "cudaGetDriverEntryPoint",
                            symbol, fn, status);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  return driver_entry_point(CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_v12050,
                            "cudaGetDriverEntryPointByVersion", symbol, fn, status);
}

// The examples' host twins (see examples/README.md): only the simulator defines this symbol,
// so on a real GPU the weak reference is null and the real kernel runs.
void gpuhook_sim_register_host_kernel(const void* stub, HostTwinFn host, const size_t* arg_sizes,
                                      int arg_count) {
  KernelInfo* k = kernel_entry(stub);
  k->arg_sizes.assign(arg_sizes, arg_sizes + (arg_count > 0 ? arg_count : 0));
  k->twin = host;
}

// For tests: re-read GPUHOOK_SIM_* and restart the noise sequence, as in a fresh process.
void gpuhook_sim_reload_config(void) {
  reload_config();
  g_launch_count.store(0);
}

}  // extern "C"
