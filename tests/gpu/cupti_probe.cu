// CUPTI facts the simulator models, checked on the real library (no hook):
//   flush     a 2 s kernel is launched; cuptiActivityFlushAll(0) must not return the buffer
//             holding its incomplete record; FORCED returns it and GetNextRecord stops with
//             CUPTI_ERROR_INVALID_KIND (cupti_activity.h)
//   drift     MONOTONIC_RAW against cuptiGetTimestamp (CLOCK_REALTIME by default) over --s s
// Prints one "PASS|FAIL|INFO name: detail" line per fact.
#include <cupti.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

namespace {
std::atomic<int> g_buffers{0}, g_kernels{0}, g_invalid_stops{0};

void CUPTIAPI on_request(uint8_t** b, size_t* size, size_t* max) {
  *size = 1 << 20;
  *b = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max = 0;
}
void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  ++g_buffers;
  CUpti_Activity* r = nullptr;
  CUptiResult s;
  while ((s = cuptiActivityGetNextRecord(b, valid, &r)) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ++g_kernels;
  }
  if (s == CUPTI_ERROR_INVALID_KIND) ++g_invalid_stops;
  std::free(b);
}

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}

uint64_t raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  int seconds = 60;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--s") == 0 && i + 1 < argc) seconds = std::atoi(argv[++i]);
  }
  cuptiActivityRegisterCallbacks(on_request, on_complete);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  spin<<<1, 1>>>(10'000'000ull);  // warm-up: contexts and instrumentation
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const int k0 = g_kernels.load();
  spin<<<1, 1>>>(2'000'000'000ull);
  cuptiActivityFlushAll(0);
  const int during = g_kernels.load() - k0;
  std::printf("%s flush0-keeps-incomplete: %d kernel records returned by FlushAll(0) while it ran\n",
              during == 0 ? "PASS" : "FAIL", during);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("INFO forced-flush: %d buffers cut short by CUPTI_ERROR_INVALID_KIND, %d kernel records\n",
              g_invalid_stops.load(), g_kernels.load() - k0);
  cudaDeviceSynchronize();
  uint64_t c0 = 0, c1 = 0;
  cuptiGetTimestamp(&c0);
  const uint64_t r0 = raw_ns();
  timespec pause{seconds, 0};
  nanosleep(&pause, nullptr);
  cuptiGetTimestamp(&c1);
  const uint64_t r1 = raw_ns();
  const double drift_ppm = (static_cast<double>(c1 - c0) - static_cast<double>(r1 - r0)) /
                           static_cast<double>(r1 - r0) * 1e6;
  std::printf("INFO clock-drift: cuptiGetTimestamp vs CLOCK_MONOTONIC_RAW over %d s: %.2f ppm\n", seconds, drift_ppm);
  return 0;
}
