// `render --view memory`: per device, memory in use over time stacked by how it was allocated,
// the peak marked and what was live at it listed (analysis/memory.h).
#include <algorithm>
#include <cstdio>

#include "gantt/analysis/table.h"
#include "gantt/render/colors.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"
#include "render_builder.h"
#include "render_internal.h"

namespace gantt {

namespace {

constexpr float kMemoryRowHeight = 110;
constexpr size_t kListed = 5;  // live allocations listed under each device's row

constexpr Color kClassColor[analysis::kMemoryClasses] = {
    {70, 110, 190, 255},   // device
    {44, 160, 44, 255},    // pool
    {230, 159, 0, 255},    // pinned host
    {148, 103, 189, 255},  // managed
    {150, 150, 150, 255},  // other
};

// One per category layer; the last is "other" when a device had more categories.
constexpr Color kCategoryColor[analysis::kMemoryCategories] = {
    {31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
    {148, 103, 189, 255}, {140, 86, 75, 255}, {23, 190, 207, 255}, {150, 150, 150, 255},
};

// Per pixel column, the step with the most in use, stacked by layer: a peak narrower than a
// pixel stays visible. Heights scale to the device's peak.
template <class Step, size_t N>
void draw_columns(Scene& s, const detail::Frame& f, const std::vector<uint64_t>& t, const std::vector<Step>& steps,
                  const Color (&colors)[N], uint64_t peak, float base, float height) {
  auto sum = [](const Step& v) {
    uint64_t total = 0;
    for (uint64_t x : v) total += x;
    return total;
  };
  const double scale = peak ? height / static_cast<double>(peak) : 0;
  size_t i = 0;
  Step carried{};
  // Steps before the window set the level it starts at.
  while (i < t.size() && t[i] < f.t0) carried = steps[i++];
  for (int c = 0; c < f.columns(); ++c) {
    const uint64_t c1 = f.t0 + static_cast<uint64_t>((c + 1) / f.px_per_ns);
    Step best = carried;
    uint64_t best_total = sum(best);
    for (; i < t.size() && t[i] < c1; ++i) {
      carried = steps[i];
      if (const uint64_t total = sum(steps[i]); total > best_total) best = steps[i], best_total = total;
    }
    float top = base;
    for (size_t k = 0; k < N; ++k) {
      if (best[k] == 0) continue;
      const float h = static_cast<float>(static_cast<double>(best[k]) * scale);
      s.rect(make_rect(f.left + static_cast<float>(c), top - h, 1, h, colors[k]));
      top -= h;
    }
  }
}

}  // namespace

namespace detail {

bool memory_by_category(const RenderOptions& o, const std::vector<analysis::DeviceMemory>& report) {
  if (o.memory_by == "category") return true;
  if (o.memory_by == "kind") return false;
  return std::any_of(report.begin(), report.end(), [](const analysis::DeviceMemory& d) { return d.tagged; });
}

void draw_memory_columns(Scene& s, const Frame& f, const analysis::DeviceMemory& d, float base, float height,
                         bool by_category) {
  if (by_category) draw_columns(s, f, d.t, d.in_use_by_category, kCategoryColor, d.peak_bytes, base, height);
  else draw_columns(s, f, d.t, d.in_use, kClassColor, d.peak_bytes, base, height);
}

}  // namespace detail

Scene memory_scene(const Model& m, const Selection& sel, const std::vector<analysis::DeviceMemory>& report,
                   const RenderOptions& o) {
  using namespace detail;
  Scene s = begin_view("GPU memory in use", o);
  float y = 30;
  if (report.empty()) {
    s.text(make_text(static_cast<float>(s.width) / 2, y + 50,
                     "no allocations recorded (record with GPUHOOK_API including alloc, the default)", 16, palette::kMuted,
                     Anchor::kMiddle));
    s.height = static_cast<int>(y + 90);
    return s;
  }
  // The window, widened to every allocation and free: memory has no gaps to leave out.
  uint64_t t0 = sel.window_start_ns, t1 = std::max(sel.window_end_ns, sel.window_start_ns + 1);
  for (const auto& d : report)
    if (!d.t.empty()) t0 = std::min(t0, d.t.front()), t1 = std::max(t1, d.t.back());
  const Frame f = make_frame(m, sel, t0, t1, s.width);
  const bool by_category = memory_by_category(o, report);
  draw_axis_labels(s, f, y);
  y += 34;
  for (const analysis::DeviceMemory& d : report) {
    const float base = y + kMemoryRowHeight;
    s.rect(make_rect(f.left, y, f.right - f.left, kMemoryRowHeight, palette::kLaneBand));
    s.text(make_text(f.left - 10, y + 14, fit(device_section_label(m, d.capture, d.device), kLabelWidth - 20), kFontSize,
                     palette::kText, Anchor::kEnd));
    s.text(make_text(f.left - 10, y + 30, "peak " + analysis::bytes_text(d.peak_bytes), 10, palette::kMuted, Anchor::kEnd));
    draw_memory_columns(s, f, d, base, kMemoryRowHeight, by_category);
    // The peak.
    const float px = f.x(d.peak_ns);
    s.line(make_line(px, y - 4, px, base, palette::kIdle, 1, true));
    Rect mark = make_rect(px - 3, y - 8, 6, 6, palette::kIdle);
    mark.tooltip = "peak " + analysis::bytes_text(d.peak_bytes) + " at " + rel_time(d.peak_ns, f.origin);
    s.rect(std::move(mark));
    const std::string label = "peak " + analysis::bytes_text(d.peak_bytes) + " at " + rel_time(d.peak_ns, f.origin);
    const bool room = px + 6 + static_cast<float>(label.size()) * 5.5f < f.right;
    s.text(make_text(room ? px + 6 : px - 6, y - 2, label, 10, palette::kIdle, room ? Anchor::kStart : Anchor::kEnd));
    y = base + 16;
    size_t listed = 0;
    if (!d.at_peak.empty()) {
      s.text(make_text(f.left - 10, y, "live at the peak:", 10, palette::kMuted, Anchor::kEnd));
    }
    for (const analysis::LiveAllocation& a : d.at_peak) {
      if (listed++ == kListed) break;
      std::string line = analysis::bytes_text(a.bytes) + " " + analysis::to_string(a.cls) +
                         (a.category.empty() || a.category.rfind("range ", 0) == 0 || a.category == "(no range)"
                              ? ""
                              : " (" + a.category + ")") +
                         ", allocated " +
                         rel_time(a.alloc_ns, f.origin) + (a.where.empty() ? "" : " in " + a.where) + " (" +
                         format_duration(static_cast<int64_t>(d.peak_ns - a.alloc_ns)) + " before the peak)";
      s.text(make_text(f.left, y, fit(utf8_clean(line), f.right - f.left), 10, palette::kText));
      y += 14;
    }
    y += 22;
  }
  std::vector<LegendEntry> legend;
  if (by_category) {
    // The categories in first-met order, layer k in colour k on every device (the devices
    // share their layers: analysis/memory.h).
    std::vector<std::string> seen;
    for (const analysis::DeviceMemory& d : report)
      for (size_t k = 0; k < d.categories.size(); ++k)
        if (std::find(seen.begin(), seen.end(), d.categories[k]) == seen.end()) {
          seen.push_back(d.categories[k]);
          legend.push_back({kCategoryColor[k], utf8_clean(d.categories[k])});
        }
  } else {
    for (size_t k = 0; k < analysis::kMemoryClasses; ++k)
      legend.push_back({kClassColor[k], analysis::to_string(static_cast<analysis::MemoryClass>(k))});
  }
  y += draw_legend(s, y, s.width, legend) + 6;
  std::string foot = by_category ? "from the recorded allocations and frees, stacked by what they are for "
                                   "(gpuhook_mem_tag(), else the NVTX range they were allocated in)"
                                 : "from the recorded allocations and frees, stacked by how they were allocated";
  draw_view_footer(s, m, std::move(foot), y);
  return s;
}

}  // namespace gantt
