// A program that becomes a CUPTI client of its own halfway through, as torch.profiler does
// when a profiling window opens: it registers its buffer callbacks (the last registration
// wins: the activity API is shared silently), enables a kind, flushes, and disables it when
// its window closes. Run on the simulator, under the hook.
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace {

std::mutex g_mu;
std::set<uint8_t*> g_ours;  // buffers this client allocated; others' are not ours to free
size_t g_records = 0;

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_mu);
  *size = 64 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
  g_ours.insert(*buffer);
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++g_records;
  if (g_ours.erase(buffer) != 0) std::free(buffer);
}

bool memsets(void* p, int n) {
  for (int i = 0; i < n; ++i) {
    if (cudaMemset(p, i, 4096) != cudaSuccess) return false;
  }
  return cudaDeviceSynchronize() == cudaSuccess;
}

}  // namespace

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 4096) != cudaSuccess || !memsets(p, 3)) return 1;
  // Long enough for a tracer that flushes every 100 ms to have these records.
  usleep(500 * 1000);
  // The window opens: this client takes the activity API over.
  if (cuptiActivityRegisterCallbacks(on_request, on_complete) != CUPTI_SUCCESS) return 1;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) return 1;
  if (!memsets(p, 3)) return 1;
  cuptiActivityFlushAll(0);
  // The window closes.
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  if (!memsets(p, 3)) return 1;
  cudaFree(p);
  std::printf("second client: OK\n");
  return 0;
}
