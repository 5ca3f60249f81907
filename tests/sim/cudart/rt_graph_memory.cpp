// Graph memory nodes (cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode, and cudaMallocAsync /
// cudaFreeAsync captured from a stream, which CUDA turns into the same nodes), as
// graphMemoryNodes uses them. "The address is fixed for the lifetime of the graph" (CUDA
// Programming Guide, "Graph Memory Nodes"): the backing is made when the alloc node is added and
// kept for the process. The allocation is valid between the alloc node and a free node (or a
// cudaFree / cudaFreeAsync after the launch): the alloc node enters it in the allocation table
// when the graph reaches it, the free node takes it out, so a copy to it outside that span fails
// as on freed memory. A free node may name any graph allocation, also one freed at the moment
// (graphMemoryNodes frees a graph's allocation in a second graph).
//
// Records: each run of an alloc or free node writes a MEMORY2 allocation or release record when
// the graph reaches the node; a captured cudaMallocAsync writes none at capture, where nothing is
// allocated. cupti_activity.h says nothing of graph memory nodes; the closest documented
// behaviour is taken: correlationId is "identical to the correlation ID in the driver and
// runtime API activity record that launched the memory operation", so the cudaGraphLaunch's (as
// for the graph's kernels); the nodes are stream-ordered allocation from a pool ("isAsync is set
// if memory operation happens through async memory APIs"), so isAsync is 1, streamId the launch
// stream, and memoryPoolConfig a LOCAL pool standing for the device's graph memory (address: the
// pool's stand-in handle; size: graph memory reserved on the device; utilizedSize: graph
// allocations live). The nodes take no time on the timeline: they move no bytes, and CUPTI writes
// no kernel, memcpy or memset record for them.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>

#include "../sim_bridge.h"
#include "allocations.h"
#include "engine.h"
#include "graph.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

struct GraphAllocation {
  void* dptr = nullptr;
  size_t bytes = 0;
  int device = 0;
};

std::mutex g_mu;
std::map<const GraphNode*, GraphAllocation>& alloc_nodes() {
  static auto* m = new std::map<const GraphNode*, GraphAllocation>();
  return *m;
}
std::map<const GraphNode*, void*>& free_nodes() {
  static auto* m = new std::map<const GraphNode*, void*>();
  return *m;
}
// Every graph allocation by address: a free node may name one that is freed at the moment.
std::map<const void*, GraphAllocation>& allocations_made() {
  static auto* m = new std::map<const void*, GraphAllocation>();
  return *m;
}
uint64_t g_used_bytes[16] = {};  // per device: graph allocations made (never given back)
uint64_t g_high_bytes[16] = {};
PoolView g_graph_pool[16];       // the device's graph memory, as MEMORY2 records describe it

// The launch a memory node runs for (graph_memory_work); none while a launch enters an
// allocation in the table ahead of its node, which writes no record.
struct LaunchContext {
  bool active = false;
  uint32_t correlation_id = 0;
  uint32_t stream_id = 0;
};
thread_local LaunchContext t_launch;

void emit_node_record(bool allocation, void* dptr, size_t bytes, int device) {
  if (!t_launch.active) return;
  PoolView view;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    uint64_t live = 0;
    for (const auto& [address, a] : allocations_made()) {
      void* base = nullptr;
      size_t b = 0;
      int d = 0;
      bool pooled = false;
      if (a.device == device && find_allocation(address, &base, &b, &d, &pooled) && base == address) live += a.bytes;
    }
    g_graph_pool[device].address = reinterpret_cast<uint64_t>(&g_graph_pool[device]);
    g_graph_pool[device].size = g_used_bytes[device];
    g_graph_pool[device].utilized = live;
    view = g_graph_pool[device];
  }
  // At the node's place on the timeline (the worker reaches it a little later).
  emit_memory_record(allocation, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, dptr, bytes, t_launch.correlation_id, device,
                     t_launch.stream_id, &view, host_work_start_ns());
}

std::unique_ptr<Op> memory_node_op(std::function<void()> work) {
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kHost;
  op->bookkeeping = true;
  op->host_work = std::move(work);
  return op;
}

