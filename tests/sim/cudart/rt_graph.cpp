// Stream capture: work issued to a capturing stream becomes nodes of a graph instead of
// running. Other streams join a capture by waiting on an event recorded in it (the fork/join
// pattern of PyTorch's side streams); their work becomes parallel branches, and the capture
// ends only when every branch has been joined back into the origin stream. The rules capture
// puts on other calls (legacy stream, synchronisation, the capture modes) are here too.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "../sim_bridge.h"
#include "config.h"
#include "engine.h"
#include "graph.h"
#include "records.h"

namespace gpuhook::sim {
namespace {

std::atomic<uint32_t> g_next_graph_id{1};
std::atomic<unsigned long long> g_next_capture_id{1};

// Guards every Capture, Stream::capture and EventImpl::capture_id/captured_nodes. Never held
// while calling into the Engine (whose mutex is the inner one: enqueue calls capture_op).
std::mutex g_capture_mu;
std::vector<Capture*>& active_captures() {
  static auto* v = new std::vector<Capture*>();
  return *v;
}

// The thread's mode for "potentially unsafe" calls (cudaThreadExchangeStreamCaptureMode);
// Global is the default, "cudaStreamCaptureModeGlobal: This is the default mode"
// (cuda_runtime_api.h).
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

Capture* find_capture(unsigned long long id) {
  for (Capture* c : active_captures()) {
    if (c->id == id) return c;
  }
  return nullptr;
}

cudaGraphNodeType node_type_of(OpKind kind) {
  switch (kind) {
    case OpKind::kKernel: return cudaGraphNodeTypeKernel;
    case OpKind::kMemcpy: return cudaGraphNodeTypeMemcpy;
    case OpKind::kMemset: return cudaGraphNodeTypeMemset;
    case OpKind::kHost: return cudaGraphNodeTypeHost;
    default: return cudaGraphNodeTypeEmpty;
  }
}

// Every node a capture's origin stream depends on now, transitively: a branch is joined
// when its last nodes are among them.
std::set<const GraphNode*> ancestors_of(const std::vector<GraphNode*>& tips) {
  std::set<const GraphNode*> seen;
  std::vector<const GraphNode*> todo(tips.begin(), tips.end());
  while (!todo.empty()) {
    const GraphNode* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    for (const GraphNode* d : n->deps) todo.push_back(d);
  }
  return seen;
}

// Ends c: every stream in it leaves capture mode. Called with g_capture_mu held.
void end_capture_locked(Capture* c) {
  for (auto& [stream, deps] : c->deps) {
    if (stream->capture == c) stream->capture = nullptr;
  }
  auto& v = active_captures();
  v.erase(std::remove(v.begin(), v.end(), c), v.end());
}

cudaError_t begin_capture(ApiScope& api, cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return cudaErrorInvalidValue;
  }
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  // "Capture may not be initiated if stream is cudaStreamLegacy" (cuda_runtime_api.h,
  // cudaStreamBeginCapture).
  if (s->legacy) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (s->capture != nullptr) return cudaErrorIllegalState;
  auto* c = new Capture();
  c->graph = new Graph();
  c->graph->id = next_graph_id();
  c->origin = s;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->id = g_next_capture_id.fetch_add(1);
  c->deps[s] = {};
  s->capture = c;
  active_captures().push_back(c);
  (void)api;
  return cudaSuccess;
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* graph) {
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (graph == nullptr) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  Capture* c = s->capture;
  if (c == nullptr) return cudaErrorIllegalState;
  // "Capture must be ended on the same stream in which it was initiated" (cudaStreamBeginCapture).
  if (c->origin != s) return cudaErrorStreamCaptureUnmatched;
  // "If the mode argument to cudaStreamBeginCapture was not cudaStreamCaptureModeRelaxed, this
  // call must be from the same thread" (cudaStreamEndCapture).
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id()) {
    return cudaErrorStreamCaptureWrongThread;
  }
  end_capture_locked(c);
  cudaError_t result = cudaSuccess;
  if (c->invalidated) {
    // "If capture was invalidated, due to a violation of the rules of stream capture, then a
    // NULL graph will be returned" (cudaStreamEndCapture).
    result = cudaErrorStreamCaptureInvalidated;
  } else {
    // cudaErrorStreamCaptureUnjoined: "The capture sequence contains a fork that was not
    // joined to the primary stream" (driver_types.h).
    const auto joined = ancestors_of(c->deps[s]);
    for (const auto& [other, tips] : c->deps) {
      for (const GraphNode* n : tips) {
        if (joined.count(n) == 0) result = cudaErrorStreamCaptureUnjoined;
      }
    }
  }
  if (result == cudaSuccess) {
    *graph = reinterpret_cast<cudaGraph_t>(c->graph);
  } else {
    *graph = nullptr;
    release_user_objects(c->graph->user_objects);
    delete c->graph;
  }
  delete c;
  return result;
}

