#include "gantt/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "gantt/analysis/intervals.h"
#include "gantt/graphs.h"
#include "gantt/text.h"

namespace gantt::analysis {
namespace {

std::string device_label(const Model& m, uint16_t capture, uint32_t device) {
  std::string l = m.captures.size() > 1 ? "c" + std::to_string(capture) + ".gpu" : "gpu";
  return l + std::to_string(device);
}

uint64_t device_key(uint16_t capture, uint32_t device) { return (uint64_t{capture} << 32) | device; }

// The host API call that overlaps [from, to) the most in this capture, in words. A linear
// scan per gap: only a few gaps are listed, and sorting a million calls costs more.
std::string host_activity(const Model& m, uint16_t capture, uint64_t from, uint64_t to) {
  uint64_t best = 0;
  uint32_t best_row = kNone;
  for (uint32_t a = 0; a < m.api.size(); ++a) {
    if (m.api.capture[a] != capture || m.api.start_ns[a] == 0 || m.api.start_ns[a] >= to || m.api.end_ns[a] <= from)
      continue;
    const uint64_t lo = std::max(from, m.api.start_ns[a]), hi = std::min(to, m.api.end_ns[a]);
    if (hi > lo && hi - lo > best) {
      best = hi - lo;
      best_row = a;
    }
  }
  if (best_row == kNone) return "no host API call recorded";
  const uint64_t pct = (best * 100 + (to - from) / 2) / (to - from);
  // A call that touched the gap only at its edge: "0% of the gap" read as a contradiction.
  const std::string share = pct == 0 ? "<1%" : std::to_string(pct) + "%";
  return std::string(api_display_name(m.string(m.api.name[best_row]))) + " (tid " +
         std::to_string(m.threads.thread_id[m.api.thread[best_row]]) + ") " + share + " of the gap";
}

// One row per (capture, graph id) over its launches.
std::vector<GraphRow> graph_rows(const Model& m) {
  struct Acc {
    GraphRow row;
    std::vector<int64_t> spans, calls;
  };
  std::map<std::pair<uint16_t, uint64_t>, Acc> by_graph;
  for (const GraphLaunch& g : graph_launches(m)) {
    Acc& a = by_graph[{g.capture, g.graph_id}];
    GraphRow& row = a.row;
    if (row.launches == 0) {
      row.key = graph_label(m, g.capture, g.graph_id);
      row.capture = g.capture;
      row.graph_id = g.graph_id;
      row.nodes_min = g.nodes.size();
    }
    ++row.launches;
    row.nodes_per_launch += static_cast<double>(g.nodes.size());
    row.nodes_min = std::min<uint64_t>(row.nodes_min, g.nodes.size());
    row.nodes_max = std::max<uint64_t>(row.nodes_max, g.nodes.size());
    if (g.start_ns != 0 && g.end_ns > g.start_ns) {
      a.spans.push_back(static_cast<int64_t>(g.end_ns - g.start_ns));
      std::vector<Interval> iv;
      for (uint32_t e : g.nodes)
        if (is_gpu_work(m, e)) iv.emplace_back(m.events.start_ns[e], m.events.end_ns[e]);
      merge_intervals(iv);
      row.busy_ns += total_length(iv);
    }
    if (g.api != kNone && m.api.start_ns[g.api] != 0 && m.api.end_ns[g.api] >= m.api.start_ns[g.api])
      a.calls.push_back(static_cast<int64_t>(m.api.end_ns[g.api] - m.api.start_ns[g.api]));
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

StatsReport compute_stats(const Model& m, const StatsOptions& o) {
  StatsReport r;
  r.by = o.by;
  const size_t n = m.events.size();

  // Group keys are resolved once per distinct id (name, range row, stream), not per event.
  std::unordered_map<uint64_t, size_t> slot_of;
  std::vector<std::string> slot_key;
  std::vector<std::vector<int64_t>> slot_samples;
  std::vector<uint64_t> slot_bytes;
  std::vector<std::string> range_path_cache(m.ranges.size());
  std::vector<uint8_t> range_path_done(m.ranges.size(), 0);

  std::map<uint64_t, std::vector<Interval>> compute_iv, copy_iv, all_iv;
  std::vector<int64_t> lq, qs, ex;
  uint64_t first = 0, last = 0;

  for (uint32_t e = 0; e < n; ++e) {
    if (!is_gpu_work(m, e)) continue;
    const uint64_t s = m.events.start_ns[e], t = m.events.end_ns[e];
    const int64_t dur = static_cast<int64_t>(t - s);
    ++r.events;
    r.gpu_time_ns += static_cast<uint64_t>(dur);
    first = first == 0 ? s : std::min(first, s);
    last = std::max(last, t);
    const uint64_t dk = device_key(m.events.capture[e], m.events.device[e]);
    const EventKind kind = m.events.kind[e];
    all_iv[dk].emplace_back(s, t);
    if (kind == EventKind::kMemcpy) copy_iv[dk].emplace_back(s, t);
    else if (kind == EventKind::kKernel || kind == EventKind::kNccl) compute_iv[dk].emplace_back(s, t);

    if (kind == EventKind::kKernel || kind == EventKind::kNccl) {
      const Stages st = m.stages(e);
      if (st.launch_to_queued_ns) lq.push_back(*st.launch_to_queued_ns);
      if (st.queued_to_start_ns) qs.push_back(*st.queued_to_start_ns);
      ex.push_back(dur);
    }

    if (o.by == GroupBy::kGraph) continue;  // graph rows come from the launches, below
    uint64_t id = 0;
    switch (o.by) {
      case GroupBy::kKernel: {
        const uint32_t name = m.events.name[e];
        const uint32_t disp = name < m.demangled.size() && m.demangled[name] != kNone ? m.demangled[name] : name;
        id = kind == EventKind::kMemcpy ? (uint64_t{1} << 40) | m.events.copy_kind[e]
             : kind == EventKind::kMemset ? (uint64_t{2} << 40)
                                          : disp;
        break;
      }
      case GroupBy::kStream:
        id = (uint64_t{m.events.capture[e]} << 48) | (uint64_t{m.events.device[e] & 0xFFFF} << 32) | m.events.stream[e];
        break;
      case GroupBy::kDevice: id = dk; break;
      case GroupBy::kRange: id = m.events.range[e]; break;
      case GroupBy::kGraph: break;
    }
    auto [it, fresh] = slot_of.try_emplace(id, slot_key.size());
    if (fresh) {
      std::string key;
      switch (o.by) {
        case GroupBy::kKernel: key = kernel_key(m, e); break;
        case GroupBy::kStream:
          key = device_label(m, m.events.capture[e], m.events.device[e]) + " stream " + std::to_string(m.events.stream[e]);
          break;
        case GroupBy::kDevice: key = device_label(m, m.events.capture[e], m.events.device[e]); break;
        case GroupBy::kRange: {
          const uint32_t rr = m.events.range[e];
          key = rr == kNone ? "(no range)" : m.range_path_of_range(rr);
          break;
        }
        case GroupBy::kGraph: break;
      }
      slot_key.push_back(std::move(key));
      slot_samples.emplace_back();
      slot_bytes.push_back(0);
    }
    slot_samples[it->second].push_back(dur);
    slot_bytes[it->second] += m.events.bytes[e];
  }
  r.makespan_ns = last > first ? last - first : 0;
  r.first_ns = first;

  // Different ids can share a key (two range rows with one path, two mangled names with one
  // demangled form): merge by key so each key is one row.
  std::map<std::string, size_t> by_key;
  std::vector<std::vector<int64_t>> merged;
  std::vector<uint64_t> merged_bytes;
  std::vector<std::string> merged_key;
  for (size_t i = 0; i < slot_key.size(); ++i) {
    auto [it, fresh] = by_key.try_emplace(slot_key[i], merged.size());
    if (fresh) {
      merged.emplace_back();
      merged_bytes.push_back(0);
      merged_key.push_back(slot_key[i]);
    }
    auto& dst = merged[it->second];
    dst.insert(dst.end(), slot_samples[i].begin(), slot_samples[i].end());
    merged_bytes[it->second] += slot_bytes[i];
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    GroupRow g;
    g.key = merged_key[i];
    g.exec = summarize(merged[i]);
    g.bytes = merged_bytes[i];
    g.share = r.gpu_time_ns ? static_cast<double>(g.exec.total_ns) / static_cast<double>(r.gpu_time_ns) : 0;
    r.groups.push_back(std::move(g));
  }
  std::sort(r.groups.begin(), r.groups.end(), [](const GroupRow& a, const GroupRow& b) {
    return a.exec.total_ns != b.exec.total_ns ? a.exec.total_ns > b.exec.total_ns : a.key < b.key;
  });
  r.groups_total = r.groups.size();
  if (o.top > 0 && r.groups.size() > o.top) r.groups.resize(o.top);
  if (o.by == GroupBy::kGraph) {
    r.graphs = graph_rows(m);
    r.groups_total = r.graphs.size();
    if (o.top > 0 && r.graphs.size() > o.top) r.graphs.resize(o.top);
  }

  const auto stage = [](const char* name, std::vector<int64_t>& v) {
    const Distribution d = summarize(v);
    return StageRow{name, d.count, d.median_ns, d.p95_ns};
  };
  r.stages.push_back(stage("launch->queued", lq));
  r.stages.push_back(stage("queued->start", qs));
  r.stages.push_back(stage("exec", ex));

  for (auto& [dk, all] : all_iv) {
    DeviceRow d;
    d.capture = static_cast<uint16_t>(dk >> 32);
    d.device = static_cast<uint32_t>(dk & 0xFFFFFFFF);
    d.label = device_label(m, d.capture, d.device);
    merge_intervals(all);
    auto& comp = compute_iv[dk];
    auto& copy = copy_iv[dk];
    merge_intervals(comp);
    merge_intervals(copy);
    d.span_ns = all.back().second - all.front().first;
    d.busy_ns = total_length(all);
    d.compute_ns = total_length(comp);
    d.copy_ns = total_length(copy);
    d.overlap_ns = intersection_length(comp, copy);
    d.idle_ns = d.span_ns - d.busy_ns;
    d.busy_pct = d.span_ns ? 100.0 * static_cast<double>(d.busy_ns) / static_cast<double>(d.span_ns) : 0;
    d.overlap_pct = d.copy_ns ? 100.0 * static_cast<double>(d.overlap_ns) / static_cast<double>(d.copy_ns) : 0;
    std::vector<Interval> gaps;
    for (size_t i = 1; i < all.size(); ++i) gaps.emplace_back(all[i - 1].second, all[i].first);
    std::stable_sort(gaps.begin(), gaps.end(), [](const Interval& a, const Interval& b) {
      return a.second - a.first > b.second - b.first;
    });
    if (gaps.size() > o.gaps) gaps.resize(o.gaps);
    for (const Interval& g : gaps)
      d.gaps.push_back({g.first, g.second, host_activity(m, d.capture, g.first, g.second)});
    r.devices.push_back(std::move(d));
  }

  std::map<std::string, NcclRow> nccl;
  for (size_t i = 0; i < m.nccl.size(); ++i) {
    const uint8_t op = m.nccl.op[i];
    if (op == gpuhook::v1::NCCL_GROUP_START || op == gpuhook::v1::NCCL_GROUP_END ||
        op == gpuhook::v1::NCCL_COMM_INIT || op == gpuhook::v1::NCCL_COMM_DESTROY)
      continue;
    std::string name(m.string(m.nccl.name[i]));
    if (name.empty()) name = "nccl op " + std::to_string(op);
    NcclRow& row = nccl[name];
    row.op = name;
    ++row.calls;
    row.bytes += m.nccl.bytes[i];
    const uint32_t ev = m.nccl.event[i];
    if (ev != kNone && m.events.end_ns[ev] > m.events.start_ns[ev] && m.events.start_ns[ev] != 0)
      row.time_ns += m.events.end_ns[ev] - m.events.start_ns[ev];
    else if (m.nccl.end_ns[i] > m.nccl.start_ns[i] && m.nccl.start_ns[i] != 0)
      row.time_ns += m.nccl.end_ns[i] - m.nccl.start_ns[i];
  }
  for (auto& [k, v] : nccl) r.nccl.push_back(v);
  return r;
}

}  // namespace gantt::analysis
