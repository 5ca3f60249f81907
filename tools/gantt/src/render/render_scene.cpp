// The scene builder: device sections (utilization strip, annotation labels, GPU lanes),
// host thread lanes (render_host_lanes.cpp), legend, footer. Narrow events become coverage (lod.h) so the scene's
// size depends on the picture, not on the event count.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "gantt/render/colors.h"
#include "gantt/model/graphs.h"
#include "gantt/render/lod.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/rank_links.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"
#include "gantt/analysis/p2p.h"
#include "gantt/analysis/table.h"
#include "render_builder.h"
#include "render_internal.h"

namespace gantt::detail {

void Builder::bucket_lanes() {
  WidthHistogram widths;
  for (uint32_t e : sel_.events) {
    // A synchronisation is the host waiting: its bar belongs on the host thread's lane (as the
    // blocked call), not over the GPU work it waited for.
    if (m_.events.kind[e] == EventKind::kSync) {
      ++st_.syncs_on_host_lanes;
      continue;
    }
    Lane& lane = lanes_[lane_key(m_, e, o_.lanes)];
    lane.events.push_back(e);
    if (lane.priority == 0) lane.priority = m_.events.priority[e];
    const uint64_t b = m_.events.start_ns[e], en = m_.events.end_ns[e];
    widths.add(b && en >= b ? static_cast<double>(en - b) * f_.px_per_ns : 0.0);
  }
  threshold_px_ = rest_ ? rest_->threshold_px : widths.threshold(o_.max_individual_events);
  st_.individual_threshold_px = threshold_px_;
  if (rest_) {
    st_.syncs_on_host_lanes += rest_->syncs;
    for (const auto& [key, folded] : rest_->lanes) lanes_[key].priority = folded.priority;
  }
  // A launch's nodes normally share its stream's lane; where they do not (--lanes thread with
  // several launchers cannot split one launch, but a real multi-stream graph can), each lane
  // brackets the part it holds.
  graphs_ = graph_launches(m_, &sel_.events);
  for (size_t g = 0; g < graphs_.size(); ++g) {
    std::map<LaneKey, Bracket> parts;
    for (uint32_t e : graphs_[g].nodes) {
      const uint64_t b = m_.events.start_ns[e], en = m_.events.end_ns[e];
      if (!b || en < b) continue;
      Bracket& part = parts[lane_key(m_, e, o_.lanes)];
      part.launch = g;
      part.start_ns = part.start_ns ? std::min(part.start_ns, b) : b;
      part.end_ns = std::max(part.end_ns, en);
    }
    for (auto& [key, part] : parts) lanes_[key].brackets.push_back(part);
  }
}

ChartRest::Device device_busy(const Model& m, const std::vector<uint32_t>& events, const DeviceKey& dev, const Frame& f) {
  const int cols = f.columns();
  ChartRest::Device out{Coverage(cols), Coverage(cols)};
  // Union of busy time per class, streamed in start order straight into per-column
  // coverage: no per-event storage.
  struct Union {
    Coverage& cov;
    uint64_t& busy_ns;
    uint64_t b = 0, e = 0;
    bool open = false;
    void flush(const Frame& f) {
      if (open) add_busy(f, cov, busy_ns, b, e);
    }
    void add(const Frame& f, uint64_t nb, uint64_t ne) {
      if (open && nb <= e) { e = std::max(e, ne); return; }
      flush(f);
      b = nb; e = ne; open = true;
    }
  };
  Union compute{out.compute, out.compute_ns}, copy{out.copy, out.copy_ns};
  for (uint32_t e : events) {
    if (m.events.capture[e] != dev.first || m.events.device[e] != dev.second) continue;
    const uint64_t b = m.events.start_ns[e], en = m.events.end_ns[e];
    if (!b || en < b) continue;
    const BusyClass c = busy_class(m.events.kind[e]);
    if (c == BusyClass::kCompute) compute.add(f, b, en);
    else if (c == BusyClass::kCopy) copy.add(f, b, en);
  }
  compute.flush(f);
  copy.flush(f);
  return out;
}

void Builder::draw_utilization(const DeviceKey& dev, float y) {
  const int cols = f_.columns();
  s_.rect(make_rect(f_.left, y, f_.right - f_.left, kUtilHeight, palette::kLaneBand));
  ChartRest::Device busy{Coverage(cols), Coverage(cols)};
  if (!rest_) busy = device_busy(m_, sel_.events, dev, f_);
  else if (auto it = rest_->devices.find(dev); it != rest_->devices.end()) busy = it->second;
  const Coverage& cc = busy.compute;
  const Coverage& pc = busy.copy;
  const double compute_ns = static_cast<double>(busy.compute_ns), copy_ns = static_cast<double>(busy.copy_ns);
  // Eight heights where the strip is calm, fewer where it would flicker (see levels_within).
  const int levels = cc.levels_within(8, static_cast<size_t>(cols / 4));
  for (const auto& r : cc.runs(levels)) {
    const float h = kUtilHeight * static_cast<float>(r.level) / static_cast<float>(levels);
    s_.rect(make_rect(f_.left + static_cast<float>(r.x0), y + kUtilHeight - h, static_cast<float>(r.x1 - r.x0), h,
                      palette::kComputeUtil));
  }
  const int copy_levels = pc.levels_within(8, static_cast<size_t>(cols / 4));
  for (const auto& r : pc.runs(copy_levels)) {
    const float h = kUtilHeight * static_cast<float>(r.level) / static_cast<float>(copy_levels) / 2;
    s_.rect(make_rect(f_.left + static_cast<float>(r.x0), y, static_cast<float>(r.x1 - r.x0), h, palette::kCopyUtil));
  }
  const double span = std::max(1.0, static_cast<double>(f_.t1 - f_.t0));
  const std::string label = "busy: compute " + std::to_string(static_cast<int>(std::lround(100 * compute_ns / span))) +
                            "%, copy " + std::to_string(static_cast<int>(std::lround(100 * copy_ns / span))) + "%";
  s_.text(make_text(f_.left - kLaneLabelGap, y + kLaneLabelBaseline, label, 10, palette::kMuted, Anchor::kEnd));
}

// Idle-gap labels above the device's strip, greedily in up to three rows so none overlap;
// a label that fits nowhere is left out (and counted in the footer).
float Builder::place_labels(const DeviceKey& dev, float y) {
  std::vector<const Annotation*> gaps;
  for (const Annotation& a : ann_.items)
    if (a.kind == AnnotationKind::kIdleGap && a.capture == dev.first && a.device == dev.second) gaps.push_back(&a);
  if (gaps.empty()) return 0;
  // Longest gaps first get the places.
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const Annotation* a, const Annotation* b) { return a->end_ns - a->start_ns > b->end_ns - b->start_ns; });
  std::vector<std::vector<std::pair<float, float>>> rows(kMaxLabelRows);
  struct Placed { const Annotation* a; int row; float x; };
  std::vector<Placed> placed;
  int rows_used = 0;
  for (const Annotation* a : gaps) {
    const float mid = (f_.x(std::max(a->start_ns, f_.t0)) + f_.x(std::min(a->end_ns, f_.t1))) / 2;
    const float w = static_cast<float>(utf8_clean(a->label).size()) * 5.6f;  // bytes overestimate multibyte
    float x0 = std::clamp(mid - w / 2, f_.left, std::max(f_.left, f_.right - w));
    bool done = false;
    for (int r = 0; r < kMaxLabelRows && !done; ++r) {
      bool free = true;
      for (const auto& [b, e] : rows[r])
        if (!(x0 + w + 6 < b || x0 > e + 6)) { free = false; break; }
      if (!free) continue;
      rows[r].push_back({x0, x0 + w});
      placed.push_back({a, r, x0});
      rows_used = std::max(rows_used, r + 1);
      done = true;
    }
    if (!done) ++st_.labels_dropped;
  }
  const float height = static_cast<float>(rows_used) * kLabelRow + 2;
  for (const Placed& p : placed) {
    const float ty = y + static_cast<float>(rows_used - p.row) * kLabelRow - 2;
    Text t = make_text(p.x, ty, p.a->label, 10, palette::kIdle);
    t.tooltip = p.a->label;
    s_.text(std::move(t));
  }
  return height;
}

