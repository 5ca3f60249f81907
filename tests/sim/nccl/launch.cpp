// How a simulated collective reaches a stream. With the simulated CUDA runtime loaded, each
// operation is a kernel of that runtime: its name is registered as nvcc-generated code
// registers a kernel (__cudaRegisterFunction), its body is a host twin
// (gpuhook_sim_register_host_kernel, the hook the examples use), and it is launched as the
// real NCCL launches: cuLaunchKernelEx fetched with cudaGetDriverEntryPointByVersion, the
// function from cudaGetFuncBySymbol, the argument block passed through `extra`
// (NCCL 2.28 src/misc/cudawrap.cc, src/enqueue.cc). So it is ordered with the app's kernels
// on the stream, and CUPTI shows its kernel under a DRIVER API record (cuLaunchKernelEx),
// never a runtime one, on the thread that launched it: the caller's, or for grouped calls
// the one in ncclGroupEnd. Without the
// simulated runtime (a real libcudart, or none), the operation runs on the calling thread:
// same results, no stream semantics.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <deque>
#include <string>
#include <unordered_map>

#include "comm.h"

namespace simnccl {

namespace {

using HostTwinFn = void (*)(void** args, dim3 grid, dim3 block);
using RegisterTwinFn = void (*)(const void* stub, HostTwinFn host, const size_t* arg_sizes, int arg_count);
using RegisterFatBinaryFn = void** (*)(void* fat_cubin);
using RegisterFunctionFn = void (*)(void** handle, const char* host_fun, char* device_fun, const char* device_name,
                                    int thread_limit, uint3*, uint3*, dim3*, dim3*, int*);
using EntryPointFn = cudaError_t (*)(const char* symbol, void** fn, unsigned int version, unsigned long long flags,
                                     cudaDriverEntryPointQueryResult* status);
using FuncBySymbolFn = cudaError_t (*)(cudaFunction_t* fn, const void* symbol);
using LaunchKernelExFn = CUresult (*)(const CUlaunchConfig* config, CUfunction f, void** params, void** extra);
using KernelEndAtFn = void (*)(uint64_t end_ns);
using NowFn = uint64_t (*)();
using DeviceFn = cudaError_t (*)(int);
using GetDeviceFn = cudaError_t (*)(int*);

struct SimRuntime {
  RegisterTwinFn register_twin = nullptr;
  RegisterFatBinaryFn register_fatbinary = nullptr;
  RegisterFunctionFn register_function = nullptr;
  FuncBySymbolFn func_by_symbol = nullptr;
  LaunchKernelExFn launch_kernel_ex = nullptr;
  // Optional: lets a host twin say when its kernel ends (on the CUPTI clock), so every rank's
  // collective ends at the same planned instant instead of whenever its thread wakes up.
  KernelEndAtFn kernel_end_at = nullptr;
  NowFn now = nullptr;
  NowFn kernel_start = nullptr;  // the running kernel's simulated start (CUPTI clock)
  DeviceFn set_device = nullptr;
  GetDeviceFn get_device = nullptr;
  void** module = nullptr;
  bool available() const {
    return register_twin && register_fatbinary && register_function && func_by_symbol && launch_kernel_ex;
  }
};

const SimRuntime& sim_runtime() {
  static const SimRuntime rt = [] {
    SimRuntime r;
    // Only the simulated libcudart defines gpuhook_sim_register_host_kernel.
    r.register_twin = reinterpret_cast<RegisterTwinFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_register_host_kernel"));
    r.register_fatbinary = reinterpret_cast<RegisterFatBinaryFn>(dlsym(RTLD_DEFAULT, "__cudaRegisterFatBinary"));
    r.register_function = reinterpret_cast<RegisterFunctionFn>(dlsym(RTLD_DEFAULT, "__cudaRegisterFunction"));
    r.func_by_symbol = reinterpret_cast<FuncBySymbolFn>(dlsym(RTLD_DEFAULT, "cudaGetFuncBySymbol"));
    if (auto entry = reinterpret_cast<EntryPointFn>(dlsym(RTLD_DEFAULT, "cudaGetDriverEntryPointByVersion"))) {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
      if (entry("cuLaunchKernelEx", &fn, 12000, cudaEnableDefault, &status) == cudaSuccess &&
          status == cudaDriverEntryPointSuccess) {
        r.launch_kernel_ex = reinterpret_cast<LaunchKernelExFn>(fn);
      }
    }
    r.kernel_end_at = reinterpret_cast<KernelEndAtFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_kernel_end_at"));
    r.now = reinterpret_cast<NowFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_now_ns"));
    r.kernel_start = reinterpret_cast<NowFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_kernel_start_ns"));
    r.set_device = reinterpret_cast<DeviceFn>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
    r.get_device = reinterpret_cast<GetDeviceFn>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
    if (r.available()) {
      static char fake_fatbin[16];
      r.module = r.register_fatbinary(fake_fatbin);
    }
    return r;
  }();
  return rt;
}

thread_local bool t_in_twin = false;

void run_and_free(Op* op) {
  execute(*op);
  op->comm->in_flight.fetch_sub(1);
  delete op;
}

// The kernel body on the stream's worker thread: args[0] points at the Op pointer.
void twin(void** args, dim3, dim3) {
  t_in_twin = true;
  run_and_free(*static_cast<Op**>(args[0]));
  t_in_twin = false;
}

// One stub address per kernel name: the runtime keys kernels by the host stub's address.
const void* stub_for(const std::string& name) {
  static std::mutex mu;
  static std::unordered_map<std::string, const void*> stubs;
  static char addresses[512];
  static size_t used = 0;
  std::lock_guard<std::mutex> lock(mu);
  auto it = stubs.find(name);
  if (it != stubs.end()) return it->second;
  if (used == sizeof addresses) return nullptr;
  const void* stub = &addresses[used++];
  const SimRuntime& rt = sim_runtime();
  // The runtime keeps the name pointer: give it storage that lives as long as the process
  // (a deque never moves its elements).
  static auto* names = new std::deque<std::string>();
  const char* stored = names->emplace_back(name).c_str();
  rt.register_function(rt.module, static_cast<const char*>(stub), const_cast<char*>(stored), stored, -1, nullptr,
                       nullptr, nullptr, nullptr, nullptr);
  const size_t arg_size = sizeof(Op*);
  rt.register_twin(stub, twin, &arg_size, 1);
  stubs.emplace(name, stub);
  return stub;
}

}  // namespace

namespace {
// The CUPTI clock minus CLOCK_MONOTONIC_RAW (they differ by a constant: the hook's test-only
// clock offset). Read between two raw readings, and the tightest of a few pairs kept: a thread
// preempted between the two reads would otherwise put the scheduler's delay into every rank's
// kernel times (seen: 31 us on a loaded 2-core machine).
int64_t cupti_minus_raw(const SimRuntime& rt) {
  int64_t best = 0;
  uint64_t best_window = UINT64_MAX;
  for (int i = 0; i < 4; ++i) {
    const uint64_t before = monotonic_raw_ns();
    const uint64_t cupti = rt.now();
    const uint64_t after = monotonic_raw_ns();
    if (after - before < best_window) {
      best_window = after - before;
      best = static_cast<int64_t>(cupti) - static_cast<int64_t>(before + (after - before) / 2);
    }
    if (best_window < 2000) break;
  }
  return best;
}
}  // namespace

uint64_t kernel_start_raw() {
  const SimRuntime& rt = sim_runtime();
  if (!t_in_twin || !rt.kernel_start || !rt.now) return monotonic_raw_ns();
  // The runtime places the kernel on its timeline when asked, which may take until its planned
  // start comes: that start is the rank's arrival, however early this thread runs the twin.
  const uint64_t start = rt.kernel_start();
  if (start == 0) return monotonic_raw_ns();
  const int64_t start_raw = static_cast<int64_t>(start) - cupti_minus_raw(rt);  // as end_at converts
  return start_raw > 0 ? static_cast<uint64_t>(start_raw) : monotonic_raw_ns();
}

void end_at(uint64_t end_raw_ns) {
  const SimRuntime& rt = sim_runtime();
  if (t_in_twin && rt.kernel_end_at && rt.now) {
    // The CUPTI clock may differ from CLOCK_MONOTONIC_RAW by a constant (the hook's test-only
    // clock offset): read both together to convert.
    const int64_t delta = cupti_minus_raw(rt);
    rt.kernel_end_at(static_cast<uint64_t>(static_cast<int64_t>(end_raw_ns) + delta));
    return;
  }
  sleep_until_raw(end_raw_ns);
}

ncclResult_t launch(Op* op, cudaStream_t stream) {
  op->comm->in_flight.fetch_add(1);
  const SimRuntime& rt = sim_runtime();
  const void* stub = rt.available() ? stub_for(kernel_name(*op)) : nullptr;
  if (!stub) {
    run_and_free(op);
    return ncclSuccess;
  }
  cudaFunction_t fn = nullptr;
  if (rt.func_by_symbol(&fn, stub) != cudaSuccess) {
    op->comm->in_flight.fetch_sub(1);
    delete op;
    return ncclUnhandledCudaError;
  }
  // NCCL launches one block per channel; two channels per rank is typical within a node.
  const unsigned channels = static_cast<unsigned>(2 * op->comm->nranks > 32 ? 32 : 2 * op->comm->nranks);
  CUlaunchConfig config{};
  config.gridDimX = channels;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 512;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(stream);
  size_t args_bytes = sizeof op;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &op, CU_LAUNCH_PARAM_BUFFER_SIZE, &args_bytes, CU_LAUNCH_PARAM_END};
  // The kernel goes to the communicator's device, whatever device the caller has current (one
  // thread may drive every rank of ncclCommInitAll in one group): NCCL sets comm->cudaDev
  // before it launches and gives the caller its device back after (src/group.cc).
  int caller_device = -1;
  const bool switch_device = op->comm->device >= 0 && rt.set_device && rt.get_device &&
                             rt.get_device(&caller_device) == cudaSuccess && caller_device != op->comm->device;
  if (switch_device) rt.set_device(op->comm->device);
  CUresult err = rt.launch_kernel_ex(&config, reinterpret_cast<CUfunction>(fn), nullptr, extra);
  if (switch_device) rt.set_device(caller_device);
  if (err != CUDA_SUCCESS) {
    op->comm->in_flight.fetch_sub(1);
    delete op;
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

}  // namespace simnccl
