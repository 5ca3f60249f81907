// Pattern 2: copies from pageable memory block the host and cannot overlap compute; pinned
// memory with cudaMemcpyAsync on streams of their own lets copies and kernels run at the same
// time.
//   pageable_copy            malloc'd buffers, cudaMemcpy in, kernel, cudaMemcpy out
//   pageable_copy --fixed    cudaMallocHost buffers; each chunk copied in on one stream, its
//                            kernel on one of two compute streams, copied out on a third, each
//                            step waiting on the one before through an event: the copies in
//                            run back to back while kernels and copies out follow
// Every element becomes 2 * x + 1; the program checks every element.
#include <vector>

#include "common.h"

__global__ void twice_plus_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i] + 1.0f;
}

static void twice_plus_one_host(dim3 grid, dim3 block, float* x, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] = 2.0f * x[i] + 1.0f;
  });
}
HOST_TWIN(twice_plus_one, twice_plus_one_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 4, 1 << 20,
                                           "pageable cudaMemcpy vs pinned cudaMemcpyAsync");
  constexpr int kChunks = 8;
  const int chunk = static_cast<int>(opt.size);
  const size_t n = static_cast<size_t>(chunk) * kChunks;
  const size_t chunk_bytes = static_cast<size_t>(chunk) * sizeof(float);

  // The bug: ordinary heap memory. The fix: page-locked memory the copy engines can read.
  float* host = nullptr;
  std::vector<float> pageable;
  if (opt.fixed) {
    CHECK_CUDA(cudaMallocHost(&host, n * sizeof(float)));
  } else {
    pageable.resize(n);
    host = pageable.data();
  }
  float* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, n * sizeof(float)));
  // --fixed: a stream for each direction of copy and two for the kernels, and an event after
  // each chunk's copy in and each chunk's kernel.
  cudaStream_t copy_in = nullptr, copy_out = nullptr, compute[2] = {};
  cudaEvent_t copied[kChunks] = {}, computed[kChunks] = {};
  if (opt.fixed) {
    for (cudaStream_t* s : {&copy_in, &copy_out, &compute[0], &compute[1]})
      CHECK_CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    for (int c = 0; c < kChunks; ++c) {
      CHECK_CUDA(cudaEventCreateWithFlags(&copied[c], cudaEventDisableTiming));
      CHECK_CUDA(cudaEventCreateWithFlags(&computed[c], cudaEventDisableTiming));
    }
  }

  const int block = 256;
  const int grid = (chunk + block - 1) / block;
  double checked = 0;
  for (int it = 0; it < opt.iterations; ++it) {
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i + it) % 1000);
    for (int c = 0; c < kChunks; ++c) {
      float* h = host + static_cast<size_t>(c) * chunk;
      float* d = dev + static_cast<size_t>(c) * chunk;
      if (opt.fixed) {
        cudaStream_t s = compute[c % 2];
        CHECK_CUDA(cudaMemcpyAsync(d, h, chunk_bytes, cudaMemcpyHostToDevice, copy_in));
        CHECK_CUDA(cudaEventRecord(copied[c], copy_in));
        CHECK_CUDA(cudaStreamWaitEvent(s, copied[c], 0));
        twice_plus_one<<<grid, block, 0, s>>>(d, chunk);
        CHECK_LAUNCH();
        CHECK_CUDA(cudaEventRecord(computed[c], s));
        CHECK_CUDA(cudaStreamWaitEvent(copy_out, computed[c], 0));
        CHECK_CUDA(cudaMemcpyAsync(h, d, chunk_bytes, cudaMemcpyDeviceToHost, copy_out));
      } else {
        CHECK_CUDA(cudaMemcpy(d, h, chunk_bytes, cudaMemcpyHostToDevice));
        twice_plus_one<<<grid, block>>>(d, chunk);
        CHECK_LAUNCH();
        CHECK_CUDA(cudaMemcpy(h, d, chunk_bytes, cudaMemcpyDeviceToHost));
      }
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    for (size_t i = 0; i < n; ++i) {
      const float want = 2.0f * static_cast<float>((i + it) % 1000) + 1.0f;
      examples::expect_close("element", host[i], want);
      checked += 1;
    }
  }
  std::printf("pageable_copy%s: %d chunks x %d floats, %d iterations, %.0f elements checked\n",
              opt.fixed ? " --fixed" : "", kChunks, chunk, opt.iterations, checked);
  if (opt.fixed) {
    for (int c = 0; c < kChunks; ++c) {
      CHECK_CUDA(cudaEventDestroy(copied[c]));
      CHECK_CUDA(cudaEventDestroy(computed[c]));
    }
    for (cudaStream_t s : {copy_in, copy_out, compute[0], compute[1]}) CHECK_CUDA(cudaStreamDestroy(s));
  }
  CHECK_CUDA(cudaFree(dev));
  if (opt.fixed) CHECK_CUDA(cudaFreeHost(host));
  std::printf("OK\n");
  return 0;
}
