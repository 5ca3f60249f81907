// `render --view comm`: per communicator, rank x rank heatmaps of point-to-point bytes (exact),
// collective traffic per link (ring model) and achieved point-to-point bandwidth, the slow
// pairs outlined (analysis/comm.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "gantt/analysis/table.h"
#include "gantt/render/colors.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"
#include "render_internal.h"

namespace gantt {

namespace {

constexpr float kMaxCell = 36, kGridGap = 60, kTitleWidth = 220;

Color heat(double share) {  // white -> dark blue
  const double s = std::clamp(share, 0.0, 1.0);
  auto mix = [&](int a, int b) { return static_cast<uint8_t>(std::lround(a + (b - a) * s)); };
  return Color{mix(247, 8), mix(251, 48), mix(255, 107), 255};
}

}  // namespace

// The GPUs on a circle with the link between each pair (as nvidia-smi topo -m names it), each
// edge as thick as the traffic the communicator put between the two GPUs' ranks.
float draw_topology(Scene& s, const Model& m, const analysis::CommMatrix& c, const analysis::Topology& topo, float y) {
  using namespace detail;
  std::vector<size_t> gpus;
  for (size_t i = 0; i < topo.devices.size(); ++i)
    if (topo.devices[i].rfind("GPU", 0) == 0) gpus.push_back(i);
  if (gpus.size() < 2) return y;
  // The slot on the circle of each GPU index, by its name: NCCL's topology XML lists only the
  // job's GPUs (GPU4 to GPU7 for a job on the second half of a box), so slot and index differ.
  std::map<int32_t, size_t> slot;
  for (size_t k = 0; k < gpus.size(); ++k) {
    const std::string& dev = topo.devices[gpus[k]];
    int32_t index = -1;
    std::from_chars(dev.data() + 3, dev.data() + dev.size(), index);
    if (index >= 0) slot.emplace(index, k);
  }
  // Traffic between GPU slots (both directions, p2p and ring model).
  const std::vector<int32_t> gpu_of = analysis::rank_gpus(m, c.comm_id, c.nranks);
  const size_t g = gpus.size();
  std::vector<double> traffic(g * g, 0);
  for (int32_t f = 0; f < c.nranks; ++f)
    for (int32_t t = 0; t < c.nranks; ++t) {
      const auto a = slot.find(gpu_of[static_cast<size_t>(f)]), b = slot.find(gpu_of[static_cast<size_t>(t)]);
      if (a == slot.end() || b == slot.end() || a == b) continue;
      const double bytes = static_cast<double>(c.p2p_bytes[c.at(f, t)] + c.ring_bytes[c.at(f, t)]);
      traffic[std::min(a->second, b->second) * g + std::max(a->second, b->second)] += bytes;
    }
  const double top = *std::max_element(traffic.begin(), traffic.end());
  s.text(make_text(40, y + 4,
                   "topology: edges by link (nvidia-smi topo -m's names), as thick as the traffic between the GPUs' ranks",
                   11, palette::kText));
  const float radius = std::min(160.f, 40.f + 14.f * static_cast<float>(g));
  const float cx = 40 + radius + 40, cy = y + 30 + radius;
  auto pos = [&](size_t i) {
    const double a = 2 * 3.14159265358979 * static_cast<double>(i) / static_cast<double>(g) - 3.14159265358979 / 2;
    return std::make_pair(cx + radius * static_cast<float>(std::cos(a)), cy + radius * static_cast<float>(std::sin(a)));
  };
  for (size_t i = 0; i < g; ++i)
    for (size_t j = i + 1; j < g; ++j) {
      const std::string& link = topo.link(gpus[i], gpus[j]);
      const int r = analysis::Topology::rank_of(link);
      const Color col = r == 3 ? Color{44, 160, 44, 200} : r == 2 ? Color{230, 159, 0, 200} : r == 1 ? Color{90, 120, 170, 200}
                                                                                           : Color{170, 170, 170, 160};
      const double bytes = traffic[i * g + j];
      const float width = 1 + (top > 0 ? static_cast<float>(5 * bytes / top) : 0);
      const auto [x1, y1] = pos(i);
      const auto [x2, y2] = pos(j);
      s.line(make_line(x1, y1, x2, y2, col, width, r == 0));
      if (bytes > 0 || g <= 4)
        // At 35% of the way: two diagonals cross at their middles, their labels would too.
        s.text(make_text(x1 + 0.35f * (x2 - x1), y1 + 0.35f * (y2 - y1) - 3,
                         link + (bytes > 0 ? " " + analysis::bytes_text(static_cast<uint64_t>(bytes)) : ""), 8, palette::kText,
                         Anchor::kMiddle));
    }
  for (size_t i = 0; i < g; ++i) {
    const auto [x, yy] = pos(i);
    Rect r = make_rect(x - 16, yy - 9, 32, 18, Color{255, 255, 255, 255});
    r.stroke = palette::kText;
    r.tooltip = topo.devices[gpus[i]];
    s.rect(std::move(r));
    s.text(make_text(x, yy + 4, topo.devices[gpus[i]], 9, palette::kText, Anchor::kMiddle));
  }
  float ly = cy + radius + 30;
  const std::pair<Color, const char*> legend[] = {{Color{44, 160, 44, 200}, "NVLink (NV#)"},
                                                  {Color{230, 159, 0, 200}, "PCIe switch (PIX, PXB)"},
                                                  {Color{90, 120, 170, 200}, "host bridge (PHB, NODE)"},
                                                  {Color{170, 170, 170, 160}, "across sockets (SYS)"}};
  float lx = 40;
  for (const auto& [col, label] : legend) {
    s.line(make_line(lx, ly - 4, lx + 18, ly - 4, col, 3));
    s.text(make_text(lx + 24, ly, label, 10, palette::kText));
    lx += 40 + static_cast<float>(std::string_view(label).size()) * 6.0f;
  }
  return ly + 20;
}

Scene comm_scene(const Model& m, const std::vector<analysis::CommMatrix>& ms, const std::vector<std::string>& notes,
                 const RenderOptions& o, const analysis::Topology* topology) {
  using namespace detail;
  Scene s = begin_view("communication per rank pair", o);
  float y = 40;
  for (const std::string& n : notes) {
    s.text(make_text(12, y, utf8_clean(n), 10, palette::kMuted));
    y += 14;
  }
  if (ms.empty()) {
    s.text(make_text(static_cast<float>(s.width) / 2, y + 40, "no NCCL point-to-point or matched collective traffic", 16,
                     palette::kMuted, Anchor::kMiddle));
    s.height = static_cast<int>(y + 80);
    return s;
  }
  for (const analysis::CommMatrix& c : ms) {
    const int32_t n = c.nranks;
    const float avail = (static_cast<float>(s.width) - 3 * kGridGap - 40) / 3;
    const float cell = std::min(kMaxCell, avail / static_cast<float>(n));
    char head[160];
    std::snprintf(head, sizeof head, "communicator 0x%llx \xC2\xB7 %d ranks \xC2\xB7 %llu sends \xC2\xB7 %llu collectives",
                  static_cast<unsigned long long>(c.comm_id), n, static_cast<unsigned long long>(c.sends),
                  static_cast<unsigned long long>(c.collectives));
    s.text(make_text(12, y + 4, head, 12, palette::kText, Anchor::kStart, true));
    y += 34;
    struct Panel {
      const char* title;
      std::vector<double> values;
      bool bandwidth;
    };
    Panel panels[3] = {{"point-to-point bytes (exact)", {}, false},
                       {"collectives per link (ring model)", {}, false},
                       {"point-to-point GB/s achieved", {}, true}};
    for (int32_t f = 0; f < n; ++f)
      for (int32_t t = 0; t < n; ++t) {
        panels[0].values.push_back(static_cast<double>(c.p2p_bytes[c.at(f, t)]));
        panels[1].values.push_back(static_cast<double>(c.ring_bytes[c.at(f, t)]));
        panels[2].values.push_back(c.p2p_gbps(f, t));
      }
    float x = 40;
    for (const Panel& p : panels) {
      const double top = *std::max_element(p.values.begin(), p.values.end());
      s.text(make_text(x, y - 8, p.title, 11, palette::kText));
      for (int32_t f = 0; f < n; ++f) {
        for (int32_t t = 0; t < n; ++t) {
          const double v = p.values[static_cast<size_t>(f) * static_cast<size_t>(n) + static_cast<size_t>(t)];
          Rect r = make_rect(x + static_cast<float>(t) * cell, y + static_cast<float>(f) * cell, cell - 1, cell - 1,
                             v > 0 ? heat(top > 0 ? v / top : 0) : Color{240, 240, 240, 255});
          if (v > 0) {
            r.tooltip = "rank " + std::to_string(f) + " -> rank " + std::to_string(t) + ": " +
                        (p.bandwidth ? analysis::fixed(v, 2) + " GB/s" : analysis::bytes_text(static_cast<uint64_t>(v)));
            if (p.bandwidth)
              for (const auto& sp : c.slow)
                if (sp.from == f && sp.to == t) {
                  r.stroke = palette::kIdle;
                  r.stroke_width = 2;
                  r.tooltip += " (slow: the median pair " + analysis::fixed(sp.median_gbps, 2) + " GB/s)";
                }
          }
          s.rect(std::move(r));
          if (v > 0 && cell >= 34) {
            const std::string label = p.bandwidth ? analysis::fixed(v, 1) : analysis::bytes_text(static_cast<uint64_t>(v));
            s.text(make_text(x + (static_cast<float>(t) + 0.5f) * cell, y + (static_cast<float>(f) + 0.62f) * cell,
                             label.substr(0, 8), 7, text_color_on(heat(top > 0 ? v / top : 0)), Anchor::kMiddle));
          }
        }
        if (cell >= 10)
          s.text(make_text(x - 3, y + (static_cast<float>(f) + 0.7f) * cell, std::to_string(f), 8, palette::kMuted, Anchor::kEnd));
      }
      x += std::max(static_cast<float>(n) * cell, kTitleWidth) + kGridGap;  // room for the panel's title
    }
    y += static_cast<float>(n) * cell + 8;
    s.text(make_text(40, y + 10, "rows: sending rank, columns: receiving rank", 10, palette::kMuted));
    y += 22;
    for (const auto& sp : c.slow) {
      s.text(make_text(40, y + 10,
                       "slow pair: rank " + std::to_string(sp.from) + " -> rank " + std::to_string(sp.to) + " at " +
                           analysis::fixed(sp.gbps, 2) + " GB/s, the median pair " + analysis::fixed(sp.median_gbps, 2) + " GB/s",
                       10, palette::kIdle));
      y += 14;
    }
    y += 20;
    if (topology) y = draw_topology(s, m, c, *topology, y);
  }
  if (topology && ms.empty()) {
    analysis::CommMatrix none;
    y = draw_topology(s, m, none, *topology, y);
  }
  std::string foot = "p2p: exact (each ncclSend's bytes and kernel time); ring model: every collective adds bus factor x size "
                     "to each rank's link to the next (a model, not a measurement)";
  draw_view_footer(s, m, std::move(foot), y);
  return s;
}

}  // namespace gantt
