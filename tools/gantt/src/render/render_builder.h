// The scene builder's state, shared by render_scene.cpp (device sections, GPU lanes,
// annotations, links) and render_host_lanes.cpp (host thread lanes). Internal to libgantt.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gantt/analysis/waits.h"
#include "gantt/render/annotate.h"
#include "gantt/model/graphs.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"
#include "render_internal.h"

namespace gantt::detail {

// A GPU lane, top to bottom: the wait strip (launch->queued->start), then the exec bar.
inline constexpr float kLaneHeight = 24;   // wait strip 6 + exec 16 + gaps
inline constexpr float kWaitStripY = 1, kWaitStripHeight = 5;
inline constexpr float kExecBarY = 7, kExecBarHeight = 14;
inline constexpr float kExecLabelBaseline = 18;    // the kernel name inside a wide exec bar
inline constexpr float kExecLabelMinWidthPx = 40;  // narrower bars carry no name
inline constexpr float kLaneLabelBaseline = 15;    // lane and strip labels, right-aligned...
inline constexpr float kLaneLabelGap = 8;          // ...this far left of the plot
inline constexpr float kLaneGap = 2;               // between one lane's band and the next
inline constexpr float kUtilHeight = 22;
inline constexpr float kSectionTitleHeight = 18;   // "GPU n: name" above a device's strip
inline constexpr float kSectionGap = 6;            // after a device's last lane
inline constexpr float kLabelRow = 12;
inline constexpr int kMaxLabelRows = 3;
inline constexpr size_t kMaxHostBars = 3000;
inline constexpr size_t kMaxRanges = 3000;
inline constexpr size_t kMaxGpuLanes = 48;
inline constexpr size_t kMaxHostLanes = 32;
// Events that overlap on one lane (independent branches of a CUDA graph, concurrent kernels
// in --lanes device) get rows of their own, or the later one would hide the earlier one.
inline constexpr float kOverlapRow = 16;
inline constexpr int kMaxOverlapRows = 4;
// A bracket narrower than this says nothing its nodes do not.
inline constexpr float kMinBracketPx = 3;
inline constexpr size_t kMaxGraphBrackets = 3000;
// A bracket's label ("graph 3 · 25 nodes") was 7 px in the wait strip, over the nodes' bars:
// at 1:1 in a PNG its x-height was under 4 px, a teal smudge. It is 9 px, the size of the
// kernel names inside the bars (the smallest text the chart asks anyone to read), on a row of
// its own above the wait strip, added only to lanes that carry a labelled bracket.
inline constexpr float kBracketLabelSize = 9;
inline constexpr float kBracketLabelCharPx = 6;       // DejaVu Sans at 9 px, hinted: digits, g, h, n, o 6 px, space 3
inline constexpr float kBracketLabelRow = 12;         // 9 px glyphs reach 7.2 above the baseline, 2.3 below
inline constexpr float kBracketLabelBaseline = 9.5f;  // from the lane's top, under the bracket's top edge
inline constexpr float kBracketLabelInset = 2;        // from the bracket's left edge, and kept on the right

// One graph launch's nodes on one lane.
struct Bracket {
  uint64_t start_ns = 0, end_ns = 0;
  size_t launch = 0;  // index into Builder::graphs_
};

// A bracket as this chart draws it: its span in pixels and its label ("" where none fits).
struct PlacedBracket {
  float x0 = 0, x1 = 0;
  size_t launch = 0;
  std::string label;
};

struct Lane {
  std::vector<uint32_t> events;
  std::vector<Bracket> brackets;
  int32_t priority = 0;
  float y = 0;
};

using DeviceKey = std::pair<uint16_t, uint32_t>;

inline std::string fit(std::string_view s, float width_px, float char_px = kCharWidth) {
  return ellipsize(s, static_cast<size_t>(std::max(0.0f, width_px / char_px)));
}

inline uint8_t level_alpha(int level, int levels) { return static_cast<uint8_t>(60 + 180 * level / levels); }

// A narrow event folded into its lane's coverage: its execution, and its queued -> start wait.
inline void fold_narrow(const Frame& f, Coverage& exec, Coverage& wait, uint64_t queued, uint64_t start, float x0, float x1) {
  exec.add(x0 - f.left, x1 - f.left);
  if (queued && queued < start) wait.add(f.x(queued) - f.left, x0 - f.left);
}

// A span of a device's busy union, clipped to the window, into the utilisation strip's coverage.
inline void add_busy(const Frame& f, Coverage& cov, uint64_t& busy_ns, uint64_t b, uint64_t e) {
  const uint64_t lo = std::max(b, f.t0), hi = std::min(e, f.t1);
  if (hi <= lo) return;
  cov.add(f.x(lo) - f.left, f.x(hi) - f.left);
  busy_ns += hi - lo;
}

// Whether a host call [start, end] (end 0: unknown) shows in the window.
inline bool host_call_in_window(const Frame& f, uint64_t start, uint64_t end) {
  return start && start <= f.t1 && (end ? end : start) >= f.t0;
}

// A host call's span in the window, in pixels.
inline std::pair<float, float> host_call_x(const Frame& f, uint64_t start, uint64_t end) {
  return {f.x(std::max(start, f.t0)), f.x(std::min(end ? end : start, f.t1))};
}

// A host call's span in the window into its lane's coverage: every call but the bars, and a
// bar candidate past the chart's bar budget.
inline void add_host_call(const Frame& f, Coverage& other, uint64_t start, uint64_t end) {
  const auto [x0, x1] = host_call_x(f, start, end);
  other.add(x0 - f.left, x1 - f.left);
}

// A host call in the window into its thread's lane: a launch's tick, and its span as coverage
// unless it is a blocking call at least a pixel wide. True for those: they are drawn as bars
// while the chart's bar budget lasts (the caller keeps them in call order).
inline bool fold_host_call(const Frame& f, ChartRest::HostCalls& calls, uint64_t start, uint64_t end, bool launched,
                           bool blocking) {
  const auto [x0, x1] = host_call_x(f, start, end);
  if (launched) calls.ticks.add(x0 - f.left, x0 - f.left + 1);
  if (blocking && x1 - x0 >= 1) return true;
  calls.other.add(x0 - f.left, x1 - f.left);
  return false;
}

// Whether an event's kind counts as compute or as copy in the utilisation strip.
enum class BusyClass : uint8_t { kNone, kCompute, kCopy };
inline BusyClass busy_class(EventKind k) {
  if (k == EventKind::kKernel || k == EventKind::kNccl) return BusyClass::kCompute;
  if (k == EventKind::kMemcpy || k == EventKind::kMemset) return BusyClass::kCopy;
  return BusyClass::kNone;
}

// The busy unions of one device from its selected events, which come in start order.
ChartRest::Device device_busy(const Model& m, const std::vector<uint32_t>& events, const DeviceKey& dev, const Frame& f);

class Builder {
 public:
  // `rest`: the selected work the model does not hold (render.h ChartRest), or null.
  Builder(const Model& m, const Selection& sel, const RenderOptions& o, RenderStats& st, const ChartRest* rest = nullptr)
      : m_(m), sel_(sel), o_(o), st_(st), rest_(rest) {}