// queued -> start, one segment per cause in the order they happened (analysis/waits.h):
// behind its stream, behind an event or the legacy stream, then held by the device.
void Builder::draw_wait(uint32_t e, float ry, float x0) {
  static constexpr Color kCauseColor[analysis::kWaitCauses] = {palette::kQueuedToStart, palette::kWaitDependency,
                                                               palette::kWaitPriority, palette::kWaitDeviceFull,
                                                               palette::kWaitLaunch};
  const uint64_t q = m_.events.queued_ns[e];
  auto it = std::lower_bound(waits_.begin(), waits_.end(), e,
                             [](const analysis::WaitSplit& w, uint32_t v) { return w.event < v; });
  if (it == waits_.end() || it->event != e) {
    s_.rect(make_rect(f_.clipped_x(q), ry + kWaitStripY, x0 - f_.clipped_x(q), kWaitStripHeight, palette::kQueuedToStart));
    return;
  }
  uint64_t t = q;
  for (size_t c = 0; c < analysis::kWaitCauses; ++c) {
    if (it->ns[c] == 0) continue;
    const float a = f_.clipped_x(t), b = std::min(f_.clipped_x(t + it->ns[c]), x0);
    t += it->ns[c];
    if (b <= a) continue;
    Rect r = make_rect(a, ry + kWaitStripY, b - a, kWaitStripHeight, kCauseColor[c]);
    if (b - a >= 4)  // tooltips only where a pointer can find them
      r.tooltip = std::string("queued: ") + format_duration(static_cast<int64_t>(it->ns[c])) + " " +
                  analysis::to_string(static_cast<analysis::WaitCause>(c));
    s_.rect(std::move(r));
  }
}