cudaError_t is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  Stream* s = Engine::instance().resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (status == nullptr) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (s->legacy) {
    // "If called on cudaStreamLegacy (the "null stream") while a stream not created with
    // cudaStreamNonBlocking is capturing, returns cudaErrorStreamCaptureImplicit"
    // (cudaStreamGetCaptureInfo; the same holds for cudaStreamIsCapturing).
    for (const Capture* c : active_captures()) {
      for (const auto& [other, tips] : c->deps) {
        if (other->blocking) return cudaErrorStreamCaptureImplicit;
      }
    }
  }
  if (s->capture == nullptr) *status = cudaStreamCaptureStatusNone;
  else *status = s->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                             cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                             size_t* num_deps) {
  if (status == nullptr) return cudaErrorInvalidValue;
  // "If edgeData_out is non-NULL then dependencies_out must be as well."
  if (edges != nullptr && deps == nullptr) return cudaErrorInvalidValue;
  if (const cudaError_t err = is_capturing(stream, status); err != cudaSuccess) return err;
  if (*status != cudaStreamCaptureStatusActive) return cudaSuccess;
  Stream* s = Engine::instance().resolve(stream);
  std::lock_guard<std::mutex> lock(g_capture_mu);
  Capture* c = s->capture;
  if (c == nullptr) return cudaSuccess;
  if (id != nullptr) *id = c->id;
  if (graph != nullptr) *graph = reinterpret_cast<cudaGraph_t>(c->graph);
  // The driver-owned array, "valid until the next API call which operates on the stream".
  std::vector<GraphNode*>& tips = c->deps[s];
  if (deps != nullptr) *deps = reinterpret_cast<const cudaGraphNode_t*>(tips.data());
  if (edges != nullptr) *edges = nullptr;  // every captured edge is a default one
  if (num_deps != nullptr) *num_deps = tips.size();
  return cudaSuccess;
}

// Invalidates every capture the predicate picks; true if there was one. g_capture_mu held.
template <class Pick>
bool invalidate_where(Pick pick) {
  bool any = false;
  for (Capture* c : active_captures()) {
    if (!pick(*c)) continue;
    c->invalidated = true;
    any = true;
  }
  return any;
}

}  // namespace

uint32_t next_graph_id() { return g_next_graph_id.fetch_add(1); }

GraphNode* add_node(Graph& g, cudaGraphNodeType type, std::unique_ptr<Op> op, std::vector<GraphNode*> deps) {
  auto node = std::make_unique<GraphNode>();
  node->graph = &g;
  node->type = type;
  node->op = std::move(op);
  node->deps = std::move(deps);
  if (type == cudaGraphNodeTypeKernel) refresh_kernel_args(*node);
  g.nodes.push_back(std::move(node));
  return g.nodes.back().get();
}

void refresh_kernel_args(GraphNode& node) {
  node.arg_ptrs.clear();
  if (!node.op) return;
  for (size_t offset : node.op->arg_offsets) node.arg_ptrs.push_back(node.op->arg_bytes.data() + offset);
}

CompletionPtr capture_op(Stream& s, std::unique_ptr<Op> op) {
  CompletionPtr c = op->done;
  {
    std::lock_guard<std::mutex> lock(g_capture_mu);
    Capture* cap = s.capture;
    if (cap != nullptr && !cap->invalidated) {
      std::vector<GraphNode*>& tips = cap->deps[&s];
      const cudaGraphNodeType type = node_type_of(op->kind);
      GraphNode* node = add_node(*cap->graph, type, std::move(op), tips);
      tips.assign(1, node);
    }
  }
  c->done = true;  // nothing runs now; a wait on it returns at once
  return c;
}

GraphNode* capture_node(Stream& s, cudaGraphNodeType type, std::unique_ptr<Op> op) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  Capture* cap = s.capture;
  if (cap == nullptr || cap->invalidated) return nullptr;
  std::vector<GraphNode*>& tips = cap->deps[&s];
  GraphNode* node = add_node(*cap->graph, type, std::move(op), tips);
  tips.assign(1, node);
  return node;
}

