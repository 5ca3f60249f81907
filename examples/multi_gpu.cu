// One process driving several GPUs, as single-process data-parallel training does: each
// device computes its slice of a step in chunks and passes each chunk to the next device
// (peer copies, a ring), the next device accumulates what it received, and at the end the
// devices all-reduce the head of their sums (kReduced elements: the step's summary) over NCCL
// communicators made by ncclCommInitAll.
//   multi_gpu [--iterations N] [--size ELEMENTS] [--fixed]
// Plain: each device computes all its chunks, then copies all of them, on one stream: its
// copy engine idles while it computes and the copy waits for the whole slice. --fixed: the
// copies go on a second stream and each chunk's copy waits only for that chunk's compute (an
// event), so chunk c travels while chunk c+1 is computed. It pays most where peer links are
// slow (PCIe without NVLink; on the simulator e.g. GPUHOOK_SIM_PEER_GBPS=2).
// Needs two devices (on the simulator: GPUHOOK_SIM_DEVICES=2); with fewer it says so and exits 0.
#include <nccl.h>

#include <algorithm>
#include <vector>

#include "common.h"
#include "nccl_check.h"

// A slice of the step's work (its cost on the simulator: costs/multi_gpu.simcost).
__global__ void produce(float* x, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

__global__ void accumulate(float* acc, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += in[i];
}

static void produce_host(dim3 grid, dim3 block, float* x, int n, float value) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] = value;
  });
}

static void accumulate_host(dim3 grid, dim3 block, float* acc, const float* in, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) acc[i] += in[i];
  });
}

HOST_TWIN(produce, produce_host);
HOST_TWIN(accumulate, accumulate_host);