void Builder::draw_gpu_lane(const LaneKey& key, Lane& lane) {
  const std::vector<PlacedBracket> brackets = place_brackets(lane);
  const bool labelled = std::any_of(brackets.begin(), brackets.end(), [](const PlacedBracket& b) { return !b.label.empty(); });
  const float top = y_;
  const float label_row = labelled ? kBracketLabelRow : 0;
  const float y = top + label_row;  // the lane's wait strip and bars start under the label row
  lane.y = y;
  const int cols = f_.columns();
  Coverage exec(cols), wait(cols);
  if (rest_) {
    if (auto it = rest_->lanes.find(key); it != rest_->lanes.end()) {
      exec.merge(it->second.exec);
      wait.merge(it->second.wait);
      st_.events_aggregated += it->second.aggregated;
    }
  }
  std::vector<uint32_t> individual;
  const EventTable& ev = m_.events;
  for (uint32_t e : lane.events) {
    const uint64_t b = ev.start_ns[e], en = ev.end_ns[e];
    if (!b || en < b) continue;
    const float x0 = f_.x(b), x1 = f_.x(en);
    if (x1 - x0 >= threshold_px_ && individual_budget_ < o_.max_individual_events) {
      individual.push_back(e);
      ++individual_budget_;
      continue;
    }
    fold_narrow(f_, exec, wait, ev.queued_ns[e], b, x0, x1);
    ++st_.events_aggregated;
  }
  // Rows for overlapping GPU work, first fit in start order (the selection's order). Syncs are
  // waits drawn over the work they wait for, as before; they take no row.
  const std::vector<int> row = overlap_rows(m_, individual, kMaxOverlapRows);
  const size_t extra_rows = row.empty() ? 0 : static_cast<size_t>(*std::max_element(row.begin(), row.end()));
  st_.overlap_rows += extra_rows;
  const float height = label_row + kLaneHeight + static_cast<float>(extra_rows) * kOverlapRow;
  s_.rect(make_rect(f_.left, top, f_.right - f_.left, height - kLaneGap, palette::kLaneBand));
  s_.text(make_text(f_.left - kLaneLabelGap, y + kLaneLabelBaseline,
                    fit(lane_label(m_, key, o_.lanes, lane.priority), kLabelWidth - 20), kFontSize, palette::kText,
                    Anchor::kEnd));
  // Coverage first, individual events on top.
  // A lane whose coverage flickers column by column would give one rectangle per column;
  // two levels instead of four keep such lanes to a few hundred rectangles.
  const int levels = exec.runs(4).size() > static_cast<size_t>(cols / 4) ? 2 : 4;
  for (const auto& r : wait.runs(levels)) {
    Rect rc = make_rect(f_.left + static_cast<float>(r.x0), y + kWaitStripY, static_cast<float>(r.x1 - r.x0),
                        kWaitStripHeight, with_alpha(palette::kQueuedToStart, level_alpha(r.level, levels)));
    s_.rect(std::move(rc));
  }
  for (const auto& r : exec.runs(levels)) {
    Rect rc = make_rect(f_.left + static_cast<float>(r.x0), y + kExecBarY, static_cast<float>(r.x1 - r.x0),
                        kExecBarHeight, with_alpha(palette::kComputeUtil, level_alpha(r.level, levels)));
    // Tooltips only where a pointer can find them: they are most of an SVG's bytes.
    if (r.x1 - r.x0 >= 4) {
      const uint64_t tb = f_.t0 + static_cast<uint64_t>(r.x0 / f_.px_per_ns);
      const uint64_t te = f_.t0 + static_cast<uint64_t>(r.x1 / f_.px_per_ns);
      rc.tooltip = std::to_string(r.events) + " event(s) too narrow to draw one by one, busy " +
                   std::to_string(static_cast<int>(std::lround(r.busy * 100))) + "% between " + rel_time(tb, f_.origin) +
                   " and " + rel_time(te, f_.origin);
    }
    s_.rect(std::move(rc));
  }
  for (size_t i = 0; i < individual.size(); ++i) {
    const uint32_t e = individual[i];
    const float x0 = f_.clipped_x(ev.start_ns[e]), x1 = f_.clipped_x(ev.end_ns[e]);
    const float ry = y + static_cast<float>(row[i]) * kOverlapRow;
    const uint64_t launch = m_.launch_ns(e), q = ev.queued_ns[e];
    if (launch && q && q > launch && f_.clipped_x(q) > f_.clipped_x(launch))
      s_.rect(make_rect(f_.clipped_x(launch), ry + kWaitStripY, f_.clipped_x(q) - f_.clipped_x(launch), kWaitStripHeight,
                        palette::kLaunchToQueued));
    if (q && q < ev.start_ns[e] && x0 > f_.clipped_x(q)) draw_wait(e, ry, x0);
    Rect rc = make_rect(x0, ry + kExecBarY, std::max(x1 - x0, 1.0f), kExecBarHeight, exec_color(m_, e));
    rc.stroke = Color{255, 255, 255, 180};
    rc.stroke_width = 0.5f;
    rc.tooltip = event_tooltip(m_, e, f_.origin);
    s_.rect(std::move(rc));
    if (x1 - x0 > kExecLabelMinWidthPx) {
      Text t = make_text(x0 + 3, ry + kExecLabelBaseline, fit(m_.display_name(e), x1 - x0 - 6, 5.6f), 9,
                         Color{255, 255, 255, 255});
      s_.text(std::move(t));
    }
    drawn_[e] = ry;
    ++st_.events_individual;
  }
  draw_brackets(brackets, top, height);
  y_ += height;
}

