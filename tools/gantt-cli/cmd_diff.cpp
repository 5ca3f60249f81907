// gantt-cli diff BASE NEW: the CI gate (see gantt/analysis/diff.h). Exit 0: no regression,
// 1: a regression beyond threshold and noise, 2: bad usage or an unreadable capture.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <tuple>
#include <vector>
#include <future>
#include <optional>
#include <thread>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>


#include <gpuhook/summary_file.h>

#include <gantt/analysis/diff.h>
#include <gantt/analysis/summary.h>
#include <gantt/analysis/stream_stats.h>
#include <gantt/analysis/flame.h>
#include <gantt/render/flame_scene.h>
#include <gantt/model/filter.h>
#include <gantt/render/html.h>
#include <gantt/model/model.h>
#include <gantt/render/render.h>
#include <gantt/render/stream_render.h>

#include "chart_output.h"
#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct DiffOptions {
  LoadFlags load;
  std::string base;
  std::string next;
  std::string threshold = "5%";
  std::string metric = "exec";
  std::string format = "text";
  double alpha = 0.01;
  size_t top = 20;
  bool name_only = false;
  std::string chart;  // -o: the two runs stacked on one time axis, and a differential flame graph
  std::string align_range;  // NAME@N: align the charts at that NVTX range occurrence
  FilterFlags filter;       // the same selection on both sides
  unsigned threads = 0;     // threads that scan each side (0 = every core)
};

// Why diff loads the captures it does not stream, for load_captures()' refusal.
const WholeLoad kWhyDiffLoads{
    "diff loads captures whole for standard input, an .html page, or --align-range with a time window or --range "
    "(without them, the report and the .svg, .png or .pdf charts are read as streams)",
    gantt::scan::WholePath::kDiffPage};

// The charts' length: the longer run's GPU work, kept within what a signed window offset
// holds (a hostile capture's times span up to 2^64 ns).
int64_t chart_span_ns(uint64_t a, uint64_t b) { return static_cast<int64_t>(std::min<uint64_t>(std::max(a, b), INT64_MAX / 2)); }

// The first start and the last end of a run's GPU work (stats' first_ns and last_ns), of the
// `selected` events: each chart of diff -o starts at its run's first and shows the longer
// run's length.
std::pair<uint64_t, uint64_t> gpu_work_extent(const gantt::Model& m, const std::vector<uint32_t>& selected) {
  uint64_t first = 0, last = 0;
  for (uint32_t e : selected) {
    if (!ga::is_gpu_work(m, e)) continue;
    if (first == 0 || m.events.start_ns[e] < first) first = m.events.start_ns[e];
    last = std::max(last, m.events.end_ns[e]);
  }
  return {first, last};
}

gantt::Scene caption(const std::string& text, int width) {
  gantt::Scene s;
  s.width = width;
  s.height = 26;
  s.rect(gantt::make_rect(0, 0, static_cast<float>(width), 26, gantt::Color{235, 235, 235, 255}));
  s.text(gantt::make_text(10, 18, text, 13, gantt::Color{0, 0, 0, 255}, gantt::Anchor::kStart, true));
  return s;
}

