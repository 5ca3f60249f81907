// cudaIpc* within one process: a memory handle opens to memory holding the exporter's bytes,
// an event handle to an event that orders work as the original does; bad handles and events
// without cudaEventInterprocess are refused. Across processes: ipc_processes.cu.
#include <cstring>

#include "check.h"

int main() {
  int* owned = nullptr;
  CHECK_OK(cudaMalloc(&owned, 64 * sizeof(int)));
  int host[64];
  for (int i = 0; i < 64; ++i) host[i] = i * 3;
  CHECK_OK(cudaMemcpy(owned, host, sizeof host, cudaMemcpyHostToDevice));

  cudaIpcMemHandle_t mem;
  CHECK_OK(cudaIpcGetMemHandle(&mem, owned));
  int* opened = nullptr;
  CHECK_OK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&opened), mem, cudaIpcMemLazyEnablePeerAccess));
  int back[64] = {};
  CHECK_OK(cudaMemcpy(back, opened, sizeof back, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(back[i] == host[i]);
  CHECK_OK(cudaIpcCloseMemHandle(opened));
  EXPECT_TRUE(cudaIpcCloseMemHandle(opened) == cudaErrorInvalidValue);  // not open any more
  int pageable = 0;
  EXPECT_TRUE(cudaIpcGetMemHandle(&mem, &pageable) == cudaErrorInvalidValue);
  cudaIpcMemHandle_t garbage;
  std::memset(&garbage, 0x5a, sizeof garbage);
  void* nothing = nullptr;
  EXPECT_TRUE(cudaIpcOpenMemHandle(&nothing, garbage, cudaIpcMemLazyEnablePeerAccess) == cudaErrorInvalidValue);

  cudaEvent_t timed;
  CHECK_OK(cudaEventCreate(&timed));
  cudaIpcEventHandle_t ev;
  EXPECT_TRUE(cudaIpcGetEventHandle(&ev, timed) == cudaErrorInvalidResourceHandle);
  cudaEvent_t shared;
  CHECK_OK(cudaEventCreateWithFlags(&shared, cudaEventInterprocess | cudaEventDisableTiming));
  CHECK_OK(cudaIpcGetEventHandle(&ev, shared));
  cudaEvent_t imported = nullptr;
  CHECK_OK(cudaIpcOpenEventHandle(&imported, ev));
  cudaStream_t a, b;
  CHECK_OK(cudaStreamCreate(&a));
  CHECK_OK(cudaStreamCreate(&b));
  CHECK_OK(cudaMemsetAsync(owned, 0, 64 * sizeof(int), a));
  CHECK_OK(cudaEventRecord(shared, a));
  CHECK_OK(cudaStreamWaitEvent(b, imported, 0));
  CHECK_OK(cudaMemcpyAsync(back, owned, sizeof back, cudaMemcpyDeviceToHost, b));
  CHECK_OK(cudaEventSynchronize(imported));
  CHECK_OK(cudaStreamSynchronize(b));
  EXPECT_TRUE(back[63] == 0);

  CHECK_OK(cudaStreamDestroy(a));
  CHECK_OK(cudaStreamDestroy(b));
  CHECK_OK(cudaEventDestroy(timed));
  CHECK_OK(cudaEventDestroy(shared));
  CHECK_OK(cudaFree(owned));
  std::printf("OK\n");
  return 0;
}
