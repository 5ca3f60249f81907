// Graph memory nodes, as graphMemoryNodes uses them: an alloc node gives a fixed address, the
// nodes after it use the memory, a free node ends it; launched several times. Also an
// allocation a graph leaves to the program, freed with cudaFreeAsync after the launch.
#include <cstdint>

#include "check.h"

int main() {
  constexpr size_t kBytes = 4096;
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char* host = nullptr;
  CHECK_OK(cudaMallocHost(&host, kBytes));

  cudaGraph_t graph;
  CHECK_OK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location = {cudaMemLocationTypeDevice, 0};
  alloc.bytesize = kBytes;
  cudaGraphNode_t alloc_node, set_node, copy_node, free_node;
  CHECK_OK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  EXPECT_TRUE(alloc.dptr != nullptr);
  cudaMemsetParams set{};
  set.dst = alloc.dptr;
  set.value = 0x2a;
  set.elementSize = 1;
  set.width = kBytes;
  set.height = 1;
  CHECK_OK(cudaGraphAddMemsetNode(&set_node, graph, &alloc_node, 1, &set));
  CHECK_OK(cudaGraphAddMemcpyNode1D(&copy_node, graph, &set_node, 1, host, alloc.dptr, kBytes, cudaMemcpyDeviceToHost));
  CHECK_OK(cudaGraphAddMemFreeNode(&free_node, graph, &copy_node, 1, alloc.dptr));

  cudaGraphNodeType type;
  CHECK_OK(cudaGraphNodeGetType(alloc_node, &type));
  EXPECT_TRUE(type == cudaGraphNodeTypeMemAlloc);
  CHECK_OK(cudaGraphNodeGetType(free_node, &type));
  EXPECT_TRUE(type == cudaGraphNodeTypeMemFree);
  cudaMemAllocNodeParams got{};
  CHECK_OK(cudaGraphMemAllocNodeGetParams(alloc_node, &got));
  EXPECT_TRUE(got.dptr == alloc.dptr && got.bytesize == kBytes);
  void* freed = nullptr;
  CHECK_OK(cudaGraphMemFreeNodeGetParams(free_node, &freed));
  EXPECT_TRUE(freed == alloc.dptr);

  cudaGraphExec_t exec;
  CHECK_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) {
    for (size_t i = 0; i < kBytes; ++i) host[i] = 0;
    CHECK_OK(cudaGraphLaunch(exec, s));
    CHECK_OK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < kBytes; ++i) EXPECT_TRUE(host[i] == 0x2a);
  }
  // After the free node the memory is gone: a copy to it fails as on freed memory.
  EXPECT_TRUE(cudaMemcpy(alloc.dptr, host, kBytes, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  uint64_t used = 0;
  CHECK_OK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  EXPECT_TRUE(used >= kBytes);
  CHECK_OK(cudaDeviceGraphMemTrim(0));

  // No free node: the program frees it after the launch, and may launch again.
  cudaGraph_t keeps;
  CHECK_OK(cudaGraphCreate(&keeps, 0));
  cudaMemAllocNodeParams alloc2 = alloc;
  alloc2.dptr = nullptr;
  cudaGraphNode_t a2, s2;
  CHECK_OK(cudaGraphAddMemAllocNode(&a2, keeps, nullptr, 0, &alloc2));
  set.dst = alloc2.dptr;
  set.value = 7;
  CHECK_OK(cudaGraphAddMemsetNode(&s2, keeps, &a2, 1, &set));
  cudaGraphExec_t keeps_exec;
  CHECK_OK(cudaGraphInstantiate(&keeps_exec, keeps, 0));
  for (int launch = 0; launch < 2; ++launch) {
    CHECK_OK(cudaGraphLaunch(keeps_exec, s));
    CHECK_OK(cudaMemcpyAsync(host, alloc2.dptr, kBytes, cudaMemcpyDeviceToHost, s));
    CHECK_OK(cudaFreeAsync(alloc2.dptr, s));
    CHECK_OK(cudaStreamSynchronize(s));
    EXPECT_TRUE(host[kBytes - 1] == 7);
  }

  CHECK_OK(cudaGraphExecDestroy(keeps_exec));
  CHECK_OK(cudaGraphDestroy(keeps));
  CHECK_OK(cudaGraphExecDestroy(exec));
  CHECK_OK(cudaGraphDestroy(graph));
  CHECK_OK(cudaFreeHost(host));
  CHECK_OK(cudaStreamDestroy(s));
  std::printf("OK\n");
  return 0;
}