// The page (-o x.html): both runs on one time axis, their origins (capture start, or the
// range occurrence `align` names) at the same time, and the differential flame graph of the
// same stacks the SVG's is drawn from.
int write_html_page(const ChartTarget& target, const std::string& base_path, const std::string& new_path,
                    const gantt::Model& base, const gantt::Model& next, const std::string& align, const char* align_flag) {
  gantt::HtmlDiff diff;
  diff.title = "gantt-cli diff " + base_path + " " + new_path;
  diff.base = gantt::analysis::gpu_stacks(base);
  diff.next = gantt::analysis::gpu_stacks(next);
  std::vector<gantt::HtmlRun> runs;
  for (const auto& [m, label, path] : {std::tuple{&base, "base", &base_path}, std::tuple{&next, "new", &new_path}}) {
    gantt::HtmlRun run{m, gantt::select_events(*m, gantt::EventFilter{}), label};
    if (!align.empty()) {
      gantt::EventFilter f;
      f.range = align;
      try {
        const gantt::Selection at = gantt::select_events(*m, f);
        run.selection.origin_ns = at.window_start_ns;
        run.selection.origin_name = at.origin_name;
        diff.view_ns = std::max(diff.view_ns, at.window_end_ns - at.window_start_ns);
      } catch (const std::invalid_argument& e) {
        std::cerr << "gantt-cli: diff: " << align_flag << ": " << *path << ": " << e.what() << "\n";
        return kExitError;
      }
    }
    runs.push_back(std::move(run));
  }
  std::ofstream out(target.path, std::ios::binary | std::ios::trunc);
  gantt::HtmlStats hs;
  if (out) gantt::write_diff_html(runs, diff, gantt::RenderOptions{}, out, &hs);
  out.close();
  if (!out) {
    std::cerr << "gantt-cli: diff: cannot write " << target.path << "\n";
    return kExitError;
  }
  std::cerr << "gantt-cli: diff: " << target.path << ": " << hs.events << " events on " << hs.lanes << " lanes of both runs, "
            << (diff.base.size() + diff.next.size()) << " stacks in the differential flame graph, aligned at "
            << runs.front().selection.origin_name << "\n";
  return kExitOk;
}

constexpr int kChartWidth = 1600;

// The charts' options: the same on both sides, loaded or streamed.
gantt::RenderOptions chart_options() {
  gantt::RenderOptions ro;
  ro.width_px = kChartWidth;
  return ro;
}

// diff -o's target, its format told by its name (no --format here, and stdout carries the report).
std::optional<ChartTarget> chart_target(const std::string& path) {
  ChartTarget target{"diff", path, "", false, false, true};
  if (!resolve_chart_format(target)) return std::nullopt;
  return target;
}

// The page: each run's chart under its caption, on the same time scale, then the
// differential flame graph of their stacks (analysis/flame.h gpu_stacks, render/flame_scene.h).
int write_page(const ChartTarget& target, const std::string& base_path, const std::string& new_path,
               const gantt::Scene& base_chart, const gantt::Scene& next_chart, const ga::Stacks& base_stacks,
               const ga::Stacks& next_stacks) {
  gantt::Scene page = caption("base: " + base_path, kChartWidth);
  page = gantt::stack_scenes(page, base_chart);
  page = gantt::stack_scenes(page, caption("new: " + new_path, kChartWidth));
  page = gantt::stack_scenes(page, next_chart);
  gantt::FlameOptions fo;
  fo.width_px = kChartWidth;
  fo.title = "GPU time by NVTX range and kernel, base -> new (red slower, blue faster)";
  page = gantt::stack_scenes(page, gantt::diff_flame_scene(base_stacks, next_stacks, fo));
  page.title = "gantt-cli diff " + base_path + " " + new_path;
  return write_chart(page, target) ? kExitOk : kExitError;
}

// Only the events of `sel` that `cut` selects too (a time window or a range cut the sides to).
void cut_to(const gantt::Model& m, const gantt::EventFilter* cut, gantt::Selection* sel) {
  if (!cut) return;
  std::vector<bool> in(m.events.size(), false);
  for (uint32_t e : gantt::select_events(m, *cut).events) in[e] = true;
  std::erase_if(sel->events, [&](uint32_t e) { return !in[e]; });
}

