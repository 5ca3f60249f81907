// CUDA graphs with branches, built both ways real programs build them.
// 1. By hand: two independent kernel chains (each resets its buffer, then scales it twice), a
//    memset node, a kernel that joins the chains, a memcpy node back to the host and a host
//    node that checks the copy. Instantiated once and launched --iterations times; between
//    launches cudaGraphExecKernelNodeSetParams changes one chain's factor.
// 2. Captured from two streams, the fork/join pattern of PyTorch's side streams: an event
//    recorded on the capturing stream and waited on by a second stream brings it into the
//    capture; its work becomes a parallel branch, joined back by a second event.
//   graph_dag [--iterations N] [--size ELEMENTS]
// Per launch: the hand-built graph runs 7 kernels, 1 memset, 1 memcpy; the captured one
// 5 kernels, 1 memset, 1 memcpy. Every result is checked.
#include <vector>

#include "common.h"

__global__ void set_value(float* x, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add_pair(float* z, const float* x, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] += x[i] + y[i];
}

static void set_value_host(dim3 grid, dim3 block, float* x, float v, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] = v;
  });
}
static void scale_host(dim3 grid, dim3 block, float* x, float a, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) x[i] *= a;
  });
}
static void add_pair_host(dim3 grid, dim3 block, float* z, const float* x, const float* y, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) z[i] += x[i] + y[i];
  });
}

HOST_TWIN(set_value, set_value_host);
HOST_TWIN(scale, scale_host);
HOST_TWIN(add_pair, add_pair_host);

