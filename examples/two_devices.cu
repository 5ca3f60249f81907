// Two GPUs in one process, the way a data-parallel trainer or a pipeline drives them: one host
// thread per device, each with its own stream, pinned and managed host memory and
// stream-ordered device memory; then a peer copy of device 0's result to device 1 (once with
// cudaMemcpyPeerAsync, once with cudaMemcpyAsync and cudaMemcpyDefault, which unified
// addressing makes a peer copy too) and a cooperative kernel on device 1 that combines them.
//   two_devices [--iterations N] [--size ELEMENTS]
// Each thread per iteration: copy in (pinned), scale by its device's factor, copy out into
// managed memory, copy that into a device buffer kept for the peer step. Every value is checked.
// With fewer than 2 devices it says "two_devices: needs 2 devices, found N" and exits 0: a
// single-GPU machine is not an error, only nothing to show.
#include <cooperative_groups.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

__global__ void scale(float* x, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

static void scale_host(dim3 grid, dim3 block, float* x, int n, float factor) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] *= factor;
  });
}

// Two phases over the whole grid with a grid-wide barrier between them, which only a
// cooperative launch allows: out = a + b, then out[i] += out[n-1-i] of the first phase.
__global__ void combine(const float* a, const float* b, float* mid, float* out, int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size())) mid[i] = a[i] + b[i];
  grid.sync();
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size())) {
    out[i] = mid[i] + mid[n - 1 - i];
  }
}

static void combine_host(dim3, dim3, const float* a, const float* b, float* mid, float* out, int n) {
  for (int i = 0; i < n; ++i) mid[i] = a[i] + b[i];
  for (int i = 0; i < n; ++i) out[i] = mid[i] + mid[n - 1 - i];
}

HOST_TWIN(scale, scale_host);
HOST_TWIN(combine, combine_host);

namespace {

struct Worker {
  int device = 0;
  float* kept = nullptr;  // device memory: the last iteration's result, for the peer step
  bool ok = true;
};

// One device, driven from its own thread.
void drive(Worker& w, int iterations, int n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  const float factor = static_cast<float>(w.device + 1);
  CHECK_CUDA(cudaSetDevice(w.device));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* pinned = nullptr;
  float* managed = nullptr;
  CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned), bytes));
  CHECK_CUDA(cudaMallocManaged(reinterpret_cast<void**>(&managed), bytes, cudaMemAttachGlobal));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&w.kept), bytes));
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < n; ++i) pinned[i] = static_cast<float>(it + 1 + i % 7);
    float* d = nullptr;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&d), bytes, s));
    CHECK_CUDA(cudaMemcpyAsync(d, pinned, bytes, cudaMemcpyHostToDevice, s));
    scale<<<(n + 255) / 256, 256, 0, s>>>(d, n, factor);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpyAsync(managed, d, bytes, cudaMemcpyDefault, s));
    CHECK_CUDA(cudaFreeAsync(d, s));
    CHECK_CUDA(cudaMemcpyAsync(w.kept, managed, bytes, cudaMemcpyDefault, s));
    // The host rewrites `pinned` and reads `managed` next: wait for this iteration.
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
      if (managed[i] != factor * static_cast<float>(it + 1 + i % 7)) w.ok = false;
    }
  }
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(managed));
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 3, 1 << 14, "two devices, one thread each, peer copies");
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::printf("two_devices: needs 2 devices, found %d\n", count);
    return 0;
  }
  const int n = static_cast<int>(opt.size);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  Worker workers[2];
  workers[0].device = 0;
  workers[1].device = 1;
  std::thread t0(drive, std::ref(workers[0]), opt.iterations, n);
  std::thread t1(drive, std::ref(workers[1]), opt.iterations, n);
  t0.join();
  t1.join();
  examples::expect_close("device 0's iterations right", workers[0].ok ? 1 : 0, 1);
  examples::expect_close("device 1's iterations right", workers[1].ok ? 1 : 0, 1);

  // Device 0's last result to device 1, two ways; device 1 reads it directly after enabling.
  int can = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 1, 0));
  CHECK_CUDA(cudaSetDevice(1));
  if (can) CHECK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
  cudaStream_t s1;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  float *a = nullptr, *b = nullptr, *mid = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&a), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&b), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&mid), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&out), bytes));
  CHECK_CUDA(cudaMemcpyPeerAsync(a, 1, workers[0].kept, 0, bytes, s1));
  CHECK_CUDA(cudaMemcpyAsync(b, workers[0].kept, bytes, cudaMemcpyDefault, s1));

  // As many blocks as can be resident at once on device 1, and no more.
  int per_sm = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, combine, 256, 0));
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1));
  const int blocks = std::min(per_sm * sms, (n + 255) / 256);
  void* args[] = {&a, &b, &mid, &out, const_cast<int*>(&n)};
  CHECK_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(combine), dim3(blocks), dim3(256), args, 0, s1));
  std::vector<float> result(static_cast<size_t>(n));
  CHECK_CUDA(cudaMemcpyAsync(result.data(), out, bytes, cudaMemcpyDeviceToHost, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));
  // a = b = device 0's last iteration: 1 * (iterations + i % 7).
  const int last = opt.iterations;
  for (int i : {0, n / 2, n - 1}) {
    const double want = 2.0 * (last + i % 7) + 2.0 * (last + (n - 1 - i) % 7);
    examples::expect_close("combined[i]", result[static_cast<size_t>(i)], want);
  }
  if (can) CHECK_CUDA(cudaDeviceDisablePeerAccess(0));
  CHECK_CUDA(cudaStreamDestroy(s1));
  for (float* p : {a, b, mid, out}) CHECK_CUDA(cudaFree(p));
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaFree(workers[0].kept));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(workers[1].kept));
  std::printf("two_devices: %d iterations over %d elements on 2 devices, peer copies and a cooperative kernel\n",
              opt.iterations, n);
  std::printf("OK\n");
  return 0;
}
