// The scene builder: device sections (utilization strip, annotation labels, GPU lanes),
// host thread lanes, legend, footer. Narrow events become coverage (lod.h) so the scene's
// size depends on the picture, not on the event count.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "gantt/colors.h"
#include "gantt/graphs.h"
#include "gantt/lod.h"
#include "gantt/ranks.h"
#include "gantt/render.h"
#include "gantt/text.h"
#include "render_internal.h"

namespace gantt {

using namespace detail;

namespace {

constexpr float kLaneHeight = 24;   // wait strip 6 + exec 16 + gaps
constexpr float kUtilHeight = 22;
constexpr float kLabelRow = 12;
constexpr int kMaxLabelRows = 3;
constexpr size_t kMaxHostBars = 3000;
constexpr size_t kMaxRanges = 3000;
constexpr size_t kMaxGpuLanes = 48;
constexpr size_t kMaxHostLanes = 32;
// Events that overlap on one lane (independent branches of a CUDA graph, concurrent kernels
// in --lanes device) get rows of their own, or the later one would hide the earlier one.
constexpr float kOverlapRow = 16;
constexpr int kMaxOverlapRows = 4;
// A bracket narrower than this says nothing its nodes do not; its label needs more room.
constexpr float kMinBracketPx = 3;
constexpr float kMinBracketLabelPx = 24;
constexpr size_t kMaxGraphBrackets = 3000;

// One graph launch's nodes on one lane.
struct Bracket {
  uint64_t start_ns = 0, end_ns = 0;
  size_t launch = 0;  // index into Builder::graphs_
};

struct Lane {
  std::vector<uint32_t> events;
  std::vector<Bracket> brackets;
  int32_t priority = 0;
  float y = 0;
};

using DeviceKey = std::pair<uint16_t, uint32_t>;

std::string fit(std::string_view s, float width_px, float char_px = kCharWidth) {
  return ellipsize(s, static_cast<size_t>(std::max(0.0f, width_px / char_px)));
}

uint8_t level_alpha(int level, int levels) { return static_cast<uint8_t>(60 + 180 * level / levels); }

class Builder {
 public:
  Builder(const Model& m, const Selection& sel, const RenderOptions& o, RenderStats& st)
      : m_(m), sel_(sel), o_(o), st_(st) {}

  Scene build();

 private:
  void bucket_lanes();
  void draw_device_section(const DeviceKey& dev, const std::vector<LaneKey>& lanes);
  void draw_utilization(const DeviceKey& dev, float y);
  void draw_gpu_lane(const LaneKey& key, Lane& lane);
  void draw_brackets(const Lane& lane, float y, float height);
  void draw_annotations();
  void draw_rank_links();
  void draw_peer_links();
  void draw_host_lanes();
  float place_labels(const DeviceKey& dev, float y);

