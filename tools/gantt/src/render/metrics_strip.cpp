// The device's own view beside the trace-derived one: the GPU utilisation NVML measured, the
// SM active share and DRAM throughput CUPTI PM sampling measured (GPUHOOK_METRICS), and the
// stretches where the SM clock dropped for power or heat ("power cap: SM clock 1.98 -> 1.41 GHz
// during 120 ms"). In the Gantt chart a strip per counter under the trace's utilisation strip;
// in `--view utilisation` a line each over the busy share. Drawn only for devices with samples,
// so a capture without them draws as before. Per pixel column, the mean of the samples whose
// covered time (each value covers the time since the sample before) falls in it: the cost
// depends on the picture's width, not on the number of samples.
#include <algorithm>
#include <string>
#include <vector>

#include "gantt/analysis/metrics.h"
#include "gantt/render/colors.h"
#include "render_builder.h"

namespace gantt::detail {

namespace {

// Mean of `metric` (as 0..100 after `to_pct`) per pixel column of the frame, -1 where no sample
// covers it; empty when the device has no samples of it.
std::vector<double> metric_columns(const Frame& f, const Model& m, const std::vector<analysis::MetricSeries>& all,
                                   uint16_t capture, uint32_t device, int metric, double to_pct) {
  const analysis::MetricSeries* util = nullptr;
  for (const auto& series : all)
    if (series.capture == capture && series.device == device && series.metric == metric) util = &series;
  if (util == nullptr || util->end == util->begin || f.columns() <= 0) return {};
  const auto columns = static_cast<size_t>(f.columns());
  std::vector<double> sum(columns, 0);
  std::vector<uint32_t> count(columns, 0);
  uint64_t prev = 0;
  for (size_t i = util->begin; i < util->end; ++i) {
    const uint64_t t = m.metrics.time_ns[i];
    // Clamped: a hostile file's value cannot draw outside the strip.
    const double v = std::min(100.0, static_cast<double>(m.metrics.value[i]) * to_pct);
    const uint64_t from = prev == 0 ? t : prev;
    prev = t;
    if (t < f.t0 || from > f.t1) continue;
    const auto c0 = static_cast<size_t>(std::clamp(f.clipped_x(from) - f.left, 0.0f, static_cast<float>(columns - 1)));
    const auto c1 = static_cast<size_t>(std::clamp(f.clipped_x(t) - f.left, 0.0f, static_cast<float>(columns - 1)));
    for (size_t c = c0; c <= c1; ++c) sum[c] += v, count[c]++;
  }
  std::vector<double> mean(columns, -1);
  for (size_t c = 0; c < columns; ++c)
    if (count[c] != 0) mean[c] = sum[c] / count[c];
  return mean;
}

// DRAM read and write throughput together (each of its own peak, so the sum is clamped).
std::vector<double> dram_columns(const Frame& f, const Model& m, const std::vector<analysis::MetricSeries>& all,
                                 uint16_t capture, uint32_t device) {
  std::vector<double> r = metric_columns(f, m, all, capture, device, gpuhook::v1::GPU_METRIC_DRAM_READ_CENTIPCT, 0.01);
  std::vector<double> w = metric_columns(f, m, all, capture, device, gpuhook::v1::GPU_METRIC_DRAM_WRITE_CENTIPCT, 0.01);
  if (r.empty()) return w;
  if (w.empty()) return r;
  for (size_t c = 0; c < r.size(); ++c)
    if (w[c] >= 0) r[c] = std::min(100.0, std::max(0.0, r[c]) + w[c]);
  return r;
}

// The measured series a device shows, in drawing order.
struct Measured {
  MeasuredLines bit;
  std::vector<double> mean;
  const char* label;    // strip label
  const char* tooltip;  // "GPU utilisation (NVML)"
  Color color;
};

std::vector<Measured> measured_series(const Frame& f, const Model& m, uint16_t capture, uint32_t device) {
  const std::vector<analysis::MetricSeries> all = analysis::metric_series(m);
  std::vector<Measured> out;
  auto add = [&](MeasuredLines bit, std::vector<double> mean, const char* label, const char* tooltip, Color color) {
    if (!mean.empty()) out.push_back({bit, std::move(mean), label, tooltip, color});
  };
  add(kMeasuredNvml, metric_columns(f, m, all, capture, device, gpuhook::v1::GPU_METRIC_GPU_UTIL_PERCENT, 1),
      "GPU util (NVML)", "GPU utilisation (NVML)", palette::kComputeUtil);
  add(kMeasuredSmActive, metric_columns(f, m, all, capture, device, gpuhook::v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, 0.01),
      "SM active (PM)", "SM active (PM sampling)", kSmActiveLine);
  add(kMeasuredDram, dram_columns(f, m, all, capture, device), "DRAM r+w (PM)", "DRAM read + write, of peak (PM sampling)",
      kDramLine);
  return out;
}

// The clock drops of the device as bands over [y, y + height), labelled where there is room.
void draw_clock_drops(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y, float height,
                      float label_size) {
  for (const analysis::ClockDrop& d : analysis::clock_drops(m)) {
    if (d.capture != capture || d.device != device || d.end_ns < f.t0 || d.start_ns > f.t1) continue;
    const float x0 = f.clipped_x(d.start_ns), x1 = f.clipped_x(d.end_ns);
    const std::string label = analysis::clock_drop_text(d);
    Rect r = make_rect(x0, y, std::max(1.0f, x1 - x0), height, with_alpha(palette::kMissedOverlap, 70));
    r.tooltip = label + " (from " + rel_time(d.start_ns, f.origin) + ")";
    s.rect(std::move(r));
    if (x1 - x0 > 40) s.text(make_text(x0 + 2, y + label_size + 1, fit(label, x1 - x0 - 4, label_size * 0.6f), label_size, palette::kText));
  }
}

}  // namespace

float draw_measured_strip(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y) {
  const std::vector<Measured> series = measured_series(f, m, capture, device);
  float used = 0;
  for (const Measured& ms : series) {
    const std::vector<double>& mean = ms.mean;
    const float top = y + used;
    s.rect(make_rect(f.left, top, f.right - f.left, kUtilHeight, palette::kLaneBand));
    // Runs of columns with the same rounded level become one rect.
    for (size_t c = 0; c < mean.size();) {
      if (mean[c] < 0) {
        ++c;
        continue;
      }
      const int level = static_cast<int>(mean[c] + 0.5);
      size_t e = c + 1;
      while (e < mean.size() && mean[e] >= 0 && static_cast<int>(mean[e] + 0.5) == level) ++e;
      if (level > 0) {
        const float h = kUtilHeight * static_cast<float>(level) / 100.0f;
        Rect r = make_rect(f.left + static_cast<float>(c), top + kUtilHeight - h, static_cast<float>(e - c), h,
                           with_alpha(ms.color, 150));
        r.tooltip = std::string(ms.tooltip) + " " + std::to_string(level) + "%";
        s.rect(std::move(r));
      }
      c = e;
    }
    // The clock drops once, on the first strip (NVML's when there is one: they are NVML's).
    if (used == 0) draw_clock_drops(s, f, m, capture, device, top, kUtilHeight, 7);
    s.text(make_text(f.left - kLaneLabelGap, top + kLaneLabelBaseline, ms.label, 10, palette::kMuted, Anchor::kEnd));
    used += kUtilHeight + 4;
  }
  return used;
}

int draw_measured_line(Scene& s, const Frame& f, const Model& m, uint16_t capture, uint32_t device, float y, float height) {
  const std::vector<Measured> series = measured_series(f, m, capture, device);
  if (series.empty()) return 0;
  draw_clock_drops(s, f, m, capture, device, y, height, 9);
  int drawn = 0;
  const float base = y + height;
  for (const Measured& ms : series) {
    const std::vector<double>& mean = ms.mean;
    drawn |= ms.bit;
    const Color color = ms.bit == kMeasuredNvml ? kMeasuredLine : ms.color;
    // Segments between neighbouring columns of the same level are merged into one line.
    auto at = [&](size_t c) { return base - static_cast<float>(mean[c] / 100.0) * height; };
    for (size_t c = 0; c + 1 < mean.size();) {
      if (mean[c] < 0 || mean[c + 1] < 0) {
        ++c;
        continue;
      }
      size_t e = c + 1;
      while (e + 1 < mean.size() && mean[e + 1] >= 0 && at(e + 1) == at(c) && at(e) == at(c)) ++e;
      s.line(make_line(f.left + static_cast<float>(c), at(c), f.left + static_cast<float>(e), at(e), color, 1.5f));
      c = e;
    }
  }
  return drawn;
}

}  // namespace gantt::detail
