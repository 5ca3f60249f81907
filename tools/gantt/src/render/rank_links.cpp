// What the chart needs to show many ranks: lane labels, the links between matching
// collectives, footer lines. The render code calls these; the drawing stays in the scene's
// vocabulary (rects, lines, text) so every back end shows the same.
#include "gantt/render/rank_links.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "gantt/render/colors.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/scene.h"

namespace gantt {

std::string rank_lane_label(const Model& model, uint16_t capture) {
  std::string label = "rank " + std::to_string(global_rank(model, capture));
  if (capture < model.captures.size()) {
    const auto& h = model.captures[capture].header;
    std::string host = h.host_name();
    if (host.size() > 24) host = host.substr(0, 23) + "\xE2\x80\xA6";
    for (char& c : host)
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    label += " \xC2\xB7 " + host + " pid " + std::to_string(h.pid());
  }
  return label;
}

std::vector<CollectiveLink> collective_links(const Model& model) {
  std::vector<CollectiveLink> links;
  for (const CollectiveInstance& inst : match_collectives(collective_calls(model))) {
    if (inst.arrivals.size() < 2) continue;
    CollectiveLink l;
    for (const Arrival& a : inst.arrivals) {
      if (a.event == UINT32_MAX) continue;
      l.events.push_back(a.event);
      l.end_ns = std::max(l.end_ns, a.end_ns);
    }
    l.last_event = inst.arrivals.back().event;
    l.last_rank = inst.last_rank;
    l.spread_ns = inst.arrival_spread_ns;
    links.push_back(std::move(l));
  }
  return links;
}

namespace {
std::string short_duration(uint64_t ns) {
  char buf[32];
  if (ns >= 1'000'000) snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  else snprintf(buf, sizeof buf, "%.0f us", static_cast<double>(ns) / 1e3);
  return buf;
}
}  // namespace

void draw_collective_links(Scene& scene, const std::vector<CollectiveLink>& links,
                           const std::function<bool(uint32_t, float*, float*, float*, float*)>& where,
                           const std::function<float(uint64_t)>& x_of, float label_y) {
  const float inf = std::numeric_limits<float>::infinity();
  draw_collective_links(scene, links, where, x_of, label_y, {{-inf, inf}});
}

void draw_collective_links(Scene& scene, const std::vector<CollectiveLink>& links,
                           const std::function<bool(uint32_t, float*, float*, float*, float*)>& where,
                           const std::function<float(uint64_t)>& x_of, float label_y,
                           const std::vector<std::pair<float, float>>& lane_spans) {
  const Color link = palette::kRankLink;
  const Color late = palette::kLastArrival;
  float last_label_x = -1e9f;
  for (const CollectiveLink& l : links) {
    float top = 1e9f, bottom = -1e9f;
    int drawn = 0;
    for (uint32_t e : l.events) {
      float x0, x1, y, h;
      if (!where(e, &x0, &x1, &y, &h)) continue;
      top = std::min(top, y + h / 2);
      bottom = std::max(bottom, y + h / 2);
      ++drawn;
    }
    if (drawn < 2) continue;  // nothing to join on this chart
    const float x = x_of(l.end_ns);
    for (const auto& [from, to] : lane_spans) {
      const float a = std::max(top, from), b = std::min(bottom, to);
      if (a < b) scene.line(make_line(x, a, x, b, link, 0.75f));
    }
    float x0, x1, y, h;
    if (where(l.last_event, &x0, &x1, &y, &h)) {
      Rect r = make_rect(x0, y, std::max(x1 - x0, 1.0f), h, Color{0, 0, 0, 0});
      r.stroke = late;
      r.stroke_width = 1.25f;
      r.tooltip = "last to arrive: rank " + std::to_string(l.last_rank) + ", " + short_duration(l.spread_ns) +
                  " after the first";
      const std::string tip = r.tooltip;
      scene.rect(std::move(r));
      // Labels only where they do not run into the previous one.
      if (x0 - last_label_x > 70) {
        Text t = make_text(x0, label_y, "rank " + std::to_string(l.last_rank) + " +" + short_duration(l.spread_ns), 8, late);
        t.tooltip = tip;
        scene.text(std::move(t));
        last_label_x = x0;
      }
    }
  }
}

std::vector<std::string> rank_footer_lines(const Model& model, const RankAlignment& alignment) {
  std::vector<std::string> lines;
  if (model.captures.size() < 2) return lines;
  lines.push_back(summarize(alignment) + " (per capture: gantt-cli info)");
  return lines;
}

}  // namespace gantt