  const Model& m_;
  const Selection& sel_;
  const RenderOptions& o_;
  RenderStats& st_;
  Scene s_;
  Frame f_;
  float y_ = 0;
  double threshold_px_ = 1;
  size_t individual_budget_ = 0;
  std::map<LaneKey, Lane> lanes_;
  std::vector<GraphLaunch> graphs_;
  std::unordered_map<uint32_t, float> drawn_;  // individually drawn event -> lane y
  std::map<DeviceKey, float> section_y_;       // each device section's top
  Annotations ann_;
  size_t gpu_lanes_drawn_ = 0;
};

void Builder::bucket_lanes() {
  WidthHistogram widths;
  for (uint32_t e : sel_.events) {
    Lane& lane = lanes_[lane_key(m_, e, o_.lanes)];
    lane.events.push_back(e);
    if (lane.priority == 0) lane.priority = m_.events.priority[e];
    const uint64_t b = m_.events.start_ns[e], en = m_.events.end_ns[e];
    widths.add(b && en >= b ? static_cast<double>(en - b) * f_.px_per_ns : 0.0);
  }
  threshold_px_ = widths.threshold(o_.max_individual_events);
  st_.individual_threshold_px = threshold_px_;
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

void Builder::draw_utilization(const DeviceKey& dev, float y) {
  const int cols = f_.columns();
  s_.rect(make_rect(f_.left, y, f_.right - f_.left, kUtilHeight, palette::kLaneBand));
  // Union of busy time per class, streamed in start order (the selection's order) straight
  // into per-column coverage: no per-event storage.
  struct Union {
    Coverage cov;
    uint64_t b = 0, e = 0;
    bool open = false;
    double busy_ns = 0;
    void flush(const Frame& f) {
      if (!open) return;
      const uint64_t lo = std::max(b, f.t0), hi = std::min(e, f.t1);
      if (hi > lo) {
        cov.add(f.x(lo) - f.left, f.x(hi) - f.left);
        busy_ns += static_cast<double>(hi - lo);
      }
    }
    void add(const Frame& f, uint64_t nb, uint64_t ne) {
      if (open && nb <= e) { e = std::max(e, ne); return; }
      flush(f);
      b = nb; e = ne; open = true;
    }
  };
  Union compute{Coverage(cols)}, copy{Coverage(cols)};
  for (uint32_t e : sel_.events) {
    if (m_.events.capture[e] != dev.first || m_.events.device[e] != dev.second) continue;
    const uint64_t b = m_.events.start_ns[e], en = m_.events.end_ns[e];
    if (!b || en < b) continue;
    const EventKind k = m_.events.kind[e];
    if (k == EventKind::kKernel || k == EventKind::kNccl) compute.add(f_, b, en);
    else if (k == EventKind::kMemcpy || k == EventKind::kMemset) copy.add(f_, b, en);
  }
  compute.flush(f_);
  copy.flush(f_);
  const Coverage& cc = compute.cov;
  const Coverage& pc = copy.cov;
  const double compute_ns = compute.busy_ns, copy_ns = copy.busy_ns;
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
  s_.text(make_text(f_.left - 8, y + 15, label, 10, palette::kMuted, Anchor::kEnd));
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

void Builder::draw_gpu_lane(const LaneKey& key, Lane& lane) {
  const float y = y_;
  lane.y = y;
  const int cols = f_.columns();
  Coverage exec(cols), wait(cols);
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
    exec.add(x0 - f_.left, x1 - f_.left);
    if (ev.queued_ns[e] && ev.queued_ns[e] < b) wait.add(f_.x(ev.queued_ns[e]) - f_.left, x0 - f_.left);
    ++st_.events_aggregated;
  }
  // Rows for overlapping GPU work, first fit in start order (the selection's order). Syncs are
  // waits drawn over the work they wait for, as before; they take no row.
  std::vector<int> row(individual.size(), 0);
  std::vector<uint64_t> row_end;
  for (size_t i = 0; i < individual.size(); ++i) {
    const uint32_t e = individual[i];
    if (ev.kind[e] == EventKind::kSync) continue;
    size_t r = 0;
    while (r < row_end.size() && ev.start_ns[e] < row_end[r]) ++r;
    if (r >= static_cast<size_t>(kMaxOverlapRows)) {
      r = kMaxOverlapRows - 1;  // past the cap the last row stacks, as one lane did before
    } else if (r == row_end.size()) {
      row_end.push_back(0);
    }
    row_end[r] = std::max(row_end[r], ev.end_ns[e]);
    row[i] = static_cast<int>(r);
  }
  const size_t extra_rows = row_end.size() > 1 ? row_end.size() - 1 : 0;
  st_.overlap_rows += extra_rows;
  const float height = kLaneHeight + static_cast<float>(extra_rows) * kOverlapRow;
  s_.rect(make_rect(f_.left, y, f_.right - f_.left, height - 2, palette::kLaneBand));
  s_.text(make_text(f_.left - 8, y + 15, fit(lane_label(m_, key, o_.lanes, lane.priority), kLabelWidth - 20), kFontSize,
                    palette::kText, Anchor::kEnd));
  // Coverage first, individual events on top.
  // A lane whose coverage flickers column by column would give one rectangle per column;
  // two levels instead of four keep such lanes to a few hundred rectangles.
  const int levels = exec.runs(4).size() > static_cast<size_t>(cols / 4) ? 2 : 4;
  for (const auto& r : wait.runs(levels)) {
    Rect rc = make_rect(f_.left + static_cast<float>(r.x0), y + 1, static_cast<float>(r.x1 - r.x0), 5,
                        with_alpha(palette::kQueuedToStart, level_alpha(r.level, levels)));
    s_.rect(std::move(rc));
  }
  for (const auto& r : exec.runs(levels)) {
    Rect rc = make_rect(f_.left + static_cast<float>(r.x0), y + 7, static_cast<float>(r.x1 - r.x0), 14,
                        with_alpha(palette::kComputeUtil, level_alpha(r.level, levels)));
    // Tooltips only where a pointer can find them: they are most of an SVG's bytes.
    if (r.x1 - r.x0 >= 4) {
      const uint64_t tb = f_.t0 + static_cast<uint64_t>(r.x0 / f_.px_per_ns);
      const uint64_t te = f_.t0 + static_cast<uint64_t>(r.x1 / f_.px_per_ns);
      rc.tooltip = std::to_string(r.events) + " event(s) too narrow to draw one by one, busy " +
                   std::to_string(static_cast<int>(std::lround(r.busy * 100))) + "% between " + rel_time(tb, f_.t0) +
                   " and " + rel_time(te, f_.t0);
    }
    s_.rect(std::move(rc));
  }
  for (size_t i = 0; i < individual.size(); ++i) {
    const uint32_t e = individual[i];
    const float x0 = f_.x(ev.start_ns[e]), x1 = f_.x(ev.end_ns[e]);
    const float ry = y + static_cast<float>(row[i]) * kOverlapRow;
    const uint64_t launch = m_.launch_ns(e), q = ev.queued_ns[e];
    if (launch && q && q > launch)
      s_.rect(make_rect(f_.x(launch), ry + 1, f_.x(q) - f_.x(launch), 5, palette::kLaunchToQueued));
    if (q && q < ev.start_ns[e]) s_.rect(make_rect(f_.x(q), ry + 1, x0 - f_.x(q), 5, palette::kQueuedToStart));
    Rect rc = make_rect(x0, ry + 7, std::max(x1 - x0, 1.0f), 14, exec_color(m_, e));
    rc.stroke = Color{255, 255, 255, 180};
    rc.stroke_width = 0.5f;
    rc.tooltip = event_tooltip(m_, e, f_.t0);
    s_.rect(std::move(rc));
    if (x1 - x0 > 40) {
      Text t = make_text(x0 + 3, ry + 18, fit(m_.display_name(e), x1 - x0 - 6, 5.6f), 9, Color{255, 255, 255, 255});
      s_.text(std::move(t));
    }
    drawn_[e] = ry;
    ++st_.events_individual;
  }
  draw_brackets(lane, y, height);
  y_ += height;
}

// Each graph launch as an outline around its nodes on this lane, labelled with the graph and
// its node count in the strip above the bars (graph nodes have no queued stamp to draw there).
void Builder::draw_brackets(const Lane& lane, float y, float height) {
  for (const Bracket& b : lane.brackets) {
    if (b.end_ns < f_.t0 || b.start_ns > f_.t1) continue;
    const float x0 = f_.x(std::max(b.start_ns, f_.t0)), x1 = f_.x(std::min(b.end_ns, f_.t1));
    if (x1 - x0 < kMinBracketPx || st_.graph_brackets >= kMaxGraphBrackets) continue;
    const GraphLaunch& g = graphs_[b.launch];
    const std::string label = graph_label(m_, g.capture, g.graph_id) + " \xC2\xB7 " + std::to_string(g.nodes.size()) +
                              (g.nodes.size() == 1 ? " node" : " nodes");
    Rect rc = make_rect(x0, y + 0.5f, x1 - x0, height - 3, Color{0, 0, 0, 0});
    rc.stroke = palette::kGraph;
    rc.stroke_width = 1;
    rc.tooltip = label + ", launch " + format_duration(static_cast<int64_t>(g.end_ns - g.start_ns)) + " (" +
                 rel_time(g.start_ns, f_.t0) + " \xE2\x80\xA6 " + rel_time(g.end_ns, f_.t0) + "), correlation id " +
                 std::to_string(g.correlation_id);
    s_.rect(std::move(rc));
    if (x1 - x0 >= kMinBracketLabelPx)
      s_.text(make_text(x0 + 2, y + 6.5f, fit(label, x1 - x0 - 4, 4.2f), 7, palette::kGraph));
    ++st_.graph_brackets;
  }
}

void Builder::draw_device_section(const DeviceKey& dev, const std::vector<LaneKey>& lanes) {
  section_y_[dev] = y_;
  s_.text(make_text(12, y_ + 13, fit(device_section_label(m_, dev.first, dev.second), 600), 12, palette::kText,
                    Anchor::kStart, true));
  y_ += 18;
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
  for (const LaneKey& k : lanes) {
    // The chart's size must not grow without bound with the number of streams either.
    if (gpu_lanes_drawn_ >= kMaxGpuLanes) {
      ++st_.lanes_left_out;
      st_.events_left_out += lanes_[k].events.size();
      continue;
    }
    ++gpu_lanes_drawn_;
    draw_gpu_lane(k, lanes_[k]);
  }
  y_ += 6;
}

void Builder::draw_annotations() {
  for (const Annotation& a : ann_.items) {
    if (a.kind == AnnotationKind::kIdleGap) continue;
    auto it = drawn_.find(a.event);
    if (it == drawn_.end()) continue;  // drawn as coverage: counted in the footer only
    const float y = it->second;
    const uint32_t e = a.event;
    const float x0 = f_.x(m_.events.start_ns[e]), x1 = f_.x(m_.events.end_ns[e]);
    switch (a.kind) {
      case AnnotationKind::kQueueDelay: {
        const float q = f_.x(m_.events.queued_ns[e]);
        Rect r = make_rect(q, y, x0 - q, 7, Color{0, 0, 0, 0});
        r.stroke = palette::kQueueDelay;
        r.stroke_width = 1.5f;
        r.dashed = true;
        r.tooltip = a.label;
        s_.rect(std::move(r));
        s_.rect(make_rect(q - 1, y - 3, 3, 10, palette::kQueueDelay));  // the flag
        break;
      }
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
}

void Builder::draw_host_lanes() {
  // Threads with host calls or ranges in the window, in (capture, tid) order.
  const uint64_t w0 = f_.t0, w1 = f_.t1;
  std::map<std::pair<uint16_t, uint64_t>, uint32_t> threads;
  auto in_window = [&](uint64_t b, uint64_t e) { return b && b <= w1 && (e ? e : b) >= w0; };
  std::vector<std::vector<uint32_t>> calls(m_.threads.size()), ranges(m_.threads.size());
  std::vector<uint8_t> launched(m_.api.size(), 0);
  for (uint32_t e = 0; e < m_.events.size(); ++e)
    if (m_.events.api[e] != kNone) launched[m_.events.api[e]] = 1;
  for (uint32_t i = 0; i < m_.api.size(); ++i)
    if (in_window(m_.api.start_ns[i], m_.api.end_ns[i])) calls[m_.api.thread[i]].push_back(i);
  size_t range_count = 0;
  for (uint32_t i = 0; i < m_.ranges.size(); ++i)
    if (m_.ranges.depth[i] < 3 && in_window(m_.ranges.start_ns[i], m_.ranges.end_ns[i] ? m_.ranges.end_ns[i] : w1) &&
        range_count < kMaxRanges) {
      ranges[m_.ranges.thread[i]].push_back(i);
      ++range_count;
    }
  for (uint32_t t = 0; t < m_.threads.size(); ++t)
    if (!calls[t].empty() || !ranges[t].empty()) threads[{m_.threads.capture[t], m_.threads.thread_id[t]}] = t;
  if (threads.empty()) return;
  s_.text(make_text(12, y_ + 12, "host threads", 12, palette::kText, Anchor::kStart, true));
  y_ += 18;
  size_t bars = 0;
  const int cols = f_.columns();
  size_t host_lanes = 0;
  for (const auto& [key, t] : threads) {
    if (host_lanes++ >= kMaxHostLanes) {
      ++st_.lanes_left_out;
      continue;
    }
    int depth = 0;
    for (uint32_t r : ranges[t]) depth = std::max(depth, m_.ranges.depth[r] + 1);
    const float ry = y_, cy = y_ + static_cast<float>(depth) * 10;
    const float h = static_cast<float>(depth) * 10 + 18;
    s_.rect(make_rect(f_.left, y_, f_.right - f_.left, h - 2, palette::kLaneBand));
    std::string label = "tid " + std::to_string(key.second);
    if (m_.threads.name[t]) label += " " + utf8_clean(m_.string(m_.threads.name[t]));
    if (m_.captures.size() > 1) label = "#" + std::to_string(key.first) + " " + label;
    s_.text(make_text(f_.left - 8, cy + 12, fit(label, kLabelWidth - 20), kFontSize, palette::kText, Anchor::kEnd));
    for (uint32_t r : ranges[t]) {
      const float x0 = std::max(f_.left, f_.x(m_.ranges.start_ns[r]));
      const float x1 = std::min(f_.right, m_.ranges.end_ns[r] ? f_.x(m_.ranges.end_ns[r]) : f_.right);
      if (x1 - x0 < 1 && m_.ranges.kind[r] != RangeKind::kMark) continue;
      const float y = ry + static_cast<float>(m_.ranges.depth[r]) * 10;
      Rect rc = make_rect(x0, y, std::max(1.0f, x1 - x0), 9, with_alpha(palette::kRange, 200));
      rc.tooltip = ellipsize(m_.range_path_of_range(r), 300) + "\n" + rel_time(m_.ranges.start_ns[r], f_.t0) + " \xE2\x80\xA6 " +
                   rel_time(m_.ranges.end_ns[r], f_.t0);
      s_.rect(std::move(rc));
      if (x1 - x0 > 30)
        s_.text(make_text(x0 + 2, y + 8, fit(m_.string(m_.ranges.name[r]), x1 - x0 - 4, 5.2f), 8, Color{255, 255, 255, 255}));
    }
    // Calls: blocking ones and NCCL as bars, the rest as coverage, launches as ticks.
    Coverage other(cols), ticks(cols);
    for (uint32_t i : calls[t]) {
      const float x0 = f_.x(std::max(m_.api.start_ns[i], w0));
      const float x1 = f_.x(std::min(m_.api.end_ns[i] ? m_.api.end_ns[i] : m_.api.start_ns[i], w1));
      if (launched[i]) ticks.add(x0 - f_.left, x0 - f_.left + 1);
      const std::string_view name = m_.string(m_.api.name[i]);
      const bool blocking = is_blocking_call(name);
      if (blocking && x1 - x0 >= 1 && bars < kMaxHostBars) {
        Rect rc = make_rect(x0, cy + 6, x1 - x0, 10, palette::kBlocking);
        rc.tooltip = utf8_clean(api_display_name(name)) + " " + format_duration(static_cast<int64_t>(m_.api.end_ns[i] - m_.api.start_ns[i])) +
                     " (host blocked)\n" + rel_time(m_.api.start_ns[i], f_.t0) + " \xE2\x80\xA6 " + rel_time(m_.api.end_ns[i], f_.t0);
        s_.rect(std::move(rc));
        ++bars;
      } else {
        other.add(x0 - f_.left, x1 - f_.left);
      }
    }
    const int other_levels = other.levels_within(4, static_cast<size_t>(cols / 4));
    for (const auto& r : other.runs(other_levels))
      s_.rect(make_rect(f_.left + static_cast<float>(r.x0), cy + 8, static_cast<float>(r.x1 - r.x0), 6,
                        with_alpha(palette::kApi, level_alpha(r.level, other_levels))));
    for (const auto& r : ticks.runs())
      s_.rect(make_rect(f_.left + static_cast<float>(r.x0), cy, static_cast<float>(r.x1 - r.x0), 6,
                        with_alpha(palette::kLaunchTick, 200)));
    // NCCL calls of this thread.
    for (uint32_t n = 0; n < m_.nccl.size(); ++n) {
      if (m_.nccl.thread[n] != t || !in_window(m_.nccl.start_ns[n], m_.nccl.end_ns[n]) || bars >= kMaxHostBars) continue;
      const float x0 = f_.x(std::max(m_.nccl.start_ns[n], w0));
      const float x1 = f_.x(std::min(m_.nccl.end_ns[n] ? m_.nccl.end_ns[n] : m_.nccl.start_ns[n], w1));
      Rect rc = make_rect(x0, cy + 6, std::max(1.0f, x1 - x0), 10, palette::kNccl);
      rc.tooltip = utf8_clean(m_.string(m_.nccl.name[n])) + " " + format_bytes(m_.nccl.bytes[n]) + " rank " +
                   std::to_string(m_.nccl.rank[n]) + "/" + std::to_string(m_.nccl.nranks[n]);
      s_.rect(std::move(rc));
      ++bars;
    }
    y_ += h;
  }
}

std::string title_of(const Model& m) {
  std::string t = "gantt";
  for (size_t i = 0; i < m.captures.size() && i < 3; ++i) {
    std::string p = m.captures[i].path;
    const size_t sl = p.rfind('/');
    if (sl != std::string::npos) p = p.substr(sl + 1);
    t += (i ? ", " : ": ") + ellipsize(p, 60);
  }
  if (m.captures.size() > 3) t += ", +" + std::to_string(m.captures.size() - 3) + " more";
  return t;
}

Scene Builder::build() {
  s_.width = std::max(400, o_.width_px);
  s_.title = title_of(m_);
  f_.t0 = sel_.window_start_ns;
  f_.t1 = std::max(sel_.window_end_ns, sel_.window_start_ns + 1);
  f_.left = kLabelWidth;
  f_.right = static_cast<float>(s_.width) - kRightMargin;
  f_.px_per_ns = (f_.right - f_.left) / static_cast<double>(f_.t1 - f_.t0);
  st_.events_selected = sel_.events.size();

  s_.text(make_text(12, 20, s_.title, 14, palette::kText, Anchor::kStart, true));
  y_ = 30;
  if (sel_.events.empty()) {
    const std::string why = m_.events.size() == 0 ? "no GPU activity in this capture"
                                                  : "no events match the window and filters (" +
                                                        std::to_string(m_.events.size()) + " events in the capture)";
    s_.text(make_text(static_cast<float>(s_.width) / 2, y_ + 50, why, 16, palette::kMuted, Anchor::kMiddle));
    y_ += 90;
  } else {
    ann_ = annotate(m_, sel_, o_.annotate);
    draw_axis_labels(s_, f_, y_);
    y_ += 22;
    const float grid_top = y_;
    const size_t grid_at = s_.items.size();  // grid lines go under everything below
    bucket_lanes();
    std::map<DeviceKey, std::vector<LaneKey>> sections;
    for (uint32_t e : sel_.events) sections[{m_.events.capture[e], m_.events.device[e]}];
    for (const auto& [key, lane] : lanes_)
      if (o_.lanes != LaneMode::kThread && o_.lanes != LaneMode::kRank) sections[{key.capture, key.device}].push_back(key);
    for (const auto& [dev, keys] : sections) draw_device_section(dev, keys);
    if (o_.lanes == LaneMode::kThread || o_.lanes == LaneMode::kRank) {
      for (auto& [key, lane] : lanes_) {
        if (gpu_lanes_drawn_ >= kMaxGpuLanes) {
          ++st_.lanes_left_out;
          st_.events_left_out += lane.events.size();
          continue;
        }
        ++gpu_lanes_drawn_;
        draw_gpu_lane(key, lane);
      }
      y_ += 6;
    }
    if (o_.collective_links && m_.captures.size() > 1) draw_rank_links();
    draw_peer_links();
    draw_annotations();
    if (o_.host_lanes) draw_host_lanes();
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

void Builder::draw_rank_links() {
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
      [&](uint64_t t) { return f_.x(t); });
}

}  // namespace

Scene build_scene(const Model& model, const Selection& selection, const RenderOptions& options, RenderStats* stats) {
  RenderStats local;
  Builder b(model, selection, options, stats ? *stats : local);
  return b.build();
}

}  // namespace gantt
