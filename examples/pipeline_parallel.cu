// Pattern 11: the pipeline bubble. A model split over 4 ranks (stages): each stage runs its
// layers on a micro-batch, sends the activations to the next stage with ncclSend, and in the
// backward pass sends the gradients back. GPipe runs all forwards, then all backwards: with
// m micro-batches over p stages every stage idles (p-1)/(m+p-1) of the step, waiting at the
// start for the first activations and at the end for the last gradients, and it keeps all m
// micro-batches' activations alive until their backward. With the batch split in 4
// micro-batches, that is 43% of the step. `diagnose` names the bubble (pipeline-bubble),
// `stats --by pipeline` measures it per stage, `render --deps` draws the sends.
//
// --fixed: the 1F1B schedule (PipeDream-flush, as Megatron-LM runs it): after a warm-up, each
// stage alternates one forward and one backward, so at most p micro-batches' activations are
// alive, and the same batch can be split in 16 micro-batches for a quarter of GPipe's
// activation memory: the bubble falls to 3/19 = 16% of a shorter step. Same gradients.
//
//   pipeline_parallel [--ranks 4] [--steps 3] [--batch 16] [--micro-batches M] [--sample-us 250]
//                     [--width 16384] [--fixed]
// Starts its ranks itself (one process each); ranks started by a launcher (RANK, WORLD_SIZE,
// LOCAL_RANK, or OpenMPI's OMPI_COMM_WORLD_*) exchange the ncclUniqueId through a file:
// PIPELINE_PARALLEL_ID_FILE, else /tmp/pipeline_parallel-<MASTER_PORT>.id.
//
// The check: every stage's weight gradients against a CPU replay of the same arithmetic.
// Runs on a GPU with the real NCCL, and unchanged on the gpuhook simulator.
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.h"
#include "nccl_check.h"
#include "ranks.h"

namespace {

// Spins about a microsecond on the GPU's global timer: compute whose duration does not depend
// on the GPU model. Grids are sized in waves of the device's resident blocks, one wave per
// microsecond (pipeline_parallel.simcost: 1000 ns per wave on the simulator).
__device__ void spin_one_us() {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= 1000ull) break;
  }
}

// out[j] = in[j] * w[j % width] + 1 over a micro-batch of `samples` x width values.
__global__ void stage_forward(const float* in, const float* w, float* out, int width, int samples) {
  if (threadIdx.x == 0) spin_one_us();
  const long long n = static_cast<long long>(width) * samples;
  for (long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<long long>(gridDim.x) * blockDim.x)
    out[j] = in[j] * w[j % width] + 1.0f;
}

// One thread per weight k: grad_in = grad_out * w (when the stage has a predecessor), and the
// weight gradient gw[k] += sum over the micro-batch of grad_out * in.
__global__ void stage_backward(const float* in, const float* w, const float* grad_out, float* grad_in, float* gw,
                               int width, int samples) {
  if (threadIdx.x == 0) spin_one_us();
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < width; k += gridDim.x * blockDim.x) {
    float acc = 0;
    for (int b = 0; b < samples; ++b) {
      const long long j = static_cast<long long>(b) * width + k;
      if (grad_in) grad_in[j] = grad_out[j] * w[k];
      acc += grad_out[j] * in[j];
    }
    gw[k] += acc;
  }
}

void stage_forward_host(dim3, dim3, const float* in, const float* w, float* out, int width, int samples) {
  const long long n = static_cast<long long>(width) * samples;
  for (long long j = 0; j < n; ++j) out[j] = in[j] * w[j % width] + 1.0f;
}
void stage_backward_host(dim3, dim3, const float* in, const float* w, const float* grad_out, float* grad_in, float* gw,
                         int width, int samples) {
  for (int k = 0; k < width; ++k) {
    float acc = 0;
    for (int b = 0; b < samples; ++b) {
      const long long j = static_cast<long long>(b) * width + k;
      if (grad_in) grad_in[j] = grad_out[j] * w[k];
      acc += grad_out[j] * in[j];
    }
    gw[k] += acc;
  }
}
HOST_TWIN(stage_forward, stage_forward_host);
HOST_TWIN(stage_backward, stage_backward_host);