// Both charts show the same length of time from their first GPU work, so one pixel is the
// same number of nanoseconds in both and a slower run is visibly longer. `keep`: the sides'
// --device, --stream and --kernel, selected on the whole models as render selects them (a
// kernel's queue delay judged beside the work they leave out), as the streamed charts are;
// `cut`: the sides' filter with their time window or range, the events it selects drawn over
// each chart's own window, on the whole models too.
int write_chart(const ChartTarget& target, const std::string& base_path, const std::string& new_path,
                const gantt::Model& base, const gantt::Model& next, const std::string& align_range,
                const std::string& filter_range, const gantt::EventFilter& keep = {},
                const gantt::EventFilter* cut = nullptr) {
  if (target.format == "html")
    return write_html_page(target, base_path, new_path, base, next, align_range.empty() ? filter_range : align_range,
                           align_range.empty() ? "--range" : "--align-range");
  gantt::Selection kept[2] = {gantt::select_events(base, keep), gantt::select_events(next, keep)};
  try {
    cut_to(base, cut, &kept[0]);
    cut_to(next, cut, &kept[1]);
  } catch (const std::invalid_argument& e) {  // a --range a side lacks: said by its restriction first
    std::cerr << "gantt-cli: diff: " << e.what() << "\n";
    return kExitError;
  }
  const auto [fa, la] = gpu_work_extent(base, kept[0].events);
  const auto [fb, lb] = gpu_work_extent(next, kept[1].events);
  const int64_t span = chart_span_ns(la - fa, lb - fb);
  // Aligned at an NVTX range occurrence: each chart shows that occurrence, both stretched
  // to the longer of the two so the time scales match.
  std::vector<gantt::Selection> sels;
  for (const gantt::Model* m : {&base, &next}) {
    gantt::EventFilter f = keep;
    const uint64_t first = m == &base ? fa : fb;
    if (!align_range.empty()) {
      f.range = align_range;
    } else if (first) {
      f.from_ns = static_cast<int64_t>(first - m->first_ns());
      f.to_ns = f.from_ns >= 0 && span <= INT64_MAX - f.from_ns ? f.from_ns + span : INT64_MAX;
    } else if (cut) {
      f = *cut;  // no work selected: the window the side was cut to, as a streamed chart draws it
    }
    try {
      sels.push_back(gantt::select_events(*m, f));
      cut_to(*m, cut, &sels.back());
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: diff: --align-range: " << (m == &base ? base_path : new_path) << ": " << e.what() << "\n";
      return kExitError;
    }
  }
  if (!align_range.empty()) {
    const uint64_t longest = std::max(sels[0].window_end_ns - sels[0].window_start_ns, sels[1].window_end_ns - sels[1].window_start_ns);
    for (auto& s : sels) s.window_end_ns = s.window_start_ns + longest;
  }
  // The footer names the window, as render's does (and the streamed charts').
  const auto chart = [](const gantt::Model& m, const gantt::Selection& sel) {
    gantt::RenderOptions ro = chart_options();
    ro.filter_description = sel.description;
    return gantt::build_scene(m, sel, ro);
  };
  return write_page(target, base_path, new_path, chart(base, sels[0]), chart(next, sels[1]), ga::gpu_stacks(base, &kept[0]),
                    ga::gpu_stacks(next, &kept[1]));
}

// The sides' filter as the charts select it beside their windows: --device, --stream and
// --kernel (a time window or a --range is the cut write_chart() takes: each chart has a window
// of its own).
gantt::EventFilter chart_keep(const DiffOptions& o) {
  gantt::EventFilter keep = make_filter(o.filter);
  keep.from_ns = keep.to_ns = -1;
  keep.range.clear();
  return keep;
}

