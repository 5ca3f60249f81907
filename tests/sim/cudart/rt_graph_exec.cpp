// Executable graphs: instantiate, launch, update, destroy. A launch runs the nodes in
// dependency order, and nodes with no path between them side by side, as a GPU runs a
// graph's branches: each executable graph owns hidden branch streams (never handed to the
// program), every node goes to one of them with its dependencies as explicit waits, and the
// launch stream holds a fork marker before the nodes and a join marker after them, so the
// graph begins after the stream's earlier work and the stream's later work waits for all of it.
//
// Records: as with CUDA 13's CUPTI (cupti_activity.h), every kernel, memcpy
// and memset of one launch carries the launch's correlation id, the graph's graphId and its
// node's graphNodeId, and a kernel has unknown (0) queued/submitted.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "records.h"

namespace gpuhook::sim {

cudaError_t kernel_node_op(const cudaKernelNodeParams* p, std::unique_ptr<Op>* op);  // rt_graph_build.cpp

namespace {

// CUPTI's graphNodeId is unique in the process (cuptiGetGraphNodeId, cupti_activity.h).
// Instantiation clones the graph's nodes (CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
// cupti_callbacks.h), and NVIDIA's cuda_graphs_trace sample maps a record's graphNodeId back
// to the original node through that callback: the records carry the clone's id, so each
// executable graph's nodes get ids of their own.
std::atomic<uint64_t> g_next_node_id{1};

struct ExecNode {
  const GraphNode* source = nullptr;  // the node it was instantiated from (SetParams names it)
  size_t source_index = 0;            // its position in the graph's creation order
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  std::unique_ptr<Op> op;  // the work of one launch, copied per launch
  EventImpl* event = nullptr;
  std::vector<size_t> deps;  // indices into GraphExec::nodes, all smaller (topological order)
  size_t lane = 0;
  uint64_t node_id = 0;
};

struct GraphExec {
  uint32_t graph_id = 0;
  std::vector<ExecNode> nodes;  // topological order
  std::vector<Stream*> lanes;   // hidden branch streams
  UserObjectRefs user_objects;  // copied from the graph at instantiation
  CompletionPtr last_join;      // the end of the latest launch
};

GraphExec* exec_of(cudaGraphExec_t e) { return reinterpret_cast<GraphExec*>(e); }

std::unique_ptr<Op> copy_of(const Op* op) {
  if (op == nullptr) return nullptr;
  auto c = std::make_unique<Op>(*op);
  c->done = std::make_shared<Completion>();
  c->deps.clear();
  c->seq = 0;
  c->started = false;
  c->record_slot = 0;
  return c;
}

// The graph's nodes in dependency order (creation order among the ready ones); false on a cycle.
bool topological(const Graph& g, std::vector<size_t>* order) {
  const size_t n = g.nodes.size();
  std::vector<size_t> waiting(n, 0);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    for (const GraphNode* d : g.nodes[i]->deps) {
      const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [d](const auto& p) { return p.get() == d; });
      if (it == g.nodes.end()) return false;
      dependents[static_cast<size_t>(it - g.nodes.begin())].push_back(i);
      ++waiting[i];
    }
  }
  std::vector<bool> placed(n, false);
  while (order->size() < n) {
    size_t next = n;
    for (size_t i = 0; i < n && next == n; ++i) {
      if (!placed[i] && waiting[i] == 0) next = i;
    }
    if (next == n) return false;
    placed[next] = true;
    order->push_back(next);
    for (size_t d : dependents[next]) --waiting[d];
  }
  return true;
}

cudaError_t instantiate(cudaGraphExec_t* out, cudaGraph_t graph) {
  if (out == nullptr || graph == nullptr) return cudaErrorInvalidValue;
  const Graph& g = *graph_of(graph);
  std::vector<size_t> order;
  // A cycle (possible through cudaGraphAddDependencies) is cudaGraphInstantiateInvalidStructure,
  // "invalid structure, such as cycles" (driver_types.h).
  if (!topological(g, &order)) return cudaErrorInvalidValue;
  auto e = std::make_unique<GraphExec>();
  e->graph_id = g.id;
  e->user_objects = g.user_objects;
  retain_user_objects(e->user_objects);
  std::vector<size_t> position(g.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  // Branch lanes: a node continues the lane of a dependency that lane ended with, else opens a
  // new one, so two nodes share a lane only when one depends on the other and nothing with no
  // path between them is ever serialised.
  std::vector<size_t> lane_tail;  // per lane: its last node
  for (size_t k = 0; k < order.size(); ++k) {
    const GraphNode& src = *g.nodes[order[k]];
    ExecNode node;
    node.source = &src;
    node.source_index = order[k];
    node.type = src.type;
    node.op = copy_of(src.op.get());
    node.event = src.event;
    node.node_id = g_next_node_id.fetch_add(1);
    for (const GraphNode* d : src.deps) {
      const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [d](const auto& p) { return p.get() == d; });
      node.deps.push_back(position[static_cast<size_t>(it - g.nodes.begin())]);
    }
    node.lane = lane_tail.size();
    for (size_t d : node.deps) {
      if (lane_tail[e->nodes[d].lane] == d) {
        node.lane = e->nodes[d].lane;
        break;
      }
    }
    if (node.lane == lane_tail.size()) lane_tail.push_back(k);
    else lane_tail[node.lane] = k;
    e->nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < lane_tail.size(); ++i) {
    e->lanes.push_back(Engine::instance().create_stream(cudaStreamNonBlocking, 0, /*hidden=*/true));
  }
  *out = reinterpret_cast<cudaGraphExec_t>(e.release());
  return cudaSuccess;
}

