// __device__ and __constant__ variables: nvcc's host code registers each with
// __cudaRegisterVar, and the program reaches it through its host shadow with
// cudaMemcpyTo/FromSymbol[Async], cudaGetSymbolAddress and cudaGetSymbolSize.
#include "check.h"
#include "common.h"

__device__ int counter = 7;
__constant__ float coeffs[4];
__constant__ float scales[4] = {0.5f, 1.0f, 1.5f, 2.0f};
__device__ double values[256];

__global__ void bump(int* c) { atomicAdd(c, 1); }
static void bump_host(dim3, dim3, int* c) { *c += 1; }
HOST_TWIN(bump, bump_host);

int not_a_symbol = 0;

int main() {
  size_t bytes = 0;
  CHECK_OK(cudaGetSymbolSize(&bytes, counter));
  EXPECT_TRUE(bytes == sizeof(int));
  CHECK_OK(cudaGetSymbolSize(&bytes, values));
  EXPECT_TRUE(bytes == sizeof(double) * 256);

  // Its initialiser lives in the device image only (the host shadow holds zeros).
  int got = -1;
  CHECK_OK(cudaMemcpyFromSymbol(&got, counter, sizeof got));
  EXPECT_TRUE(got == 7);
  float initial[4] = {};
  CHECK_OK(cudaMemcpyFromSymbol(initial, scales, sizeof initial));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(initial[i] == 0.5f * (i + 1));
  double untouched = -1;  // no initialiser: zero
  CHECK_OK(cudaMemcpyFromSymbol(&untouched, values, sizeof untouched, 100 * sizeof(double)));
  EXPECT_TRUE(untouched == 0.0);

  const float c_in[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  float c_out[4] = {};
  CHECK_OK(cudaMemcpyToSymbol(coeffs, c_in, sizeof c_in));
  CHECK_OK(cudaMemcpyFromSymbol(c_out, coeffs, sizeof c_out));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c_out[i] == c_in[i]);

  // Its address is device memory: copies, memsets and kernels reach it.
  double* values_d = nullptr;
  CHECK_OK(cudaGetSymbolAddress(reinterpret_cast<void**>(&values_d), values));
  double host[256];
  for (int i = 0; i < 256; ++i) host[i] = i * 0.25;
  CHECK_OK(cudaMemcpy(values_d, host, sizeof host, cudaMemcpyHostToDevice));
  double back[256] = {};
  CHECK_OK(cudaMemcpyFromSymbol(back, values, sizeof back));
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(back[i] == host[i]);
  int* counter_d = nullptr;
  CHECK_OK(cudaGetSymbolAddress(reinterpret_cast<void**>(&counter_d), counter));
  bump<<<1, 1>>>(counter_d);
  CHECK_OK(cudaGetLastError());
  CHECK_OK(cudaMemcpyFromSymbol(&got, counter, sizeof got));
  EXPECT_TRUE(got == 8);

  // Stream-ordered, with an offset.
  cudaStream_t s;
  CHECK_OK(cudaStreamCreate(&s));
  const double two = 2.0;
  CHECK_OK(cudaMemcpyToSymbolAsync(values, &two, sizeof two, 10 * sizeof(double), cudaMemcpyHostToDevice, s));
  double ten = 0;
  CHECK_OK(cudaMemcpyFromSymbolAsync(&ten, values, sizeof ten, 10 * sizeof(double), cudaMemcpyDeviceToHost, s));
  CHECK_OK(cudaStreamSynchronize(s));
  EXPECT_TRUE(ten == 2.0);
  CHECK_OK(cudaStreamDestroy(s));

  // Not a registered variable, and past its end.
  EXPECT_TRUE(cudaMemcpyToSymbol(not_a_symbol, &got, sizeof got) == cudaErrorInvalidSymbol);
  EXPECT_TRUE(cudaMemcpyToSymbol(counter, &got, sizeof got, 4) == cudaErrorInvalidValue);
  cudaGetLastError();
  std::printf("OK\n");
  return 0;
}
