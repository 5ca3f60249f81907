// Graph memory as CUPTI reports it, through the CUPTI activity API in this process: each run
// of an alloc or free node writes a MEMORY2 allocation or release record with the launch's
// correlation id and stream (isAsync, a local pool), at the node's place (the allocation before
// the work that uses it, the release after); a cudaMallocAsync / cudaFreeAsync pair captured from
// a stream becomes an alloc and a free node, writing nothing at capture and a pair per launch;
// and, as graphMemoryNodes does, a second graph frees the first graph's allocation after the
// program freed it once already.
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "check.h"

namespace {

struct MemoryRecord {
  bool allocation;
  uint64_t address;
  uint64_t bytes;
  uint64_t timestamp;
  uint32_t correlation_id;
  uint32_t stream_id;
  uint32_t is_async;
  CUpti_ActivityMemoryPoolType pool_type;
};
std::vector<MemoryRecord> g_memory;
std::set<uint32_t> g_launches;  // correlation ids of cudaGraphLaunch calls
std::vector<uint64_t> g_memcpy_starts;

void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(r);
      g_memory.push_back({m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, m->address,
                          m->bytes, m->timestamp, m->correlationId, m->streamId, m->isAsync,
                          m->memoryPoolConfig.memoryPoolType});
    } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      if (a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) g_launches.insert(a->correlationId);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      g_memcpy_starts.push_back(reinterpret_cast<const CUpti_ActivityMemcpy6*>(r)->start);
    }
  }
  std::free(buffer);
}

void flush() {
  if (cuptiActivityFlushAll(1) != CUPTI_SUCCESS) std::exit(1);
}

// The records of `address` of one kind.
std::vector<MemoryRecord> records_of(const void* address, bool allocation) {
  std::vector<MemoryRecord> out;
  for (const MemoryRecord& m : g_memory) {
    if (m.address == reinterpret_cast<uint64_t>(address) && m.allocation == allocation) out.push_back(m);
  }
  return out;
}

// `launches` alloc/release pairs of `address`, each pair with one launch's correlation id and
// stream, the release after the allocation.
void expect_pairs(const void* address, size_t bytes, size_t launches, uint32_t stream_id) {
  const auto allocs = records_of(address, true);
  const auto frees = records_of(address, false);
  EXPECT_TRUE(allocs.size() == launches && frees.size() == launches);
  std::set<uint32_t> seen;
  for (size_t i = 0; i < launches; ++i) {
    const MemoryRecord& a = allocs[i];
    const MemoryRecord& f = frees[i];
    EXPECT_TRUE(a.bytes == bytes && f.bytes == bytes);
    EXPECT_TRUE(g_launches.count(a.correlation_id) == 1 && f.correlation_id == a.correlation_id);
    EXPECT_TRUE(a.stream_id == stream_id && f.stream_id == stream_id);
    EXPECT_TRUE(a.is_async == 1 && a.pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
    EXPECT_TRUE(a.timestamp != 0 && a.timestamp <= f.timestamp);
    seen.insert(a.correlation_id);
  }
  EXPECT_TRUE(seen.size() == launches);  // one pair per launch
}

uint32_t stream_id_of(cudaStream_t s) {
  uint32_t id = 0;
  if (cuptiGetStreamIdEx(nullptr, s, 0, &id) != CUPTI_SUCCESS) std::exit(1);
  return id;
}

}  // namespace