std::unique_ptr<Op> marker(uint32_t correlation_id, uint64_t now) {
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kMarker;
  op->correlation_id = correlation_id;
  op->queued_ns = now;
  op->submitted_ns = now;
  return op;
}

cudaError_t launch(const ApiScope& api, cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return cudaErrorInvalidResourceHandle;
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t refused = capture_refusal(s); refused != cudaSuccess) return refused;
  // Launching into a capturing stream (a child graph node) is not simulated.
  if (s->capture != nullptr) return cudaErrorStreamCaptureUnsupported;
  GraphExec& e = *exec_of(exec);
  const SimConfig& c = config();
  const uint64_t now = gpuhook_sim_now_ns();
  const CompletionPtr fork = engine.enqueue(s, marker(api.correlation_id(), now));
  std::vector<CompletionPtr> done(e.nodes.size());
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    const ExecNode& node = e.nodes[i];
    // A graph allocation is valid from its launch on: work the program queues after the launch
    // is checked against it now (its node enters it again when it runs; rt_graph_memory.cpp).
    if (node.type == cudaGraphNodeTypeMemAlloc && node.op && node.op->host_work) node.op->host_work();
    std::unique_ptr<Op> op = node.op ? copy_of(node.op.get()) : marker(0, now);
    if ((node.type == cudaGraphNodeTypeMemAlloc || node.type == cudaGraphNodeTypeMemFree) && op->host_work) {
      op->host_work = graph_memory_work(std::move(op->host_work), api.correlation_id(), s->id);
    }
    op->correlation_id = api.correlation_id();  // every node shares the launch's id
    op->graph_id = e.graph_id;
    op->graph_node_id = node.node_id;
    op->record_stream_id = s->id;
    // Planning needs a submit time; the records say it is unknown.
    op->queued_ns = now;
    op->submitted_ns = now + c.submit_ns;
    op->deps.push_back(fork);
    for (size_t d : node.deps) op->deps.push_back(done[d]);
    if (node.type == cudaGraphNodeTypeWaitEvent && node.event != nullptr && node.event->completion) {
      op->deps.push_back(node.event->completion);
    }
    done[i] = engine.enqueue(e.lanes[node.lane], std::move(op));
    if (node.type == cudaGraphNodeTypeEventRecord && node.event != nullptr) {
      node.event->completion = done[i];  // the event completes when the graph reaches the node
      node.event->capture_id = 0;
    }
  }
  auto join = marker(api.correlation_id(), now);
  for (const auto& d : done) join->deps.push_back(d);
  e.last_join = engine.enqueue(s, std::move(join));
  return cudaSuccess;
}

ExecNode* exec_node_for(GraphExec& e, const GraphNode* source) {
  for (ExecNode& n : e.nodes) {
    if (n.source == source) return &n;
  }
  return nullptr;
}

// cudaGraphExecUpdate's topology check (cuda_runtime_api.h): nodes are paired in creation
// order (the real driver pairs by edge order; for graphs built by the same code the two
// agree); a different count or a different dependency list is TopologyChanged, a different
// type NodeTypeChanged.
cudaGraphExecUpdateResult check_update(const GraphExec& e, const Graph& g, cudaGraphNode_t* error_node,
                                       cudaGraphNode_t* error_from) {
  if (g.nodes.size() != e.nodes.size()) return cudaGraphExecUpdateErrorTopologyChanged;
  std::vector<const ExecNode*> by_source(e.nodes.size());
  for (const ExecNode& n : e.nodes) by_source[n.source_index] = &n;
  auto index_of = [&g](const GraphNode* d) {
    return static_cast<size_t>(std::find_if(g.nodes.begin(), g.nodes.end(), [d](const auto& p) { return p.get() == d; }) -
                               g.nodes.begin());
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& node = *g.nodes[i];
    const ExecNode& paired = *by_source[i];
    *error_node = reinterpret_cast<cudaGraphNode_t>(const_cast<GraphNode*>(&node));
    if (node.type != paired.type) return cudaGraphExecUpdateErrorNodeTypeChanged;
    if (node.deps.size() != paired.deps.size()) return cudaGraphExecUpdateErrorTopologyChanged;
    for (size_t k = 0; k < node.deps.size(); ++k) {
      if (index_of(node.deps[k]) != e.nodes[paired.deps[k]].source_index) {
        *error_from = reinterpret_cast<cudaGraphNode_t>(node.deps[k]);
        return cudaGraphExecUpdateErrorTopologyChanged;
      }
    }
    if (node.type == cudaGraphNodeTypeMemcpy &&
        (node.op->src_kind != paired.op->src_kind || node.op->dst_kind != paired.op->dst_kind)) {
      // "Changing either the source or destination memory type ... is not supported."
      return cudaGraphExecUpdateErrorParametersChanged;
    }
  }
  *error_node = nullptr;
  return cudaGraphExecUpdateSuccess;
}