struct Options {
  int ranks = 4;
  int steps = 3;
  int batch = 16;
  int micro_batches = 0;  // 0: 4 for GPipe, 16 for 1F1B
  int sample_us = 250;    // forward compute per sample and stage; backward takes twice that
  int width = 16384;      // floats per sample's activation (64 KiB)
  bool fixed = false;
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--ranks N] [--steps N] [--batch SAMPLES] [--micro-batches M] [--sample-us US] "
               "[--width FLOATS] [--fixed]\n"
               "  GPipe with 4 micro-batches per step; --fixed: 1F1B with 16 (M must divide the batch)\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  examples::parse_flags(argc, argv,
                        {{"--ranks", &o.ranks},
                         {"--steps", &o.steps},
                         {"--batch", &o.batch},
                         {"--micro-batches", &o.micro_batches},
                         {"--sample-us", &o.sample_us},
                         {"--width", &o.width}},
                        {{"--fixed", &o.fixed}}, usage);
  if (o.micro_batches == 0) o.micro_batches = o.fixed ? 16 : 4;
  if (o.ranks < 2 || o.ranks > 64 || o.steps < 1 || o.batch < 1 || o.micro_batches < 1 || o.batch % o.micro_batches ||
      o.sample_us < 1 || o.sample_us > 100000 || o.width < 1 || o.width > (1 << 24))
    usage(argv[0]);
  return o;
}

float weight(int stage, int k) { return 0.5f + 0.01f * static_cast<float>((k + 3 * stage) % 7); }
float input_value(long long j) { return 0.001f * static_cast<float>(j % 1000); }

