// Test helpers: a minimal CUPTI client that keeps every record it gets, and fake kernels
// registered with the simulated runtime the way nvcc's host code registers real ones.
#pragma once

#include <cupti.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                            const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                            dim3* block, dim3* grid, int* warp_size);
void gpuhook_sim_reload_config(void);
}

namespace simtest {

inline uint64_t monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct KernelRec {
  std::string name;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint64_t queued = 0, submitted = 0, start = 0, end = 0;
  int grid = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};
struct CopyRec {
  uint8_t copy_kind = 0, src_kind = 0;
  uint32_t stream = 0, correlation = 0;
  uint64_t bytes = 0, start = 0, end = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};
struct MemsetRec {
  uint32_t stream = 0, correlation = 0, value = 0;
  uint64_t bytes = 0, start = 0, end = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};
struct ApiRec {
  uint32_t cbid = 0, correlation = 0;
  uint64_t start = 0, end = 0;
};

// Everything the CUPTI client received, copied out of the buffers.
struct Received {
  std::mutex mu;
  std::vector<KernelRec> kernels;
  std::vector<CopyRec> copies;
  std::vector<MemsetRec> memsets;
  std::vector<ApiRec> apis;
  std::vector<CUpti_ActivitySynchronization2> syncs;
  size_t misaligned = 0;
  bool refuse_buffers = false;  // the request callback returns no buffer
  size_t buffer_bytes = 64 * 1024;
  std::vector<std::string> completing_threads;  // thread names, one per completed buffer
  std::set<pthread_t> requesting_threads;       // threads that asked for a buffer
  size_t incomplete_stops = 0;                  // buffers read up to an incomplete record
};
Received& received();

// Registers the clock and buffer callbacks and enables the kinds the tests read (once per
// process, as a real client must), then clears what was received so far.
void start_tracing();
// Waits for the device, flushes CUPTI and returns what arrived.
void finish_tracing();

// Writes a cost sidecar and points the simulator at it (plus other GPUHOOK_SIM_* settings).
void configure(const std::string& costs, const std::vector<std::pair<std::string, std::string>>& env = {});

// A fake kernel: its address plays the host stub, `name` is what CUPTI reports.
const void* kernel(const char* name);
void launch(const void* k, unsigned grid, unsigned block, cudaStream_t stream);

std::vector<KernelRec> kernels_named(const std::string& name);

}  // namespace simtest
