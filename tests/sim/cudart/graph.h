// CUDA graphs: the graph and its nodes (built explicitly or captured from streams), the
// capture sequences, and the rules stream capture puts on other calls.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "engine.h"

namespace gpuhook::sim {

struct Graph;

// Its work is a template Op for kernel, memcpy, memset and host nodes; empty, event record
// and event wait nodes have none.
struct GraphNode {
  Graph* graph = nullptr;
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  std::unique_ptr<Op> op;
  EventImpl* event = nullptr;
  std::vector<GraphNode*> deps;  // in edge order
  std::vector<void*> arg_ptrs;   // kernel nodes: kernelParams as GetParams hands them back
};

// A CUDA user object (rt_user_object.cpp), and the references to each that one graph or
// executable graph owns.
struct UserObject;
using UserObjectRefs = std::map<UserObject*, unsigned long long>;
// One more owner of each reference (a clone, an instantiation).
void retain_user_objects(const UserObjectRefs& refs);
// The owner is gone: destructors run for objects no one else holds.
void release_user_objects(UserObjectRefs& refs);

struct Graph {
  uint32_t id = 0;
  std::vector<std::unique_ptr<GraphNode>> nodes;  // in creation order
  UserObjectRefs user_objects;
};

// One capture sequence, from cudaStreamBeginCapture on its origin stream to EndCapture there.
// Other streams join it by waiting on an event recorded in it.
struct Capture {
  Graph* graph = nullptr;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;  // the thread that began it
  unsigned long long id = 0;
  bool invalidated = false;
  // Each stream in the capture: the nodes its next captured work depends on.
  std::map<Stream*, std::vector<GraphNode*>> deps;
};

uint32_t next_graph_id();
GraphNode* add_node(Graph& g, cudaGraphNodeType type, std::unique_ptr<Op> op, std::vector<GraphNode*> deps);
// Refreshes a kernel node's arg_ptrs from its op's copied arguments.
void refresh_kernel_args(GraphNode& node);

// Work enqueued on a capturing stream becomes a node (Engine::enqueue calls this).
CompletionPtr capture_op(Stream& s, std::unique_ptr<Op> op);

// A node of `type` for s's capture (a captured cudaMallocAsync is a memory alloc node, not a
// host node); nullptr when s is not capturing or its capture is invalidated.
GraphNode* capture_node(Stream& s, cudaGraphNodeType type, std::unique_ptr<Op> op);

// Graph memory (rt_graph_memory.cpp). A memory node's work as one launch runs it: its MEMORY2
// record carries the launch's correlation id and stream. Run without this wrapper (a launch
// entering the allocation ahead of its node) the work writes no record.
std::function<void()> graph_memory_work(std::function<void()> node_work, uint32_t correlation_id, uint32_t stream_id);
// cudaMallocAsync / cudaFreeAsync on a capturing stream: a memory alloc or free node, as CUDA
// captures them; nothing is allocated or recorded until a launch reaches the node.
cudaError_t capture_malloc(Stream& s, size_t bytes, void** ptr);
cudaError_t capture_free(Stream& s, void* ptr);

// The rules stream capture puts on other calls; each returns the error the call fails with
// (cudaSuccess when allowed) and invalidates the capture it broke.
// Work enqueued on s: refused on an invalidated capture, and on the legacy stream while a
// blocking stream captures.
cudaError_t capture_refusal(Stream* s);
// Waiting for s (synchronize, query, a synchronous copy): refused while s captures.
cudaError_t capture_refusal_sync(Stream* s);
// cudaDeviceSynchronize: refused while anything captures.
cudaError_t capture_refusal_device_sync();
// A "potentially unsafe" call (cudaMalloc, cudaFree), refused by the thread's capture mode.
cudaError_t capture_refusal_unsafe();

// cudaEventRecord on a capturing stream: the event now stands for the stream's capture
// dependencies. False when s is not capturing (record it as usual).
bool capture_event_record(EventImpl* e, Stream* s);
// cudaStreamWaitEvent on an event recorded in a capture: s joins that capture, or adds the
// event's nodes to its dependencies. *handled false: an ordinary wait.
cudaError_t capture_event_wait(Stream* s, EventImpl* e, bool* handled);
// cudaEventQuery/Synchronize on an event last recorded in a capture in progress.
bool event_in_active_capture(const EventImpl* e);

// The graph a cudaGraph_t handle stands for.
inline Graph* graph_of(cudaGraph_t g) { return reinterpret_cast<Graph*>(g); }

}  // namespace gpuhook::sim
