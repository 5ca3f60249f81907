// Building a CUDA graph by hand: cudaGraphCreate, the cudaGraphAdd*Node calls, edges, queries,
// kernel node parameters, clone and destroy. A node's work is validated and costed when it is
// added, exactly as the same call on a stream would be (ops.h); it runs at cudaGraphLaunch.
// CUDA graph objects are "not internally synchronized" (cuda_runtime_api.h,
// \note_graph_thread_safety): the program keeps one graph to one thread at a time, and so do
// these calls.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "engine.h"
#include "graph.h"
#include "ops.h"
#include "records.h"
#include "registry.h"

namespace gpuhook::sim {
namespace {

GraphNode* node_of(cudaGraphNode_t n) { return reinterpret_cast<GraphNode*>(n); }

bool holds(const Graph& g, const GraphNode* n) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [n](const auto& p) { return p.get() == n; });
}

// The dependency list of a new node: every entry a node of g, none twice.
cudaError_t dependencies(const Graph& g, const cudaGraphNode_t* deps, size_t n, std::vector<GraphNode*>* out) {
  if (n != 0 && deps == nullptr) return cudaErrorInvalidValue;
  for (size_t i = 0; i < n; ++i) {
    GraphNode* d = node_of(deps[i]);
    if (d == nullptr || !holds(g, d)) return cudaErrorInvalidValue;
    if (std::find(out->begin(), out->end(), d) != out->end()) return cudaErrorInvalidValue;
    out->push_back(d);
  }
  return cudaSuccess;
}

cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                cudaGraphNodeType type, std::unique_ptr<Op> op, EventImpl* event = nullptr) {
  if (out == nullptr || graph == nullptr) return cudaErrorInvalidValue;
  std::vector<GraphNode*> list;
  if (const cudaError_t err = dependencies(*graph_of(graph), deps, n, &list); err != cudaSuccess) return err;
  GraphNode* node = add_node(*graph_of(graph), type, std::move(op), std::move(list));
  node->event = event;
  *out = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t kernel_op(const cudaKernelNodeParams* p, std::unique_ptr<Op>* op) {
  if (p == nullptr) return cudaErrorInvalidValue;
  // Arguments packed in `extra` are not simulated; kernelParams is what programs pass.
  if (p->extra != nullptr) return cudaErrorInvalidValue;
  KernelInfo* k = find_kernel(p->func);
  if (k == nullptr) return cudaErrorInvalidDeviceFunction;
  *op = std::make_unique<Op>();
  return build_kernel_op(k, p->gridDim, p->blockDim, p->kernelParams, p->sharedMemBytes, **op);
}

cudaError_t copy_op(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, std::unique_ptr<Op>* op) {
  *op = std::make_unique<Op>();
  bool pageable = false;
  const cudaError_t err = build_copy_op(dst, src, bytes, kind, **op, &pageable);
  // A graph's copies are asynchronous: the launch never waits for them.
  (*op)->async = true;
  return err;
}

}  // namespace

