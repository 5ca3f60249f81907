// Graph memory nodes (cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode), as graphMemoryNodes
// uses them. "The address is fixed for the lifetime of the graph" (CUDA Programming Guide,
// "Graph Memory Nodes"): the backing is made when the alloc node is added and kept for the
// process. The allocation is valid between the alloc node and a free node (or a cudaFree /
// cudaFreeAsync after the launch): the alloc node enters it in the allocation table when the
// graph reaches it, the free node takes it out, so a copy to it outside that span fails as on
// freed memory. Both nodes are the simulator's bookkeeping: no time on the timeline, and no
// MEMORY2 records.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
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
uint64_t g_used_bytes[16] = {};  // per device: graph allocations made (never given back)
uint64_t g_high_bytes[16] = {};

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
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kHost;
  op->bookkeeping = true;
  op->host_work = std::move(work);
  *made = add_node(g, type, std::move(op), std::move(list));
  *out = reinterpret_cast<cudaGraphNode_t>(*made);
  return cudaSuccess;
}

}  // namespace

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
  void* backing = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (backing == nullptr) return api.ret(cudaErrorMemoryAllocation);
  GraphNode* made = nullptr;
  const cudaError_t err = add(node, graph, deps, num_deps, cudaGraphNodeTypeMemAlloc,
                              [backing, bytes, device] { track(backing, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device); },
                              &made);
  if (err != cudaSuccess) {
    std::free(backing);
    return api.ret(err);
  }
  // Valid from now too, so the nodes that use it can be added (their copies are checked then).
  track(backing, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device);
  std::lock_guard<std::mutex> lock(g_mu);
  alloc_nodes()[made] = {backing, bytes, device};
  g_used_bytes[device] += bytes;
  g_high_bytes[device] = std::max(g_high_bytes[device], g_used_bytes[device]);
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
  bool in_bounds = false;
  if (dptr == nullptr || classify(dptr, 1, &in_bounds) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    return api.ret(cudaErrorInvalidValue);
  }
  GraphNode* made = nullptr;
  const cudaError_t err = add(node, graph, deps, num_deps, cudaGraphNodeTypeMemFree,
                              [dptr] {
                                size_t bytes = 0;
                                release(dptr, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &bytes);
                              },
                              &made);
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