int main() {
  if (cuptiActivityRegisterCallbacks(request, complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "CUPTI refused\n");
    return 1;
  }
  constexpr size_t kBytes = 1 << 16;
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char* host = nullptr;
  CHECK_OK(cudaMallocHost(&host, kBytes));

  // Built by hand: alloc -> memset -> copy out -> free, launched three times.
  cudaGraph_t graph;
  CHECK_OK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location = {cudaMemLocationTypeDevice, 0};
  alloc.bytesize = kBytes;
  cudaGraphNode_t alloc_node, set_node, copy_node, free_node;
  CHECK_OK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  cudaMemsetParams set{};
  set.dst = alloc.dptr;
  set.value = 0x3c;
  set.elementSize = 1;
  set.width = kBytes;
  set.height = 1;
  CHECK_OK(cudaGraphAddMemsetNode(&set_node, graph, &alloc_node, 1, &set));
  CHECK_OK(cudaGraphAddMemcpyNode1D(&copy_node, graph, &set_node, 1, host, alloc.dptr, kBytes, cudaMemcpyDeviceToHost));
  CHECK_OK(cudaGraphAddMemFreeNode(&free_node, graph, &copy_node, 1, alloc.dptr));
  cudaGraphExec_t exec;
  CHECK_OK(cudaGraphInstantiate(&exec, graph, 0));
  flush();
  EXPECT_TRUE(records_of(alloc.dptr, true).empty());  // adding a node allocates nothing yet
  for (int launch = 0; launch < 3; ++launch) {
    std::memset(host, 0, kBytes);
    CHECK_OK(cudaGraphLaunch(exec, s));
    CHECK_OK(cudaStreamSynchronize(s));
    EXPECT_TRUE(host[0] == 0x3c && host[kBytes - 1] == 0x3c);
  }
  flush();
  expect_pairs(alloc.dptr, kBytes, 3, stream_id_of(s));
  // The copy out of the allocation lies between its allocation and its release.
  for (const MemoryRecord& a : records_of(alloc.dptr, true)) {
    const MemoryRecord* f = nullptr;
    for (const MemoryRecord& r : g_memory) {
      if (!r.allocation && r.correlation_id == a.correlation_id && r.address == a.address) f = &r;
    }
    EXPECT_TRUE(f != nullptr);
    EXPECT_TRUE(std::any_of(g_memcpy_starts.begin(), g_memcpy_starts.end(),
                            [&](uint64_t t) { return t >= a.timestamp && t <= f->timestamp; }));
  }

  // Captured: cudaMallocAsync / cudaFreeAsync become an alloc and a free node.
  cudaStream_t cap;
  CHECK_OK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  CHECK_OK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  CHECK_OK(cudaMallocAsync(&p, kBytes, cap));
  CHECK_OK(cudaMemsetAsync(p, 0x51, kBytes, cap));
  CHECK_OK(cudaMemcpyAsync(host, p, kBytes, cudaMemcpyDeviceToHost, cap));
  CHECK_OK(cudaFreeAsync(p, cap));
  cudaGraph_t captured;
  CHECK_OK(cudaStreamEndCapture(cap, &captured));
  size_t count = 0;
  CHECK_OK(cudaGraphGetNodes(captured, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK_OK(cudaGraphGetNodes(captured, nodes.data(), &count));
  int allocs = 0, frees = 0;
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    CHECK_OK(cudaGraphNodeGetType(n, &type));
    allocs += type == cudaGraphNodeTypeMemAlloc;
    frees += type == cudaGraphNodeTypeMemFree;
  }
  EXPECT_TRUE(count == 4 && allocs == 1 && frees == 1);
  flush();
  EXPECT_TRUE(records_of(p, true).empty());  // nothing allocated at capture
  cudaGraphExec_t captured_exec;
  CHECK_OK(cudaGraphInstantiate(&captured_exec, captured, 0));
  for (int launch = 0; launch < 2; ++launch) {
    std::memset(host, 0, kBytes);
    CHECK_OK(cudaGraphLaunch(captured_exec, s));
    CHECK_OK(cudaStreamSynchronize(s));
    EXPECT_TRUE(host[0] == 0x51 && host[kBytes - 1] == 0x51);
  }
  flush();
  expect_pairs(p, kBytes, 2, stream_id_of(s));

  // graphMemoryNodes' last case: a graph keeps its allocation, the program frees it after one
  // launch, and after the next launch a second graph frees it.
  cudaGraph_t keeps;
  CHECK_OK(cudaGraphCreate(&keeps, 0));
  cudaMemAllocNodeParams kept = alloc;
  kept.dptr = nullptr;
  cudaGraphNode_t kept_node;
  CHECK_OK(cudaGraphAddMemAllocNode(&kept_node, keeps, nullptr, 0, &kept));
  cudaGraphExec_t keeps_exec;
  CHECK_OK(cudaGraphInstantiate(&keeps_exec, keeps, 0));
  CHECK_OK(cudaGraphLaunch(keeps_exec, s));
  CHECK_OK(cudaFreeAsync(kept.dptr, s));
  CHECK_OK(cudaStreamSynchronize(s));
  cudaGraph_t frees_it;
  CHECK_OK(cudaGraphCreate(&frees_it, 0));
  cudaGraphNode_t other_free;
  CHECK_OK(cudaGraphAddMemFreeNode(&other_free, frees_it, nullptr, 0, kept.dptr));
  cudaGraphExec_t frees_exec;
  CHECK_OK(cudaGraphInstantiate(&frees_exec, frees_it, 0));
  CHECK_OK(cudaGraphLaunch(keeps_exec, s));
  CHECK_OK(cudaGraphLaunch(frees_exec, s));
  CHECK_OK(cudaStreamSynchronize(s));
  // After the free graph the memory is gone: a copy to it fails as on freed memory.
  EXPECT_TRUE(cudaMemcpy(kept.dptr, host, kBytes, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  flush();
  EXPECT_TRUE(records_of(kept.dptr, true).size() == 2 && records_of(kept.dptr, false).size() == 2);

  CHECK_OK(cudaGraphExecDestroy(exec));
  CHECK_OK(cudaGraphExecDestroy(captured_exec));
  CHECK_OK(cudaGraphExecDestroy(keeps_exec));
  CHECK_OK(cudaGraphExecDestroy(frees_exec));
  CHECK_OK(cudaGraphDestroy(graph));
  CHECK_OK(cudaGraphDestroy(captured));
  CHECK_OK(cudaGraphDestroy(keeps));
  CHECK_OK(cudaGraphDestroy(frees_it));
  CHECK_OK(cudaStreamDestroy(cap));
  CHECK_OK(cudaStreamDestroy(s));
  CHECK_OK(cudaFreeHost(host));
  std::printf("OK\n");
  return 0;
}
