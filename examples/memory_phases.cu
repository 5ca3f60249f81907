// Pattern 10: activations fill GPU memory. A training step's forward pass allocates one
// activation per layer and keeps them all for the backward pass, which frees them in reverse:
// the step's memory peaks at the end of the forward pass, and the activations (batch x width
// each) dwarf the weights. `render --view memory` shows the peak and what was live at it;
// `diagnose` names the phase that dominated it.
//
// The initial weights of all layers arrive as one table, uploaded once; each layer's weights
// are set from its slice on the GPU, and the table is then held, unused, to the end of the run
// (it is freed with everything else). Recorded with GPUHOOK_MEM_USE=1, `diagnose memory-idle`
// names it: memory at the peak that no call used after initialisation.
//
// --fixed: activation checkpointing. The forward pass keeps every 4th activation and frees
// the rest as soon as the next layer has read them; the backward pass recomputes each segment
// from its checkpoint. Same gradients, a lower peak, some extra compute. And the table is
// freed as soon as the weights are set.
//
// Each allocation says what it is for with gpuhook_mem_tag() (params, grads, init, data,
// activations): `render --view memory` stacks the memory by it.
//
// The check: every layer's gradient buffer against a CPU replay of the same arithmetic.
#include <gpuhook/gpuhook.h>
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "common.h"

constexpr int kLayers = 16;
constexpr int kBatch = 4;       // an activation is kBatch x the width of a weight
constexpr int kSegment = 4;     // --fixed: a checkpoint every kSegment layers

// w[i] = table[i]: a layer's weights from its slice of the initial table
__global__ void init_weights(const float* table, float* w, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) w[i] = table[i];
}
// out[i] = in[i] * w[i % n] + 1
__global__ void layer_forward(const float* in, const float* w, float* out, long long n, long long total) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < total) out[i] = in[i] * w[i % n] + 1.0f;
}
// g[i % n] += 0.5 * act[i] over the batch (one thread per weight: no atomics needed)
__global__ void layer_backward(const float* act, float* g, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float s = 0;
  for (int b = 0; b < kBatch; ++b) s += act[b * n + i];
  g[i] += 0.5f * s;
}

