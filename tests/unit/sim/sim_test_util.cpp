#include "sim_test_util.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

namespace simtest {
namespace {

uint64_t CUPTIAPI clock_cb() { return monotonic_raw_ns(); }

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (received().refuse_buffers) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(received().mu);
    received().requesting_threads.insert(pthread_self());
  }
  // Deliberately 8-byte misaligned +4: the records must still come out aligned.
  const size_t bytes = received().buffer_bytes;
  auto* raw = static_cast<uint8_t*>(std::malloc(bytes + 16));
  *buffer = raw + 4;
  *size = bytes;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Received& r = received();
  std::lock_guard<std::mutex> lock(r.mu);
  char thread_name[32] = {};
  pthread_getname_np(pthread_self(), thread_name, sizeof thread_name);
  r.completing_threads.emplace_back(thread_name);
  CUpti_Activity* rec = nullptr;
  CUptiResult status;
  while ((status = cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS) {
    if (reinterpret_cast<uintptr_t>(rec) % 8 != 0) ++r.misaligned;
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
        r.kernels.push_back({k->name, k->streamId, k->correlationId, k->queued, k->submitted,
                             k->start, k->end, k->gridX, k->graphId, k->graphNodeId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* c = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
        r.copies.push_back({c->copyKind, c->srcKind, c->streamId, c->correlationId, c->bytes,
                            c->start, c->end, c->graphId, c->graphNodeId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
        r.memsets.push_back({m->streamId, m->correlationId, m->value, m->bytes, m->start, m->end,
                             m->graphId, m->graphNodeId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        auto* a = reinterpret_cast<CUpti_ActivityAPI*>(rec);
        r.apis.push_back({a->cbid, a->correlationId, a->start, a->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        r.syncs.push_back(*reinterpret_cast<CUpti_ActivitySynchronization2*>(rec));
        break;
      default: break;
    }
  }
  if (status == CUPTI_ERROR_INVALID_KIND) ++r.incomplete_stops;
  std::free(buffer - 4);
}

}  // namespace

Received& received() {
  static Received* r = new Received();
  return *r;
}

void start_tracing() {
  static bool once = [] {
    EXPECT_EQ(cuptiActivityRegisterTimestampCallback(clock_cb), CUPTI_SUCCESS);
    EXPECT_EQ(cuptiActivityEnableLatencyTimestamps(1), CUPTI_SUCCESS);
    EXPECT_EQ(cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                      CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
      EXPECT_EQ(cuptiActivityEnable(kind), CUPTI_SUCCESS);
    }
    return true;
  }();
  (void)once;
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(1);
  Received& r = received();
  std::lock_guard<std::mutex> lock(r.mu);
  r.kernels.clear();
  r.copies.clear();
  r.memsets.clear();
  r.apis.clear();
  r.syncs.clear();
  r.completing_threads.clear();
  r.requesting_threads.clear();
  r.incomplete_stops = 0;
  r.misaligned = 0;
}

void finish_tracing() {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(received().misaligned, 0u);
}

void configure(const std::string& costs, const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string path = "/tmp/gpuhook-sim-test-" + std::to_string(getpid()) + ".simcost";
  std::ofstream(path) << costs;
  setenv("GPUHOOK_SIM_COSTS", path.c_str(), 1);
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  gpuhook_sim_reload_config();
}

const void* kernel(const char* name) {
  // Each name gets a distinct static byte whose address stands in for the host stub. Tests
  // launch from several threads: the map is theirs to share (TSan saw two threads insert).
  static std::map<std::string, char>* stubs = new std::map<std::string, char>();
  static void** handle = __cudaRegisterFatBinary(nullptr);
  static std::mutex mu;
  const std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = stubs->try_emplace(name, 0);
  const char* stub = &it->second;
  if (fresh) __cudaRegisterFunction(handle, stub, nullptr, it->first.c_str(), -1, nullptr, nullptr,
                                    nullptr, nullptr, nullptr);
  return stub;
}

void launch(const void* k, unsigned grid, unsigned block, cudaStream_t stream) {
  ASSERT_EQ(cudaLaunchKernel(k, dim3(grid), dim3(block), nullptr, 0, stream), cudaSuccess);
}

std::vector<KernelRec> kernels_named(const std::string& name) {
  std::lock_guard<std::mutex> lock(received().mu);
  std::vector<KernelRec> out;
  for (const auto& k : received().kernels) {
    if (k.name == name) out.push_back(k);
  }
  return out;
}

}  // namespace simtest
