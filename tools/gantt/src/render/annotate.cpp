#include "gantt/render/annotate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "gantt/analysis/waits.h"
#include "gantt/model/occupancy.h"
#include "gantt/model/text.h"

namespace gantt {

const char* to_string(AnnotationKind kind) {
  switch (kind) {
    case AnnotationKind::kQueueDelay: return "queue delay";
    case AnnotationKind::kLowOccupancy: return "low occupancy";
    case AnnotationKind::kOverlap: return "copy overlapped compute";
    case AnnotationKind::kMissedOverlap: return "copy not overlapped";
    case AnnotationKind::kIdleGap: return "idle gap";
  }
  return "?";
}

bool is_blocking_call(std::string_view n) {
  if (n.find("Synchronize") != std::string_view::npos) return true;  // cuda*/cu*Synchronize
  // Synchronous copies and memsets: the name has no "Async" and it is a copy/memset entry.
  const bool copy = n.starts_with("cudaMemcpy") || n.starts_with("cuMemcpy") || n.starts_with("cudaMemset") ||
                    n.starts_with("cuMemset");
  if (copy && n.find("Async") == std::string_view::npos) return true;
  return n == "cudaFree" || n == "cuMemFree" || n == "cuMemFree_v2" || n == "cudaEventQuery" ||
         n == "cudaStreamQuery";
}

int64_t idle_gap_threshold_ns(const AnnotateOptions& o, uint64_t window_ns) {
  if (o.idle_gap_ns >= 0) return o.idle_gap_ns;
  return std::max<int64_t>(kMinIdleGapNs, static_cast<int64_t>(window_ns / 50));
}

namespace {

struct Interval { uint64_t b, e; };

uint64_t overlap_with(const std::vector<Interval>& u, uint64_t b, uint64_t e) {
  auto it = std::upper_bound(u.begin(), u.end(), b, [](uint64_t v, const Interval& i) { return v < i.e; });
  uint64_t total = 0;
  for (; it != u.end() && it->b < e; ++it) total += std::min(e, it->e) - std::max(b, it->b);
  return total;
}

bool is_compute(EventKind k) { return k == EventKind::kKernel || k == EventKind::kNccl; }

// The host function (cudaLaunchHostFunc, cudaStreamAddCallback) that ran through most of the
// gap on its device: while one runs, its stream waits for the host, and so may the device.
uint32_t host_function_over(const Model& m, const std::vector<uint32_t>& host_functions, uint64_t b, uint64_t e) {
  uint32_t best = kNone;
  uint64_t best_cover = 0;
  for (uint32_t h : host_functions) {
    const uint64_t hb = m.events.start_ns[h], he = m.events.end_ns[h];
    if (hb >= e || he <= b) continue;
    const uint64_t cover = std::min(e, he) - std::max(b, hb);
    if (cover > best_cover) {
      best = h;
      best_cover = cover;
    }
  }
  return best_cover * 2 >= e - b ? best : kNone;
}

// What the launching thread of `next` was doing during [b, e): the host call that covers
// most of the gap, preferring blocking calls.
std::string host_activity(const Model& m, uint32_t next, uint64_t b, uint64_t e) {
  const uint32_t a = next == kNone ? kNone : m.events.api[next];
  GapHost h;
  if (a != kNone) {
    h.launch_known = true;
    h.launch_start = m.api.start_ns[a];
    const uint32_t thread = m.api.thread[a];
    bool best_blocking = false;
    for (uint32_t i = 0; i < m.api.size(); ++i) {
      if (m.api.thread[i] != thread || m.api.start_ns[i] >= e || m.api.end_ns[i] <= b || m.api.end_ns[i] == 0) continue;
      const uint64_t cover = std::min(e, m.api.end_ns[i]) - std::max(b, m.api.start_ns[i]);
      const bool blocking = is_blocking_call(m.string(m.api.name[i]));
      if (std::tie(blocking, cover) > std::tie(best_blocking, h.best_cover)) {
        h.found = true;
        h.best_call = m.string(m.api.name[i]);
        h.best_cover = cover;
        best_blocking = blocking;
      }
    }
  }
  return gap_host_text(h, b, e);
}

}  // namespace

std::vector<bool> explained_gaps(const std::vector<uint64_t>& lengths) {
  std::vector<size_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<bool> explain(lengths.size(), false);
  for (size_t i = 0; i < order.size() && i < kExplainedGaps; ++i) explain[order[i]] = true;
  return explain;
}

std::string gap_host_text(const GapHost& h, uint64_t b, uint64_t e) {
  if (!h.launch_known) return "host thread unknown";
  if (h.found && h.best_cover * 4 >= e - b) return "host in " + utf8_clean(api_display_name(h.best_call));
  if (h.launch_start > b) return "host launched late (busy outside CUDA)";
  return "host not in a CUDA call";
}

std::string idle_gap_label(uint64_t b, uint64_t e, const std::string& explanation) {
  std::string label = "idle " + format_duration(static_cast<int64_t>(e - b));
  if (!explanation.empty()) label += " \xE2\x80\x94 " + explanation;
  return label;
}

std::string overlap_label(uint64_t overlap_ns, uint64_t b, uint64_t e) {
  const int percent = e > b ? static_cast<int>(std::lround(100.0 * double(overlap_ns) / double(e - b))) : 100;
  return "overlap " + std::to_string(percent) + "%";
}

void sort_items(std::vector<Annotation>& items) {
  std::stable_sort(items.begin(), items.end(), [](const Annotation& a, const Annotation& b) {
    return std::tie(a.kind, a.start_ns, a.event) < std::tie(b.kind, b.start_ns, b.event);
  });
}

Annotations annotate(const Model& m, const Selection& sel, const AnnotateOptions& o, size_t max_per_kind,
                     const std::vector<analysis::WaitSplit>* given_waits) {
  Annotations out;
  if (!o.enabled) return out;
  const EventTable& ev = m.events;
  auto keep = [&](Annotation a) {
    const size_t k = static_cast<size_t>(a.kind);
    if (out.count[k]++ < max_per_kind) out.items.push_back(std::move(a));
  };

  // Per-event rules. A queue delay is the part of queued -> start that is not the program's
  // own ordering (its stream's previous work, its events): a kernel that simply follows its
  // predecessor is not flagged, one that waited for room, for higher-priority work or for
  // its launch is (analysis/waits.h).
  std::vector<analysis::WaitSplit> computed;
  if (!given_waits) computed = analysis::wait_causes(m, sel.events);
  const std::vector<analysis::WaitSplit>& waits = given_waits ? *given_waits : computed;
  auto split_of = [&](uint32_t e) -> const analysis::WaitSplit* {
    auto it = std::lower_bound(waits.begin(), waits.end(), e,
                               [](const analysis::WaitSplit& w, uint32_t v) { return w.event < v; });
    return it != waits.end() && it->event == e ? &*it : nullptr;
  };
  // Per capture, made when the first kernel of low occupancy asks.
  std::vector<std::optional<KernelOccupancy>> occupancy(m.captures.size());
  auto fits_at_once = [&](uint32_t e) {
    std::optional<KernelOccupancy>& k = occupancy[ev.capture[e]];
    if (!k) k.emplace(m.captures[ev.capture[e]].devices);
    const Occupancy& occ = k->of(ev.device[e], ev.block[e], ev.registers_per_thread[e],
                                 uint64_t{ev.static_smem_bytes[e]} + ev.dynamic_smem_bytes[e]);
    return k->fits_at_once(ev.device[e], occ, dim3_count(ev.grid[e]));
  };
  for (uint32_t e : sel.events) {
    if (const analysis::WaitSplit* w = split_of(e);
        w && static_cast<int64_t>(w->unexplained_by_program()) > o.queue_delay_ns) {
      const analysis::WaitCause cause = w->largest_not_own();
      std::string label = "queued " + format_duration(static_cast<int64_t>(w->total())) + ": " +
                          format_duration(static_cast<int64_t>(w->ns[static_cast<size_t>(cause)])) + " " +
                          analysis::to_string(cause);
      keep({AnnotationKind::kQueueDelay, e, ev.capture[e], ev.device[e], ev.queued_ns[e], ev.start_ns[e], std::move(label)});
    }
    if (is_compute(ev.kind[e]) && !std::isnan(ev.occupancy[e]) && ev.occupancy[e] < o.low_occupancy &&
        !fits_at_once(e)) {
      keep({AnnotationKind::kLowOccupancy, e, ev.capture[e], ev.device[e], ev.start_ns[e], ev.end_ns[e],
            "occupancy " + std::to_string(static_cast<int>(std::lround(ev.occupancy[e] * 100))) + "% (" +
                to_string(ev.occupancy_limit[e]) + ")"});
    }
  }

  // Per-device rules over the union of activity.
  // Host functions are not device activity: a gap they fill is idle device time, and they
  // explain it.
  std::map<std::pair<uint16_t, uint32_t>, std::vector<uint32_t>> by_device, host_functions;
  for (uint32_t e : sel.events) {
    if (ev.kind[e] == EventKind::kSync || !ev.start_ns[e] || ev.end_ns[e] < ev.start_ns[e]) continue;
    (ev.kind[e] == EventKind::kHostFunc ? host_functions : by_device)[{ev.capture[e], ev.device[e]}].push_back(e);
  }
  const uint64_t window = sel.window_end_ns - sel.window_start_ns;
  const int64_t idle_ns = idle_gap_threshold_ns(o, window);
  for (const auto& [key, events] : by_device) {
    // `events` are in start order, so the unions are built in one streaming pass and only
    // the merged intervals are stored (a busy device merges thousands of launches into one).
    std::vector<Interval> compute, all;
    auto extend = [](std::vector<Interval>& u, uint64_t b, uint64_t e) {
      if (!u.empty() && b <= u.back().e) u.back().e = std::max(u.back().e, e);
      else u.push_back({b, e});
    };
    for (uint32_t e : events) {
      extend(all, ev.start_ns[e], ev.end_ns[e]);
      if (is_compute(ev.kind[e])) extend(compute, ev.start_ns[e], ev.end_ns[e]);
    }
    // When each kernel could have started: launched (or queued) and its stream's previous work
    // done. A kernel ready while a copy ran alone, that started only after it, is compute the
    // GPU could have overlapped with the copy and did not. Suffix minima over the kernels in
    // start order answer "was any kernel starting after t ready before t" in a binary search.
    std::vector<std::pair<uint64_t, uint64_t>> ready_start;  // (start, ready) of compute, start order
    {
      std::map<uint32_t, uint64_t> stream_end;
      for (uint32_t e : events) {
        uint64_t& prev = stream_end[ev.stream[e]];
        if (is_compute(ev.kind[e])) {
          const uint64_t issued = ev.queued_ns[e] ? ev.queued_ns[e] : m.launch_ns(e);
          if (issued) ready_start.emplace_back(ev.start_ns[e], std::max(issued, prev));
        }
        prev = std::max(prev, ev.end_ns[e]);
      }
    }
    std::vector<uint64_t> min_ready(ready_start.size() + 1, UINT64_MAX);
    for (size_t i = ready_start.size(); i-- > 0;) min_ready[i] = std::min(min_ready[i + 1], ready_start[i].second);
    const auto compute_waited = [&](uint64_t copy_start, uint64_t copy_end) {
      const size_t i = static_cast<size_t>(std::lower_bound(ready_start.begin(), ready_start.end(),
                                                            std::make_pair(copy_end, uint64_t{0})) -
                                           ready_start.begin());
      return min_ready[i] < copy_end && min_ready[i] + (copy_end - copy_start) / 2 < copy_end;
    };
    for (uint32_t e : events) {
      if (ev.kind[e] != EventKind::kMemcpy) continue;
      const uint64_t b = ev.start_ns[e], en = ev.end_ns[e];
      const uint64_t ov = overlap_with(compute, b, en);
      if (ov > 0) {
        keep({AnnotationKind::kOverlap, e, key.first, key.second, b, en, overlap_label(ov, b, en)});
        continue;
      }
      // Serialised: a synchronous copy (the host blocked in it, so nothing else could be
      // launched) with compute right before or after, or compute that was ready on another
      // stream and waited for the copy. A pipeline's first copy and last copy have nothing
      // to overlap with and are not flagged.
      const uint64_t adj = static_cast<uint64_t>(std::max<int64_t>(0, o.adjacent_ns));
      const bool before = overlap_with(compute, b > adj ? b - adj : 0, b) > 0;
      const bool after = overlap_with(compute, en, en + adj) > 0;
      const uint32_t a = ev.api[e];
      const bool blocking = a != kNone && is_blocking_call(api_display_name(m.string(m.api.name[a])));
      if (blocking && (before || after))
        keep({AnnotationKind::kMissedOverlap, e, key.first, key.second, b, en,
              "copy not overlapped: a synchronous copy, the host waited in it and launched nothing"});
      else if (compute_waited(b, en))
        keep({AnnotationKind::kMissedOverlap, e, key.first, key.second, b, en,
              "copy not overlapped: a kernel on another stream was ready and waited for it"});
    }
    struct Gap { uint64_t b, e; };
    std::vector<Gap> gaps;
    for (size_t i = 1; i < all.size(); ++i)
      if (static_cast<int64_t>(all[i].b - all[i - 1].e) > idle_ns) gaps.push_back({all[i - 1].e, all[i].b});
    // Finding the host call behind a gap scans the host calls: only the longest gaps get
    // that label (the chart cannot show more labels than that anyway).
    std::vector<uint64_t> lengths;
    for (const Gap& g : gaps) lengths.push_back(g.e - g.b);
    const std::vector<bool> explain = explained_gaps(lengths);
    for (size_t g = 0; g < gaps.size(); ++g) {
      const uint64_t gb = gaps[g].b, ge = gaps[g].e;
      // The event that ended the gap (events are in start order), to find which host
      // thread the device was waiting for.
      auto it = std::lower_bound(events.begin(), events.end(), ge,
                                 [&](uint32_t e, uint64_t t) { return ev.start_ns[e] < t; });
      const uint32_t next = (it != events.end() && ev.start_ns[*it] == ge) ? *it : kNone;
      std::string why;
      if (explain[g]) {
        const uint32_t h = host_function_over(m, host_functions[key], gb, ge);
        why = h != kNone ? "host function " + utf8_clean(std::string(m.display_name(h))) + " running"
                         : host_activity(m, next, gb, ge);
      }
      std::string label = idle_gap_label(gb, ge, why);
      keep({AnnotationKind::kIdleGap, next, key.first, key.second, gb, ge, std::move(label)});
    }
  }
  sort_items(out.items);
  return out;
}

}  // namespace gantt
