// `render --view utilisation`: per device, compute / copy / busy share per time bucket, the
// devices one above the other on one time axis, the drops marked (analysis/timeline.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gantt/render/colors.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"
#include "render_builder.h"
#include "render_internal.h"

namespace gantt {

namespace {

constexpr float kUtilisationRowHeight = 90;
constexpr float kUtilisationRowGap = 26;
constexpr size_t kDropLabels = 3;
constexpr Color kBusy{190, 200, 215, 255};  // anything running: under the compute bars  // per device; every drop gets a marker

std::string pct(double v) {
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * v);
  return b;
}

}  // namespace

Scene utilisation_scene(const Model& m, const Selection& sel, const analysis::Timeline& t, const RenderOptions& o) {
  using namespace detail;
  Scene s = begin_view("utilisation per " + format_duration(static_cast<int64_t>(t.bucket_ns)), o);
  const Frame f = make_frame(m, sel, t.start_ns, t.start_ns + std::max<uint64_t>(t.bucket_ns * t.buckets, 1), s.width);
  float y = 30;
  if (t.devices.empty()) {
    s.text(make_text(static_cast<float>(s.width) / 2, y + 50, "no GPU activity in the window", 16, palette::kMuted, Anchor::kMiddle));
    s.height = static_cast<int>(y + 90);
    return s;
  }
  draw_axis_labels(s, f, y);
  y += 26;
  const float grid_top = y;
  const size_t grid_at = s.items.size();
  const float bucket_px = static_cast<float>(static_cast<double>(t.bucket_ns) * f.px_per_ns);
  int measured = 0;  // the MeasuredLines some device drew: the legend names them
  for (const analysis::DeviceTimeline& d : t.devices) {
    const float base = y + kUtilisationRowHeight;
    s.rect(make_rect(f.left, y, f.right - f.left, kUtilisationRowHeight, palette::kLaneBand));
    s.text(make_text(f.left - 10, y + 14, fit(device_section_label(m, d.capture, d.device), kLabelWidth - 20), kFontSize,
                     palette::kText, Anchor::kEnd));
    double mean_busy = 0;
    for (double b : d.busy) mean_busy += b / static_cast<double>(t.buckets);
    s.text(make_text(f.left - 10, y + 30, "busy " + pct(mean_busy) + " on average", 10, palette::kMuted, Anchor::kEnd));
    for (float frac : {0.5f, 1.0f}) {
      s.line(make_line(f.left, base - frac * kUtilisationRowHeight, f.right, base - frac * kUtilisationRowHeight, palette::kGrid, 1, true));
      s.text(make_text(f.left - 4, base - frac * kUtilisationRowHeight + 4, pct(frac), 9, palette::kMuted, Anchor::kEnd));
    }
    for (size_t i = 0; i < t.buckets; ++i) {
      const float x = f.left + static_cast<float>(i) * bucket_px;
      const float w = std::max(bucket_px, 0.5f);
      if (d.busy[i] > 0) {
        Rect r = make_rect(x, base - static_cast<float>(d.busy[i]) * kUtilisationRowHeight, w, static_cast<float>(d.busy[i]) * kUtilisationRowHeight,
                           kBusy);
        if (w >= 4)
          r.tooltip = rel_time(t.start_ns + i * t.bucket_ns, f.origin) + ": busy " + pct(d.busy[i]) + ", compute " +
                      pct(d.compute[i]) + ", copy " + pct(d.copy[i]);
        s.rect(std::move(r));
      }
      if (d.compute[i] > 0)
        s.rect(make_rect(x, base - static_cast<float>(d.compute[i]) * kUtilisationRowHeight, w,
                         static_cast<float>(d.compute[i]) * kUtilisationRowHeight, palette::kComputeUtil));
      if (d.copy[i] > 0)
        s.rect(make_rect(x, base - static_cast<float>(d.copy[i]) * kUtilisationRowHeight - 1.5f, w, 3, palette::kCopyUtil));
    }
    size_t labelled = 0;
    for (const analysis::DeviceTimeline::Drop& drop : d.drops) {
      const float x0 = f.left + static_cast<float>(drop.first) * bucket_px;
      const float x1 = x0 + static_cast<float>(drop.buckets) * bucket_px;
      Rect band = make_rect(x0, y, std::max(x1 - x0, 1.0f), kUtilisationRowHeight, with_alpha(palette::kIdle, 40));
      const std::string text = "drop: busy " + pct(drop.lowest) + " for " +
                               format_duration(static_cast<int64_t>(drop.buckets * t.bucket_ns)) + " (was " +
                               pct(drop.median) + ")";
      band.tooltip = rel_time(t.start_ns + drop.first * t.bucket_ns, f.origin) + ": " + text;
      s.rect(std::move(band));
      s.rect(make_rect(x0 - 3, y - 6, 6, 6, palette::kIdle));
      if (labelled++ < kDropLabels) {
        const bool room = x0 + 4 + static_cast<float>(text.size()) * 5.0f < f.right;  // else end it at the drop
        s.text(make_text(room ? x0 + 4 : std::max(x1 - 4, f.left), y + 11, text, 9, palette::kIdle,
                         room ? Anchor::kStart : Anchor::kEnd));
      }
    }
    measured |= draw_measured_line(s, f, m, d.capture, d.device, y, kUtilisationRowHeight);
    if (d.drops.size() > kDropLabels)
      s.text(make_text(f.right, y - 2, std::to_string(d.drops.size()) + " drops", 9, palette::kIdle, Anchor::kEnd));
    y = base + kUtilisationRowGap;
  }
  // Grid under the rows.
  Scene grid;
  draw_grid(grid, f, grid_top, y - kUtilisationRowGap);
  s.items.insert(s.items.begin() + static_cast<std::ptrdiff_t>(grid_at), grid.items.begin(), grid.items.end());
  // Legend and footer.
  std::vector<LegendEntry> legend = {{kBusy, "busy (anything running)"},
                                     {palette::kComputeUtil, "compute (a kernel running)"},
                                     {palette::kCopyUtil, "copy (a copy running)"},
                                     {palette::kIdle, "drop: busy under half its recent median"}};
  if (measured & kMeasuredNvml) legend.push_back({kMeasuredLine, "GPU utilisation NVML measured (its own moving average)"});
  if (measured & kMeasuredSmActive) legend.push_back({kSmActiveLine, "SM active, PM sampling"});
  if (measured & kMeasuredDram) legend.push_back({kDramLine, "DRAM read + write of peak, PM sampling"});
  if (measured & kMeasuredNvml) legend.push_back({with_alpha(palette::kMissedOverlap, 70), "SM clock lowered (power, heat)"});
  y += draw_legend(s, y, s.width, legend) + 6;
  std::string foot = "bucket " + format_duration(static_cast<int64_t>(t.bucket_ns)) + " \xC2\xB7 " +
                     std::to_string(t.buckets) + " buckets \xC2\xB7 " + std::to_string(t.events) + " events";
  if (!sel.description.empty()) foot += " \xC2\xB7 " + sel.description;
  draw_view_footer(s, m, std::move(foot), y);
  return s;
}

}  // namespace gantt