namespace {

// What the host node sees after each launch's copy: the sum of the joined buffer.
struct HostCheck {
  const float* copied = nullptr;
  int n = 0;
  int launches = 0;
  std::vector<double> sums;
};

void CUDART_CB check_copy(void* data) {
  auto* c = static_cast<HostCheck*>(data);
  double sum = 0;
  for (int i = 0; i < c->n; ++i) sum += c->copied[i];
  c->sums.push_back(sum);
  ++c->launches;
}

cudaGraphNode_t add_kernel(cudaGraph_t g, const void* func, dim3 grid, dim3 block, void** args,
                           std::vector<cudaGraphNode_t> deps) {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(func);
  p.gridDim = grid;
  p.blockDim = block;
  p.kernelParams = args;
  cudaGraphNode_t node;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 5, 1024, "CUDA graphs with independent branches");
  if (opt.size > (1 << 24)) {
    std::fprintf(stderr, "graph_dag: at most %d elements\n", 1 << 24);
    return 2;
  }
  int n = static_cast<int>(opt.size);
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  const dim3 block(256);
  const dim3 grid((n + 255) / 256);
  float *xa, *xb, *z, *host_z;
  CHECK_CUDA(cudaMalloc(&xa, bytes));
  CHECK_CUDA(cudaMalloc(&xb, bytes));
  CHECK_CUDA(cudaMalloc(&z, bytes));
  CHECK_CUDA(cudaMallocHost(&host_z, bytes));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // 1. The hand-built graph: z = 0; xa = 1 * fa * 3; xb = 1 * 5 * 7; z += xa + xb.
  float one = 1.0f, fa = 1.0f, three = 3.0f, five = 5.0f, seven = 7.0f;
  void* set_a[] = {&xa, &one, &n};
  void* scale_a1[] = {&xa, &fa, &n};
  void* scale_a2[] = {&xa, &three, &n};
  void* set_b[] = {&xb, &one, &n};
  void* scale_b1[] = {&xb, &five, &n};
  void* scale_b2[] = {&xb, &seven, &n};
  void* join[] = {&z, &xa, &xb, &n};
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  const void* k_set = reinterpret_cast<const void*>(set_value);
  const void* k_scale = reinterpret_cast<const void*>(scale);
  cudaGraphNode_t a0 = add_kernel(graph, k_set, grid, block, set_a, {});
  cudaGraphNode_t a1 = add_kernel(graph, k_scale, grid, block, scale_a1, {a0});
  cudaGraphNode_t a2 = add_kernel(graph, k_scale, grid, block, scale_a2, {a1});
  cudaGraphNode_t b0 = add_kernel(graph, k_set, grid, block, set_b, {});
  cudaGraphNode_t b1 = add_kernel(graph, k_scale, grid, block, scale_b1, {b0});
  cudaGraphNode_t b2 = add_kernel(graph, k_scale, grid, block, scale_b2, {b1});
  cudaMemsetParams zero{};
  zero.dst = z;
  zero.value = 0;
  zero.elementSize = 4;
  zero.width = static_cast<size_t>(n);
  zero.height = 1;
  cudaGraphNode_t clear, copy, check;
  CHECK_CUDA(cudaGraphAddMemsetNode(&clear, graph, nullptr, 0, &zero));
  cudaGraphNode_t joined = add_kernel(graph, reinterpret_cast<const void*>(add_pair), grid, block, join, {a2, b2, clear});
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copy, graph, &joined, 1, host_z, z, bytes, cudaMemcpyDeviceToHost));
  HostCheck seen;
  seen.copied = host_z;
  seen.n = n;
  cudaHostNodeParams host_params{check_copy, &seen};
  CHECK_CUDA(cudaGraphAddHostNode(&check, graph, &copy, 1, &host_params));
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  examples::expect_close("hand-built graph nodes", static_cast<double>(nodes), 10);

  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  for (int i = 0; i < opt.iterations; ++i) {
    // Launch i scales chain A by i + 1; the parameters are copied at the call.
    fa = static_cast<float>(i + 1);
    cudaKernelNodeParams p{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(a1, &p));
    p.kernelParams = scale_a1;
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, a1, &p));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  examples::expect_close("host node runs", seen.launches, opt.iterations);
  for (int i = 0; i < opt.iterations; ++i) {
    const double want = static_cast<double>(n) * (3.0 * (i + 1) + 35.0);
    examples::expect_close("sum after launch", seen.sums[static_cast<size_t>(i)], want);
  }
  std::printf("graph_dag: hand-built graph, %zu nodes, %d launches, last sum %.0f\n", nodes, opt.iterations,
              seen.sums.back());

  // 2. Captured from two streams: w = 0 (side stream); xc = 1 * 2 (main); xd = 4 * 0.5 (side);
  //    w += xc + xd = 4 everywhere, copied back on the main stream.
  float *xc, *xd, *w;
  CHECK_CUDA(cudaMalloc(&xc, bytes));
  CHECK_CUDA(cudaMalloc(&xd, bytes));
  CHECK_CUDA(cudaMalloc(&w, bytes));
  cudaStream_t side;
  CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t fork, done;
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  cudaGraph_t captured;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  set_value<<<grid, block, 0, s>>>(xc, 1.0f, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaEventRecord(fork, s));
  CHECK_CUDA(cudaStreamWaitEvent(side, fork, 0));
  cudaStreamCaptureStatus status;
  CHECK_CUDA(cudaStreamIsCapturing(side, &status));
  if (status != cudaStreamCaptureStatusActive) {
    std::fprintf(stderr, "WRONG RESULT: the side stream did not join the capture\n");
    return 1;
  }
  scale<<<grid, block, 0, s>>>(xc, 2.0f, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemsetAsync(w, 0, bytes, side));
  set_value<<<grid, block, 0, side>>>(xd, 4.0f, n);
  CHECK_LAUNCH();
  scale<<<grid, block, 0, side>>>(xd, 0.5f, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaEventRecord(done, side));
  CHECK_CUDA(cudaStreamWaitEvent(s, done, 0));
  add_pair<<<grid, block, 0, s>>>(w, xc, xd, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpyAsync(host_z, w, bytes, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamEndCapture(s, &captured));
  size_t roots = 0;
  CHECK_CUDA(cudaGraphGetRootNodes(captured, nullptr, &roots));
  examples::expect_close("captured graph roots", static_cast<double>(roots), 1);
  cudaGraphExec_t captured_exec;
  CHECK_CUDA(cudaGraphInstantiate(&captured_exec, captured, 0));
  double sum = 0;
  for (int i = 0; i < opt.iterations; ++i) {
    std::memset(host_z, 0, bytes);
    CHECK_CUDA(cudaGraphLaunch(captured_exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    sum = 0;
    for (int k = 0; k < n; ++k) sum += host_z[k];
    examples::expect_close("captured sum", sum, 4.0 * n);
  }
  std::printf("graph_dag: captured fork/join graph, %d launches, sum %.0f\n", opt.iterations, sum);

  CHECK_CUDA(cudaGraphExecDestroy(captured_exec));
  CHECK_CUDA(cudaGraphDestroy(captured));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaEventDestroy(fork));
  CHECK_CUDA(cudaEventDestroy(done));
  CHECK_CUDA(cudaStreamDestroy(side));
  CHECK_CUDA(cudaStreamDestroy(s));
  for (float* p : {xa, xb, z, xc, xd, w}) CHECK_CUDA(cudaFree(p));
  CHECK_CUDA(cudaFreeHost(host_z));
  std::printf("OK\n");
  return 0;
}