// The two charts read as streams (stream_render.h), each from its run's first GPU work for
// the longer run's length, with the flags a stream can tell; nothing when a side needs the
// whole timeline (the caller then loads both).
std::optional<int> stream_charts(const DiffOptions& o, const ChartTarget& target, const ga::StreamedStats& base,
                                 const ga::StreamedStats& next) {
  const int64_t span =
      chart_span_ns(base.summary.last_ns - base.summary.first_ns, next.summary.last_ns - next.summary.first_ns);
  const std::pair<const std::string*, const ga::StreamedStats*> sides[2] = {{&o.base, &base}, {&o.next, &next}};
  const auto options_of = [&](const ga::StreamedStats& stats) {
    gantt::StreamRenderOptions so;
    so.render = chart_options();
    so.render.annotate.streamed = true;
    so.threads = o.threads;
    so.load = load_options(o.load);
    // The sides' --device, --stream and --kernel, as their restricted models draw them.
    so.filter = make_filter(o.filter);
    const uint64_t first = stats.summary.first_ns;
    if (!o.align_range.empty()) {
      so.filter.range = o.align_range;  // each chart over its side's occurrence
    } else if (first != 0 && windowed(o.filter)) {
      // A side cut to a window or a range: what the filter selects, drawn over the chart's own window.
      const uint64_t length = static_cast<uint64_t>(span);  // chart_span_ns(): not negative
      so.chart_window = std::make_pair(first, first > UINT64_MAX - length ? UINT64_MAX : first + length);
    } else if (first != 0) {
      so.window_origin_ns = first;
      so.filter.from_ns = 0;
      so.filter.to_ns = span;
    }
    return so;
  };
  const auto loading = [](const std::string& path, const std::string& why) {
    std::cerr << "gantt-cli: diff: " << path << ": loading both captures for the charts: " << why << "\n";
  };
  // Aligned at a range: both charts as long as the longer of the two occurrences (each found
  // and measured first), the time scales the same.
  uint64_t longest = 0;
  if (!o.align_range.empty()) {
    for (const auto& [path, stats] : sides) {
      gantt::StreamRenderOptions so = options_of(*stats);
      so.window_only = true;
      std::string why;
      std::optional<gantt::StreamedParts> window;
      try {
        window = gantt::stream_chart_parts(*path, so, &why);
      } catch (const std::invalid_argument& e) {
        std::cerr << "gantt-cli: diff: --align-range: " << *path << ": " << e.what() << "\n";
        return kExitError;
      }
      if (!window) {
        loading(*path, why);
        return std::nullopt;
      }
      longest = std::max(longest, window->drawn.window_end_ns - window->drawn.window_start_ns);
    }
  }
  gantt::Scene charts[2];
  for (int i = 0; i < 2; ++i) {
    const auto& [path, stats] = sides[i];
    gantt::StreamRenderOptions so = options_of(*stats);
    so.window_length = longest;
    std::string why;
    std::optional<gantt::StreamedChart> chart = gantt::stream_render(*path, so, &why);
    if (!chart) {
      loading(*path, why);
      return std::nullopt;
    }
    charts[i] = std::move(chart->scene);
  }
  return write_page(target, o.base, o.next, charts[0], charts[1], base.stacks, next.stacks);
}

// "5%" or a fraction "0.05"; false for anything else (a bare "5" is ambiguous).
bool parse_threshold(const std::string& text, double* out) {
  if (text.empty()) return false;
  const bool percent = text.back() == '%';
  const std::string num = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !(v >= 0)) return false;
  *out = percent ? v / 100.0 : v;
  return percent ? v < 1000 : v < 1.0;
}

// False, after one line on stderr, when a loaded side cannot be compared: nothing to report on,
// or damaged (a gate that compares half a file would pass or fail for the wrong reason).
bool comparable(const LoadedJob& job) {
  if (!reportable(job.model)) return false;
  if (job.corrupt) {
    std::cerr << "gantt-cli: diff: a capture is corrupt; not comparing\n";
    return false;
  }
  return true;
}

// One side scanned (stream_stats.h) on `threads` threads: the summary with diff's matches
// and the stacks of the flame graph, the filter flags applied by the scan as restricted()
// applies them to a loaded side. Nothing when it needs the whole timeline (graph launches,
// a merged file, ...) or when diff's flags ask for a load. Throws std::invalid_argument for a
// filter the capture cannot answer (a --range it does not have), as select_events() does.
std::optional<ga::StreamedStats> stream_side(const DiffOptions& o, const std::string& path, unsigned threads) {
  if (o.load.in_memory || path == "-") return std::nullopt;
  const gantt::EventFilter filter = make_filter(o.filter);
  ga::StreamStatsOptions so;
  so.by = {ga::GroupBy::kKernel, ga::GroupBy::kStream, ga::GroupBy::kDevice, ga::GroupBy::kRange};
  so.gaps = 3;
  so.matches = true;
  so.load = load_options(o.load);
  so.threads = threads;
  if (any_filter(o.filter)) so.filter = &filter;
  return ga::stream_stats(path, so, nullptr);
}

// What a scanned side's filter selected, in the line restrict_to_filter() prints for a loaded one.
void print_selection(const DiffOptions& o, const ga::StreamedStats& side) {
  if (any_filter(o.filter))
    std::cerr << "gantt-cli: diff: " << side.selected_events << " of " << side.gpu_events << " GPU events ("
              << gantt::describe_filter(make_filter(o.filter)) << ")\n";
}