std::function<void()> alloc_work(void* backing, size_t bytes, int device) {
  return [backing, bytes, device] {
    track(backing, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
    emit_node_record(true, backing, bytes, device);
  };
}

std::function<void()> free_work(void* dptr) {
  return [dptr] {
    Released r;
    if (release(dptr, 1u << CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &r)) emit_node_record(false, dptr, r.bytes, r.device);
  };
}

// A new graph allocation's backing, counted on its device; nullptr when out of memory.
void* make_backing(size_t bytes, int device) {
  void* backing = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (backing == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  allocations_made()[backing] = {backing, bytes, device};
  g_used_bytes[device] += bytes;
  g_high_bytes[device] = std::max(g_high_bytes[device], g_used_bytes[device]);
  return backing;
}

void forget_backing(void* backing) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = allocations_made().find(backing);
  if (it == allocations_made().end()) return;
  g_used_bytes[it->second.device] -= it->second.bytes;
  allocations_made().erase(it);
  std::free(backing);
}

// What a free node may name: a graph allocation (live or not), or device memory in the table.
bool freeable(void* dptr) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (allocations_made().count(dptr) != 0) return true;
  }
  bool in_bounds = false;
  return dptr != nullptr && classify(dptr, 1, &in_bounds) == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
}

cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n, cudaGraphNodeType type,
                std::function<void()> work, GraphNode** made) {
  if (out == nullptr || graph == nullptr || (n != 0 && deps == nullptr)) return cudaErrorInvalidValue;
  Graph& g = *reinterpret_cast<Graph*>(graph);
  std::vector<GraphNode*> list;
  for (size_t i = 0; i < n; ++i) {
    auto* d = reinterpret_cast<GraphNode*>(deps[i]);
    const bool held = std::any_of(g.nodes.begin(), g.nodes.end(), [d](const auto& p) { return p.get() == d; });
    if (!held || std::find(list.begin(), list.end(), d) != list.end()) return cudaErrorInvalidValue;
    list.push_back(d);
  }
  *made = add_node(g, type, memory_node_op(std::move(work)), std::move(list));
  *out = reinterpret_cast<cudaGraphNode_t>(*made);
  return cudaSuccess;
}

}  // namespace

namespace gpuhook::sim {

std::function<void()> graph_memory_work(std::function<void()> node_work, uint32_t correlation_id, uint32_t stream_id) {
  return [node_work = std::move(node_work), correlation_id, stream_id] {
    t_launch = {true, correlation_id, stream_id};
    node_work();
    t_launch = {};
  };
}

cudaError_t capture_malloc(Stream& s, size_t bytes, void** ptr) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  // "Allocates memory ... from the memory pool current to the stream's device".
  const int device = s.device;
  void* backing = make_backing(bytes == 0 ? 1 : bytes, device);
  if (backing == nullptr) return cudaErrorMemoryAllocation;
  GraphNode* node = capture_node(s, cudaGraphNodeTypeMemAlloc, memory_node_op(alloc_work(backing, bytes, device)));
  if (node == nullptr) {
    forget_backing(backing);
    return cudaErrorStreamCaptureInvalidated;
  }
  // The captured work after it uses the address (its copies are checked as they are captured).
  track(backing, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
  std::lock_guard<std::mutex> lock(g_mu);
  alloc_nodes()[node] = {backing, bytes, device};
  *ptr = backing;
  return cudaSuccess;
}

cudaError_t capture_free(Stream& s, void* ptr) {
  if (!freeable(ptr)) return cudaErrorInvalidValue;
  GraphNode* node = capture_node(s, cudaGraphNodeTypeMemFree, memory_node_op(free_work(ptr)));
  if (node == nullptr) return cudaErrorStreamCaptureInvalidated;
  std::lock_guard<std::mutex> lock(g_mu);
  free_nodes()[node] = ptr;
  return cudaSuccess;
}

}  // namespace gpuhook::sim

