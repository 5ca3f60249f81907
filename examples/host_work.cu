// Host work and stream-ordered memory on one stream, as inference servers and data loaders
// use them: registered (pinned) host memory, cudaMallocAsync/cudaFreeAsync from the default
// pool and from a pool of its own, and host functions queued between the GPU work
// (cudaLaunchHostFunc, cudaStreamAddCallback) that run in stream order.
//   host_work [--iterations N] [--size ELEMENTS]
// Each iteration copies in, doubles, copies out and records the order host functions ran in;
// the program checks the values and that every host function ran after the work before it.
#include <atomic>
#include <vector>

#include "common.h"

__global__ void twice(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

static void twice_host(dim3 grid, dim3 block, float* x, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] *= 2.0f;
  });
}

HOST_TWIN(twice, twice_host);

namespace {

struct Progress {
  std::vector<float>* out;
  int iteration;
  std::atomic<int>* seen;  // host functions that found their iteration's result in place
  std::atomic<int>* order;  // iterations in the order their host functions ran
};

void CUDART_CB after_copy_out(void* data) {
  auto* p = static_cast<Progress*>(data);
  // Stream order: the copy out before this function has finished.
  if ((*p->out)[0] == 2.0f * static_cast<float>(p->iteration + 1)) p->seen->fetch_add(1);
  if (p->order->load() == p->iteration) p->order->fetch_add(1);
}

void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void* data) {
  auto* p = static_cast<Progress*>(data);
  if (status == cudaSuccess) p->seen->fetch_add(1);
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 4, 1 << 16, "host functions and stream-ordered memory");
  const int n = static_cast<int>(opt.size);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  CHECK_CUDA(cudaHostRegister(in.data(), bytes, cudaHostRegisterDefault));
  CHECK_CUDA(cudaHostRegister(out.data(), bytes, cudaHostRegisterDefault));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaMemPool_t pool;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t keep = bytes;  // keep one buffer's worth cached between iterations
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));

  std::atomic<int> seen{0}, order{0};
  std::vector<Progress> progress(static_cast<size_t>(opt.iterations));
  for (int it = 0; it < opt.iterations; ++it) {
    for (float& v : in) v = static_cast<float>(it + 1);
    float* d = nullptr;
    CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&d), bytes, pool, s));
    CHECK_CUDA(cudaMemcpyAsync(d, in.data(), bytes, cudaMemcpyHostToDevice, s));
    twice<<<(n + 255) / 256, 256, 0, s>>>(d, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpyAsync(out.data(), d, bytes, cudaMemcpyDeviceToHost, s));
    progress[static_cast<size_t>(it)] = {&out, it, &seen, &order};
    CHECK_CUDA(cudaLaunchHostFunc(s, after_copy_out, &progress[static_cast<size_t>(it)]));
    CHECK_CUDA(cudaStreamAddCallback(s, stream_callback, &progress[static_cast<size_t>(it)], 0));
    CHECK_CUDA(cudaFreeAsync(d, s));
    // The host reuses `in` next iteration: wait until this iteration's work is done.
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  examples::expect_close("host functions that saw their result", seen.load(), 2.0 * opt.iterations);
  examples::expect_close("host functions in stream order", order.load(), opt.iterations);
  examples::expect_close("out[n-1]", out[static_cast<size_t>(n - 1)], 2.0 * opt.iterations);
  void* mapped = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&mapped, out.data(), 0));
  std::printf("host_work: %d iterations over %d elements\n", opt.iterations, n);
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaHostUnregister(in.data()));
  CHECK_CUDA(cudaHostUnregister(out.data()));
  std::printf("OK\n");
  return 0;
}
