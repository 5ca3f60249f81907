// Pattern 8: a training step of many small kernels, each launched on its own, vs the same step
// captured once into a CUDA graph and replayed.
//   graphs            every step launches its 3 x layers + 1 kernels one by one
//   graphs --fixed    the step is captured once from the stream (cudaStreamBeginCapture), and
//                     each step is then one cudaGraphLaunch: the nodes run back to back
// The model is kept exact in floats: layer l adds its weights w_l to the activations and the
// loss is sum(x_L), so every gradient is 1 and SGD moves every weight by -lr per step. The
// program checks w_l[i] == l - steps * lr, and the last forward pass's output
// x_L[i] == x_0[i] + sum_l (l - (steps - 1) * lr).
//   graphs [--iterations STEPS] [--size ELEMENTS_PER_LAYER] [--fixed]
#include <algorithm>
#include <vector>

#include "common.h"

constexpr int kLayers = 8;
constexpr int kThreads = 256;
constexpr float kLearningRate = 0.125f;

__global__ void layer_forward(const float* x, const float* w, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + w[i];
}

__global__ void loss_grad(float* g, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] = 1.0f;  // d sum(x) / dx
}

__global__ void layer_backward(const float* g_out, float* g_in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g_in[i] = g_out[i];  // d(x + w)/dx = 1
}

__global__ void layer_update(float* w, const float* g_out, float lr, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= lr * g_out[i];  // d(x + w)/dw = 1
}

static void layer_forward_host(dim3 grid, dim3 block, const float* x, const float* w, float* y, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) y[i] = x[i] + w[i];
  });
}
static void loss_grad_host(dim3 grid, dim3 block, float* g, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) g[i] = 1.0f;
  });
}
static void layer_backward_host(dim3 grid, dim3 block, const float* g_out, float* g_in, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) g_in[i] = g_out[i];
  });
}
static void layer_update_host(dim3 grid, dim3 block, float* w, const float* g_out, float lr, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) w[i] -= lr * g_out[i];
  });
}
HOST_TWIN(layer_forward, layer_forward_host);
HOST_TWIN(loss_grad, loss_grad_host);
HOST_TWIN(layer_backward, layer_backward_host);
HOST_TWIN(layer_update, layer_update_host);

struct Net {
  float* x[kLayers + 1];  // activations
  float* w[kLayers];      // weights
  float* g[kLayers + 1];  // gradients of the loss by the activations
  int n;
};

// One training step: forward through every layer, the loss gradient, then backward and the
// weight update layer by layer. 3 x kLayers + 1 small kernels.
static int launch_step(const Net& net, cudaStream_t s) {
  const int blocks = (net.n + kThreads - 1) / kThreads;
  int launches = 0;
  for (int l = 0; l < kLayers; ++l, ++launches) {
    layer_forward<<<blocks, kThreads, 0, s>>>(net.x[l], net.w[l], net.x[l + 1], net.n);
    CHECK_LAUNCH();
  }
  loss_grad<<<blocks, kThreads, 0, s>>>(net.g[kLayers], net.n);
  CHECK_LAUNCH();
  ++launches;
  for (int l = kLayers - 1; l >= 0; --l, launches += 2) {
    layer_backward<<<blocks, kThreads, 0, s>>>(net.g[l + 1], net.g[l], net.n);
    CHECK_LAUNCH();
    layer_update<<<blocks, kThreads, 0, s>>>(net.w[l], net.g[l + 1], kLearningRate, net.n);
    CHECK_LAUNCH();
  }
  return launches;
}

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 20, 4096,
                                           "a training step of small kernels, launched one by one vs replayed as a CUDA graph");
  if (opt.size > (1ll << 26)) {
    std::fprintf(stderr, "graphs: --size is at most %lld elements per layer\n", 1ll << 26);
    return 2;
  }
  Net net;
  net.n = static_cast<int>(opt.size);
  const size_t bytes = static_cast<size_t>(net.n) * sizeof(float);
  std::vector<float> host(static_cast<size_t>(net.n));
  for (int l = 0; l <= kLayers; ++l) {
    CHECK_CUDA(cudaMalloc(&net.x[l], bytes));
    CHECK_CUDA(cudaMalloc(&net.g[l], bytes));
  }
  for (int i = 0; i < net.n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 1024);
  CHECK_CUDA(cudaMemcpy(net.x[0], host.data(), bytes, cudaMemcpyHostToDevice));
  for (int l = 0; l < kLayers; ++l) {
    CHECK_CUDA(cudaMalloc(&net.w[l], bytes));
    std::fill(host.begin(), host.end(), static_cast<float>(l));
    CHECK_CUDA(cudaMemcpy(net.w[l], host.data(), bytes, cudaMemcpyHostToDevice));
  }
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  long long launches = 0;
  int per_step = 0;
  if (opt.fixed) {
    // Captured once: the launches are recorded into the graph, not run.
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    per_step = launch_step(net, s);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int it = 0; it < opt.iterations; ++it, ++launches) CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
  } else {
    for (int it = 0; it < opt.iterations; ++it) {
      per_step = launch_step(net, s);
      launches += per_step;
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
  }

  const double steps = opt.iterations;
  for (int l = 0; l < kLayers; ++l) {
    CHECK_CUDA(cudaMemcpy(host.data(), net.w[l], bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < net.n; ++i) examples::expect_close("w_l[i]", host[static_cast<size_t>(i)], l - steps * kLearningRate);
  }
  // The last forward pass used the weights after steps - 1 updates.
  double weight_sum = 0;
  for (int l = 0; l < kLayers; ++l) weight_sum += l - (steps - 1) * kLearningRate;
  CHECK_CUDA(cudaMemcpy(host.data(), net.x[kLayers], bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < net.n; ++i) examples::expect_close("x_L[i]", host[static_cast<size_t>(i)], i % 1024 + weight_sum);

  std::printf("graphs%s: %d layers, %d kernels per step, %d steps, %lld %s\n", opt.fixed ? " --fixed" : "", kLayers,
              per_step, opt.iterations, launches, opt.fixed ? "graph launches" : "kernel launches");
  CHECK_CUDA(cudaStreamDestroy(s));
  for (int l = 0; l <= kLayers; ++l) {
    CHECK_CUDA(cudaFree(net.x[l]));
    CHECK_CUDA(cudaFree(net.g[l]));
  }
  for (int l = 0; l < kLayers; ++l) CHECK_CUDA(cudaFree(net.w[l]));
  std::printf("OK\n");
  return 0;
}
