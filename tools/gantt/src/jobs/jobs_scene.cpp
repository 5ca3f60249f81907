// The cluster chart: a row per node (or GPU), a bar per job coloured by user or partition,
// the submit->start waits, the idle capacity while jobs waited, short-job hot spots, the
// what-if slot, and the cluster's GPU utilisation strip on top. A scene like render's, so
// SVG, PNG and PDF come from the same back ends.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "gantt/render/colors.h"
#include "gantt/jobs/jobs.h"
#include "gantt/jobs/jobs_metrics.h"
#include "gantt/render/lod.h"
#include "gantt/model/text.h"
#include "jobs_strips.h"

namespace gantt::jobs {
namespace {

constexpr float kLeft = 150, kRight = 150, kStripH = 44, kAxisH = 22;
constexpr Color kWait{214, 39, 40, 255};
constexpr Color kMissed{255, 127, 14, 90};
constexpr Color kMissedStrip{255, 127, 14, 200};
constexpr Color kPlacement{31, 119, 180, 255};
constexpr Color kOther{170, 170, 170, 255};
// Tableau 10: distinct at a glance; the busiest keys get them, the rest grey.
constexpr Color kCategorical[] = {{78, 121, 167, 255},  {242, 142, 43, 255}, {225, 87, 89, 255},  {118, 183, 178, 255},
                                  {89, 161, 79, 255},   {237, 201, 72, 255}, {176, 122, 161, 255}, {255, 157, 167, 255},
                                  {156, 117, 95, 255},  {186, 176, 172, 255}};

struct Frame {
  int64_t from = 0, to = 1;
  float x0 = kLeft, w = 1;
  float x(int64_t t) const {
    return x0 + static_cast<float>(static_cast<double>(t - from) * w / static_cast<double>(to - from));
  }
};

// Wall-clock ticks at a round step: minutes to weeks.
void draw_axis(Scene& s, const Frame& f, float y, float grid_bottom) {
  static const int64_t kSteps[] = {60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  const int64_t span = f.to - f.from;
  int64_t step = kSteps[std::size(kSteps) - 1];
  for (int64_t st : kSteps)
    if (span / st <= static_cast<int64_t>(f.w / 110)) {
      step = st;
      break;
    }
  // Years of record (or a what-if pushed far out): whole weeks, about one tick per 110 px.
  const int64_t most = std::max<int64_t>(1, static_cast<int64_t>(f.w / 110));
  if (span / step > most) step = (span / most / 604800 + 1) * 604800;
  for (int64_t t = (f.from / step + 1) * step; t < f.to; t += step) {
    const float x = f.x(t);
    s.line(make_line(x, y + 4, x, grid_bottom, palette::kGrid));
    const std::string stamp = format_wall_time(t);  // 2024-03-01T12:00:00
    const bool midnight = t % 86400 == 0;
    const std::string label = step >= 86400 || midnight ? stamp.substr(0, 10) : stamp.substr(11, 5);
    s.text(make_text(x, y, label, 10, midnight ? palette::kText : palette::kMuted, Anchor::kMiddle, midnight));
  }
}

std::string job_tooltip(const JobSet& set, const Job& j) {
  std::string t = "job " + j.id + (j.name.empty() ? "" : " " + j.name) + "\nuser " + j.user + ", partition " +
                  j.partition + ", " + j.state + "\nsubmit " + format_wall_time(j.submit_s);
  if (j.started()) {
    t += "\nstart " + format_wall_time(j.start_s) + " (waited " + format_span(j.start_s - j.submit_s) + ")";
    t += j.running() ? "\nrunning at the end of the record" : "\nend " + format_wall_time(j.end_s) + " (ran " +
                                                                   format_span(j.end_s - j.start_s) + ")";
  }
  t += "\n" + std::to_string(j.gpus) + " GPUs on " + std::to_string(j.nodes.size()) + " node(s):";
  for (size_t i = 0; i < j.nodes.size() && i < 8; ++i) t += " " + set.nodes[j.nodes[i]];
  if (j.nodes.size() > 8) t += " ...";
  for (size_t i = 0; i < j.captures.size() && i < 8; ++i) t += "\ncapture " + j.captures[i];
  if (j.captures.size() > 8) t += "\n... " + std::to_string(j.captures.size() - 8) + " more captures";
  return t;
}

std::string interval_link(float x0, float x1, float top, float bottom) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "#svgView(viewBox(%.0f,%.0f,%.0f,%.0f))", std::floor(x0) - 20, std::floor(top) - 30,
                std::ceil(x1 - x0) + 40, std::ceil(bottom - top) + 60);
  return buf;
}

}  // namespace

