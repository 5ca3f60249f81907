// CUDA graphs, the part real inference code uses most: a graph captured from one stream,
// instantiated and launched. As with CUDA 13's CUPTI (cupti_activity.h; CUPTI-NOTES.md §2),
// every kernel of one graph launch carries the launch's correlation id, its graphId and
// graphNodeId, and unknown (0) queued/submitted. Nodes run in capture order on the launch
// stream; explicit graph building and independent nodes side by side are not modelled.
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "records.h"

namespace gpuhook::sim {
namespace {

std::atomic<uint32_t> g_next_graph_id{1};

struct GraphExec {
  uint32_t graph_id = 0;
  std::vector<std::unique_ptr<Op>> nodes;
};

Graph* graph_of(cudaGraph_t g) { return reinterpret_cast<Graph*>(g); }
GraphExec* exec_of(cudaGraphExec_t e) { return reinterpret_cast<GraphExec*>(e); }

// A node's work for one launch: the captured op with a fresh completion.
std::unique_ptr<Op> instance_of(const Op& node) {
  auto op = std::make_unique<Op>(node);
  op->done = std::make_shared<Completion>();
  op->deps.clear();
  op->seq = 0;
  op->started = false;
  op->record_slot = 0;
  return op;
}

}  // namespace
}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, "cudaStreamBeginCapture");
  (void)mode;  // one capturing stream at a time here: every mode behaves the same
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  // The legacy stream cannot be captured (cudaErrorStreamCaptureUnsupported in the runtime).
  if (s->legacy) return api.ret(cudaErrorStreamCaptureUnsupported);
  if (s->capture != nullptr) return api.ret(cudaErrorIllegalState);
  auto* g = new Graph();
  g->id = g_next_graph_id.fetch_add(1);
  s->capture = g;
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture");
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (graph == nullptr) return api.ret(cudaErrorInvalidValue);
  if (s->capture == nullptr) return api.ret(cudaErrorIllegalState);
  *graph = reinterpret_cast<cudaGraph_t>(s->capture);
  s->capture = nullptr;
  return api.ret(cudaSuccess);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, "cudaStreamIsCapturing");
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  if (status == nullptr) return api.ret(cudaErrorInvalidValue);
  *status = s->capture != nullptr ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate");
  (void)flags;
  if (exec == nullptr || graph == nullptr) return api.ret(cudaErrorInvalidValue);
  auto* e = new GraphExec();
  e->graph_id = graph_of(graph)->id;
  for (const auto& node : graph_of(graph)->nodes) e->nodes.push_back(instance_of(*node));
  *exec = reinterpret_cast<cudaGraphExec_t>(e);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch");
  if (exec == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  Engine& engine = Engine::instance();
  Stream* s = engine.resolve(stream);
  if (s == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  const SimConfig& c = config();
  const uint64_t now = gpuhook_sim_now_ns();
  for (const auto& node : exec_of(exec)->nodes) {
    std::unique_ptr<Op> op = instance_of(*node);
    op->correlation_id = api.correlation_id();  // every node shares the launch's id
    op->graph_id = exec_of(exec)->graph_id;
    // Planning needs a submit time; the records say it is unknown.
    op->queued_ns = now;
    op->submitted_ns = now + c.submit_ns;
    engine.enqueue(s, std::move(op));
  }
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000, "cudaGraphExecDestroy");
  delete exec_of(exec);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000, "cudaGraphDestroy");
  delete graph_of(graph);
  return api.ret(cudaSuccess);
}

}  // extern "C"