cudaError_t capture_refusal(Stream* s) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (s->capture != nullptr && s->capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  if (!s->legacy) return cudaSuccess;
  // "When any stream in the same context is being captured, and it was not created with
  // cudaStreamNonBlocking, any attempted use of the legacy stream is invalid" (CUDA
  // Programming Guide, stream capture, "Prohibited and Unhandled Operations"); the error is
  // cudaErrorStreamCaptureImplicit, "a disallowed implicit dependency on a current capture
  // sequence from cudaStreamLegacy" (driver_types.h), and the capture is invalidated.
  const bool broke = invalidate_where([](const Capture& c) {
    return std::any_of(c.deps.begin(), c.deps.end(), [](const auto& e) { return e.first->blocking; });
  });
  return broke ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

cudaError_t capture_refusal_sync(Stream* s) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (s->capture == nullptr) return cudaSuccess;
  // "It is invalid to synchronize or query the execution status of a stream which is being
  // captured" (Programming Guide, as above): cudaErrorStreamCaptureUnsupported, "The operation
  // is not permitted when the stream is capturing" (driver_types.h).
  s->capture->invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

cudaError_t capture_refusal_device_sync() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  // Synchronising the device synchronises the capturing streams too, a call that "necessarily
  // conflicts with stream capture" in any mode (cudaThreadExchangeStreamCaptureMode).
  const bool broke = invalidate_where([](const Capture&) { return true; });
  return broke ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t capture_refusal_unsafe() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const auto me = std::this_thread::get_id();
  const cudaStreamCaptureMode mode = t_capture_mode;
  // cudaThreadExchangeStreamCaptureMode (cuda_runtime_api.h): "some actions, such as a call to
  // cudaMalloc, may be unsafe". Global: prohibited if this thread has a capture not begun in
  // Relaxed mode, "or if any other thread has a concurrent capture sequence initiated with
  // cudaStreamCaptureModeGlobal"; ThreadLocal: only this thread's own captures count;
  // Relaxed: never prohibited.
  if (mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  const bool broke = invalidate_where([&](const Capture& c) {
    if (c.thread == me) return c.mode != cudaStreamCaptureModeRelaxed;
    return mode == cudaStreamCaptureModeGlobal && c.mode == cudaStreamCaptureModeGlobal;
  });
  return broke ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

bool capture_event_record(EventImpl* e, Stream* s) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (s->capture == nullptr) {
    e->capture_id = 0;
    e->captured_nodes.clear();
    return false;
  }
  // No node: a captured record only names the stream's current dependencies, which a later
  // cudaStreamWaitEvent hands to the waiting stream.
  e->capture_id = s->capture->id;
  e->captured_nodes = s->capture->deps[s];
  return true;
}

cudaError_t capture_event_wait(Stream* s, EventImpl* e, bool* handled) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  Capture* c = e->capture_id != 0 ? find_capture(e->capture_id) : nullptr;
  *handled = c != nullptr || s->capture != nullptr;
  if (!*handled) return cudaSuccess;
  if (c == nullptr) {
    // A capturing stream waiting on work outside its capture: cudaErrorStreamCaptureIsolation,
    // "A dependency would have been created which crosses the capture sequence boundary"
    // (driver_types.h).
    return cudaErrorStreamCaptureIsolation;
  }
  if (s->capture == nullptr) {
    // The fork: s joins the capture; its next work depends on the event's nodes.
    s->capture = c;
    c->deps[s] = e->captured_nodes;
    return cudaSuccess;
  }
  if (s->capture != c) return cudaErrorStreamCaptureMerge;  // "a merge of two independent capture sequences"
  std::vector<GraphNode*>& tips = c->deps[s];
  for (GraphNode* n : e->captured_nodes) {
    if (std::find(tips.begin(), tips.end(), n) == tips.end()) tips.push_back(n);
  }
  return cudaSuccess;
}

bool event_in_active_capture(const EventImpl* e) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  return e->capture_id != 0 && find_capture(e->capture_id) != nullptr;
}

}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, "cudaStreamBeginCapture");
  return api.ret(begin_capture(api, stream, mode));
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000, "cudaStreamBeginCapture_ptsz");
  return api.ret(begin_capture(api, per_thread(stream), mode));
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture");
  return api.ret(end_capture(stream, graph));
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* graph) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000, "cudaStreamEndCapture_ptsz");
  return api.ret(end_capture(per_thread(stream), graph));
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, "cudaStreamIsCapturing");
  return api.ret(is_capturing(stream, status));
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000, "cudaStreamIsCapturing_ptsz");
  return api.ret(is_capturing(per_thread(stream), status));
}

// CUDA 13's signature (cuda_runtime_api.h), the one CUDA 12.3 called cudaStreamGetCaptureInfo_v3;
// its cbid is the 12.3 one.
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps,
                                     const cudaGraphEdgeData** edges, size_t* num_deps) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030, "cudaStreamGetCaptureInfo");
  return api.ret(get_capture_info(stream, status, id, graph, deps, edges, num_deps));
}

cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                          unsigned long long* id, cudaGraph_t* graph, const cudaGraphNode_t** deps,
                                          const cudaGraphEdgeData** edges, size_t* num_deps) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030, "cudaStreamGetCaptureInfo_ptsz");
  return api.ret(get_capture_info(per_thread(stream), status, id, graph, deps, edges, num_deps));
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
               "cudaThreadExchangeStreamCaptureMode");
  if (mode == nullptr) return api.ret(cudaErrorInvalidValue);
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed) {
    return api.ret(cudaErrorInvalidValue);
  }
  std::swap(*mode, t_capture_mode);
  return api.ret(cudaSuccess);
}

}  // extern "C"
