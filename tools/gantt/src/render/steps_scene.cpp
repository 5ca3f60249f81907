// `render --view steps`: per capture, each step's duration over the run (analysis/steps.h), the
// median marked, the flight recorder's dumps where their triggers fired.
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

constexpr float kRankRowHeight = 120;
constexpr float kRankRowGap = 30;
constexpr Color kStep{31, 119, 180, 255};
constexpr Color kMedian{90, 90, 90, 255};

std::string ms(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

}  // namespace

Scene steps_scene(const Model& m, const Selection& sel, const analysis::Steps& steps, const RenderOptions& o) {
  using namespace detail;
  Scene s = begin_view(steps.name.empty() ? std::string("step times") : "step times: \"" + utf8_clean(steps.name) + "\"", o);
  float y = 30;
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (const analysis::StepSeries& c : steps.captures) {
    if (!c.start_ns.empty()) t0 = std::min(t0, c.start_ns.front()), t1 = std::max(t1, c.start_ns.back() + c.duration_ns.back());
    for (const auto& [t, what] : c.dumps) t0 = std::min(t0, t), t1 = std::max(t1, t);
  }
  if (steps.captures.empty() || t0 >= t1) {
    s.text(make_text(static_cast<float>(s.width) / 2, y + 50,
                     "no steps: no closed top-level NVTX range" +
                         (steps.name.empty() ? std::string() : " named \"" + utf8_clean(steps.name) + "\""),
                     16, palette::kMuted, Anchor::kMiddle));
    s.height = static_cast<int>(y + 90);
    return s;
  }
  const Frame f = make_frame(m, sel, t0, t1, s.width);
  draw_axis_labels(s, f, y);
  y += 26;
  for (const analysis::StepSeries& c : steps.captures) {
    const float base = y + kRankRowHeight;
    s.rect(make_rect(f.left, y, f.right - f.left, kRankRowHeight, palette::kLaneBand));
    const std::string& path = m.captures[c.capture].path;
    const std::string label = "c" + std::to_string(c.capture) + " " + path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    s.text(make_text(f.left - 10, y + 14, fit(utf8_clean(label), kLabelWidth - 20), kFontSize, palette::kText, Anchor::kEnd));
    s.text(make_text(f.left - 10, y + 30, std::to_string(c.duration_ns.size()) + " steps, median " + ms(c.median_ns), 10,
                     palette::kMuted, Anchor::kEnd));
    const double top = static_cast<double>(std::max<uint64_t>(c.max_ns, 1));
    const auto height_of = [&](uint64_t d) { return static_cast<float>(static_cast<double>(d) / top * (kRankRowHeight - 8)); };
    s.text(make_text(f.left + 4, y + 10, "longest " + ms(c.max_ns), 9, palette::kMuted));
    // Per pixel column the longest step: a slow one is never hidden behind its neighbours.
    std::vector<uint64_t> column(static_cast<size_t>(std::max(f.columns(), 1)), 0);
    for (size_t i = 0; i < c.start_ns.size(); ++i) {
      const int col = static_cast<int>(std::clamp(f.x(c.start_ns[i]) - f.left, 0.0f, static_cast<float>(column.size() - 1)));
      column[static_cast<size_t>(col)] = std::max(column[static_cast<size_t>(col)], c.duration_ns[i]);
    }
    for (size_t col = 0; col < column.size(); ++col) {
      if (column[col] == 0) continue;
      const float h = std::max(1.0f, height_of(column[col]));
      Rect bar = make_rect(f.left + static_cast<float>(col), base - h, 1, h, kStep);
      if (column[col] > 2 * c.median_ns) bar.tooltip = ms(column[col]);
      s.rect(std::move(bar));
    }
    if (c.median_ns) {
      const float my = base - height_of(c.median_ns);
      s.line(make_line(f.left, my, f.right, my, kMedian, 1, true));
      s.text(make_text(f.right - 2, my - 3, "median " + ms(c.median_ns), 9, kMedian, Anchor::kEnd));
    }
    for (const auto& [t, what] : c.dumps) {
      const float x = f.x(t);
      Line l = make_line(x, y - 4, x, base, palette::kIdle, 1.2f);
      l.dashed = true;
      s.line(std::move(l));
      Text label = make_text(x + 3, y + 10, fit(utf8_clean(what), 260), 9, palette::kIdle);
      label.tooltip = utf8_clean(what);
      s.text(std::move(label));
    }
    y = base + kRankRowGap;
  }
  y += draw_legend(s, y, s.width,
                   {{kStep, "a step's duration (the longest per pixel)"},
                    {kMedian, "median step"},
                    {palette::kIdle, "a flight recorder dump, where its trigger fired"}}) +
       6;
  draw_view_footer(s, m, "steps: occurrences of the NVTX range \"" + utf8_clean(steps.name) + "\"", y);
  return s;
}

}  // namespace gantt
