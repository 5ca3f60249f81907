// cudaGetErrorName names every code of the toolkit's cudaError enum, the ones a simulator
// returns and the ones a real GPU does (samples print them), and answers "unrecognized error
// code" for a number outside it, as cuda_runtime_api.h says.
#include <cstring>

#include "check.h"

namespace {

void expect_name(cudaError_t e, const char* name) {
  const char* got = cudaGetErrorName(e);
  if (got == nullptr || std::strcmp(got, name) != 0) {
    std::fprintf(stderr, "cudaGetErrorName(%d) = %s, expected %s\n", static_cast<int>(e), got ? got : "(null)", name);
    std::exit(1);
  }
}

}  // namespace

int main() {
  expect_name(cudaSuccess, "cudaSuccess");
  expect_name(cudaErrorInvalidValue, "cudaErrorInvalidValue");
  expect_name(cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported");
  expect_name(cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated");
  expect_name(cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure");
  expect_name(cudaErrorNotSupported, "cudaErrorNotSupported");
  expect_name(cudaErrorIllegalAddress, "cudaErrorIllegalAddress");
  expect_name(cudaErrorNoDevice, "cudaErrorNoDevice");
  expect_name(cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver");
  expect_name(cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered");
  expect_name(cudaErrorInvalidResourceConfiguration, "cudaErrorInvalidResourceConfiguration");
  expect_name(cudaErrorUnknown, "cudaErrorUnknown");
  // A code without a description in the simulator is described by its name.
  EXPECT_TRUE(std::strcmp(cudaGetErrorString(cudaErrorStreamCaptureUnsupported), "unknown error") != 0);
  EXPECT_TRUE(std::strcmp(cudaGetErrorString(static_cast<cudaError_t>(12345)), "unrecognized error code") == 0);
  expect_name(static_cast<cudaError_t>(12345), "unrecognized error code");
  // A real call's error, named.
  expect_name(cudaMalloc(nullptr, 16), "cudaErrorInvalidValue");
  std::printf("OK\n");
  return 0;
}