// One rank's view of the pipeline: its stage's weights and the micro-batches in flight.
class Stage {
 public:
  Stage(const Options& o, int stage, int stages, ncclComm_t comm, int wave_blocks)
      : o_(o), s_(stage), p_(stages), comm_(comm), samples_(o.batch / o.micro_batches),
        count_(static_cast<size_t>(samples_) * static_cast<size_t>(o.width)), wave_blocks_(wave_blocks),
        in_(o.micro_batches), out_(o.micro_batches), grad_out_(o.micro_batches), grad_in_(o.micro_batches) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    std::vector<float> w(static_cast<size_t>(o.width));
    for (int k = 0; k < o.width; ++k) w[static_cast<size_t>(k)] = weight(s_, k);
    CHECK_CUDA(cudaMalloc(&w_, sizeof(float) * w.size()));
    CHECK_CUDA(cudaMemcpy(w_, w.data(), sizeof(float) * w.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&gw_, sizeof(float) * w.size()));
    CHECK_CUDA(cudaMemset(gw_, 0, sizeof(float) * w.size()));
    if (s_ == 0) {  // the data: the whole batch, on the first stage
      std::vector<float> x(static_cast<size_t>(o.batch) * static_cast<size_t>(o.width));
      for (size_t j = 0; j < x.size(); ++j) x[j] = input_value(static_cast<long long>(j));
      CHECK_CUDA(cudaMalloc(&input_, sizeof(float) * x.size()));
      CHECK_CUDA(cudaMemcpy(input_, x.data(), sizeof(float) * x.size(), cudaMemcpyHostToDevice));
    }
  }
  ~Stage() {
    CHECK_CUDA(cudaFree(w_));
    CHECK_CUDA(cudaFree(gw_));
    if (input_) CHECK_CUDA(cudaFree(input_));
    CHECK_CUDA(cudaStreamDestroy(stream_));
  }

  // What training scripts do before their loop (torch.distributed.barrier()): stages whose
  // processes started at different moments begin the first step together, so that step's
  // bubble is the schedule's, not the start-up's.
  void barrier() {
    float* token = nullptr;
    CHECK_CUDA(cudaMalloc(&token, sizeof(float)));
    CHECK_CUDA(cudaMemset(token, 0, sizeof(float)));
    CHECK_NCCL(ncclAllReduce(token, token, 1, ncclFloat32, ncclSum, comm_, stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    CHECK_CUDA(cudaFree(token));
  }

  void step() {
    nvtxRangePushA("train_step");
    if (o_.fixed) one_f_one_b();
    else gpipe();
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    nvtxRangePop();
  }

  std::vector<float> weight_gradients() const {
    std::vector<float> g(static_cast<size_t>(o_.width));
    CHECK_CUDA(cudaMemcpy(g.data(), gw_, sizeof(float) * g.size(), cudaMemcpyDeviceToHost));
    return g;
  }

 private:
  bool first() const { return s_ == 0; }
  bool last() const { return s_ == p_ - 1; }
  float* alloc() {
    float* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(&p, sizeof(float) * count_, stream_));
    return p;
  }
  void release(float*& p) {
    if (p) CHECK_CUDA(cudaFreeAsync(p, stream_));
    p = nullptr;
  }
  unsigned grid(int us) const { return static_cast<unsigned>(wave_blocks_) * static_cast<unsigned>(samples_ * us); }

  // The point-to-point steps, as Megatron-LM names them. A pair that goes both ways to one
  // neighbour is one NCCL group: neither side can block the other.
  void recv_forward(int i) {
    if (first()) return;
    in_[i] = alloc();
    CHECK_NCCL(ncclRecv(in_[i], count_, ncclFloat32, s_ - 1, comm_, stream_));
  }
  void send_forward(int i) {
    if (!last()) CHECK_NCCL(ncclSend(out_[i], count_, ncclFloat32, s_ + 1, comm_, stream_));
  }
  void recv_backward(int i) {
    if (last()) {
      grad_out_[i] = out_[i];  // loss 0.5 x sum(out^2): its gradient is the output itself
      return;
    }
    grad_out_[i] = alloc();
    CHECK_NCCL(ncclRecv(grad_out_[i], count_, ncclFloat32, s_ + 1, comm_, stream_));
  }
  void send_backward(int i) {
    if (first()) return;
    CHECK_NCCL(ncclSend(grad_in_[i], count_, ncclFloat32, s_ - 1, comm_, stream_));
    release(grad_in_[i]);
  }
  void send_forward_recv_backward(int f, int b) {
    if (last()) return recv_backward(b);
    grad_out_[b] = alloc();
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend(out_[f], count_, ncclFloat32, s_ + 1, comm_, stream_));
    CHECK_NCCL(ncclRecv(grad_out_[b], count_, ncclFloat32, s_ + 1, comm_, stream_));
    CHECK_NCCL(ncclGroupEnd());
  }
  void send_backward_recv_forward(int b, int f) {
    if (first()) return;
    in_[f] = alloc();
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend(grad_in_[b], count_, ncclFloat32, s_ - 1, comm_, stream_));
    CHECK_NCCL(ncclRecv(in_[f], count_, ncclFloat32, s_ - 1, comm_, stream_));
    CHECK_NCCL(ncclGroupEnd());
    release(grad_in_[b]);
  }

  void forward(int i) {
    if (first()) in_[i] = input_ + static_cast<size_t>(i) * count_;
    out_[i] = alloc();
    stage_forward<<<grid(o_.sample_us), 1024, 0, stream_>>>(in_[i], w_, out_[i], o_.width, samples_);
    CHECK_LAUNCH();
  }
  void backward(int i) {
    if (!first()) grad_in_[i] = alloc();
    stage_backward<<<grid(2 * o_.sample_us), 1024, 0, stream_>>>(in_[i], w_, grad_out_[i], grad_in_[i], gw_, o_.width,
                                                                 samples_);
    CHECK_LAUNCH();
    // The micro-batch's activations are no longer needed.
    if (!last()) release(grad_out_[i]);
    release(out_[i]);
    grad_out_[i] = nullptr;
    if (first()) in_[i] = nullptr;
    else release(in_[i]);
  }

  // All forwards, then all backwards: every micro-batch's activations alive at once.
  void gpipe() {
    const int m = o_.micro_batches;
    for (int i = 0; i < m; ++i) {
      recv_forward(i);
      forward(i);
      send_forward(i);
    }
    for (int i = 0; i < m; ++i) {
      recv_backward(i);
      backward(i);
      send_backward(i);
    }
  }

  // Warm-up forwards, then one forward and one backward in turn, then the cool-down backwards.
  void one_f_one_b() {
    const int m = o_.micro_batches;
    const int warmup = p_ - s_ - 1 < m ? p_ - s_ - 1 : m;
    const int steady = m - warmup;
    for (int i = 0; i < warmup; ++i) {
      recv_forward(i);
      forward(i);
      send_forward(i);
    }
    if (steady > 0) recv_forward(warmup);
    for (int k = 0; k < steady; ++k) {
      const int f = warmup + k;
      forward(f);
      send_forward_recv_backward(f, k);
      backward(k);
      if (k == steady - 1) send_backward(k);
      else send_backward_recv_forward(k, f + 1);
    }
    for (int b = steady; b < m; ++b) {
      recv_backward(b);
      backward(b);
      send_backward(b);
    }
  }

  const Options& o_;
  const int s_, p_;
  ncclComm_t comm_;
  const int samples_;
  const size_t count_;
  const int wave_blocks_;
  cudaStream_t stream_ = nullptr;
  float *w_ = nullptr, *gw_ = nullptr, *input_ = nullptr;
  std::vector<float*> in_, out_, grad_out_, grad_in_;
};

