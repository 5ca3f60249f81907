// Pattern 7: NVTX ranges name what the GPU work belongs to. Each train_step iteration runs
// three "layers" inside nvtxRangePush/Pop: qkv_proj, attn_softmax, ffn_gelu. A profiler that
// takes NVTX shows the kernels under those names. (No fixed twin: this one shows annotation.)
// The program checks the last step's output against a CPU reference, and that every softmax
// row sums to 1.
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "common.h"

// qkv_proj: out = w * in + bias, element-wise (a stand-in for the projection's matmul).
__global__ void qkv_proj(const float* in, float* out, int n, float w, float bias) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w * in[i] + bias;
}

// attn_softmax: one thread per row of `cols` values.
__global__ void attn_softmax(float* x, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float* v = x + static_cast<size_t>(row) * cols;
  float m = v[0];
  for (int c = 1; c < cols; ++c) m = fmaxf(m, v[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) {
    v[c] = expf(v[c] - m);
    sum += v[c];
  }
  for (int c = 0; c < cols; ++c) v[c] /= sum;
}

// ffn_gelu: the tanh approximation of GELU.
__host__ __device__ inline float gelu(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}
__global__ void ffn_gelu(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = gelu(in[i]);
}

static void qkv_proj_host(dim3 grid, dim3 block, const float* in, float* out, int n, float w,
                          float bias) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) out[i] = w * in[i] + bias;
  });
}
static void softmax_row(float* v, int cols) {
  float m = v[0];
  for (int c = 1; c < cols; ++c) m = std::fmax(m, v[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) {
    v[c] = std::exp(v[c] - m);
    sum += v[c];
  }
  for (int c = 0; c < cols; ++c) v[c] /= sum;
}
static void attn_softmax_host(dim3 grid, dim3 block, float* x, int rows, int cols) {
  examples::for_each_thread(grid, block, [&](unsigned long long row, unsigned long long) {
    if (row < static_cast<unsigned long long>(rows)) softmax_row(x + row * cols, cols);
  });
}
static void ffn_gelu_host(dim3 grid, dim3 block, const float* in, float* out, int n) {
  examples::for_each_thread(grid, block, [&](unsigned long long i, unsigned long long) {
    if (i < static_cast<unsigned long long>(n)) out[i] = gelu(in[i]);
  });
}
HOST_TWIN(qkv_proj, qkv_proj_host);
HOST_TWIN(attn_softmax, attn_softmax_host);
HOST_TWIN(ffn_gelu, ffn_gelu_host);

int main(int argc, char** argv) {
  const auto opt = examples::parse_options(argc, argv, 5, 1 << 16, "NVTX-annotated layers");
  if (opt.fixed) {
    std::fprintf(stderr, "nvtx_layers has no fixed twin: it shows annotation, not a pitfall\n");
    return 2;
  }
  constexpr int kCols = 64;
  const int rows = static_cast<int>((opt.size + kCols - 1) / kCols);
  const int n = rows * kCols;
  std::vector<float> input(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) input[static_cast<size_t>(i)] = static_cast<float>(i % 13) * 0.25f - 1.0f;

  float *in = nullptr, *act = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, input.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&act, input.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, input.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(in, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256;
  const int grid = (n + block - 1) / block;
  const float w = 1.5f;
  for (int step = 0; step < opt.iterations; ++step) {
    nvtxRangePushA("train_step");
    const float bias = 0.01f * static_cast<float>(step);
    nvtxRangePushA("qkv_proj");
    qkv_proj<<<grid, block>>>(in, act, n, w, bias);
    CHECK_LAUNCH();
    nvtxRangePop();
    nvtxRangePushA("attn_softmax");
    attn_softmax<<<(rows + block - 1) / block, block>>>(act, rows, kCols);
    CHECK_LAUNCH();
    nvtxRangePop();
    nvtxRangePushA("ffn_gelu");
    ffn_gelu<<<grid, block>>>(act, out, n);
    CHECK_LAUNCH();
    nvtxRangePop();
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
  }

  std::vector<float> soft(static_cast<size_t>(n)), result(static_cast<size_t>(n));
  CHECK_CUDA(cudaMemcpy(soft.data(), act, soft.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(result.data(), out, result.size() * sizeof(float), cudaMemcpyDeviceToHost));
  // The reference, on the CPU, for the last step.
  const float bias = 0.01f * static_cast<float>(opt.iterations - 1);
  std::vector<float> ref(input.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = w * input[i] + bias;
  double checksum = 0;
  for (int r = 0; r < rows; ++r) {
    float* v = ref.data() + static_cast<size_t>(r) * kCols;
    softmax_row(v, kCols);
    double row_sum = 0;
    for (int c = 0; c < kCols; ++c) row_sum += soft[static_cast<size_t>(r) * kCols + c];
    examples::expect_close("softmax row sum", row_sum, 1.0, 1e-4);
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    examples::expect_close("ffn_gelu output", result[i], gelu(ref[i]), 1e-4);
    checksum += result[i];
  }
  std::printf("nvtx_layers: %d train_step iterations, %d rows x %d, checksum %.6f\n",
              opt.iterations, rows, kCols, checksum);
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(act));
  CHECK_CUDA(cudaFree(out));
  std::printf("OK\n");
  return 0;
}
