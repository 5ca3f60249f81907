// CPU cost of one NVML read of one device (GPUHOOK_NVML_HZ): sample_device against the
// simulated libnvidia-ml.so.1 with the simulated runtime loaded beside it, as the hook runs it,
// without the PCIe reads (once a second) and with them. The device has just run 8192 short
// kernels, so the simulated library has a full activity log to look through, the most it ever
// does. SIMULATOR figures: the real NVML's cost is the driver's, and its PCIe read waits 20 ms.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvml_sampler.h"

namespace {

using RegisterFatBinary = void** (*)(void*);
using RegisterFunction = void (*)(void**, const char*, char*, const char*, int, void*, void*, void*, void*, int*);
struct Dim3 {
  unsigned x, y, z;
};
using Launch = int (*)(const void*, Dim3, Dim3, void**, size_t, void*);
using Sync = int (*)();

void kernel_stub() {}

// 8192 kernels of 2 us, back to back, as nvcc's host code registers and launches them.
void fill_activity_log(void* rt) {
  if (rt == nullptr) return;
  auto fat = reinterpret_cast<RegisterFatBinary>(dlsym(rt, "__cudaRegisterFatBinary"));
  auto function = reinterpret_cast<RegisterFunction>(dlsym(rt, "__cudaRegisterFunction"));
  auto launch = reinterpret_cast<Launch>(dlsym(rt, "cudaLaunchKernel"));
  auto sync = reinterpret_cast<Sync>(dlsym(rt, "cudaDeviceSynchronize"));
  if (fat == nullptr || function == nullptr || launch == nullptr || sync == nullptr) return;
  static char fatbin[16];
  function(fat(fatbin), reinterpret_cast<const char*>(&kernel_stub), const_cast<char*>("k"), "k", -1, nullptr, nullptr,
           nullptr, nullptr, nullptr);
  for (int i = 0; i < 8192; ++i) launch(reinterpret_cast<const void*>(&kernel_stub), Dim3{132, 1, 1}, Dim3{64, 1, 1}, nullptr, 0, nullptr);
  sync();
}

using gpuhook::hook::GpuMetricsPayload;
using gpuhook::hook::NvmlDevice;
namespace nvml = gpuhook::hook::nvml;

struct Loaded {
  nvml::Api api;
  NvmlDevice device;
  bool ok = false;
};

Loaded& loaded() {
  static Loaded l = [] {
    Loaded x;
    // The runtime first, global, as in a CUDA program: the simulated NVML reads its plan.
    setenv("GPUHOOK_SIM_LAUNCH_NS", "0", 1);
    fill_activity_log(dlopen(SIM_CUDART, RTLD_NOW | RTLD_GLOBAL));
    std::string why;
    if (!gpuhook::hook::load_nvml(SIM_NVML, &x.api, &why) || x.api.init() != nvml::kSuccess) {
      std::fprintf(stderr, "nvml_bench: %s\n", why.c_str());
      return x;
    }
    nvml::Device h = nullptr;
    x.ok = x.api.by_pci_bus_id("00000000:01:00.0", &h) == nvml::kSuccess;
    x.device = NvmlDevice{0, h, 0};
    return x;
  }();
  return l;
}

void sample(benchmark::State& state, bool pcie) {
  Loaded& l = loaded();
  if (!l.ok) {
    state.SkipWithError("the simulated NVML did not load");
    return;
  }
  GpuMetricsPayload p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpuhook::hook::sample_device(l.api, l.device, pcie, &p));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_NvmlSample(benchmark::State& state) { sample(state, false); }
void BM_NvmlSampleWithPcie(benchmark::State& state) { sample(state, true); }

}  // namespace

BENCHMARK(BM_NvmlSample)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_NvmlSampleWithPcie)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_MAIN();