namespace {

constexpr int kChunks = 4;
constexpr int kReduced = 1024;
constexpr int kThreads = 256;

struct Device {
  cudaStream_t compute = nullptr;
  cudaStream_t copy = nullptr;  // --fixed only
  float* out = nullptr;         // this device's slice, sent to the next device
  float* inbox = nullptr;       // what the previous device sent
  float* acc = nullptr;         // the sum of everything received
  cudaEvent_t chunk_done[kChunks] = {};
  cudaEvent_t sent = nullptr;      // this iteration's copies to the next device are done
  cudaEvent_t consumed = nullptr;  // this device has accumulated its inbox
};

int blocks_for(int n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 4, 1 << 20, "several GPUs in one process: peer copies and an all-reduce");
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::printf("multi_gpu: needs 2 devices, found %d (on the simulator: GPUHOOK_SIM_DEVICES=2)\n", count);
    return 0;
  }
  const int nd = std::min(count, 4);
  const int n = static_cast<int>(std::max<long long>(opt.size / kChunks * kChunks, kChunks));
  const int chunk = n / kChunks;
  const size_t chunk_bytes = static_cast<size_t>(chunk) * sizeof(float);

  // Communicators first, as training sets them up before its first step: one per device,
  // all in this process.
  std::vector<ncclComm_t> comms(static_cast<size_t>(nd));
  std::vector<int> ordinals(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) ordinals[static_cast<size_t>(d)] = d;
  CHECK_NCCL(ncclCommInitAll(comms.data(), nd, ordinals.data()));

  std::vector<Device> dev(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) {
    Device& v = dev[static_cast<size_t>(d)];
    CHECK_CUDA(cudaSetDevice(d));
    for (int p = 0; p < nd; ++p) {
      int can = 0;
      CHECK_CUDA(cudaDeviceCanAccessPeer(&can, d, p));
      if (p != d && can) CHECK_CUDA(cudaDeviceEnablePeerAccess(p, 0));
    }
    CHECK_CUDA(cudaStreamCreateWithFlags(&v.compute, cudaStreamNonBlocking));
    if (opt.fixed) CHECK_CUDA(cudaStreamCreateWithFlags(&v.copy, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&v.out, static_cast<size_t>(n) * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&v.inbox, static_cast<size_t>(n) * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&v.acc, static_cast<size_t>(n) * sizeof(float)));
    CHECK_CUDA(cudaMemsetAsync(v.acc, 0, static_cast<size_t>(n) * sizeof(float), v.compute));
    for (cudaEvent_t& e : v.chunk_done) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&v.sent, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&v.consumed, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(v.consumed, v.compute));
  }

  for (int it = 0; it < opt.iterations; ++it) {
    for (int d = 0; d < nd; ++d) {
      Device& v = dev[static_cast<size_t>(d)];
      const int next = (d + 1) % nd;
      Device& w = dev[static_cast<size_t>(next)];
      CHECK_CUDA(cudaSetDevice(d));
      cudaStream_t copy_stream = opt.fixed ? v.copy : v.compute;
      // This device's slice may be overwritten once last iteration's copies of it are done.
      if (it > 0 && opt.fixed) CHECK_CUDA(cudaStreamWaitEvent(v.compute, v.sent, 0));
      for (int c = 0; c < kChunks; ++c) {
        produce<<<blocks_for(chunk), kThreads, 0, v.compute>>>(v.out + c * chunk, chunk, static_cast<float>(d + 1 + it));
        CHECK_LAUNCH();
        CHECK_CUDA(cudaEventRecord(v.chunk_done[c], v.compute));
      }
      // The next device's inbox is free once it has accumulated last iteration's.
      CHECK_CUDA(cudaStreamWaitEvent(copy_stream, w.consumed, 0));
      for (int c = 0; c < kChunks; ++c) {
        if (opt.fixed) CHECK_CUDA(cudaStreamWaitEvent(copy_stream, v.chunk_done[c], 0));
        CHECK_CUDA(cudaMemcpyPeerAsync(w.inbox + c * chunk, next, v.out + c * chunk, d, chunk_bytes, copy_stream));
      }
      CHECK_CUDA(cudaEventRecord(v.sent, copy_stream));
    }
    for (int d = 0; d < nd; ++d) {
      Device& v = dev[static_cast<size_t>(d)];
      const Device& from = dev[static_cast<size_t>((d + nd - 1) % nd)];
      CHECK_CUDA(cudaSetDevice(d));
      CHECK_CUDA(cudaStreamWaitEvent(v.compute, from.sent, 0));
      accumulate<<<blocks_for(n), kThreads, 0, v.compute>>>(v.acc, v.inbox, n);
      CHECK_LAUNCH();
      CHECK_CUDA(cudaEventRecord(v.consumed, v.compute));
    }
  }

  // One all-reduce of the sums over all devices, issued from this one thread as a group.
  CHECK_NCCL(ncclGroupStart());
  for (int d = 0; d < nd; ++d) {
    Device& v = dev[static_cast<size_t>(d)];
    CHECK_NCCL(ncclAllReduce(v.acc, v.acc, static_cast<size_t>(std::min(n, kReduced)), ncclFloat, ncclSum,
                             comms[static_cast<size_t>(d)], v.compute));
  }
  CHECK_NCCL(ncclGroupEnd());

  // Device d received, each iteration, the previous device's p + 1 + it (p = d - 1 around the
  // ring); the all-reduced head sums that over the devices: nd(nd+1)/2 + nd*it per iteration.
  double want = 0;
  for (int it = 0; it < opt.iterations; ++it) want += nd * (nd + 1) / 2.0 + static_cast<double>(nd) * it;
  std::vector<float> host(static_cast<size_t>(n));
  for (int d = 0; d < nd; ++d) {
    Device& v = dev[static_cast<size_t>(d)];
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaMemcpyAsync(host.data(), v.acc, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost,
                               v.compute));
    CHECK_CUDA(cudaStreamSynchronize(v.compute));
    const int p = (d + nd - 1) % nd;
    double received = 0;
    for (int it = 0; it < opt.iterations; ++it) received += p + 1 + it;
    examples::expect_close("acc[0] (all-reduced)", host[0], want);
    examples::expect_close("acc[n-1] (received)", host[static_cast<size_t>(n - 1)], n > kReduced ? received : want);
  }
  std::printf("multi_gpu: %d devices, %d iterations of %d elements in %d chunks (%s), all-reduced head %.0f\n", nd,
              opt.iterations, n, kChunks, opt.fixed ? "copies overlap compute" : "copies after compute", want);

  for (int d = 0; d < nd; ++d) {
    Device& v = dev[static_cast<size_t>(d)];
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_NCCL(ncclCommDestroy(comms[static_cast<size_t>(d)]));
    for (cudaEvent_t e : v.chunk_done) CHECK_CUDA(cudaEventDestroy(e));
    CHECK_CUDA(cudaEventDestroy(v.sent));
    CHECK_CUDA(cudaEventDestroy(v.consumed));
    CHECK_CUDA(cudaFree(v.out));
    CHECK_CUDA(cudaFree(v.inbox));
    CHECK_CUDA(cudaFree(v.acc));
    CHECK_CUDA(cudaStreamDestroy(v.compute));
    if (v.copy != nullptr) CHECK_CUDA(cudaStreamDestroy(v.copy));
  }
  std::printf("OK\n");
  return 0;
}
