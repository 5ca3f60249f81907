#include "gantt/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/summary.h"
#include "gantt/model/graphs.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace {

// Every launch's figures from the loaded model.
std::vector<GraphLaunchFigures> graph_figures(const Model& m) {
  std::vector<GraphLaunchFigures> out;
  for (const GraphLaunch& g : graph_launches(m)) {
    GraphLaunchFigures f;
    f.capture = g.capture;
    f.graph_id = g.graph_id;
    f.nodes = g.nodes.size();
    f.start_ns = g.start_ns;
    f.end_ns = g.end_ns;
    std::vector<Interval> iv;
    for (uint32_t e : g.nodes)
      if (is_gpu_work(m, e)) iv.emplace_back(m.events.start_ns[e], m.events.end_ns[e]);
    merge_intervals(iv);
    f.busy_ns = total_length(iv);
    if (g.api != kNone && m.api.start_ns[g.api] != 0 && m.api.end_ns[g.api] >= m.api.start_ns[g.api])
      f.call_ns = static_cast<int64_t>(m.api.end_ns[g.api] - m.api.start_ns[g.api]);
    out.push_back(f);
  }
  return out;
}

}  // namespace

std::string unusable_capture(const Model& m) {
  for (const CaptureInfo& c : m.captures)
    if (c.header.format_version() == 0)
      return c.path + ": byte 0: no header (an empty file, or the process died before its first flush)";
  return {};
}

const char* to_string(GroupBy by) {
  switch (by) {
    case GroupBy::kKernel: return "kernel";
    case GroupBy::kStream: return "stream";
    case GroupBy::kDevice: return "device";
    case GroupBy::kRange: return "range";
    case GroupBy::kGraph: return "graph";
  }
  return "?";
}

bool is_gpu_work(const Model& m, uint32_t e) {
  const EventKind k = m.events.kind[e];
  return k != EventKind::kSync && k != EventKind::kHostFunc && m.events.start_ns[e] != 0 && m.events.end_ns[e] > m.events.start_ns[e];
}

namespace v1 = gpuhook::v1;

bool async_copy_call(std::string_view api_name) { return api_name.find("Async") != std::string_view::npos; }

CopyHostWait copy_host_wait(bool async_call, uint8_t copy_kind, bool async, bool pageable, bool graph_node) {
  // A graph launch only queues the graph; CUPTI gives its memcpy nodes the cudaGraphLaunch
  // call's correlation id, and that call is no cudaMemcpy. Otherwise a call waited for its
  // copy when neither its name nor CUPTI's flag says it was asynchronous (traces imported
  // from other tools have no flag, and the call's name decides).
  const bool synchronous_call = !graph_node && !async_call && !async;
  // CUDA's "API synchronization behavior": cudaMemcpy from device memory to device memory
  // performs no host-side synchronisation, and cudaMemcpyPeer is asynchronous to the host.
  const bool device_only = copy_kind == v1::COPY_DTOD || copy_kind == v1::COPY_PTOP;
  if (synchronous_call && !device_only) return CopyHostWait::kSynchronousCall;
  // Pageable memory is staged through a pinned buffer before the call returns, even for
  // cudaMemcpyAsync.
  if (pageable) return CopyHostWait::kPageableMemory;
  return CopyHostWait::kNone;
}

CopyHostWait copy_host_wait(bool async_call, const v1::Memcpy& r) {
  return copy_host_wait(async_call, static_cast<uint8_t>(r.copy_kind()), r.async(),
                        r.src_kind() == v1::MEMORY_PAGEABLE || r.dst_kind() == v1::MEMORY_PAGEABLE, r.graph_id() != 0);
}

CopyHostWait copy_host_wait(const Model& m, uint32_t e) {
  const uint32_t api = m.events.api[e];
  const uint8_t flags = m.events.copy_flags[e];
  return copy_host_wait(api != kNone && async_copy_call(m.string(m.api.name[api])), m.events.copy_kind[e],
                        (flags & kCopyAsync) != 0, (flags & kCopyPageable) != 0, m.events.graph_id[e] != 0);
}