// Whether a streamed side can be compared (its warnings printed first); false after one line.
bool streamed_comparable(const ga::StreamedStats& side) {
  if (!reportable(side.context)) return false;
  if (side.corrupt) {
    std::cerr << "gantt-cli: diff: a capture is corrupt; not comparing\n";
    return false;
  }
  return true;
}

// A side given as a stats summary (.gsum): its matches stand for the per-instance samples.
// Either side may be a capture, read as a stream when it can be; a chart needs both captures.
int run_diff_summaries(const DiffOptions& o, const ga::DiffOptions& d) {
  if (!o.chart.empty()) {
    std::cerr << "gantt-cli: diff: -o draws the two timelines and needs two captures, not summaries\n";
    return kExitError;
  }
  ga::DiffInput side[2];
  const std::string* files[2] = {&o.base, &o.next};
  for (int i = 0; i < 2; ++i) {
    if (gpuhook::is_summary_file(*files[i])) {
      try {
        side[i] = ga::diff_input(ga::from_proto(gpuhook::read_summary_file(*files[i], summary_limits(o.load))), d.match_range);
      } catch (const std::invalid_argument& e) {
        std::cerr << "gantt-cli: " << *files[i] << ": not a usable summary: " << e.what() << "\n";
        return kExitError;
      }
      continue;
    }
    std::optional<ga::StreamedStats> streamed;
    try {
      streamed = stream_side(o, *files[i], o.threads != 0 ? o.threads : ga::default_scan_threads());
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: diff: " << e.what() << "\n";
      return kExitError;
    }
    if (streamed) {
      for (const std::string& line : streamed->warnings) std::cerr << "gantt-cli: " << line << "\n";
      if (!streamed_comparable(*streamed)) return kExitError;
      print_selection(o, *streamed);
      side[i] = ga::diff_input(streamed->summary, d.match_range);
      continue;
    }
    LoadedJob job = load_captures({*files[i]}, o.load, kWhyDiffLoads);
    if (!comparable(job) || !restrict_to_filter(job.model, o.filter, "diff")) return kExitError;
    side[i] = ga::diff_input(job.model, d.match_range);
  }
  const ga::DiffReport r = ga::diff_inputs(side[0], side[1], d);
  std::cout << ga::format_diff(r, report_format(o.format), o.format == "text" || o.format == "md" ? o.top : 0);
  return r.regressions > 0 ? kExitCheckFailed : kExitOk;
}

// Both captures loaded, side by side (loading dominates on large captures). Each side is a
// job like any other subcommand's: a merged file becomes its ranks, put on one clock.
std::pair<LoadedJob, LoadedJob> load_both(const DiffOptions& o) {
  // Both at once must fit, not each: refused before either starts.
  check_load_fits(with_stdin({o.base, o.next}), o.load, kWhyDiffLoads);
  LoadFlags each = o.load;
  each.in_memory = true;  // whatever the estimate: checked together above
  auto base_future = std::async(std::launch::async, [&] { return load_captures_quietly({o.base}, each, kWhyDiffLoads); });
  LoadedJob next = load_captures_quietly({o.next}, each, kWhyDiffLoads);
  return {base_future.get(), std::move(next)};
}

// The charts of two streamed sides that a stream could not draw: both captures loaded.
int load_and_write_chart(const DiffOptions& o, const ChartTarget& chart) {
  const auto [base, next] = load_both(o);
  for (const LoadedJob* j : {&base, &next})
    if (!comparable(*j)) return kExitError;
  const gantt::EventFilter cut = make_filter(o.filter);
  return write_chart(chart, o.base, o.next, base.model, next.model, o.align_range, o.filter.range, chart_keep(o),
                     windowed(o.filter) ? &cut : nullptr);
}