// Used by cudaGraphExecKernelNodeSetParams too.
cudaError_t kernel_node_op(const cudaKernelNodeParams* p, std::unique_ptr<Op>* op) { return kernel_op(p, op); }

}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000, "cudaGraphCreate");
  // "flags - Graph creation flags, must be 0" (cuda_runtime_api.h).
  if (graph == nullptr || flags != 0) return api.ret(cudaErrorInvalidValue);
  auto* g = new Graph();
  g->id = next_graph_id();
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t num_deps, const cudaKernelNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000, "cudaGraphAddKernelNode");
  std::unique_ptr<Op> op;
  if (const cudaError_t err = kernel_op(params, &op); err != cudaSuccess) return api.ret(err);
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeKernel, std::move(op)));
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeGetParams_v10000, "cudaGraphKernelNodeGetParams");
  GraphNode* n = node_of(node);
  if (n == nullptr || params == nullptr || n->type != cudaGraphNodeTypeKernel) return api.ret(cudaErrorInvalidValue);
  const Op& op = *n->op;
  params->func = const_cast<void*>(op.kernel->stub);
  params->gridDim = op.grid;
  params->blockDim = op.block;
  params->sharedMemBytes = static_cast<unsigned>(op.dynamic_smem_bytes);
  // The node's own copy of the arguments, valid while the node is unchanged.
  params->kernelParams = n->arg_ptrs.empty() ? nullptr : n->arg_ptrs.data();
  params->extra = nullptr;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphKernelNodeSetParams_v10000, "cudaGraphKernelNodeSetParams");
  GraphNode* n = node_of(node);
  if (n == nullptr || n->type != cudaGraphNodeTypeKernel) return api.ret(cudaErrorInvalidValue);
  std::unique_ptr<Op> op;
  if (const cudaError_t err = kernel_op(params, &op); err != cudaSuccess) return api.ret(err);
  n->op = std::move(op);
  refresh_kernel_args(*n);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t num_deps, const cudaMemcpy3DParms* p) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000, "cudaGraphAddMemcpyNode");
  if (p == nullptr) return api.ret(cudaErrorInvalidValue);
  // CUDA arrays and 2-D/3-D copies are not simulated: only a linear copy of extent.width bytes.
  const size_t rows = std::max<size_t>(p->extent.height, 1) * std::max<size_t>(p->extent.depth, 1);
  if (p->srcArray != nullptr || p->dstArray != nullptr || rows != 1 || p->srcPos.y != 0 || p->srcPos.z != 0 ||
      p->dstPos.y != 0 || p->dstPos.z != 0) {
    return api.ret(cudaErrorNotSupported);
  }
  void* dst = static_cast<char*>(p->dstPtr.ptr) + p->dstPos.x;
  const void* src = static_cast<const char*>(p->srcPtr.ptr) + p->srcPos.x;
  std::unique_ptr<Op> op;
  if (const cudaError_t err = copy_op(dst, src, p->extent.width, p->kind, &op); err != cudaSuccess) return api.ret(err);
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeMemcpy, std::move(op)));
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                     size_t num_deps, void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode1D_v11010, "cudaGraphAddMemcpyNode1D");
  std::unique_ptr<Op> op;
  if (const cudaError_t err = copy_op(dst, src, count, kind, &op); err != cudaSuccess) return api.ret(err);
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeMemcpy, std::move(op)));
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t num_deps, const cudaMemsetParams* p) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000, "cudaGraphAddMemsetNode");
  // "elementSize: Size of each element in bytes. Must be 1, 2, or 4" (driver_types.h).
  if (p == nullptr || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || p->width == 0) {
    return api.ret(cudaErrorInvalidValue);
  }
  const size_t row_bytes = p->width * p->elementSize;
  const size_t rows = std::max<size_t>(p->height, 1);
  // The simulated memset writes one byte value: a 2- or 4-byte pattern whose bytes differ, and
  // rows with gaps between them, are not simulated.
  unsigned char bytes[4];
  std::memcpy(bytes, &p->value, 4);
  const bool uniform = std::all_of(bytes, bytes + p->elementSize, [&](unsigned char b) { return b == bytes[0]; });
  if (!uniform || (rows > 1 && p->pitch != row_bytes)) return api.ret(cudaErrorNotSupported);
  auto op = std::make_unique<Op>();
  if (const cudaError_t err = build_set_op(p->dst, bytes[0], row_bytes * rows, *op); err != cudaSuccess) {
    return api.ret(err);
  }
  op->value = static_cast<int>(p->value);  // the record's value, as CUPTI reports it
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeMemset, std::move(op)));
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                 size_t num_deps, const cudaHostNodeParams* p) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddHostNode_v10000, "cudaGraphAddHostNode");
  if (p == nullptr || p->fn == nullptr) return api.ret(cudaErrorInvalidValue);
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kHost;
  cudaHostFn_t fn = p->fn;
  void* user_data = p->userData;
  op->host_work = [fn, user_data] { fn(user_data); };
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeHost, std::move(op)));
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                  size_t num_deps) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEmptyNode_v10000, "cudaGraphAddEmptyNode");
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeEmpty, nullptr));
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                        size_t num_deps, cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEventRecordNode_v11010, "cudaGraphAddEventRecordNode");
  if (event == nullptr) return api.ret(cudaErrorInvalidValue);
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeEventRecord, nullptr,
                     reinterpret_cast<EventImpl*>(event)));
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                      size_t num_deps, cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEventWaitNode_v11010, "cudaGraphAddEventWaitNode");
  if (event == nullptr) return api.ret(cudaErrorInvalidValue);
  return api.ret(add(node, graph, deps, num_deps, cudaGraphNodeTypeWaitEvent, nullptr,
                     reinterpret_cast<EventImpl*>(event)));
}

