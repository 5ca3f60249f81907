// CUDA graph launches, grouped from the events' graph columns (model.h).
//
// CUPTI writes no record for a graph launch itself: each node that ran (kernel, copy, memset)
// is its own activity record carrying the graph's id (graphId), the node's id (graphNodeId)
// and the correlation id of the cudaGraphLaunch call that ran it, shared by every node of that
// launch. So a launch is the events sharing (capture, graph_id, correlation_id), and the host
// call that launched it is the API row those events join to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"

namespace gantt {

struct GraphLaunch {
  uint16_t capture = 0;
  uint64_t graph_id = 0;
  uint32_t correlation_id = 0;
  uint32_t api = kNone;         // the cudaGraphLaunch call (ApiTable row), kNone when not recorded
  std::vector<uint32_t> nodes;  // its events in node order: start time (unknown last), graph_node_id, row
  uint64_t start_ns = 0;        // first known start of a node; 0 when none is known
  uint64_t end_ns = 0;          // last known end of a node
};

inline bool is_graph_node(const Model& m, uint32_t event) { return m.events.graph_id[event] != 0; }

// Every graph launch among `events` (every event of the model when null), ordered by
// (capture, start_ns, graph_id, correlation_id). Only kernels, copies and memsets are nodes.
std::vector<GraphLaunch> graph_launches(const Model& model, const std::vector<uint32_t>* events = nullptr);

// "graph 3", or "c1 graph 3" when the model holds several captures (ids are per process).
std::string graph_label(const Model& model, uint16_t capture, uint64_t graph_id);
// The same label for a job of one capture or `several`.
std::string graph_label(uint16_t capture, uint64_t graph_id, bool several);

}  // namespace gantt
