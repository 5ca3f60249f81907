// A data-parallel training loop over NCCL: every step each rank computes gradients, then
// all ranks sum them with ncclAllReduce and apply the same update. One rank can be given
// extra compute per step (--slow-rank R --extra-us N): the all-reduce cannot finish before
// that rank arrives, so every other rank waits, every step. That is the straggler pattern.
// The fixed twin (--fixed) spreads the same extra work evenly over all ranks.
//
//   allreduce_train --ranks 4 --slow-rank 2 --extra-us 300    # starts 4 ranks itself
//   RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 ALLREDUCE_TRAIN_ID_FILE=/shared/id allreduce_train ...
//                                                               # ranks started by a launcher
// Ranks started by a launcher (torchrun-style RANK/WORLD_SIZE/LOCAL_RANK, or OpenMPI's
// OMPI_COMM_WORLD_*) exchange the ncclUniqueId through a file that rank 0 writes:
// ALLREDUCE_TRAIN_ID_FILE, else /tmp/allreduce_train-<MASTER_PORT>.id (one host, or a
// shared file system).
//
// Runs on a GPU with the real NCCL, and unchanged on the gpuhook simulator.
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.h"
#include "nccl_check.h"
#include "ranks.h"

namespace {

constexpr float kLearningRate = 0.05f;

// Spins for about `us` microseconds on the GPU's global timer: a stand-in for real compute
// whose duration does not depend on the GPU model.
__device__ void spin_us(unsigned us) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= 1000ull * us) break;
  }
}

// One "wave" of blocks per microsecond of compute: each block spins 1 us, and the grid is
// sized in waves of the device's block capacity. The simulator times it the same way
// (allreduce_train.simcost: 1 us per wave).
__global__ void compute_grad(float* grad, const float* w, int n, int rank) {
  if (threadIdx.x == 0) spin_us(1);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    grad[i] = static_cast<float>(rank + 1) * w[i] * 1e-3f;
}

__global__ void extra_work() {
  if (threadIdx.x == 0) spin_us(1);
}

__global__ void apply_update(float* w, const float* grad, int n, float scale) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[i] -= scale * grad[i];
}

// Host twins for the simulator (see common.h).
void compute_grad_host(dim3, dim3, float* grad, const float* w, int n, int rank) {
  for (int i = 0; i < n; ++i) grad[i] = static_cast<float>(rank + 1) * w[i] * 1e-3f;
}
void extra_work_host(dim3, dim3) {}
void apply_update_host(dim3, dim3, float* w, const float* grad, int n, float scale) {
  for (int i = 0; i < n; ++i) w[i] -= scale * grad[i];
}
HOST_TWIN(compute_grad, compute_grad_host);
HOST_TWIN(extra_work, extra_work_host);
HOST_TWIN(apply_update, apply_update_host);

struct Options {
  int ranks = 4;
  int steps = 20;
  int size = 65536;
  int compute_us = 200;
  int slow_rank = -1;
  int extra_us = 0;
  bool fixed = false;
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--ranks N] [--steps N] [--size ELEMENTS] [--compute-us N] [--slow-rank R --extra-us N] "
               "[--fixed]\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  examples::parse_flags(argc, argv,
                        {{"--ranks", &o.ranks},
                         {"--steps", &o.steps},
                         {"--size", &o.size},
                         {"--compute-us", &o.compute_us},
                         {"--slow-rank", &o.slow_rank},
                         {"--extra-us", &o.extra_us}},
                        {{"--fixed", &o.fixed}}, usage);
  if (o.ranks < 1 || o.ranks > 64 || o.steps < 1 || o.size < 1 || o.compute_us < 0 || o.extra_us < 0) usage(argv[0]);
  if (o.extra_us > 0 && (o.slow_rank < 0 || o.slow_rank >= o.ranks)) {
    std::fprintf(stderr, "%s: --extra-us needs --slow-rank between 0 and %d\n", argv[0], o.ranks - 1);
    std::exit(2);
  }
  return o;
}