static void init_weights_host(dim3 grid, dim3 block, const float* table, float* w, long long n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (static_cast<long long>(i) < n) w[i] = table[i];
  });
}
HOST_TWIN(init_weights, init_weights_host);
static void layer_forward_host(dim3 grid, dim3 block, const float* in, const float* w, float* out, long long n,
                               long long total) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (static_cast<long long>(i) < total) out[i] = in[i] * w[i % n] + 1.0f;
  });
}
HOST_TWIN(layer_forward, layer_forward_host);
static void layer_backward_host(dim3 grid, dim3 block, const float* act, float* g, long long n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (static_cast<long long>(i) >= n) return;
    float s = 0;
    for (int b = 0; b < kBatch; ++b) s += act[b * n + i];
    g[i] += 0.5f * s;
  });
}
HOST_TWIN(layer_backward, layer_backward_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 2, 1 << 18,
                                           "activations held for backward vs activation checkpointing");
  const long long n = opt.size, total = n * kBatch;
  const size_t w_bytes = static_cast<size_t>(n) * sizeof(float), act_bytes = static_cast<size_t>(total) * sizeof(float);
  const int block = 256;
  const unsigned fwd_grid = static_cast<unsigned>((total + block - 1) / block), bwd_grid = static_cast<unsigned>((n + block - 1) / block);

  // Weights and gradients: allocated once, outside the step; the weights set from one table.
  std::vector<float*> w(kLayers), g(kLayers);
  std::vector<float> host_w(static_cast<size_t>(n)), table(static_cast<size_t>(kLayers) * static_cast<size_t>(n));
  for (int l = 0; l < kLayers; ++l)
    for (long long i = 0; i < n; ++i)
      table[static_cast<size_t>(l) * static_cast<size_t>(n) + static_cast<size_t>(i)] =
          0.5f + 0.01f * static_cast<float>((i + l) % 7);
  float* init = nullptr;
  CHECK_CUDA(cudaMalloc(&init, kLayers * w_bytes));
  gpuhook_mem_tag(init, "init");
  CHECK_CUDA(cudaMemcpy(init, table.data(), kLayers * w_bytes, cudaMemcpyHostToDevice));
  for (int l = 0; l < kLayers; ++l) {
    CHECK_CUDA(cudaMalloc(&w[l], w_bytes));
    CHECK_CUDA(cudaMalloc(&g[l], w_bytes));
    gpuhook_mem_tag(w[l], "params");
    gpuhook_mem_tag(g[l], "grads");
    init_weights<<<bwd_grid, block>>>(init + static_cast<size_t>(l) * static_cast<size_t>(n), w[l], n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemset(g[l], 0, w_bytes));
  }
  if (opt.fixed) {  // the weights are set: the table has done its work
    CHECK_CUDA(cudaFree(init));
    init = nullptr;
  }
  float* input = nullptr;
  CHECK_CUDA(cudaMalloc(&input, act_bytes));
  gpuhook_mem_tag(input, "data");
  std::vector<float> host_in(static_cast<size_t>(total));
  for (long long i = 0; i < total; ++i) host_in[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i % 1000);
  CHECK_CUDA(cudaMemcpy(input, host_in.data(), act_bytes, cudaMemcpyHostToDevice));

  auto forward = [&](const float* in, int l, float** out) {
    CHECK_CUDA(cudaMalloc(out, act_bytes));
    gpuhook_mem_tag(*out, "activations");
    layer_forward<<<fwd_grid, block>>>(in, w[l], *out, n, total);
    CHECK_LAUNCH();
  };
  for (int it = 0; it < opt.iterations; ++it) {
    nvtxRangePushA("train_step");
    std::vector<float*> act(kLayers, nullptr);  // act[l]: the output of layer l
    nvtxRangePushA("forward");
    for (int l = 0; l < kLayers; ++l) {
      forward(l == 0 ? input : act[l - 1], l, &act[l]);
      // Checkpointing keeps a segment's last output; the others go once the next layer read them.
      if (opt.fixed && l > 0 && (l - 1) % kSegment != kSegment - 1) {
        CHECK_CUDA(cudaFree(act[l - 1]));
        act[l - 1] = nullptr;
      }
    }
    nvtxRangePop();
    nvtxRangePushA("backward");
    for (int l = kLayers - 1; l >= 0; --l) {
      if (!act[l]) {
        // Recompute the segment from its checkpoint (or the input), up to layer l.
        const int first = (l / kSegment) * kSegment;
        const float* from = first == 0 ? input : act[first - 1];
        for (int k = first; k <= l; ++k) {
          if (act[k]) continue;
          forward(k == 0 ? input : (act[k - 1] ? act[k - 1] : from), k, &act[k]);
        }
      }
      layer_backward<<<bwd_grid, block>>>(act[l], g[l], n);
      CHECK_LAUNCH();
      CHECK_CUDA(cudaFree(act[l]));
      act[l] = nullptr;
    }
    nvtxRangePop();
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
  }

  // The same arithmetic on the CPU, layer by layer, summed the same way.
  std::vector<double> want_g(static_cast<size_t>(kLayers) * static_cast<size_t>(n), 0.0);
  std::vector<float> cur(host_in), next(static_cast<size_t>(total));
  for (int l = 0; l < kLayers; ++l) {
    for (long long i = 0; i < n; ++i) host_w[static_cast<size_t>(i)] = 0.5f + 0.01f * static_cast<float>((i + l) % 7);
    for (long long i = 0; i < total; ++i) next[static_cast<size_t>(i)] = cur[static_cast<size_t>(i)] * host_w[static_cast<size_t>(i % n)] + 1.0f;
    for (long long i = 0; i < n; ++i) {
      float s = 0;
      for (int b = 0; b < kBatch; ++b) s += next[static_cast<size_t>(b * n + i)];
      want_g[static_cast<size_t>(l) * static_cast<size_t>(n) + static_cast<size_t>(i)] = 0.5 * s * opt.iterations;
    }
    cur.swap(next);
  }
  std::vector<float> got(static_cast<size_t>(n));
  for (int l = 0; l < kLayers; ++l) {
    CHECK_CUDA(cudaMemcpy(got.data(), g[l], w_bytes, cudaMemcpyDeviceToHost));
    for (long long i = 0; i < n; i += (n / 97 > 0 ? n / 97 : 1))
      examples::expect_close("gradient", got[static_cast<size_t>(i)],
                             want_g[static_cast<size_t>(l) * static_cast<size_t>(n) + static_cast<size_t>(i)], 1e-4);
  }
  std::printf("memory_phases%s: %d layers, activations of %lld floats, %d steps, gradients checked\n",
              opt.fixed ? " --fixed" : "", kLayers, total, opt.iterations);
  for (int l = 0; l < kLayers; ++l) {
    CHECK_CUDA(cudaFree(w[l]));
    CHECK_CUDA(cudaFree(g[l]));
  }
  CHECK_CUDA(cudaFree(input));
  if (init != nullptr) CHECK_CUDA(cudaFree(init));
  std::printf("OK\n");
  return 0;
}