// Both sides read as streams (stream_stats.h), without loading them: the report needs a
// summary with diff's matches, the flame graph their stacks, and the charts (-o as .svg, .png
// or .pdf) are streamed too. Nothing when a side needs the whole timeline (graph launches, a
// merged file, ...); run_diff then loads both.
std::optional<int> try_stream(const DiffOptions& o, const ga::DiffOptions& d, const std::optional<ChartTarget>& chart) {
  if (o.load.in_memory || o.base == "-" || o.next == "-") return std::nullopt;
  // The page needs the loaded timelines, and so do charts aligned at a range on sides cut to a
  // window (the occurrence's window and the cut's are two).
  if (chart && (chart->format == "html" || (!o.align_range.empty() && windowed(o.filter)))) return std::nullopt;
  // The two sides share the cores.
  const unsigned threads = std::max(1u, (o.threads != 0 ? o.threads : ga::default_scan_threads()) / 2);
  std::optional<ga::StreamedStats> base, next;
  std::exception_ptr next_error;
  auto base_future = std::async(std::launch::async, [&] { return stream_side(o, o.base, threads); });
  try {
    next = stream_side(o, o.next, threads);
  } catch (const std::invalid_argument&) {
    next_error = std::current_exception();
  }
  try {
    // The base side's error first, as the loaded sides are restricted in order.
    base = base_future.get();
    if (next_error) std::rethrow_exception(next_error);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: diff: " << e.what() << "\n";
    return kExitError;
  }
  if (!base || !next) return std::nullopt;
  for (const ga::StreamedStats* side : {&*base, &*next})
    for (const std::string& line : side->warnings) std::cerr << "gantt-cli: " << line << "\n";
  for (const ga::StreamedStats* side : {&*base, &*next})
    if (!streamed_comparable(*side)) return kExitError;
  for (const ga::StreamedStats* side : {&*base, &*next}) print_selection(o, *side);
  const ga::DiffReport r =
      ga::diff_inputs(ga::diff_input(base->summary, d.match_range), ga::diff_input(next->summary, d.match_range), d);
  std::cout << ga::format_diff(r, report_format(o.format), o.format == "text" || o.format == "md" ? o.top : 0);
  std::cout.flush();
  if (chart) {
    std::optional<int> drawn = stream_charts(o, *chart, *base, *next);
    if (!drawn) drawn = load_and_write_chart(o, *chart);
    if (*drawn != kExitOk) return *drawn;
  }
  return r.regressions > 0 ? kExitCheckFailed : kExitOk;
}