int run_rank(const Options& o, int rank, int world, int local_rank) {
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(local_rank % devices));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, local_rank % devices));
  const int threads = 1024;
  const int wave_blocks = prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / threads);

  const std::string id_path = examples::ranks::id_file_path("allreduce_train", "ALLREDUCE_TRAIN_ID_FILE");
  const ncclUniqueId id = examples::ranks::exchange_id(rank, id_path, "allreduce_train");
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const int n = o.size;
  std::vector<float> w_host(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) w_host[static_cast<size_t>(i)] = 1.0f + 0.01f * static_cast<float>(i % 13);
  float *w, *grad;
  CHECK_CUDA(cudaMalloc(&w, sizeof(float) * static_cast<size_t>(n)));
  CHECK_CUDA(cudaMalloc(&grad, sizeof(float) * static_cast<size_t>(n)));
  CHECK_CUDA(cudaMemcpy(w, w_host.data(), sizeof(float) * static_cast<size_t>(n), cudaMemcpyHostToDevice));

  // Extra compute per step: all on the slow rank, or spread evenly in the fixed twin.
  int extra_us = 0;
  if (o.extra_us > 0) extra_us = o.fixed ? (o.extra_us + world - 1) / world : (rank == o.slow_rank ? o.extra_us : 0);

  for (int step = 0; step < o.steps; ++step) {
    nvtxRangePushA("train_step");
    compute_grad<<<wave_blocks * (o.compute_us > 0 ? o.compute_us : 1), threads, 0, stream>>>(grad, w, n, rank);
    CHECK_LAUNCH();
    if (extra_us > 0) {
      extra_work<<<wave_blocks * extra_us, threads, 0, stream>>>();
      CHECK_LAUNCH();
    }
    CHECK_NCCL(ncclAllReduce(grad, grad, static_cast<size_t>(n), ncclFloat32, ncclSum, comm, stream));
    apply_update<<<wave_blocks, threads, 0, stream>>>(w, grad, n, kLearningRate / static_cast<float>(world));
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    nvtxRangePop();
  }

  // Every rank must hold the weights a serial replay of the same arithmetic gives.
  std::vector<float> got(static_cast<size_t>(n));
  CHECK_CUDA(cudaMemcpy(got.data(), w, sizeof(float) * static_cast<size_t>(n), cudaMemcpyDeviceToHost));
  const float grad_scale = static_cast<float>(world) * static_cast<float>(world + 1) / 2.0f;
  for (int i = 0; i < n; i += (n / 97 > 0 ? n / 97 : 1)) {
    double want = w_host[static_cast<size_t>(i)];
    for (int step = 0; step < o.steps; ++step) want -= kLearningRate / world * grad_scale * want * 1e-3;
    examples::expect_close("weight", got[static_cast<size_t>(i)], want, 1e-4);
  }
  CHECK_CUDA(cudaFree(w));
  CHECK_CUDA(cudaFree(grad));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  if (rank == 0) std::remove(id_path.c_str());
  std::printf("rank %d/%d: %d steps, extra %d us/step, weights checked\n", rank, world, o.steps, extra_us);
  return 0;
}

// Starts the ranks itself when no launcher did, and says what ran.
int launch(const Options& o, char** argv) {
  if (examples::ranks::launch("allreduce_train", o.ranks, argv, "ALLREDUCE_TRAIN_ID_FILE") != 0) return 1;
  std::printf("allreduce_train: %d ranks, %d steps, %s\n", o.ranks, o.steps,
              o.extra_us == 0 ? "balanced" : o.fixed ? "extra work spread evenly (fixed)" : "one slow rank");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const examples::ranks::Identity me = examples::ranks::from_environment(o.ranks);
  if (me.rank < 0) return launch(o, argv);
  if (me.world < 1 || me.rank >= me.world) {
    std::fprintf(stderr, "allreduce_train: RANK %d outside WORLD_SIZE %d\n", me.rank, me.world);
    return 2;
  }
  return run_rank(o, me.rank, me.world, me.local_rank);
}