namespace {
// Our labels are valid UTF-8: their width in characters is their count of lead bytes.
size_t code_points(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string launch_label(const Model& m, const GraphLaunch& g) {
  return graph_label(m, g.capture, g.graph_id) + " \xC2\xB7 " + std::to_string(g.nodes.size()) +
         (g.nodes.size() == 1 ? " node" : " nodes");
}
}  // namespace

std::vector<PlacedBracket> Builder::place_brackets(const Lane& lane) const {
  std::vector<PlacedBracket> placed;
  float label_end = -1e9f;
  for (const Bracket& b : lane.brackets) {
    if (b.end_ns < f_.t0 || b.start_ns > f_.t1) continue;
    const float x0 = f_.x(std::max(b.start_ns, f_.t0)), x1 = f_.x(std::min(b.end_ns, f_.t1));
    if (x1 - x0 < kMinBracketPx || st_.graph_brackets + placed.size() >= kMaxGraphBrackets) continue;
    PlacedBracket p{x0, x1, b.launch, {}};
    // The whole label, else the graph alone, else none: an ellipsis of "graph 3" names nothing
    // (the outline's tooltip always has the whole label).
    const GraphLaunch& g = graphs_[b.launch];
    const float room = x1 - x0 - 2 * kBracketLabelInset;
    const auto fits = [&](const std::string& l) { return static_cast<float>(code_points(l)) * kBracketLabelCharPx <= room; };
    if (x0 + kBracketLabelInset > label_end + kBracketLabelCharPx) {
      if (std::string l = launch_label(m_, g); fits(l)) p.label = std::move(l);
      else if (std::string l2 = graph_label(m_, g.capture, g.graph_id); fits(l2)) p.label = std::move(l2);
    }
    if (!p.label.empty())
      label_end = x0 + kBracketLabelInset + static_cast<float>(code_points(p.label)) * kBracketLabelCharPx;
    placed.push_back(std::move(p));
  }
  return placed;
}

// Each graph launch as an outline around its nodes on this lane, labelled with the graph and
// its node count on the lane's label row, above the bars.
void Builder::draw_brackets(const std::vector<PlacedBracket>& brackets, float top, float height) {
  for (const PlacedBracket& b : brackets) {
    const GraphLaunch& g = graphs_[b.launch];
    Rect rc = make_rect(b.x0, top + 0.5f, b.x1 - b.x0, height - 3, Color{0, 0, 0, 0});
    rc.stroke = palette::kGraph;
    rc.stroke_width = 1;
    rc.tooltip = launch_label(m_, g) + ", launch " + format_duration(static_cast<int64_t>(g.end_ns - g.start_ns)) + " (" +
                 rel_time(g.start_ns, f_.origin) + " \xE2\x80\xA6 " + rel_time(g.end_ns, f_.origin) + "), correlation id " +
                 std::to_string(g.correlation_id);
    s_.rect(std::move(rc));
    if (!b.label.empty())
      s_.text(make_text(b.x0 + kBracketLabelInset, top + kBracketLabelBaseline, b.label, kBracketLabelSize, palette::kGraph));
    ++st_.graph_brackets;
  }
}

void Builder::draw_device_section(const DeviceKey& dev, const std::vector<LaneKey>& lanes) {
  section_y_[dev] = y_;
  s_.text(make_text(12, y_ + 13, fit(device_section_label(m_, dev.first, dev.second), 600), 12, palette::kText,
                    Anchor::kStart, true));
  y_ += kSectionTitleHeight;
  y_ += place_labels(dev, y_);
  draw_utilization(dev, y_);
  const float strip_y = y_;
  // Idle gaps as translucent red spans over the strip.
  for (const Annotation& a : ann_.items) {
    if (a.kind != AnnotationKind::kIdleGap || a.capture != dev.first || a.device != dev.second) continue;
    const float x0 = f_.x(std::max(a.start_ns, f_.t0)), x1 = f_.x(std::min(a.end_ns, f_.t1));
    Rect r = make_rect(x0, strip_y, std::max(1.0f, x1 - x0), kUtilHeight, with_alpha(palette::kIdle, 50));
    r.tooltip = a.label;
    s_.rect(std::move(r));
    ++st_.annotations_drawn;
  }
  y_ += kUtilHeight + 4;
  if (auto mem = memory_.find(dev); mem != memory_.end()) {
    // Memory in use under the utilisation strip, scaled to the device's peak.
    s_.rect(make_rect(f_.left, y_, f_.right - f_.left, kUtilHeight, palette::kLaneBand));
    draw_memory_columns(s_, f_, mem->second, y_ + kUtilHeight, kUtilHeight, memory_by_category_);
    s_.text(make_text(f_.left - kLaneLabelGap, y_ + kLaneLabelBaseline,
                      "memory: peak " + analysis::bytes_text(mem->second.peak_bytes), 10, palette::kMuted, Anchor::kEnd));
    y_ += kUtilHeight + 4;
  }
  y_ += draw_measured_strip(s_, f_, m_, dev.first, dev.second, y_);
  const float lanes_top = y_;
  for (const LaneKey& k : lanes) draw_gpu_lane_within_cap(k, lanes_[k]);
  if (y_ > lanes_top) lane_areas_.emplace_back(lanes_top, y_);
  y_ += kSectionGap;
}

void Builder::draw_gpu_lane_within_cap(const LaneKey& key, Lane& lane) {
  // The chart's size must not grow without bound with the number of streams either.
  if (gpu_lanes_drawn_ >= kMaxGpuLanes) {
    ++st_.lanes_left_out;
    uint64_t events = lane.events.size();
    if (rest_)
      if (auto it = rest_->lanes.find(key); it != rest_->lanes.end()) events = it->second.events;
    st_.events_left_out += events;
    return;
  }
  ++gpu_lanes_drawn_;
  draw_gpu_lane(key, lane);
}

// Queue-delay boxes of one row that overlap (a burst of launches all waiting behind the same
// work) would draw as one smeared band of dashes: they are one box with a count instead.
void Builder::draw_queue_delays(std::vector<QueueDelay>& delays) {
  std::stable_sort(delays.begin(), delays.end(), [](const QueueDelay& a, const QueueDelay& b) {
    return a.y != b.y ? a.y < b.y : a.q < b.q;
  });
  for (size_t i = 0; i < delays.size();) {
    size_t j = i + 1;
    float end = delays[i].x0;
    size_t longest = i;
    while (j < delays.size() && delays[j].y == delays[i].y && delays[j].q <= end + 0.5f) {
      end = std::max(end, delays[j].x0);
      if (delays[j].delay_ns > delays[longest].delay_ns) longest = j;
      ++j;
    }
    const QueueDelay& first = delays[i];
    Rect r = make_rect(first.q, first.y, end - first.q, 7, Color{0, 0, 0, 0});
    r.stroke = palette::kQueueDelay;
    r.stroke_width = 1.5f;
    r.dashed = true;
    const size_t n = j - i;
    r.tooltip = n == 1 ? *first.label
                       : std::to_string(n) + " launches queued past the threshold here, one after another; the longest:\n" +
                             *delays[longest].label;
    s_.rect(std::move(r));
    s_.rect(make_rect(first.q - 1, first.y - 3, 3, 10, palette::kQueueDelay));  // the flag
    if (n > 1 && end - first.q > 40)
      s_.text(make_text(first.q + 4, first.y - 1, std::to_string(n) + " queued", 8, palette::kQueueDelay));
    i = j;
  }
}

void Builder::draw_annotations() {
  std::vector<QueueDelay> delays;
  for (const Annotation& a : ann_.items) {
    if (a.kind == AnnotationKind::kIdleGap) continue;
    auto it = drawn_.find(a.event);
    if (it == drawn_.end()) continue;  // drawn as coverage: counted in the footer only
    const float y = it->second;
    const uint32_t e = a.event;
    const float x0 = f_.clipped_x(m_.events.start_ns[e]), x1 = f_.clipped_x(m_.events.end_ns[e]);
    switch (a.kind) {
      case AnnotationKind::kQueueDelay:
        delays.push_back({y, f_.clipped_x(m_.events.queued_ns[e]), x0,
                          m_.events.start_ns[e] - m_.events.queued_ns[e], &a.label});
        break;
      case AnnotationKind::kLowOccupancy: {
        Rect r = make_rect(x0 + 1, y + 8, 6, 6, palette::kLowOccupancy);
        r.stroke = Color{120, 90, 0, 255};
        r.stroke_width = 0.5f;
        r.tooltip = a.label;
        s_.rect(std::move(r));
        break;
      }
      case AnnotationKind::kOverlap: {
        Rect r = make_rect(x0, y + 20, std::max(1.0f, x1 - x0), 2.5f, palette::kOverlap);
        r.tooltip = a.label;
        s_.rect(std::move(r));
        break;
      }
      case AnnotationKind::kMissedOverlap: {
        Rect r = make_rect(x0, y + 6, std::max(1.0f, x1 - x0), 16, Color{0, 0, 0, 0});
        r.stroke = palette::kMissedOverlap;
        r.stroke_width = 1.5f;
        r.dashed = true;
        r.tooltip = a.label;
        s_.rect(std::move(r));
        break;
      }
      case AnnotationKind::kIdleGap: break;
    }
    ++st_.annotations_drawn;
  }
  draw_queue_delays(delays);
}

// The capture's file name; for a job, what names the job: the scheduler's job id the captures
// share, else the file names' common part ("rank*.gpuh"), with the rank count.
std::string title_of(const Model& m) {
  const auto base = [](std::string p) {
    const size_t sl = p.rfind('/');
    return sl == std::string::npos ? p : p.substr(sl + 1);
  };
  if (m.captures.empty()) return "gantt";
  if (m.captures.size() == 1) return "gantt: " + ellipsize(base(m.captures[0].path), 80);
  const std::string ranks = " (" + std::to_string(m.captures.size()) + " ranks)";
  const std::string& job = m.captures[0].header.job_id();
  bool same_job = !job.empty();
  for (const CaptureInfo& c : m.captures) same_job = same_job && c.header.job_id() == job;
  if (same_job) return "gantt: job " + ellipsize(utf8_clean(job), 40) + ranks;
  std::string prefix = base(m.captures[0].path), suffix = prefix;
  for (const CaptureInfo& c : m.captures) {
    const std::string b = base(c.path);
    size_t p = 0;
    while (p < prefix.size() && p < b.size() && prefix[p] == b[p]) ++p;
    prefix.resize(p);
    size_t s = 0;
    while (s < suffix.size() && s < b.size() && suffix[suffix.size() - 1 - s] == b[b.size() - 1 - s]) ++s;
    suffix = suffix.substr(suffix.size() - s);
  }
  if (prefix.empty() && suffix.size() <= 5) return "gantt: " + ellipsize(base(m.captures[0].path), 60) + " and others" + ranks;
  return "gantt: " + ellipsize(prefix, 60) + "*" + ellipsize(suffix, 30) + ranks;
}

Scene Builder::build() {
  s_ = begin_view(title_of(m_), o_);
  f_ = make_frame(m_, sel_, sel_.window_start_ns, sel_.window_end_ns, s_.width);
  st_.events_selected = rest_ ? rest_->events + rest_->syncs : sel_.events.size();
  y_ = 30;
  if (st_.events_selected == 0) {
    const uint64_t in_capture = rest_ ? rest_->in_capture : m_.events.size();
    const std::string why = in_capture == 0 ? "no GPU activity in this capture"
                                            : "no events match the window and filters (" + std::to_string(in_capture) +
                                                  " events in the capture)";
    s_.text(make_text(static_cast<float>(s_.width) / 2, y_ + 50, why, 16, palette::kMuted, Anchor::kMiddle));
    y_ += 90;
  } else {
    waits_ = rest_ ? rest_->waits : analysis::wait_causes(m_, sel_.events);
    ann_ = rest_ && rest_->annotations ? *rest_->annotations
                                       : annotate(m_, sel_, o_.annotate, kMaxAnnotationsPerKind, &waits_);  // the split is drawn and flagged: computed once
    if (o_.memory_strip) {
      std::vector<analysis::DeviceMemory> report = analysis::memory_report(m_);
      memory_by_category_ = memory_by_category(o_, report);
      for (analysis::DeviceMemory& d : report) {
        const DeviceKey key{d.capture, d.device};
        memory_.emplace(key, std::move(d));
      }
    }
    draw_axis_labels(s_, f_, y_);
    y_ += 22;
    const float grid_top = y_;
    const size_t grid_at = s_.items.size();  // grid lines go under everything below
    bucket_lanes();
    st_.events_selected -= st_.syncs_on_host_lanes;
    std::map<DeviceKey, std::vector<LaneKey>> sections;
    for (uint32_t e : sel_.events)
      if (m_.events.kind[e] != EventKind::kSync) sections[{m_.events.capture[e], m_.events.device[e]}];
    if (rest_ && o_.lanes == LaneMode::kRank) {  // streamed: the devices with work, a rank's lane names none
      for (const auto& [dev, busy] : rest_->devices) sections[dev];
    } else if (rest_) {  // streamed: lanes per stream or per device, so each lane's key names its device
      for (const auto& [key, folded] : rest_->lanes) sections[{key.capture, key.device}];
    }
    if (o_.lanes == LaneMode::kRank) {
      // Each rank's lane right under its own device header and utilisation strip.
      std::map<uint16_t, DeviceKey> last_device;
      for (const auto& [dev, keys] : sections) last_device[dev.first] = dev;
      for (const auto& [key, lane] : lanes_) sections[last_device[key.capture]].push_back(key);
    } else if (o_.lanes != LaneMode::kThread) {
      for (const auto& [key, lane] : lanes_) sections[{key.capture, key.device}].push_back(key);
    }
    for (const auto& [dev, keys] : sections) draw_device_section(dev, keys);
    if (o_.lanes == LaneMode::kThread) {
      const float lanes_top = y_;
      for (auto& [key, lane] : lanes_) draw_gpu_lane_within_cap(key, lane);
      if (y_ > lanes_top) lane_areas_.emplace_back(lanes_top, y_);
      y_ += kSectionGap;
    }
    if (o_.collective_links && m_.captures.size() > 1) {
      // The last arrivals of the collectives, named in a row of their own under the lanes.
      s_.text(make_text(f_.left - 8, y_ + 10, "last to arrive", kFontSize, palette::kText, Anchor::kEnd));
      draw_rank_links(y_ + 10);
      y_ += 18;
    }
    draw_peer_links();
    if (o_.deps) draw_dependencies();
    draw_annotations();
    if (o_.host_lanes) draw_host_lanes();
    draw_flight_triggers(grid_top);
    Scene grid;
    draw_grid(grid, f_, grid_top, y_);
    s_.items.insert(s_.items.begin() + static_cast<std::ptrdiff_t>(grid_at), grid.items.begin(), grid.items.end());
    y_ += 8;
  }
  y_ += draw_legend(s_, y_, s_.width);
  y_ += draw_footer(s_, m_, sel_, o_, st_, ann_, y_);
  s_.height = static_cast<int>(std::ceil(y_ + 8));
  return std::move(s_);
}

// Several ranks: a thin line joins each collective's kernels across the ranks at its end,
// and the last arriver is outlined (ranks.h draws; this says where events were drawn).
// A peer copy is drawn where it ran, on its stream's lane; a dashed line from its bar to the
// header of the other device's section says where the bytes went (or came from).
void Builder::draw_peer_links() {
  constexpr size_t kMaxPeerLinks = 2000;
  std::vector<std::pair<uint32_t, float>> copies;  // in event order: the SVG is the same every run
  for (const auto& [e, lane_y] : drawn_)
    if (m_.events.src_device[e] != kNone) copies.emplace_back(e, lane_y);
  std::sort(copies.begin(), copies.end());
  size_t drawn = 0;
  for (const auto& [e, lane_y] : copies) {
    const uint32_t src = m_.events.src_device[e], dst = m_.events.dst_device[e];
    if (src == kNone || dst == kNone || src == dst) continue;
    const uint32_t here = m_.events.device[e];
    const uint32_t other = here == src ? dst : src;
    auto it = section_y_.find({m_.events.capture[e], other});
    if (it == section_y_.end() || drawn >= kMaxPeerLinks) continue;
    const float x = f_.x(std::clamp((m_.events.start_ns[e] + m_.events.end_ns[e]) / 2, f_.t0, f_.t1));
    const float from = it->second > lane_y ? lane_y + 21 : lane_y + 7;  // the exec bar's edge
    const float to = it->second + 9;  // the section's title line
    Line l = make_line(x, from, x, to, with_alpha(kind_color(EventKind::kMemcpy, m_.events.copy_kind[e]), 170), 1);
    l.dashed = true;
    s_.line(std::move(l));
    ++drawn;
  }
}

// --deps: an arrow from the end of the work an event covered to the start of the work that
// waited for it, and one from each NCCL send to its matched receive on the other rank (from
// when both had started to when the data had arrived), where both are drawn one by one.
void Builder::draw_dependencies() {
  constexpr size_t kMaxArrows = 2000;
  constexpr Color kDep{120, 80, 160, 220}, kP2p{20, 140, 140, 220};
  size_t drawn = 0;
  auto arrow = [&](uint32_t src, uint64_t t0, uint32_t dst, uint64_t t1, Color color) {
    auto a = drawn_.find(src), b = drawn_.find(dst);
    if (a == drawn_.end() || b == drawn_.end() || drawn >= kMaxArrows) return;
    const float x0 = f_.clipped_x(t0), x1 = f_.clipped_x(t1);
    const float y0 = a->second + kExecBarY + kExecBarHeight / 2, y1 = b->second + kExecBarY + kExecBarHeight / 2;
    s_.line(make_line(x0, y0, x1, y1, color, 1.2f));
    const float dir = y1 >= y0 ? -1.f : 1.f;  // arrowhead pointing into the waiting work
    s_.line(make_line(x1, y1, x1 - 4, y1 + dir * 4, color, 1.2f));
    s_.line(make_line(x1, y1, x1 + 4, y1 + dir * 4, color, 1.2f));
    ++drawn;
  };
  for (const auto& [src, dst] : analysis::event_dependencies(m_))
    arrow(src, m_.events.end_ns[src], dst, m_.events.start_ns[dst], kDep);
  for (const analysis::P2pTransfer& t : analysis::match_p2p(m_).transfers)
    if (t.send_event != t.recv_event && t.transfer_ns()) arrow(t.send_event, t.start_ns, t.recv_event, t.end_ns, kP2p);
}

// A flight recorder's dump: a dashed line down the chart where its trigger fired, named.
void Builder::draw_flight_triggers(float top) {
  for (const CaptureInfo& c : m_.captures) {
    const gpuhook::v1::Header& h = c.header;
    const uint64_t t = h.flight_time_ns();
    if (h.flight_trigger().empty() || t < f_.t0 || t > f_.t1) continue;
    const float x = f_.x(t);
    Line l = make_line(x, top - 6, x, y_, palette::kIdle, 1.2f);
    l.dashed = true;
    s_.line(std::move(l));
    Text label = make_text(x + 4, top - 8, "trigger: " + utf8_clean(h.flight_trigger()), 10, palette::kIdle);
    label.tooltip = utf8_clean(h.flight_reason());
    s_.text(std::move(label));
  }
}

void Builder::draw_rank_links(float label_y) {
  draw_collective_links(
      s_, collective_links(m_),
      [&](uint32_t e, float* x0, float* x1, float* y, float* h) {
        // Events drawn as coverage still sit in a drawn lane; events outside the window or in
        // a lane left out have no place.
        if (m_.events.end_ns[e] < f_.t0 || m_.events.start_ns[e] > f_.t1) return false;
        auto it = lanes_.find(lane_key(m_, e, o_.lanes));
        if (it == lanes_.end() || it->second.y <= 0) return false;
        *x0 = f_.x(std::max(m_.events.start_ns[e], f_.t0));
        *x1 = f_.x(std::min(m_.events.end_ns[e], f_.t1));
        *y = it->second.y + 7;  // the exec bar of draw_gpu_lane
        *h = 14;
        return true;
      },
      [&](uint64_t t) { return f_.x(t); }, label_y, lane_areas_);
}

}  // namespace gantt::detail

namespace gantt {

Scene build_scene(const Model& model, const Selection& selection, const RenderOptions& options, RenderStats* stats) {
  RenderStats local;
  detail::Builder b(model, selection, options, stats ? *stats : local);
  return b.build();
}

Scene build_scene(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                  RenderStats* stats) {
  RenderStats local;
  detail::Builder b(model, selection, options, stats ? *stats : local, &rest);
  return b.build();
}

}  // namespace gantt
