// GPUHOOK_MEM_USE's cost on the launching thread, without CUPTI's own callback cost (which only
// a GPU can show): a kernel's arguments scanned against its layout and filtered by the
// thread's table of recently written addresses, as note_memory_use does at each launch.
// Steady state: a training step's launches give the same buffers again and again, so nearly
// every address is inside its pause and nothing is written.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include "memory_use.h"

using gpuhook::hook::ParamLayout;
using gpuhook::hook::UseCollector;
using gpuhook::hook::UseFilter;

// kernel(float* a, const float* b, float* c, const float* d, int n, long long stride): 16
// layers' worth of such launches, each with its own buffers.
static void BM_MemoryUseScanLaunch(benchmark::State& state) {
  auto filter = std::make_unique<UseFilter>();
  ParamLayout layout;
  layout.count = 6;
  for (uint32_t i = 0; i < 4; ++i) layout.size[i] = 8;
  layout.size[4] = 4, layout.size[5] = 8;
  constexpr int kLayers = 16;
  uint64_t buffers[kLayers][4];
  for (int l = 0; l < kLayers; ++l)
    for (int k = 0; k < 4; ++k) buffers[l][k] = 0x7f0000000000ull + (static_cast<uint64_t>(l * 4 + k) << 20);
  int n = 4096;
  long long stride = 4096;
  uint64_t now = 1'000'000'000, written = 0;
  int l = 0;
  for (auto _ : state) {
    void* args[] = {&buffers[l][0], &buffers[l][1], &buffers[l][2], &buffers[l][3], &n, &stride};
    UseCollector uses(*filter, now, 10'000'000);
    uses.add_kernel_args(layout, args);
    written += uses.count();
    benchmark::DoNotOptimize(uses.count());
    now += 1'000;  // a launch every microsecond
    l = (l + 1) % kLayers;
  }
  state.counters["addresses_written_per_launch"] =
      benchmark::Counter(static_cast<double>(written), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_MemoryUseScanLaunch)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_MAIN();