int run_diff(const DiffOptions& o) {
  ga::DiffOptions d;
  if (!parse_threshold(o.threshold, &d.noise.threshold)) {
    std::cerr << "gantt-cli: diff: --threshold '" << o.threshold << "' is not a percentage (e.g. 5%) or a fraction (0.05)\n";
    return kExitError;
  }
  try {
    d.metrics = ga::parse_metrics(o.metric);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: diff: --metric: " << e.what() << "\n";
    return kExitError;
  }
  d.noise.alpha = o.alpha;
  d.match_range = !o.name_only;
  if (gpuhook::is_summary_file(o.base) || gpuhook::is_summary_file(o.next)) return run_diff_summaries(o, d);
  std::optional<ChartTarget> chart;
  if (!o.chart.empty() && !(chart = chart_target(o.chart))) return kExitError;
  if (const auto streamed = try_stream(o, d, chart)) return *streamed;
  auto [base_job, next_job] = load_both(o);
  for (const LoadedJob* j : {&base_job, &next_job})
    for (const std::string& line : j->warnings) std::cerr << "gantt-cli: " << line << "\n";
  // The charts of filtered sides draw the whole models (chart_keep(), and the window cut to).
  const bool whole_charts = chart && chart->format != "html" && any_filter(o.filter);
  const gantt::EventFilter cut = make_filter(o.filter);
  std::optional<gantt::Model> whole[2];
  if (whole_charts) whole[0] = base_job.model, whole[1] = next_job.model;
  for (LoadedJob* j : {&base_job, &next_job})
    if (!comparable(*j) || !restrict_to_filter(j->model, o.filter, "diff")) return kExitError;
  const gantt::Model& base = base_job.model;
  const gantt::Model& next = next_job.model;
  const ga::DiffReport r = ga::diff_models(base, next, d);
  std::cout << ga::format_diff(r, report_format(o.format), o.format == "text" || o.format == "md" ? o.top : 0);
  if (chart && (whole_charts ? write_chart(*chart, o.base, o.next, *whole[0], *whole[1], o.align_range, o.filter.range,
                                           chart_keep(o), windowed(o.filter) ? &cut : nullptr)
                             : write_chart(*chart, o.base, o.next, base, next, o.align_range, o.filter.range)) != kExitOk)
    return kExitError;
  return r.regressions > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace

void register_diff(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two runs; exit 1 on a regression, 0 otherwise, 2 on error (the CI gate).\n"
      "Kernels are matched by demangled name and NVTX range path; the nodes of a CUDA graph\n"
      "launch also by their order within the launch (shown as \"name [graph node N]\"), so a\n"
      "changed node of a replayed graph is reported as that node. A change is a regression\n"
      "only when its median moved by more than --threshold AND it is beyond the run-to-run\n"
      "noise of the per-instance durations: a one-sided Mann-Whitney U rank test (ties\n"
      "corrected, normal approximation) must reject at --alpha AND a 99% percentile bootstrap\n"
      "interval of the median ratio (1000 resamples, fixed seed: same inputs, same verdict) must\n"
      "exclude 1. Fewer than 3 instances on a side never gate (and at --alpha 0.01 the rank test\n"
      "needs about 5 a side to reject). Makespan gates (--metric makespan) through the\n"
      "durations of the repeated top-level NVTX range; busy % and overlap % are reported only.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli diff before.gpuh after.gpuh -o diff.svg\n"
      "  gantt-cli diff before.gpuh after.gpuh -o diff.html --align-range step@3   # one page to zoom and hover\n"
      "  gantt-cli diff base.gpuh new.gpuh --threshold 3% --metric exec,queue --format md >> $GITHUB_STEP_SUMMARY\n"
      "  gantt-cli diff baseline.gsum new.gpuh        # a baseline kept as a small stats summary\n"
      "  gantt-cli diff base.gpuh new.gpuh --kernel gemm --range step@5   # the same selection on both sides\n"
      "\n"
      "Either side may be a stats summary (gantt-cli stats --summary): its per-kernel durations\n"
      "are exact up to 10000 instances and from a 1% sketch above, which the rank tests use as\n"
      "samples. Summaries of different hosts are not aligned; a chart (-o) needs captures.\n");
  cmd->add_option("base", o->base, "the baseline capture")->required();
  cmd->add_option("new", o->next, "the capture to judge")->required();
  add_load_flags(*cmd, o->load);
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--threshold", o->threshold, "smallest change that matters: 5% or 0.05")->capture_default_str();
  cmd->add_option("--metric", o->metric, "what gates, comma separated: exec, queue, makespan, all")->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "rank-test significance")->check(CLI::Range(1e-9, 0.5))->capture_default_str();
  cmd->add_option("--top", o->top, "kernel rows shown in text/md (0 = all; json/csv show all)")->capture_default_str();
  cmd->add_flag("--name-only", o->name_only, "match kernels by name alone, ignoring range paths");
  cmd->add_option("-j,--threads", o->threads, "threads that scan the two captures (0 = the CPUs this process may use, at most 16)")->capture_default_str();
  cmd->add_flag("--in-memory", o->load.in_memory,
                "load both captures whole; by default two captures without graph launches are "
                "scanned, in memory that does not grow with their events, and kernels with more than "
                "10000 instances are then compared through a sketch within 1% (the report says so)");
  cmd->add_option("-o,--output", o->chart,
                  "also draw both runs stacked on one time axis (each from its first GPU work, for the longer "
                  "run's length) and a differential flame graph: .svg, .png or .pdf, scanned like the "
                  "report (the flags a scan can tell; --in-memory flags all); or .html, one page to zoom and "
                  "hover (loaded; aligned at capture start, or at --align-range / --range)");
  cmd->add_option("--align-range", o->align_range,
                  "with -o: align the two charts at this NVTX range occurrence, NAME@N (a page: --range too)");
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json", "csv"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_diff(*o); });
}

}  // namespace gantt_cli
