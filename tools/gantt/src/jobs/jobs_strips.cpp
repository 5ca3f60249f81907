// The --metrics strips of the jobs chart (jobs_strips.h).
#include "jobs_strips.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gantt/render/colors.h"
#include "gantt/model/text.h"

namespace gantt::jobs {
namespace {

constexpr Color kStripBand{236, 238, 242, 255};
constexpr Color kDrop{214, 39, 40, 150};  // render's idle red, see-through over the strip

std::string pct(double v) { return std::to_string(std::lround(100 * v)) + "%"; }

}  // namespace

void draw_utilisation_strips(Scene& s, const JobSet& set, const NodeMetrics& m, const StripFrame& f,
                             const std::function<float(size_t)>& strip_top, ChartStats* st) {
  const NodeUtilisation u = node_utilisation(set, m, f.from_s, f.to_s);
  const std::string metric = metric_name(m.kind);
  const float h = f.strip_h;
  for (size_t n = 0; n < u.nodes.size(); ++n) {
    const NodeUtilisation::Node& node = u.nodes[n];
    if (node.share.empty()) continue;
    ++st->utilisation_strips;
    const float top = strip_top(n);
    Rect band = make_rect(f.x0, top, f.w, h, kStripBand);
    band.tooltip = set.nodes[n] + ": " + metric + ", mean of its GPUs per " + format_span(u.bucket_s) + "; 100% = strip height";
    s.rect(std::move(band));
    const auto level = [&](size_t b) {
      return std::isnan(node.share[b]) ? -1L : std::lround(node.share[b] * static_cast<double>(h));
    };
    for (size_t b = 0; b < u.buckets;) {
      const long lv = level(b);
      size_t e = b + 1;
      while (e < u.buckets && level(e) == lv) ++e;
      const int64_t t0 = std::max(u.bucket_start(b), f.from_s), t1 = std::min(u.bucket_start(e), f.to_s);
      if (lv > 0 && t1 > t0) {
        Rect r = make_rect(f.x(t0), top + h - static_cast<float>(lv), f.x(t1) - f.x(t0), static_cast<float>(lv),
                           palette::kComputeUtil);
        r.tooltip = set.nodes[n] + " " + metric + " " + pct(node.share[b]) + " from " + format_wall_time(u.bucket_start(b));
        s.rect(std::move(r));
      }
      b = e;
    }
    for (const analysis::DeviceTimeline::Drop& d : node.drops) {
      const int64_t t0 = std::max(u.bucket_start(d.first), f.from_s);
      const int64_t t1 = std::min(u.bucket_start(d.first + d.buckets), f.to_s);
      Rect r = make_rect(f.x(t0), top, std::max(f.x(t1) - f.x(t0), 2.0f), h, kDrop);
      r.tooltip = set.nodes[n] + " " + format_wall_time(u.bucket_start(d.first)) + ": drop: " + metric + " " + pct(d.lowest) +
                  " for " + format_span(u.bucket_s * static_cast<int64_t>(d.buckets)) + " (was " + pct(d.median) +
                  ") while a job ran";
      s.rect(std::move(r));
      ++st->utilisation_drops;
    }
  }
}

}  // namespace gantt::jobs
