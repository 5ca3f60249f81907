// GPUHOOK_SIM_PAUSE_CLOCK (tests/sim/cudart/paused_clock.h): a kernel whose host twin takes this
// machine 40 ms of CPU, planned at a few microseconds. Without the setting, a host that waits for
// it (a synchronise, a query loop) waits for this machine, and CLOCK_MONOTONIC_RAW (the hook's
// and CUPTI's clock) says so; with it, that clock sees only the planned time, while
// CLOCK_MONOTONIC, which the setting leaves alone, still sees the 40 ms.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"
#include "common.h"

namespace {
constexpr double kTwinMs = 40;

double now_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
}  // namespace

__global__ void slow(int* x) { *x += 1; }

static void slow_host(dim3, dim3, int* x) {
  const double t0 = now_ms(CLOCK_MONOTONIC);
  while (now_ms(CLOCK_MONOTONIC) - t0 < kTwinMs) {
  }
  *x += 1;
}
HOST_TWIN(slow, slow_host);

int main() {
  const char* setting = std::getenv("GPUHOOK_SIM_PAUSE_CLOCK");
  const bool paused = setting != nullptr && std::strcmp(setting, "1") == 0;
  int* x = nullptr;
  CHECK_OK(cudaMalloc(&x, sizeof(int)));
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_OK(cudaMemsetAsync(x, 0, sizeof(int), s));  // on s: a non-blocking stream does not wait for the legacy one
  for (const bool poll : {false, true}) {
    const double raw0 = now_ms(CLOCK_MONOTONIC_RAW), mono0 = now_ms(CLOCK_MONOTONIC);
    slow<<<1, 32, 0, s>>>(x);
    CHECK_OK(cudaGetLastError());
    if (poll) {
      cudaError_t state;
      while ((state = cudaStreamQuery(s)) == cudaErrorNotReady) {
      }
      CHECK_OK(state);
    } else {
      CHECK_OK(cudaStreamSynchronize(s));
    }
    const double raw_ms = now_ms(CLOCK_MONOTONIC_RAW) - raw0, mono_ms = now_ms(CLOCK_MONOTONIC) - mono0;
    std::printf("%s: CLOCK_MONOTONIC_RAW %.3f ms, CLOCK_MONOTONIC %.3f ms (%s)\n", poll ? "query loop" : "synchronise",
                raw_ms, mono_ms, paused ? "paused clock" : "real clock");
    EXPECT_TRUE(mono_ms >= kTwinMs);
    if (paused) EXPECT_TRUE(raw_ms < kTwinMs / 4);  // the plan: a launch and a 2 us kernel
    else EXPECT_TRUE(raw_ms >= kTwinMs);
  }
  int h = 0;
  CHECK_OK(cudaMemcpy(&h, x, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(h == 2);
  CHECK_OK(cudaFree(x));
  std::printf("OK\n");
  return 0;
}