// "If the executable graph is in-flight, it will not be terminated, but rather freed
// asynchronously on completion" (cudaGraphExecDestroy): references the executable graph
// gives up are released after its latest launch, by its first lane.
void release_after_launches(GraphExec& e, UserObjectRefs refs) {
  if (refs.empty()) return;
  if (e.lanes.empty() || !e.last_join) {
    release_user_objects(refs);
    return;
  }
  auto release = std::make_unique<Op>();
  release->kind = OpKind::kHost;
  release->bookkeeping = true;
  release->queued_ns = release->submitted_ns = gpuhook_sim_now_ns();
  release->deps.push_back(e.last_join);
  release->host_work = [refs = std::move(refs)]() mutable { release_user_objects(refs); };
  Engine::instance().enqueue(e.lanes.front(), std::move(release));
}

}  // namespace
}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate");
  (void)flags;  // auto-free, upload, device launch, node priority: nothing of them is modelled
  return api.ret(instantiate(exec, graph));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040, "cudaGraphInstantiateWithFlags");
  (void)flags;
  return api.ret(instantiate(exec, graph));
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch");
  return api.ret(launch(api, exec, stream));
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch_ptsz");
  return api.ret(launch(api, exec, per_thread(stream)));
}

// Uploading makes the first launch cheaper on a GPU; here there is nothing to upload.
cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphUpload_v10000, "cudaGraphUpload");
  if (exec == nullptr || Engine::instance().resolve(stream) == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphUpload_ptsz_v10000, "cudaGraphUpload_ptsz");
  if (exec == nullptr || Engine::instance().resolve(per_thread(stream)) == nullptr) {
    return api.ret(cudaErrorInvalidResourceHandle);
  }
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* params) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010, "cudaGraphExecKernelNodeSetParams");
  if (exec == nullptr || node == nullptr) return api.ret(cudaErrorInvalidValue);
  // "The node is identified by the corresponding node in the non-executable graph, from which
  // the executable graph was instantiated" (cuda_runtime_api.h).
  ExecNode* n = exec_node_for(*exec_of(exec), reinterpret_cast<const GraphNode*>(node));
  if (n == nullptr || n->type != cudaGraphNodeTypeKernel) return api.ret(cudaErrorInvalidValue);
  std::unique_ptr<Op> op;
  if (const cudaError_t err = kernel_node_op(params, &op); err != cudaSuccess) return api.ret(err);
  n->op = std::move(op);  // the next launch uses it; launches already made keep theirs
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020, "cudaGraphExecUpdate");
  cudaGraphExecUpdateResultInfo local{};
  if (info == nullptr) info = &local;
  info->errorNode = nullptr;
  info->errorFromNode = nullptr;
  if (exec == nullptr || graph == nullptr) {
    info->result = cudaGraphExecUpdateError;
    return api.ret(cudaErrorInvalidValue);
  }
  GraphExec& e = *exec_of(exec);
  const Graph& g = *graph_of(graph);
  info->result = check_update(e, g, &info->errorNode, &info->errorFromNode);
  // "It returns cudaErrorGraphExecUpdateFailure if the graph update was not performed".
  if (info->result != cudaGraphExecUpdateSuccess) return api.ret(cudaErrorGraphExecUpdateFailure);
  for (ExecNode& n : e.nodes) {
    // n.source stays: SetParams calls still name the nodes the exec was instantiated from.
    const GraphNode& src = *g.nodes[n.source_index];
    n.op = copy_of(src.op.get());
    n.event = src.event;
  }
  // "The references in the new source graph are cloned and replace the references in the
  // target graph" (CUDA User Objects, CUDA C++ Programming Guide).
  UserObjectRefs old = std::move(e.user_objects);
  e.user_objects = g.user_objects;
  retain_user_objects(e.user_objects);
  release_after_launches(e, std::move(old));
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000, "cudaGraphExecDestroy");
  if (exec == nullptr) return api.ret(cudaErrorInvalidValue);
  GraphExec* e = exec_of(exec);
  release_after_launches(*e, std::move(e->user_objects));
  // The lanes finish the launches in flight, then their workers stop.
  for (Stream* lane : e->lanes) Engine::instance().destroy_stream(lane);
  delete e;
  return api.ret(cudaSuccess);
}

}  // extern "C"