  Scene build();

 private:
  void bucket_lanes();
  void draw_device_section(const DeviceKey& dev, const std::vector<LaneKey>& lanes);
  void draw_utilization(const DeviceKey& dev, float y);
  void draw_gpu_lane(const LaneKey& key, Lane& lane);
  void draw_wait(uint32_t event, float row_y, float start_x);
  // draw_gpu_lane while fewer than kMaxGpuLanes are drawn; past that the lane is counted (the
  // footer says how many lanes and events were left out).
  void draw_gpu_lane_within_cap(const LaneKey& key, Lane& lane);
  // The lane's brackets in the window, within the chart's bracket budget, with the labels that
  // fit their brackets and do not run into the previous label.
  std::vector<PlacedBracket> place_brackets(const Lane& lane) const;
  void draw_brackets(const std::vector<PlacedBracket>& brackets, float top, float height);
  void draw_annotations();
  struct QueueDelay {
    float y, q, x0;        // row, queued and start x
    uint64_t delay_ns;
    const std::string* label;
  };
  void draw_queue_delays(std::vector<QueueDelay>& delays);
  void draw_rank_links(float label_y);
  void draw_peer_links();
  void draw_dependencies();
  void draw_flight_triggers(float top);
  void draw_host_lanes();
  // A blocking host call (a row of the model's API calls) as a bar on the lane at `y`.
  void draw_blocking_call(uint32_t call, float y);
  float place_labels(const DeviceKey& dev, float y);

  const Model& m_;
  const Selection& sel_;
  const RenderOptions& o_;
  RenderStats& st_;
  const ChartRest* rest_;
  Scene s_;
  Frame f_;
  float y_ = 0;
  double threshold_px_ = 1;
  size_t individual_budget_ = 0;
  std::map<LaneKey, Lane> lanes_;
  std::vector<GraphLaunch> graphs_;
  std::unordered_map<uint32_t, float> drawn_;  // individually drawn event -> lane y
  std::map<DeviceKey, float> section_y_;       // each device section's top
  // Each run of GPU lanes, top to bottom; between two lie a section's title, idle-gap labels
  // and strips, which the rank links must not cover.
  std::vector<std::pair<float, float>> lane_areas_;
  Annotations ann_;
  std::vector<analysis::WaitSplit> waits_;     // why each drawn kernel waited, by event
  std::map<DeviceKey, analysis::DeviceMemory> memory_;  // --memory-strip: per device
  bool memory_by_category_ = false;                     // ...stacked by category (memory_by_category())
  size_t gpu_lanes_drawn_ = 0;
};

}  // namespace gantt::detail