// CUDA 13's signature, with edge data (the 12.3 cudaGraphAddDependencies_v2, hence its cbid).
cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData* edges, size_t n) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddDependencies_v12030, "cudaGraphAddDependencies");
  Graph* g = graph_of(graph);
  if (g == nullptr || (n != 0 && (from == nullptr || to == nullptr))) return api.ret(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; ++i) {
    // Only default edges: programmatic (launch-overlap) edges are not simulated.
    if (edges != nullptr && (edges[i].type != cudaGraphDependencyTypeDefault || edges[i].from_port != 0 ||
                             edges[i].to_port != 0)) {
      return api.ret(cudaErrorNotSupported);
    }
    GraphNode* a = node_of(from[i]);
    GraphNode* b = node_of(to[i]);
    if (a == nullptr || b == nullptr || a == b || !holds(*g, a) || !holds(*g, b)) return api.ret(cudaErrorInvalidValue);
    if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end()) return api.ret(cudaErrorInvalidValue);
  }
  for (size_t i = 0; i < n; ++i) node_of(to[i])->deps.push_back(node_of(from[i]));
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphGetNodes_v10000, "cudaGraphGetNodes");
  Graph* g = graph_of(graph);
  if (g == nullptr || num == nullptr) return api.ret(cudaErrorInvalidValue);
  const size_t count = g->nodes.size();
  if (nodes == nullptr) {
    *num = count;
    return api.ret(cudaSuccess);
  }
  // "If numNodes is higher than the actual number of nodes, the remaining entries in nodes
  // will be set to NULL, and the number of nodes actually obtained will be returned".
  for (size_t i = 0; i < *num; ++i) {
    nodes[i] = i < count ? reinterpret_cast<cudaGraphNode_t>(g->nodes[i].get()) : nullptr;
  }
  *num = std::min(*num, count);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* roots, size_t* num) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphGetRootNodes_v10000, "cudaGraphGetRootNodes");
  Graph* g = graph_of(graph);
  if (g == nullptr || num == nullptr) return api.ret(cudaErrorInvalidValue);
  std::vector<cudaGraphNode_t> found;
  for (const auto& n : g->nodes) {
    if (n->deps.empty()) found.push_back(reinterpret_cast<cudaGraphNode_t>(n.get()));
  }
  if (roots == nullptr) {
    *num = found.size();
    return api.ret(cudaSuccess);
  }
  for (size_t i = 0; i < *num; ++i) roots[i] = i < found.size() ? found[i] : nullptr;
  *num = std::min(*num, found.size());
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphNodeGetType_v10000, "cudaGraphNodeGetType");
  if (node == nullptr || type == nullptr) return api.ret(cudaErrorInvalidValue);
  *type = node_of(node)->type;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroyNode_v10000, "cudaGraphDestroyNode");
  GraphNode* n = node_of(node);
  if (n == nullptr) return api.ret(cudaErrorInvalidValue);
  // "Removes node from its graph. This operation also severs any dependencies of other nodes
  // on node and vice versa" (cuda_runtime_api.h).
  Graph* g = n->graph;
  for (auto& other : g->nodes) {
    auto& d = other->deps;
    d.erase(std::remove(d.begin(), d.end(), n), d.end());
  }
  g->nodes.erase(std::find_if(g->nodes.begin(), g->nodes.end(), [n](const auto& p) { return p.get() == n; }));
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000, "cudaGraphClone");
  if (clone == nullptr || original == nullptr) return api.ret(cudaErrorInvalidValue);
  auto* g = new Graph();
  g->id = next_graph_id();
  std::map<const GraphNode*, GraphNode*> twin;
  for (const auto& n : graph_of(original)->nodes) {
    GraphNode* c = add_node(*g, n->type, n->op ? std::make_unique<Op>(*n->op) : nullptr, {});
    if (c->op) c->op->done = std::make_shared<Completion>();
    c->event = n->event;
    if (c->type == cudaGraphNodeTypeKernel) refresh_kernel_args(*c);
    twin[n.get()] = c;
  }
  for (const auto& n : graph_of(original)->nodes) {
    for (const GraphNode* d : n->deps) twin[n.get()]->deps.push_back(twin[d]);
  }
  // The clone owns references of its own to the original's user objects.
  g->user_objects = graph_of(original)->user_objects;
  retain_user_objects(g->user_objects);
  *clone = reinterpret_cast<cudaGraph_t>(g);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000, "cudaGraphDestroy");
  if (graph == nullptr) return api.ret(cudaErrorInvalidValue);
  release_user_objects(graph_of(graph)->user_objects);
  delete graph_of(graph);
  return api.ret(cudaSuccess);
}

}  // extern "C"
