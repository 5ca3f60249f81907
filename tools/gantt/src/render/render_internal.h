// Pieces of the scene builder shared by its files (not part of the public API).
#pragma once

#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include "gantt/analysis/memory.h"
#include "gantt/render/annotate.h"
#include "gantt/render/render.h"
#include "gantt/render/scene.h"

namespace gantt::detail {

inline constexpr float kLabelWidth = 250;  // left column for lane labels
inline constexpr float kRightMargin = 24;
inline constexpr float kFontSize = 11;
inline constexpr float kCharWidth = 6.4f;  // DejaVu Sans at 11 px, average, for fitting text

// Time -> x mapping of the plot area.
struct Frame {
  uint64_t t0 = 0, t1 = 0;  // window, absolute ns
  uint64_t origin = 0;       // what the axis and the tooltips count from (Selection::origin_ns)
  std::string origin_name = "capture start";
  float left = 0, right = 0;
  double px_per_ns = 0;
  float x(uint64_t t) const {
    const double dt = static_cast<double>(static_cast<int64_t>(t - t0));
    return static_cast<float>(left + dt * px_per_ns);
  }
  // x of t, clipped to the plot: a bar that starts before the window starts at its edge.
  float clipped_x(uint64_t t) const { return x(std::clamp(t, t0, t1)); }
  int columns() const { return static_cast<int>(right - left); }
};

// The chart's title: the capture's file name, or what names a job of several captures.
std::string title_of(const Model& m);
// Returns the y after the axis labels; draws grid lines from y_grid_top to y_grid_bottom.
void draw_axis_labels(Scene& s, const Frame& f, float y);
void draw_grid(Scene& s, const Frame& f, float y_top, float y_bottom);
// The Gantt chart's legend; the second form draws any list of swatches the same way (wrapping
// at `width`). Both return the height used.
struct LegendEntry {
  Color color;
  std::string label;
  bool dashed = false;  // an outline, as the dashed flags are drawn
};
float draw_legend(Scene& s, float y, int width);
float draw_legend(Scene& s, float y, int width, const std::vector<LegendEntry>& entries);
// The time axis of a chart over [t0, t1] at `width` pixels, counting from the selection's origin.
Frame make_frame(const Model& m, const Selection& sel, uint64_t t0, uint64_t t1, int width);
// A view's scene: its width and its bold title line.
Scene begin_view(std::string title, const RenderOptions& o);
// The footer's lines (captures, window, event counts, flags); draw_footer draws them.
std::vector<std::string> footer_lines(const Model& m, const Selection& sel, const RenderOptions& o,
                                      const RenderStats& st, const Annotations& ann);
float draw_footer(Scene& s, const Model& m, const Selection& sel, const RenderOptions& o, const RenderStats& st,
                  const Annotations& ann, float y);
std::string event_tooltip(const Model& m, uint32_t e, uint64_t t0);
std::string rel_time(uint64_t t, uint64_t t0);  // "+1.23 ms", "?" when t == 0
Color with_alpha(Color c, uint8_t a);
// The last line of a view's chart: `what`, then " · SIMULATED GPU (...)" when a capture came
// from the test simulator; sets the scene's height under it.
void draw_view_footer(Scene& s, const Model& m, std::string what, float y);
// Memory in use per pixel column, stacked by class, bottom at `base` (memory_scene.cpp).
// The counters measured for (capture, device) as strips at y, one per counter: the GPU
// utilisation NVML read, SM active and DRAM throughput PM sampling read, with the clock drops
// over the first (metrics_strip.cpp); returns the height used, 0 when there are no samples.
float draw_measured_strip(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y);
// The same as lines over a row [y, y + height) of `--view utilisation`, with the drops as
// bands; returns the MeasuredLines drawn (0: nothing, no samples).
enum MeasuredLines : int { kMeasuredNvml = 1, kMeasuredSmActive = 2, kMeasuredDram = 4 };
int draw_measured_line(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y, float height);
inline constexpr Color kMeasuredLine{20, 20, 20, 255};
inline constexpr Color kSmActiveLine{190, 40, 150, 255};
inline constexpr Color kDramLine{30, 140, 70, 255};
void draw_memory_columns(Scene& s, const Frame& f, const analysis::DeviceMemory& d, float base, float height,
                         bool by_category);
// Whether the memory drawings stack by category (RenderOptions::memory_by; auto: when some
// allocation was tagged with gpuhook_mem_tag()) or by how the memory was allocated.
bool memory_by_category(const RenderOptions& o, const std::vector<analysis::DeviceMemory>& report);

}  // namespace gantt::detail