extern "C" {

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                     size_t num_deps, cudaMemAllocNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemAllocNode_v11040, "cudaGraphAddMemAllocNode");
  if (params == nullptr || params->bytesize == 0) return api.ret(cudaErrorInvalidValue);
  // "location where the allocation should reside"; "handleTypes must be cudaMemHandleTypeNone".
  const cudaMemLocation& where = params->poolProps.location;
  if (where.type != cudaMemLocationTypeDevice || !Engine::instance().valid_device(where.id)) {
    return api.ret(cudaErrorInvalidValue);
  }
  if (params->poolProps.handleTypes != cudaMemHandleTypeNone) return api.ret(cudaErrorInvalidValue);
  const size_t bytes = params->bytesize;
  const int device = where.id;
  void* backing = make_backing(bytes, device);
  if (backing == nullptr) return api.ret(cudaErrorMemoryAllocation);
  GraphNode* made = nullptr;
  const cudaError_t err = add(node, graph, deps, num_deps, cudaGraphNodeTypeMemAlloc, alloc_work(backing, bytes, device),
                              &made);
  if (err != cudaSuccess) {
    forget_backing(backing);
    return api.ret(err);
  }
  // Valid from now too, so the nodes that use it can be added (their copies are checked then).
  track(backing, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
  std::lock_guard<std::mutex> lock(g_mu);
  alloc_nodes()[made] = {backing, bytes, device};
  params->dptr = backing;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, cudaMemAllocNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphMemAllocNodeGetParams_v11040, "cudaGraphMemAllocNodeGetParams");
  if (params == nullptr) return api.ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = alloc_nodes().find(reinterpret_cast<const GraphNode*>(node));
  if (it == alloc_nodes().end()) return api.ret(cudaErrorInvalidValue);
  *params = cudaMemAllocNodeParams{};
  params->poolProps.allocType = cudaMemAllocationTypePinned;
  params->poolProps.location = {cudaMemLocationTypeDevice, it->second.device};
  params->bytesize = it->second.bytes;
  params->dptr = it->second.dptr;
  return api.ret(cudaSuccess);
}

// "dptr: The address of memory to free", an allocation made by an alloc node (of this graph or
// another, or cudaMallocAsync in a capture).
cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                    size_t num_deps, void* dptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040, "cudaGraphAddMemFreeNode");
  if (!freeable(dptr)) return api.ret(cudaErrorInvalidValue);
  GraphNode* made = nullptr;
  const cudaError_t err = add(node, graph, deps, num_deps, cudaGraphNodeTypeMemFree, free_work(dptr), &made);
  if (err != cudaSuccess) return api.ret(err);
  std::lock_guard<std::mutex> lock(g_mu);
  free_nodes()[made] = dptr;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphMemFreeNodeGetParams_v11040, "cudaGraphMemFreeNodeGetParams");
  if (dptr_out == nullptr) return api.ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = free_nodes().find(reinterpret_cast<const GraphNode*>(node));
  if (it == free_nodes().end()) return api.ret(cudaErrorInvalidValue);
  *static_cast<void**>(dptr_out) = it->second;
  return api.ret(cudaSuccess);
}

// The simulator keeps each graph allocation's backing for the process: nothing to trim.
cudaError_t cudaDeviceGraphMemTrim(int device) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGraphMemTrim_v11040, "cudaDeviceGraphMemTrim");
  return api.ret(Engine::instance().valid_device(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

// Used and reserved are the same here: the bytes of every graph allocation made on the device.
cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetGraphMemAttribute_v11040, "cudaDeviceGetGraphMemAttribute");
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  if (value == nullptr) return api.ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mu);
  switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent:
    case cudaGraphMemAttrReservedMemCurrent: *static_cast<uint64_t*>(value) = g_used_bytes[device]; break;
    case cudaGraphMemAttrUsedMemHigh:
    case cudaGraphMemAttrReservedMemHigh: *static_cast<uint64_t*>(value) = g_high_bytes[device]; break;
    default: return api.ret(cudaErrorInvalidValue);
  }
  return api.ret(cudaSuccess);
}

// "The high watermark attributes can only be reset to 0" (cuda_runtime_api.h): back to the
// current value.
cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetGraphMemAttribute_v11040, "cudaDeviceSetGraphMemAttribute");
  if (!Engine::instance().valid_device(device)) return api.ret(cudaErrorInvalidDevice);
  if (value == nullptr || *static_cast<uint64_t*>(value) != 0 ||
      (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh)) {
    return api.ret(cudaErrorInvalidValue);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_high_bytes[device] = g_used_bytes[device];
  return api.ret(cudaSuccess);
}

}  // extern "C"