// The gradients a serial replay of the whole batch gives: stage by stage forward, the loss
// gradient, then stage by stage backward, per step the same.
std::vector<double> expected_gradients(const Options& o, int stage) {
  const size_t width = static_cast<size_t>(o.width), n = static_cast<size_t>(o.batch) * width;
  std::vector<std::vector<double>> act(static_cast<size_t>(o.ranks) + 1, std::vector<double>(n));
  for (size_t j = 0; j < n; ++j) act[0][j] = input_value(static_cast<long long>(j));
  for (int s = 0; s < o.ranks; ++s)
    for (size_t j = 0; j < n; ++j) act[s + 1][j] = act[s][j] * weight(s, static_cast<int>(j % width)) + 1.0;
  std::vector<double> grad(act[static_cast<size_t>(o.ranks)]), gw(width, 0.0);
  for (int s = o.ranks - 1; s >= stage; --s) {
    if (s == stage)
      for (size_t j = 0; j < n; ++j) gw[j % width] += grad[j] * act[s][j];
    for (size_t j = 0; j < n; ++j) grad[j] *= weight(s, static_cast<int>(j % width));
  }
  for (double& g : gw) g *= o.steps;
  return gw;
}

int run_rank(const Options& o, int rank, int world, int local_rank) {
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(local_rank % devices));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, local_rank % devices));
  const int wave_blocks = prop.multiProcessorCount * (prop.maxThreadsPerMultiProcessor / 1024);

  const std::string id_path = examples::ranks::id_file_path("pipeline_parallel", "PIPELINE_PARALLEL_ID_FILE");
  const ncclUniqueId id = examples::ranks::exchange_id(rank, id_path, "pipeline_parallel");
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  std::vector<float> got;
  {
    Stage stage(o, rank, world, comm, wave_blocks);
    stage.barrier();
    for (int s = 0; s < o.steps; ++s) stage.step();
    got = stage.weight_gradients();
  }
  const std::vector<double> want = expected_gradients(o, rank);
  for (int k = 0; k < o.width; k += (o.width / 97 > 0 ? o.width / 97 : 1))
    examples::expect_close("weight gradient", got[static_cast<size_t>(k)], want[static_cast<size_t>(k)], 1e-4);
  CHECK_NCCL(ncclCommDestroy(comm));
  if (rank == 0) std::remove(id_path.c_str());
  std::printf("stage %d/%d: %d steps of %d micro-batches (%s), gradients checked\n", rank, world, o.steps, o.micro_batches,
              o.fixed ? "1F1B" : "GPipe");
  return 0;
}

// Starts the stages itself when no launcher did, and says what ran.
int launch(const Options& o, char** argv) {
  const int failed = examples::ranks::launch("pipeline_parallel", o.ranks, argv, "PIPELINE_PARALLEL_ID_FILE");
  if (failed) return 1;
  std::printf("pipeline_parallel%s: %d stages, %d steps, %s with %d micro-batches\n", o.fixed ? " --fixed" : "", o.ranks,
              o.steps, o.fixed ? "1F1B" : "GPipe", o.micro_batches);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const examples::ranks::Identity me = examples::ranks::from_environment(o.ranks);
  if (me.rank < 0) return launch(o, argv);
  if (me.world < 2 || me.rank >= me.world) {
    std::fprintf(stderr, "pipeline_parallel: RANK %d outside WORLD_SIZE %d (a pipeline needs 2 or more)\n", me.rank, me.world);
    return 2;
  }
  return run_rank(o, me.rank, me.world, me.local_rank);
}
