#include "gantt/model/graphs.h"

#include <algorithm>
#include <tuple>

namespace gantt {

std::vector<GraphLaunch> graph_launches(const Model& m, const std::vector<uint32_t>* events) {
  const EventTable& ev = m.events;
  std::vector<uint32_t> rows;
  auto consider = [&](uint32_t e) {
    const EventKind k = ev.kind[e];
    if (ev.graph_id[e] != 0 && (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset))
      rows.push_back(e);
  };
  if (events) {
    for (uint32_t e : *events)
      if (e < ev.size()) consider(e);
  } else {
    for (uint32_t e = 0; e < ev.size(); ++e) consider(e);
  }
  // An unknown start sorts last: it cannot be placed among the nodes that ran.
  auto start_key = [&](uint32_t e) { return ev.start_ns[e] ? ev.start_ns[e] : UINT64_MAX; };
  std::sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    return std::make_tuple(ev.capture[a], ev.graph_id[a], ev.correlation_id[a], start_key(a), ev.graph_node_id[a], a) <
           std::make_tuple(ev.capture[b], ev.graph_id[b], ev.correlation_id[b], start_key(b), ev.graph_node_id[b], b);
  });
  std::vector<GraphLaunch> out;
  for (size_t i = 0; i < rows.size();) {
    const uint32_t first = rows[i];
    GraphLaunch g;
    g.capture = ev.capture[first];
    g.graph_id = ev.graph_id[first];
    g.correlation_id = ev.correlation_id[first];
    for (; i < rows.size(); ++i) {
      const uint32_t e = rows[i];
      if (ev.capture[e] != g.capture || ev.graph_id[e] != g.graph_id || ev.correlation_id[e] != g.correlation_id) break;
      g.nodes.push_back(e);
      if (g.api == kNone) g.api = ev.api[e];
      const uint64_t b = ev.start_ns[e], en = ev.end_ns[e];
      if (b == 0 || en < b) continue;
      g.start_ns = g.start_ns == 0 ? b : std::min(g.start_ns, b);
      g.end_ns = std::max(g.end_ns, en);
    }
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const GraphLaunch& a, const GraphLaunch& b) {
    return std::tie(a.capture, a.start_ns, a.graph_id, a.correlation_id) <
           std::tie(b.capture, b.start_ns, b.graph_id, b.correlation_id);
  });
  return out;
}

std::string graph_label(const Model& m, uint16_t capture, uint64_t graph_id) {
  return graph_label(capture, graph_id, m.captures.size() > 1);
}

std::string graph_label(uint16_t capture, uint64_t graph_id, bool several) {
  std::string s = "graph " + std::to_string(graph_id);
  if (several) s = "c" + std::to_string(capture) + " " + s;
  return s;
}

}  // namespace gantt
