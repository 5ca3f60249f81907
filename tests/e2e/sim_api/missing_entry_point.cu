// An entry point the simulator does not define: the program still loads (no dynamic loader
// error), and the call fails with cudaErrorNotSupported after one stderr line naming it, once
// however often it is called.
#include <unistd.h>

#include <cstring>
#include <string>

#include "check.h"

int main() {
  // Catch our own stderr in a file for the duration of the calls.
  std::fflush(stderr);
  const int saved = dup(2);
  FILE* caught = std::tmpfile();
  dup2(fileno(caught), 2);
  cudaArray_t array = nullptr;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  const cudaError_t first = cudaMallocArray(&array, &desc, 16, 16);
  const cudaError_t second = cudaMallocArray(&array, &desc, 16, 16);
  cudaGraph_t graph = nullptr;
  CHECK_OK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t node = nullptr;
  const cudaError_t child = cudaGraphAddChildGraphNode(&node, graph, nullptr, 0, graph);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);

  std::string text;
  std::rewind(caught);
  char buf[512];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, caught)) > 0) text.append(buf, n);
  std::fputs(text.c_str(), stderr);
  EXPECT_TRUE(first == cudaErrorNotSupported && second == cudaErrorNotSupported && child == cudaErrorNotSupported);
  const std::string line = "gpuhook-sim: cudaMallocArray is not simulated";
  const size_t at = text.find(line);
  EXPECT_TRUE(at != std::string::npos);
  EXPECT_TRUE(text.find(line, at + 1) == std::string::npos);  // once
  EXPECT_TRUE(text.find("gpuhook-sim: cudaGraphAddChildGraphNode is not simulated") != std::string::npos);
  CHECK_OK(cudaGraphDestroy(graph));
  std::printf("OK\n");
  return 0;
}
