// Axis, legend, footer and tooltips: the parts of the chart around the lanes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "gantt/render/colors.h"
#include "gantt/scan/trace_import.h"
#include "gantt/model/text.h"
#include "render_internal.h"

namespace gantt::detail {

Color with_alpha(Color c, uint8_t a) {
  c.a = a;
  return c;
}

std::string rel_time(uint64_t t, uint64_t t0) {
  if (t == 0) return "?";
  const int64_t d = static_cast<int64_t>(t - t0);
  return (d >= 0 ? "+" : "") + format_duration(d);
}

namespace {

// A 1-2-5 step giving about `target` ticks over `span`.
double nice_step(double span, double target) {
  const double raw = span / std::max(1.0, target);
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string tick_label(double ns, double step) {
  const char* unit = "ns";
  double div = 1;
  if (step >= 1e8) { unit = "s"; div = 1e9; }
  else if (step >= 1e5) { unit = "ms"; div = 1e6; }
  else if (step >= 1e2) { unit = "us"; div = 1e3; }
  const double v = ns / div, st = step / div;
  const int decimals = st >= 1 ? 0 : st >= 0.1 ? 1 : st >= 0.01 ? 2 : 3;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}

}  // namespace

namespace {

// Ticks at round multiples of the step counted from the frame's origin (the origin of
// --from/--to), inside the window: f(time from origin in ns, absolute time).
template <class F>
void for_each_tick(const Frame& f, F&& tick) {
  const double span = static_cast<double>(f.t1 - f.t0);
  if (span <= 0) return;
  const double step = nice_step(span, (f.right - f.left) / 110.0);
  const double first = static_cast<double>(static_cast<int64_t>(f.t0 - f.origin));  // window start from origin
  for (double t = std::ceil(first / step - 1e-9) * step; t <= first + span + step * 1e-9; t += step)
    tick(t + 0.0, step, f.origin + static_cast<uint64_t>(std::llround(t)));  // + 0.0: no "-0 ms"
}

}  // namespace

void draw_axis_labels(Scene& s, const Frame& f, float y) {
  s.text(make_text(12, y + 11, "time from " + f.origin_name, 10, palette::kMuted));
  for_each_tick(f, [&](double t, double step, uint64_t at) {
    const float x = f.x(at);
    s.text(make_text(x, y + 11, tick_label(t, step), 10, palette::kText, Anchor::kMiddle));
    s.line(make_line(x, y + 14, x, y + 18, palette::kMuted, 1));
  });
}

void draw_grid(Scene& s, const Frame& f, float y_top, float y_bottom) {
  for_each_tick(f, [&](double, double, uint64_t at) {
    const float x = f.x(at);
    s.line(make_line(x, y_top, x, y_bottom, palette::kGrid, 1));
  });
}

float draw_legend(Scene& s, float y, int width, const std::vector<LegendEntry>& entries) {
  float x = 12;
  float row_y = y;
  for (const LegendEntry& e : entries) {
    const float w = 14 + 6 + static_cast<float>(e.label.size()) * 6.0f + 14;
    if (x + w > static_cast<float>(width) - 8) {
      x = 12;
      row_y += 16;
    }
    Rect r = make_rect(x, row_y + 2, 14, 9, e.dashed ? Color{255, 255, 255, 255} : e.color);
    if (e.dashed) {
      r.stroke = e.color;
      r.dashed = true;
      r.stroke_width = 1.5f;
    }
    s.rect(r);
    s.text(make_text(x + 19, row_y + 10.5f, e.label, 10, palette::kText));
    x += w;
  }
  return row_y + 18 - y;
}

float draw_legend(Scene& s, float y, int width) {
  const std::vector<LegendEntry> entries = {
      {palette::kLaunchToQueued, "launch\xE2\x86\x92queued", false},
      {palette::kQueuedToStart, "queued: own stream", false},
      {palette::kWaitDependency, "queued: event/legacy", false},
      {palette::kWaitPriority, "queued: priority", false},
      {palette::kWaitDeviceFull, "queued: device full", false},
      {palette::kWaitLaunch, "queued: launch", false},
      {kernel_color("legend kernel"), "kernel (colour by name)", false},
      {palette::kHtoD, "memcpy HtoD", false},
      {palette::kDtoH, "memcpy DtoH", false},
      {palette::kDtoD, "memcpy DtoD/PtoP", false},
      {palette::kMemset, "memset", false},
      {palette::kNccl, "NCCL", false},
      {palette::kComputeUtil, "busy: compute", false},
      {palette::kCopyUtil, "busy: copy", false},
      {palette::kBlocking, "host blocked", false},
      {palette::kLaunchTick, "launch", false},
      {palette::kRange, "NVTX range", false},
      {palette::kQueueDelay, "queue delay", true},
      {palette::kLowOccupancy, "low occupancy", false},
      {palette::kOverlap, "copy overlapped", false},
      {palette::kMissedOverlap, "copy not overlapped", true},
      {with_alpha(palette::kIdle, 60), "idle gap", false},
  };
  return draw_legend(s, y, width, entries);
}

Frame make_frame(const Model& m, const Selection& sel, uint64_t t0, uint64_t t1, int width) {
  Frame f;
  f.t0 = t0;
  f.t1 = std::max(t1, t0 + 1);
  f.origin = sel.origin_ns ? sel.origin_ns : m.first_ns();
  f.origin_name = sel.origin_name;
  f.left = kLabelWidth;
  f.right = static_cast<float>(width) - kRightMargin;
  f.px_per_ns = (f.right - f.left) / static_cast<double>(f.t1 - f.t0);
  return f;
}

Scene begin_view(std::string title, const RenderOptions& o) {
  Scene s;
  s.width = std::max(400, o.width_px);
  s.title = std::move(title);
  s.text(make_text(12, 20, s.title, 14, palette::kText, Anchor::kStart, true));
  return s;
}

std::string event_tooltip(const Model& m, uint32_t e, uint64_t t0) {
  const EventTable& ev = m.events;
  std::string t = ellipsize(m.display_name(e), 300);
  t += "\n";
  t += to_string(ev.kind[e]);
  if (ev.kind[e] == EventKind::kMemcpy) t += std::string(" ") + copy_kind_name(ev.copy_kind[e]);
  if (ev.src_device[e] != kNone && ev.dst_device[e] != kNone)
    t += " GPU" + std::to_string(ev.src_device[e]) + " \xE2\x86\x92 GPU" + std::to_string(ev.dst_device[e]);
  t += " \xC2\xB7 device " + std::to_string(ev.device[e]) + " \xC2\xB7 stream " + std::to_string(ev.stream[e]);
  if (ev.priority[e]) t += " (prio " + std::to_string(ev.priority[e]) + ")";
  if (ev.bytes[e]) t += " \xC2\xB7 " + format_bytes(ev.bytes[e]);
  t += "\nlaunch " + rel_time(m.launch_ns(e), t0) + ", queued " + rel_time(ev.queued_ns[e], t0) + ", submitted " +
       rel_time(ev.submitted_ns[e], t0) + ", start " + rel_time(ev.start_ns[e], t0) + ", end " +
       rel_time(ev.end_ns[e], t0);
  const Stages st = m.stages(e);
  auto d = [](const std::optional<int64_t>& v) { return v ? format_duration(*v) : std::string("?"); };
  t += "\nlaunch\xE2\x86\x92queued " + d(st.launch_to_queued_ns) + ", queued\xE2\x86\x92submitted " +
       d(st.queued_to_submitted_ns) + ", submitted\xE2\x86\x92start " + d(st.submitted_to_start_ns) + ", exec " +
       d(st.exec_ns) + ", total " + d(st.total_ns);
  if (ev.kind[e] == EventKind::kKernel || ev.kind[e] == EventKind::kNccl) {
    const auto& g = ev.grid[e];
    const auto& b = ev.block[e];
    char buf[200];
    std::snprintf(buf, sizeof buf, "\ngrid %dx%dx%d, block %dx%dx%d, %u regs/thread, %u B shared", g[0], g[1], g[2], b[0],
                  b[1], b[2], unsigned{ev.registers_per_thread[e]}, ev.static_smem_bytes[e] + ev.dynamic_smem_bytes[e]);
    t += buf;
    if (!std::isnan(ev.occupancy[e]))
      t += ", occupancy " + std::to_string(static_cast<int>(std::lround(ev.occupancy[e] * 100))) + "% (limit: " +
           to_string(ev.occupancy_limit[e]) + ")";
  }
  t += "\ncorrelation " + std::to_string(ev.correlation_id[e]);
  if (const uint64_t tid = m.launch_thread_id(e)) t += ", tid " + std::to_string(tid);
  if (ev.range[e] != kNone) t += ", range " + ellipsize(m.range_path(e), 200);
  return t;
}

namespace {
std::string basename(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
}  // namespace

std::vector<std::string> footer_lines(const Model& m, const Selection& sel, const RenderOptions& o,
                                      const RenderStats& st, const Annotations& ann) {
  std::vector<std::string> lines;
  if (m.captures.size() > 1) {
    // A job: one line for all its captures, the alignment line, the window, the flags
    // (each capture's details: gantt-cli info).
    std::set<std::string> hosts, gpus;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    bool simulated = false, damaged = false;
    for (const CaptureInfo& c : m.captures) {
      hosts.insert(c.header.host_name());
      for (const auto& d : c.devices) gpus.insert(d.name());
      if (c.header.has_rank()) lo = std::min(lo, c.header.rank()), hi = std::max(hi, c.header.rank());
      simulated = simulated || (c.header.features() & gpuhook::v1::FEATURE_SIMULATOR) != 0;
      damaged = damaged || c.integrity.truncated || c.integrity.error;
    }
    std::string l = std::to_string(m.captures.size()) + " captures";
    if (lo <= hi) l += " (ranks " + std::to_string(lo) + "\xE2\x80\x93" + std::to_string(hi) + ")";
    l += " on " + std::to_string(hosts.size()) + " host" + (hosts.size() == 1 ? "" : "s");
    if (hosts.size() <= 3)
      for (const std::string& h : hosts) l += " " + ellipsize(h, 30);
    for (const std::string& g : gpus) l += " \xC2\xB7 " + ellipsize(g, 40);
    if (simulated) l += " \xC2\xB7 SIMULATED GPU (test simulator, not GPU figures)";
    if (damaged) l += " \xC2\xB7 some captures damaged (gantt-cli info)";
    lines.push_back(l);
  }
  for (size_t i = 0; i < m.captures.size() && i < 4 && m.captures.size() == 1; ++i) {
    const CaptureInfo& c = m.captures[i];
    std::string l = "capture " + ellipsize(basename(c.path), 60) + ": host " + ellipsize(c.header.host_name(), 40) +
                    ", pid " + std::to_string(c.header.pid());
    if (c.header.has_rank()) l += ", rank " + std::to_string(c.header.rank());
    for (const auto& d : c.devices) {
      l += " \xC2\xB7 GPU" + std::to_string(d.ordinal()) + " " + ellipsize(d.name(), 40);
      if (c.devices.size() > 3) { l += " (+" + std::to_string(c.devices.size() - 1) + " more)"; break; }
    }
    if (c.header.features() & gpuhook::v1::FEATURE_SIMULATOR) l += " \xC2\xB7 SIMULATED GPU (test simulator, not GPU figures)";
    if (c.integrity.truncated) l += " \xC2\xB7 truncated tail";
    if (c.integrity.error) l += " \xC2\xB7 stopped at corruption, byte " + std::to_string(c.integrity.error->offset());
    lines.push_back(l);
    // A torch.profiler or nsys trace: its first notice says which stages it cannot show.
    if (scan::is_imported(c.header.tool_version()) && !c.notices.empty()) lines.push_back("  " + ellipsize(c.notices.front(), 240));
    lines.push_back("  clock alignment: " + describe(c.alignment));
  }
  for (const std::string& l : o.footer_lines) lines.push_back(ellipsize(l, 240));
  const uint64_t origin = sel.origin_ns ? sel.origin_ns : m.first_ns();
  lines.push_back("window " + format_duration(static_cast<int64_t>(sel.window_start_ns - origin)) + " \xE2\x80\xA6 " +
                  format_duration(static_cast<int64_t>(sel.window_end_ns - origin)) + " from " + sel.origin_name +
                  ", the axis's origin and --from/--to's (span " +
                  format_duration(static_cast<int64_t>(sel.window_end_ns - sel.window_start_ns)) + ")" +
                  (o.filter_description.empty() ? "" : " \xC2\xB7 filters: " + o.filter_description));
  char buf[256];
  std::snprintf(buf, sizeof buf, "events: %llu selected, %llu drawn individually, %llu as coverage",
                static_cast<unsigned long long>(st.events_selected), static_cast<unsigned long long>(st.events_individual),
                static_cast<unsigned long long>(st.events_aggregated));
  std::string events_line = buf;
  if (st.events_aggregated) {
    std::snprintf(buf, sizeof buf, " (narrower than %.0f px, too many to draw one by one)", st.individual_threshold_px);
    events_line += buf;
  }
  if (st.syncs_on_host_lanes) events_line += "; " + std::to_string(st.syncs_on_host_lanes) + " synchronisations shown as host waits";
  if (m.captures.size() > 1) {
    // With several captures the window and the events share a line: at most four in all.
    lines.back() += " \xC2\xB7 " + events_line;
  } else {
    lines.push_back(events_line);
  }
  if (st.lanes_left_out)
    lines.push_back(std::to_string(st.lanes_left_out) + " lanes (" + std::to_string(st.events_left_out) +
                    " events) not drawn: too many for one chart, narrow it with --device, --stream or --lanes device");
  if (o.annotate.enabled) {
    // A streamed chart (AnnotateOptions::streamed) says which flags it counted on what.
    const bool streamed = o.annotate.streamed;
    const auto count = [&](AnnotationKind k) {
      return ann.counted(k) ? std::to_string(ann.count[static_cast<size_t>(k)]) : std::string("not flagged");
    };
    std::string a = std::string(streamed ? "flags (read as a stream; --in-memory flags all): " : "flags: ") +
                    "queue delay > " + format_duration(o.annotate.queue_delay_ns) + ": " +
                    count(AnnotationKind::kQueueDelay) + (streamed ? " of the kernels drawn one by one" : "") +
                    " \xC2\xB7 occupancy < " + std::to_string(static_cast<int>(std::lround(o.annotate.low_occupancy * 100))) +
                    "%: " + count(AnnotationKind::kLowOccupancy) +
                    " \xC2\xB7 copies overlapped: " + count(AnnotationKind::kOverlap) +
                    ", not overlapped: " + count(AnnotationKind::kMissedOverlap) + " \xC2\xB7 idle gaps > " +
                    format_duration(idle_gap_threshold_ns(o.annotate, sel.window_end_ns - sel.window_start_ns)) + ": " +
                    count(AnnotationKind::kIdleGap);
    if (st.labels_dropped) a += " (" + std::to_string(st.labels_dropped) + " labels left out to avoid overlap)";
    lines.push_back(a);
  } else {
    lines.push_back("flags: off (" + (o.annotate.off_reason.empty() ? std::string("--no-annotate") : o.annotate.off_reason) + ")");
  }
  return lines;
}

float draw_footer(Scene& s, const Model& m, const Selection& sel, const RenderOptions& o, const RenderStats& st,
                  const Annotations& ann, float y) {
  const std::vector<std::string> lines = footer_lines(m, sel, o, st, ann);
  for (const std::string& l : lines) {
    y += 14;
    s.text(make_text(12, y, l, 10, palette::kMuted));
  }
  return static_cast<float>(lines.size()) * 14 + 6;
}

void draw_view_footer(Scene& s, const Model& m, std::string what, float y) {
  bool simulated = false;
  for (const CaptureInfo& c : m.captures) simulated |= (c.header.features() & gpuhook::v1::FEATURE_SIMULATOR) != 0;
  if (simulated) what += " \xC2\xB7 SIMULATED GPU (test simulator, not GPU figures)";
  s.text(make_text(12, y, utf8_clean(what), 10, palette::kMuted));
  s.height = static_cast<int>(y + 16);
}

}  // namespace gantt::detail
