// The device's own view under the trace-derived utilisation strip: the GPU utilisation NVML
// measured (a column per pixel, the mean of the samples that fall in it; each sample covers
// the time before its read) and the stretches where the SM clock dropped for power or heat,
// labelled "power cap: SM clock 1.98 -> 1.41 GHz during 120 ms". Drawn only for devices with
// samples, so a capture without them draws as before.
#include <algorithm>
#include <vector>

#include "gantt/analysis/metrics.h"
#include "gantt/colors.h"
#include "render_builder.h"

namespace gantt::detail {

float draw_measured_strip(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y) {
  const analysis::MetricSeries* util = nullptr;
  const std::vector<analysis::MetricSeries> all = analysis::metric_series(m);
  for (const auto& series : all)
    if (series.capture == capture && series.device == device && series.metric == gpuhook::v1::GPU_METRIC_GPU_UTIL_PERCENT)
      util = &series;
  if (util == nullptr || util->end == util->begin || f.columns() <= 0) return 0;
  s.rect(make_rect(f.left, y, f.right - f.left, kUtilHeight, palette::kLaneBand));
  // Per pixel column: the sum and count of the samples whose covered time ends in it. The
  // cost depends on the picture's width, not on the number of samples.
  const auto columns = static_cast<size_t>(f.columns());
  std::vector<double> sum(columns, 0);
  std::vector<uint32_t> count(columns, 0);
  uint64_t prev = 0;
  for (size_t i = util->begin; i < util->end; ++i) {
    const uint64_t t = m.metrics.time_ns[i];
    const double v = static_cast<double>(std::min<uint64_t>(m.metrics.value[i], 100));
    const uint64_t from = prev == 0 ? t : prev;
    prev = t;
    if (t < f.t0 || from > f.t1) continue;
    const auto c0 = static_cast<size_t>(std::clamp(f.clipped_x(from) - f.left, 0.0f, static_cast<float>(columns - 1)));
    const auto c1 = static_cast<size_t>(std::clamp(f.clipped_x(t) - f.left, 0.0f, static_cast<float>(columns - 1)));
    for (size_t c = c0; c <= c1; ++c) sum[c] += v, count[c]++;
  }
  // Runs of columns with the same rounded level become one rect.
  for (size_t c = 0; c < columns;) {
    if (count[c] == 0) {
      ++c;
      continue;
    }
    const int level = static_cast<int>(sum[c] / count[c] + 0.5);
    size_t e = c + 1;
    while (e < columns && count[e] != 0 && static_cast<int>(sum[e] / count[e] + 0.5) == level) ++e;
    if (level > 0) {
      const float h = kUtilHeight * static_cast<float>(level) / 100.0f;
      Rect r = make_rect(f.left + static_cast<float>(c), y + kUtilHeight - h, static_cast<float>(e - c), h,
                         with_alpha(palette::kComputeUtil, 150));
      r.tooltip = "GPU utilisation (NVML) " + std::to_string(level) + "%";
      s.rect(std::move(r));
    }
    c = e;
  }
  for (const analysis::ClockDrop& d : analysis::clock_drops(m)) {
    if (d.capture != capture || d.device != device || d.end_ns < f.t0 || d.start_ns > f.t1) continue;
    const float x0 = f.clipped_x(d.start_ns), x1 = f.clipped_x(d.end_ns);
    const std::string label = analysis::clock_drop_text(d);
    Rect r = make_rect(x0, y, std::max(1.0f, x1 - x0), kUtilHeight, with_alpha(palette::kMissedOverlap, 70));
    r.tooltip = label + " (from " + rel_time(d.start_ns, f.origin) + ")";
    s.rect(std::move(r));
    if (x1 - x0 > 40) s.text(make_text(x0 + 2, y + 8, fit(label, x1 - x0 - 4, 4.2f), 7, palette::kText));
  }
  s.text(make_text(f.left - kLaneLabelGap, y + kLaneLabelBaseline, "GPU util (NVML)", 10, palette::kMuted, Anchor::kEnd));
  return kUtilHeight + 4;
}

}  // namespace gantt::detail