std::string kernel_key(const Model& m, uint32_t e) {
  switch (m.events.kind[e]) {
    case EventKind::kMemcpy: return std::string("[memcpy ") + copy_kind_name(m.events.copy_kind[e]) + "]";
    case EventKind::kMemset: return "[memset]";
    default: return std::string(m.display_name(e));
  }
}

Distribution summarize(std::vector<int64_t>& s) {
  Distribution d;
  if (s.empty()) return d;
  // Selection instead of a full sort: a million samples per stage is common, and only the
  // median and the 95th percentile are needed.
  d.count = s.size();
  d.min_ns = s[0];
  d.max_ns = s[0];
  for (int64_t v : s) {
    d.total_ns += static_cast<uint64_t>(v);
    d.min_ns = std::min(d.min_ns, v);
    d.max_ns = std::max(d.max_ns, v);
  }
  d.mean_ns = static_cast<double>(d.total_ns) / static_cast<double>(d.count);
  const auto nth = [&](size_t k) {
    std::nth_element(s.begin(), s.begin() + static_cast<ptrdiff_t>(k), s.end());
    return s[k];
  };
  // Nearest rank, as noise.h's percentile().
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(0.95 * static_cast<double>(s.size()))));
  d.p95_ns = nth(rank - 1);
  const size_t mid = s.size() / 2;
  const int64_t upper = nth(mid);
  if (s.size() % 2) {
    d.median_ns = static_cast<double>(upper);
  } else {
    const int64_t lower = *std::max_element(s.begin(), s.begin() + static_cast<ptrdiff_t>(mid));
    d.median_ns = (static_cast<double>(lower) + static_cast<double>(upper)) / 2;
  }
  return d;
}

// One row per (capture, graph id) over its launches.
std::vector<GraphRow> graph_rows(const std::vector<GraphLaunchFigures>& launches, bool several) {
  struct Acc {
    GraphRow row;
    std::vector<int64_t> spans, calls;
  };
  std::map<std::pair<uint16_t, uint64_t>, Acc> by_graph;
  for (const GraphLaunchFigures& g : launches) {
    Acc& a = by_graph[{g.capture, g.graph_id}];
    GraphRow& row = a.row;
    if (row.launches == 0) {
      row.key = graph_label(g.capture, g.graph_id, several);
      row.capture = g.capture;
      row.graph_id = g.graph_id;
      row.nodes_min = g.nodes;
    }
    ++row.launches;
    row.nodes_per_launch += static_cast<double>(g.nodes);
    row.nodes_min = std::min<uint64_t>(row.nodes_min, g.nodes);
    row.nodes_max = std::max<uint64_t>(row.nodes_max, g.nodes);
    if (g.start_ns != 0 && g.end_ns > g.start_ns) {
      a.spans.push_back(static_cast<int64_t>(g.end_ns - g.start_ns));
      row.busy_ns += g.busy_ns;
    }
    if (g.call_ns >= 0) a.calls.push_back(g.call_ns);
  }
  std::vector<GraphRow> rows;
  for (auto& [key, a] : by_graph) {
    GraphRow& row = a.row;
    row.nodes_per_launch /= static_cast<double>(row.launches);
    row.span = summarize(a.spans);
    row.launch_call = summarize(a.calls);
    row.busy_pct = row.span.total_ns ? 100.0 * static_cast<double>(row.busy_ns) / static_cast<double>(row.span.total_ns) : 0;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const GraphRow& a, const GraphRow& b) {
    return a.span.total_ns != b.span.total_ns ? a.span.total_ns > b.span.total_ns : a.key < b.key;
  });
  return rows;
}

StatsReport compute_stats(const Model& m, const StatsOptions& o) {
  // The same path as a report from summary files: what a job's summaries say matches what
  // its captures say.
  StatsReport r = report(summarize(m, {o.by}, o.gaps), o);
  if (o.by == GroupBy::kGraph) {
    r.graphs = graph_rows(graph_figures(m), m.captures.size() > 1);
    r.groups_total = r.graphs.size();
    if (o.top > 0 && r.graphs.size() > o.top) r.graphs.resize(o.top);
  }
  return r;
}

}  // namespace gantt::analysis
