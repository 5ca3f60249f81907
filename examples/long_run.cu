// A long training run in which one step is slow: the flight recorder's example. Each step is
// an NVTX range "train_step" of a forward, a backward and an update kernel, synchronised at
// its end; step --slow-at K (1-based) runs its backward 1000 times over (on the simulator 200 ms,
// about 300 times the step), as a step stuck behind a slow data loader or a throttled GPU would
// look.
//
//   GPUHOOK_FLIGHT=2s GPUHOOK_SLOW=train_step:20 LD_PRELOAD=libgpuhook.so
//     ./long_run --steps 2000 --slow-at 1500      # (one command) writes <output>.flight1.gpuh
//   ./long_run --steps 100 --trigger-at 50       # gpuhook_trigger("step 50") at step 50
//   ./long_run --steps 100 --signal-at 50        # SIGUSR2 to itself at step 50 (only when
//                                                # something handles it: the flight recorder)
//   ./long_run --steps 100 --hang-at 50          # step 50 stalls the GPU for 3 s (a kernel
//                                                # spinning; on the simulator its cost sidecar)
//
// The check: the weights after the run against a CPU replay of the same updates.
#include <gpuhook/gpuhook.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common.h"

__global__ void step_forward(const float* w, float* act, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) act[i] = w[i] * 0.5f + 1.0f;
}
__global__ void step_backward(const float* act, float* grad, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grad[i] = act[i] * 1e-3f;
}
// A stall: one block spinning `ms` milliseconds on the GPU's global timer, as a kernel waiting
// on a peer that never comes would.
__global__ void step_stall(unsigned ms) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= 1000000ull * ms) break;
  }
}
static void step_stall_host(dim3, dim3, unsigned) {}
HOST_TWIN(step_stall, step_stall_host);

__global__ void step_update(float* w, const float* grad, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= grad[i];
}

static void step_forward_host(dim3, dim3, const float* w, float* act, int n) {
  for (int i = 0; i < n; ++i) act[i] = w[i] * 0.5f + 1.0f;
}
static void step_backward_host(dim3, dim3, const float* act, float* grad, int n) {
  for (int i = 0; i < n; ++i) grad[i] = act[i] * 1e-3f;
}
static void step_update_host(dim3, dim3, float* w, const float* grad, int n) {
  for (int i = 0; i < n; ++i) w[i] -= grad[i];
}
HOST_TWIN(step_forward, step_forward_host);
HOST_TWIN(step_backward, step_backward_host);
HOST_TWIN(step_update, step_update_host);

namespace {

struct Options {
  int steps = 2000;
  int size = 4096;
  int slow_at = 0, trigger_at = 0, signal_at = 0, hang_at = 0;  // 1-based steps, 0 = none
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--steps N] [--size N] [--slow-at K] [--trigger-at K] [--signal-at K] [--hang-at K]\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  examples::parse_flags(argc, argv,
                        {{"--steps", &o.steps},
                         {"--size", &o.size},
                         {"--slow-at", &o.slow_at},
                         {"--trigger-at", &o.trigger_at},
                         {"--signal-at", &o.signal_at},
                         {"--hang-at", &o.hang_at}},
                        {}, usage);
  if (o.steps < 1 || o.size < 1 || o.size > (1 << 26) || o.slow_at < 0 || o.trigger_at < 0 || o.signal_at < 0 ||
      o.hang_at < 0)
    usage(argv[0]);
  return o;
}

// SIGUSR2 only when something handles it: by default it would end the process.
bool usr2_handled() {
  struct sigaction current{};
  return sigaction(SIGUSR2, nullptr, &current) == 0 && ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int n = o.size;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *w = nullptr, *act = nullptr, *grad = nullptr;
  CHECK_CUDA(cudaMalloc(&w, bytes));
  CHECK_CUDA(cudaMalloc(&act, bytes));
  CHECK_CUDA(cudaMalloc(&grad, bytes));
  std::vector<float> host(static_cast<size_t>(n), 1.0f);
  CHECK_CUDA(cudaMemcpy(w, host.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int block = 256, grid = (n + block - 1) / block;
  for (int step = 1; step <= o.steps; ++step) {
    nvtxRangePushA("train_step");
    step_forward<<<grid, block, 0, s>>>(w, act, n);
    CHECK_LAUNCH();
    // The slow step computes the same gradient 1000 times: the same result, 1000 times the time.
    // 1000, not 200: on a loaded 2-core machine the simulator's median step stretched from 0.63
    // to 4 ms, and 200 (40 ms) stayed under GPUHOOK_SLOW=train_step:20; 200 ms is 20x 10 ms.
    for (int k = 0; k < (step == o.slow_at ? 1000 : 1); ++k) {
      step_backward<<<grid, block, 0, s>>>(act, grad, n);
      CHECK_LAUNCH();
    }
    step_update<<<grid, block, 0, s>>>(w, grad, n);
    CHECK_LAUNCH();
    if (step == o.hang_at) {
      step_stall<<<1, 1, 0, s>>>(3000);
      CHECK_LAUNCH();
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    nvtxRangePop();
    if (step == o.trigger_at) gpuhook_trigger("long_run: --trigger-at reached");
    if (step == o.signal_at) {
      if (usr2_handled()) kill(getpid(), SIGUSR2);
      else std::printf("long_run: nothing handles SIGUSR2, not sent\n");
    }
  }
  CHECK_CUDA(cudaMemcpy(host.data(), w, bytes, cudaMemcpyDeviceToHost));
  double want = 1.0;
  for (int step = 0; step < o.steps; ++step) want -= static_cast<float>((static_cast<float>(want) * 0.5f + 1.0f) * 1e-3f);
  for (int i = 0; i < n; i += (n / 97 > 0 ? n / 97 : 1)) examples::expect_close("w[i]", host[static_cast<size_t>(i)], want, 1e-3);
  std::printf("long_run: %d steps%s\n", o.steps, o.slow_at ? ", one slow" : "");
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(w));
  CHECK_CUDA(cudaFree(act));
  CHECK_CUDA(cudaFree(grad));
  std::printf("OK\n");
  return 0;
}