Scene jobs_scene(const JobSet& set, const ChartOptions& options, ChartStats* stats_out) {
  ChartOptions o = options;  // per_gpu may be refused below
  ChartStats st;
  Scene s;
  s.width = std::max(o.width_px, 600);
  s.title = o.title.empty() ? "Cluster jobs: " + set.source : o.title;

  Frame f;
  f.from = o.from_s;
  f.to = o.to_s;
  if (f.from == kUnknownTime || f.to == kUnknownTime) {
    int64_t lo = set.now_s, hi = set.now_s;
    for (const Job& j : set.jobs) lo = std::min(lo, j.submit_s);
    if (o.placement && o.placement->found) hi = std::max(hi, o.placement->end_s);
    if (f.from == kUnknownTime) f.from = lo;
    if (f.to == kUnknownTime) f.to = hi;
  }
  if (f.from == kUnknownTime) f.from = 0;
  if (f.to <= f.from) f.to = f.from + 60;
  f.w = static_cast<float>(s.width) - kLeft - kRight;

  // Colour keys, busiest (GPU-hours in the window) first.
  std::map<std::string, double> weight;
  const auto key_of = [&](const Job& j) -> const std::string& { return o.color_by == ColorBy::kUser ? j.user : j.partition; };
  for (const Job& j : set.jobs)
    if (j.started())
      weight[key_of(j)] += static_cast<double>(std::max<uint32_t>(j.gpus, 1)) *
                           static_cast<double>(std::max<int64_t>(0, std::min(set.end_of(j), f.to) - std::max(j.start_s, f.from)));
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [k, w] : weight) ranked.emplace_back(-w, k);
  std::sort(ranked.begin(), ranked.end());
  std::map<std::string, Color> color;
  for (size_t i = 0; i < ranked.size() && i < std::size(kCategorical); ++i) color[ranked[i].second] = kCategorical[i];
  const auto color_of = [&](const Job& j) {
    auto it = color.find(key_of(j));
    return it == color.end() ? kOther : it->second;
  };

  // Rows: a node, or a GPU slot of a node.
  const uint32_t gpn = std::max<uint32_t>(set.gpus_per_node, 1);
  const std::vector<SlotUse> slots = assign_slots(set);
  uint32_t slots_per_node = gpn;
  for (const SlotUse& u : slots) slots_per_node = std::max(slots_per_node, u.slot + 1);
  // A row per GPU while that stays a chart (100,000 rows); past it, a row per node, said below.
  constexpr size_t kMaxGpuRows = 100'000;
  const bool per_gpu_refused = o.per_gpu && set.nodes.size() * slots_per_node > kMaxGpuRows;
  if (per_gpu_refused) o.per_gpu = false;
  const size_t rows = o.per_gpu ? set.nodes.size() * slots_per_node : set.nodes.size();
  st.rows = rows;
  float row_h = o.per_gpu ? std::clamp(1600.0f / std::max<float>(1, static_cast<float>(rows)), 2.0f, 14.0f)
                          : std::clamp(2400.0f / std::max<float>(1, static_cast<float>(rows)), 3.0f, 22.0f);
  // Raster surfaces stop at 32,767 px: a cluster of tens of thousands of rows gets thinner rows.
  row_h = std::min(row_h, 30000.0f / std::max<float>(1, static_cast<float>(rows)));

  float y = 24;
  s.text(make_text(12, y, utf8_clean(s.title), 15, palette::kText, Anchor::kStart, true));
  const ClusterStats cs = cluster_stats(set, StatsWindow{f.from, f.to, o.short_s});
  y += 18;
  char line[512];
  std::snprintf(line, sizeof line,
                "%zu jobs (%zu running, %zu pending) on %zu nodes x %u GPUs, %s to %s; GPU busy %.1f%%, "
                "idle while jobs waited %.0f GPU-h, fragmentation %.0f%%",
                cs.jobs, cs.running, cs.pending, set.nodes.size(), set.gpus_per_node, format_wall_time(f.from).c_str(),
                format_wall_time(f.to).c_str(),
                cs.capacity_gpu_hours > 0 ? 100.0 * cs.used_gpu_hours / cs.capacity_gpu_hours : 0.0,
                cs.idle_while_waiting_gpu_hours, 100.0 * cs.fragmentation);
  s.text(make_text(12, y, line, 11, palette::kMuted));

  // Utilisation strip: GPUs in use over the whole cluster, per pixel column.
  y += 14;
  const float strip_top = y;
  const double capacity = static_cast<double>(set.nodes.size()) * gpn;
  const int columns = static_cast<int>(f.w);
  {
    // GPU-seconds per column: the partial first and last columns of each use directly, the
    // whole ones between through a difference array (a use spanning the window costs O(1)).
    std::vector<double> busy(static_cast<size_t>(columns) + 1, 0), whole(static_cast<size_t>(columns) + 2, 0);
    const double col_s = static_cast<double>(f.to - f.from) / columns;
    for (const SlotUse& u : slots) {
      if (u.slot >= gpn) continue;
      const double a = std::max<double>(0, static_cast<double>(u.from_s - f.from) / col_s);
      const double b = std::min<double>(columns, static_cast<double>(u.to_s - f.from) / col_s);
      if (b <= a) continue;
      const int ca = static_cast<int>(a), cb = static_cast<int>(b);
      if (ca == cb) {
        busy[static_cast<size_t>(ca)] += (b - a) * col_s;
        continue;
      }
      busy[static_cast<size_t>(ca)] += (ca + 1 - a) * col_s;
      busy[static_cast<size_t>(cb)] += (b - cb) * col_s;
      whole[static_cast<size_t>(ca) + 1] += col_s;
      whole[static_cast<size_t>(cb)] -= col_s;
    }
    double running = 0;
    for (int c = 0; c < columns; ++c) busy[static_cast<size_t>(c)] += running += whole[static_cast<size_t>(c)];
    s.rect(make_rect(kLeft, strip_top, f.w, kStripH, palette::kLaneBand));
    for (int c = 0; c < columns;) {
      const auto level = [&](int k) {
        return capacity > 0 ? std::lround(busy[static_cast<size_t>(k)] / (col_s * capacity) * kStripH) : 0;
      };
      const long lv = level(c);
      int e = c + 1;
      while (e < columns && level(e) == lv) ++e;
      if (lv > 0) {
        Rect r = make_rect(kLeft + static_cast<float>(c), strip_top + kStripH - static_cast<float>(lv),
                           static_cast<float>(e - c), static_cast<float>(lv), palette::kComputeUtil);
        r.tooltip = "GPUs busy: " + std::to_string(std::lround(100.0 * static_cast<double>(lv) / kStripH)) + "% from " +
                    format_wall_time(f.from + static_cast<int64_t>(c * col_s));
        s.rect(std::move(r));
      }
      c = e;
    }
    s.text(make_text(kLeft - 8, strip_top + 12, "GPUs busy", 10, palette::kText, Anchor::kEnd, true));
    s.text(make_text(kLeft - 8, strip_top + 25, "100% at top", 9, palette::kMuted, Anchor::kEnd));
  }
  // The scheduler's missed chances: idle GPUs enough for a waiting job.
  const std::vector<MissedChance> missed = missed_chances(set);
  for (const MissedChance& m : missed) {
    if (m.to_s <= f.from || m.from_s >= f.to) continue;
    const float a = f.x(std::max(m.from_s, f.from)), b = f.x(std::min(m.to_s, f.to));
    Rect r = make_rect(a, strip_top + kStripH + 1, std::max(b - a, 1.0f), 5, kMissedStrip);
    r.tooltip = std::to_string(m.idle_gpus) + " GPUs idle while a job waited for " +
                std::to_string(m.smallest_waiting_gpus) + ", " + format_wall_time(m.from_s) + " for " +
                format_span(m.to_s - m.from_s);
    s.rect(std::move(r));
    ++st.missed_chances;
  }
  y = strip_top + kStripH + 8 + kAxisH - 6;
  const float axis_y = y;
  y += 6;
  const float rows_top = y;
  // --metrics: a strip under each node's row (or its GPUs' rows); without it no room is taken.
  float strip_h = o.metrics ? std::clamp(row_h * 0.6f, 4.0f, 12.0f) : 0.0f;
  // Rows and strips together stay under the raster limit above, thinner alike past it.
  if (const float total = row_h * static_cast<float>(rows) + strip_h * static_cast<float>(set.nodes.size());
      o.metrics && total > 30000.0f) {
    row_h *= 30000.0f / total;
    strip_h *= 30000.0f / total;
  }
  const auto row_y = [&](size_t r) {
    return rows_top + row_h * static_cast<float>(r) + strip_h * static_cast<float>(o.per_gpu ? r / slots_per_node : r);
  };
  const float rows_bottom = rows_top + row_h * static_cast<float>(rows) + strip_h * static_cast<float>(set.nodes.size());
  draw_axis(s, f, axis_y, rows_bottom);

  // Row bands and labels.
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(11.0f / row_h)));
  for (size_t r = 0; r < rows; ++r) {
    const float ry = row_y(r);
    const size_t node = o.per_gpu ? r / slots_per_node : r;
    if ((o.per_gpu ? node : r) % 2 == 0 && (!o.per_gpu || r % slots_per_node == 0))
      s.rect(make_rect(kLeft, ry, f.w, row_h * static_cast<float>(o.per_gpu ? slots_per_node : 1), palette::kLaneBand));
    if (r % label_every == 0 && (!o.per_gpu || row_h >= 9 || r % slots_per_node == 0)) {
      std::string label = ellipsize(set.nodes[node], 20);
      if (o.per_gpu && row_h >= 9) label += " gpu" + std::to_string(r % slots_per_node);
      s.text(make_text(kLeft - 6, ry + std::min(row_h, 11.0f) - 1.5f, label, std::min(10.0f, std::max(row_h, 7.0f)),
                       palette::kText, Anchor::kEnd));
    }
  }

  if (o.metrics)
    draw_utilisation_strips(s, set, *o.metrics, StripFrame{f.from, f.to, f.x0, f.w, strip_h},
                            [&](size_t n) { return row_y(o.per_gpu ? (n + 1) * slots_per_node - 1 : n) + row_h; }, &st);

  // Idle rows while a job could have run there: a pale orange band over each idle stretch,
  // the chances less than a pixel apart joined (a busy cluster has thousands of them).
  std::vector<MissedChance> joined;
  const int64_t pixel_s = std::max<int64_t>(1, (f.to - f.from) / std::max(columns, 1));
  for (const MissedChance& m : missed) {
    if (!joined.empty() && m.from_s - joined.back().to_s < pixel_s) joined.back().to_s = std::max(joined.back().to_s, m.to_s);
    else joined.push_back(m);
  }
  if (!joined.empty()) {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> busy(rows);
    for (const SlotUse& u : slots) busy[o.per_gpu ? size_t{u.node} * slots_per_node + u.slot : u.node].emplace_back(u.from_s, u.to_s);
    for (size_t r = 0; r < rows; ++r) {
      auto& iv = busy[r];
      std::sort(iv.begin(), iv.end());
      int64_t at = f.from;
      size_t m = 0;
      const auto idle = [&](int64_t a, int64_t b) {  // [a, b) idle on this row
        while (m < joined.size() && joined[m].to_s <= a) ++m;
        for (size_t k = m; k < joined.size() && joined[k].from_s < b; ++k) {
          const int64_t lo = std::max(a, joined[k].from_s), hi = std::min(b, joined[k].to_s);
          const float x0 = f.x(lo), x1 = f.x(hi);
          if (x1 - x0 >= 2) s.rect(make_rect(x0, row_y(r), x1 - x0, row_h, kMissed));
        }
      };
      for (const auto& [a, b] : iv) {
        if (a > at) idle(at, std::min(a, f.to));
        at = std::max(at, b);
        if (at >= f.to) break;
      }
      if (at < f.to) idle(at, f.to);
    }
  }

  // Bars: one per (job, row) as slot runs; the narrow ones as coverage when there are too many.
  struct Bar {
    uint32_t job;
    size_t row;
    float y, h;
    int64_t from, to;
  };
  std::vector<Bar> bars;
  {
    // Per (job, node): its slots, merged into runs of neighbours in node mode.
    std::vector<SlotUse> sorted = slots;
    std::sort(sorted.begin(), sorted.end(), [](const SlotUse& a, const SlotUse& b) {
      return std::tie(a.node, a.job, a.slot) < std::tie(b.node, b.job, b.slot);
    });
    const float slot_h = row_h / static_cast<float>(slots_per_node);
    for (size_t i = 0; i < sorted.size();) {
      size_t e = i + 1;
      if (!o.per_gpu)
        while (e < sorted.size() && sorted[e].node == sorted[i].node && sorted[e].job == sorted[i].job &&
               sorted[e].slot == sorted[e - 1].slot + 1)
          ++e;
      const SlotUse& u = sorted[i];
      if (u.to_s > f.from && u.from_s < f.to) {
        if (o.per_gpu) {
          const size_t row = size_t{u.node} * slots_per_node + u.slot;
          bars.push_back({u.job, row, row_y(row) + 0.5f, std::max(row_h - 1, 1.0f), u.from_s, u.to_s});
        } else {
          bars.push_back({u.job, u.node, row_y(u.node) + slot_h * static_cast<float>(u.slot),
                          std::max(slot_h * static_cast<float>(e - i) - (row_h >= 6 ? 0.5f : 0.0f), 0.5f), u.from_s, u.to_s});
        }
      }
      i = e;
    }
    // Jobs without GPUs still hold their nodes: a pale full-height bar in node mode.
    if (!o.per_gpu)
      for (uint32_t ji = 0; ji < set.jobs.size(); ++ji) {
        const Job& j = set.jobs[ji];
        if (!j.started() || j.gpus != 0 || set.end_of(j) <= f.from || j.start_s >= f.to) continue;
        for (uint32_t n : j.nodes)
          bars.push_back({ji, n, row_y(n), row_h, j.start_s, set.end_of(j)});
      }
  }
  st.bars = bars.size();
  WidthHistogram widths;
  for (const Bar& b : bars) widths.add(f.x(std::min(b.to, f.to)) - f.x(std::max(b.from, f.from)));
  const double threshold = widths.threshold(o.max_individual_bars);
  std::map<size_t, Coverage> coverage;
  for (const Bar& b : bars) {
    const float x0 = f.x(std::max(b.from, f.from)), x1 = f.x(std::min(b.to, f.to));
    const Job& j = set.jobs[b.job];
    if (threshold > 0 && x1 - x0 < threshold) {
      coverage.try_emplace(b.row, columns).first->second.add(x0 - kLeft, x1 - kLeft);
      ++st.bars_aggregated;
      continue;
    }
    Color c = color_of(j);
    if (j.gpus == 0) c.a = 90;
    Rect r = make_rect(x0, b.y, std::max(x1 - x0, 1.0f), b.h, c);
    if (j.running()) {
      r.stroke = palette::kText;
      r.dashed = true;
      r.stroke_width = 0.8f;
    }
    r.tooltip = job_tooltip(set, j);
    // The bar links to its captures, else to its own interval: SVG's view fragment zooms a
    // viewer onto the job's span over all rows (SVG 1.1, 17.2.4 "SVG fragment identifiers").
    if (!j.captures.empty()) r.link = j.captures.front();
    else r.link = interval_link(f.x(std::max(j.start_s, f.from)), f.x(std::min(set.end_of(j), f.to)), rows_top, rows_bottom);
    s.rect(std::move(r));
    ++st.bars_individual;
  }
  // About 100,000 coverage rectangles in all, however many rows.
  const size_t run_budget = std::max<size_t>(50, 100000 / std::max<size_t>(rows, 1));
  for (const auto& [row, cov] : coverage) {
    const float ry = row_y(row);
    for (const Coverage::Run& run : cov.runs(cov.levels_within(4, run_budget))) {
      Rect r = make_rect(kLeft + static_cast<float>(run.x0), ry + 0.5f, static_cast<float>(run.x1 - run.x0),
                         std::max(row_h - 1, 1.0f), Color{90, 90, 110, static_cast<uint8_t>(60 + 45 * run.level)});
      r.tooltip = std::to_string(run.events) + " short jobs, " + std::to_string(std::lround(run.busy * 100)) + "% busy";
      s.rect(std::move(r));
    }
  }

  // Waits: a line from submit to start on the job's first row, grey; red dashed from
  // --wait-threshold on, the longest labelled. The longest 3,000 at most: more lines are a smear.
  std::vector<uint32_t> waits;
  for (uint32_t ji = 0; ji < set.jobs.size(); ++ji) {
    const Job& j = set.jobs[ji];
    if (!j.started() || j.nodes.empty() || j.start_s <= j.submit_s || j.start_s <= f.from || j.submit_s >= f.to) continue;
    if (f.x(std::min(j.start_s, f.to)) - f.x(std::max(j.submit_s, f.from)) < 1 && j.start_s - j.submit_s < o.wait_threshold_s)
      continue;
    waits.push_back(ji);
    if (j.start_s - j.submit_s >= o.wait_threshold_s) ++st.long_waits;
  }
  std::stable_sort(waits.begin(), waits.end(), [&](uint32_t a, uint32_t b) {
    return set.jobs[a].start_s - set.jobs[a].submit_s > set.jobs[b].start_s - set.jobs[b].submit_s;
  });
  if (waits.size() > 3000) waits.resize(3000);
  std::map<size_t, std::vector<std::pair<float, float>>> labelled;  // row -> label spans
  size_t labels = 0;
  for (uint32_t ji : waits) {
    const Job& j = set.jobs[ji];
    const bool long_wait = j.start_s - j.submit_s >= o.wait_threshold_s;
    const size_t row = o.per_gpu ? size_t{j.nodes.front()} * slots_per_node : j.nodes.front();
    const float ym = row_y(row) + row_h * 0.5f;
    const float x0 = f.x(std::max(j.submit_s, f.from)), x1 = f.x(std::min(j.start_s, f.to));
    s.line(long_wait ? make_line(x0, ym, x1, ym, kWait, 1, true) : make_line(x0, ym, x1, ym, palette::kMuted, 0.6f));
    if (!long_wait || labels >= 40 || row_h < 6) continue;
    const std::string text = "waited " + format_span(j.start_s - j.submit_s) + " (" + ellipsize(j.id, 16) + ")";
    const float tw = 5.8f * static_cast<float>(text.size()), tx = std::max(x1 - tw - 2, kLeft);
    auto& spans = labelled[row];
    if (std::any_of(spans.begin(), spans.end(), [&](const auto& sp) { return tx < sp.second && tx + tw > sp.first; }))
      continue;
    spans.emplace_back(tx, tx + tw);
    Text t = make_text(tx, ym - 1.5f, text, 9, kWait);
    t.tooltip = job_tooltip(set, j);
    s.text(std::move(t));
    ++labels;
  }

  // Short-job hot spots: the nodes running the most jobs shorter than --short.
  {
    std::vector<const NodeUse*> hot;
    for (const NodeUse& u : cs.nodes)
      if (u.short_jobs >= 3) hot.push_back(&u);
    std::stable_sort(hot.begin(), hot.end(), [](const NodeUse* a, const NodeUse* b) { return a->short_jobs > b->short_jobs; });
    std::map<std::string, uint32_t> index;
    for (uint32_t n = 0; n < set.nodes.size(); ++n) index.emplace(set.nodes[n], n);
    for (size_t i = 0; i < hot.size() && i < 5; ++i) {
      const uint32_t n = index[hot[i]->node];
      const size_t row = o.per_gpu ? size_t{n} * slots_per_node : n;
      Text t = make_text(kLeft + f.w + 6, row_y(row) + std::min(row_h, 11.0f) - 1.5f,
                         std::to_string(hot[i]->short_jobs) + " jobs < " + format_span(o.short_s), 9, palette::kMissedOverlap);
      t.tooltip = hot[i]->node + ": " + std::to_string(hot[i]->short_jobs) + " of its " + std::to_string(hot[i]->jobs) +
                  " jobs ran shorter than " + format_span(o.short_s) + ": many short jobs fragment a node";
      s.text(std::move(t));
    }
  }

  // The what-if job.
  if (o.placement && o.placement->found) {
    const Placement& p = *o.placement;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const size_t row = o.per_gpu ? size_t{p.nodes[i]} * slots_per_node : p.nodes[i];
      const float h = o.per_gpu ? row_h * static_cast<float>(std::min(p.gpus_on_node[i], slots_per_node)) : row_h;
      Rect r = make_rect(f.x(p.start_s), row_y(row), f.x(p.end_s) - f.x(p.start_s), h,
                         Color{31, 119, 180, 40});
      r.stroke = kPlacement;
      r.stroke_width = 1.5f;
      r.dashed = true;
      r.tooltip = "what-if: " + std::to_string(p.gpus_on_node[i]) + " GPUs on " + set.nodes[p.nodes[i]] + " from " +
                  format_wall_time(p.start_s) + " to " + format_wall_time(p.end_s);
      s.rect(std::move(r));
    }
    const size_t row = o.per_gpu ? size_t{p.nodes.front()} * slots_per_node : p.nodes.front();
    s.text(make_text(f.x(p.start_s) + 3, row_y(row) - 2,
                     "what-if: could start " + format_wall_time(p.start_s), 10, kPlacement, Anchor::kStart, true));
  }

  // Legend and footer.
  y = rows_bottom + 18;
  float lx = kLeft;
  const char* by = o.color_by == ColorBy::kUser ? "user" : "partition";
  s.text(make_text(12, y, std::string("colour = ") + by + ":", 10, palette::kText, Anchor::kStart, true));
  for (size_t i = 0; i < ranked.size() && i < std::size(kCategorical); ++i) {
    const std::string name = ellipsize(ranked[i].second.empty() ? "(none)" : ranked[i].second, 18);
    s.rect(make_rect(lx, y - 9, 10, 10, kCategorical[i]));
    s.text(make_text(lx + 14, y, name, 10, palette::kText));
    lx += 24 + 6.2f * static_cast<float>(name.size());
  }
  if (ranked.size() > std::size(kCategorical)) {
    s.rect(make_rect(lx, y - 9, 10, 10, kOther));
    s.text(make_text(lx + 14, y, std::to_string(ranked.size() - std::size(kCategorical)) + " others", 10, palette::kText));
  }
  y += 16;
  s.text(make_text(12, y,
                   "lines: waits from submit to start (red dashed: " + format_span(o.wait_threshold_s) +
                       " or more); orange: idle GPUs while a job that would fit waited "
                       "(by GPU count; partitions and constraints are not in the record); dashed outline: running at the end",
                   9, palette::kMuted));
  if (o.metrics) {
    y += 13;
    s.text(make_text(12, y,
                     std::string("strips under the rows: ") + metric_name(o.metrics->kind) + " from " +
                         utf8_clean(o.metrics->source) + ", mean of the node's GPUs (100% = strip height); red: a drop under "
                         "half the median of the " + std::to_string(analysis::kDropWindow) + " buckets before, while a job ran",
                     9, palette::kMuted));
  }
  y += 13;
  std::snprintf(line, sizeof line, "%zu rows%s, %zu bars (%zu drawn, %zu as coverage); times as the record writes them, no zone shift",
                st.rows, per_gpu_refused ? " (a row per node: a row per GPU would be more than 100,000)" : "", st.bars,
                st.bars_individual, st.bars_aggregated);
  s.text(make_text(12, y, line, 9, palette::kMuted));
  s.height = static_cast<int>(y + 12);
  if (stats_out) *stats_out = st;
  return s;
}

}  // namespace gantt::jobs
