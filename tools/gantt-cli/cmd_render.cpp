// gantt-cli render FILE... -o out.svg|png|pdf|html: the Gantt chart. Options only; the layout,
// annotations and back ends live in libgantt (render.h).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <gantt/ranks/ranks.h>
#include <gantt/render/rank_links.h>
#include <gantt/analysis/event_scan.h>
#include <gantt/analysis/flame.h>
#include <gantt/analysis/job_scan.h>
#include <gantt/analysis/memory.h>
#include <gantt/analysis/stats.h>
#include <gantt/analysis/steps.h>
#include <gantt/analysis/stream_stats.h>
#include <gantt/render/flame_scene.h>
#include <gantt/render/html.h>
#include <gantt/render/render.h>
#include <gantt/render/stream_render.h>
#include <gantt/model/text.h>
#include <gpuhook/capture.h>

#include "chart_output.h"
#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {

namespace {

struct RenderCliOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string output;
  std::string format;  // svg, png, pdf, html; default from the output name
  int width_px = 1920;
  std::string lanes = "stream";
  bool no_annotate = false;
  bool no_host = false;
  bool memory_strip = false;
  std::string memory_by = "auto";
  bool deps = false;
  std::string queue_delay = "100us";
  double low_occupancy = 0.5;
  std::string idle_gap;
  FilterFlags filter;
  std::string view = "gantt";  // gantt | flame (render/flame_scene.h) | utilisation (analysis/timeline.h)
  std::string bucket;          // --view utilisation: "" = about 200 buckets over the window
  std::string topology;        // --view comm: `nvidia-smi topo -m` output or NCCL's topology XML
  std::string step;            // --view steps: the step range
  std::string job;             // --job: the files are searched for this scheduler job's captures
  unsigned threads = 0;        // threads that scan one capture; 0 = every core
  bool threads_given = false;  // -j was given: say why a capture is loaded whole after all
  size_t page_events = gantt::html::kMaxPageEvents;  // the HTML page: events written one by one at most
};

// The most a chart loads when --max-memory is not given: about 5.5 M records (2.7 M kernels
// and their launches), some 6 s of loading here. A larger capture is drawn as a stream, in
// memory that does not grow with its events, with the flags a stream can tell.
constexpr uint64_t kRenderLoadCap = uint64_t{1} << 30;

// --bucket as utilisation_timeline() takes it: 0 for about 200 buckets over the window.
uint64_t bucket_of(const RenderCliOptions& o) {
  const int64_t bucket = duration_arg("--bucket", o.bucket);
  return bucket > 0 ? static_cast<uint64_t>(bucket) : 0;
}

// A scan that cannot serve: the caller loads the capture, *why_whole says why (its refusal over
// --max-memory names it), and -j, which asked for a scan, hears it now.
std::optional<int> load_instead(const RenderCliOptions& o, const std::string& why_not, std::string* why_whole) {
  *why_whole = why_not;
  if (o.threads_given) std::cerr << "gantt-cli: render: the capture is loaded whole for " << why_not << "\n";
  return std::nullopt;
}

// The chart of one capture without loading it (gantt/render/stream_render.h): memory bounded by
// lanes, pixels and names, chunks decoded on every core. Nothing when the chart needs the
// whole timeline, with *why_whole set to what needs it; the caller then loads the capture.
std::optional<int> try_stream(const RenderCliOptions& o, const gantt::RenderOptions& ro, const ChartTarget& target,
                              std::string* why_whole) {
  if (o.load.in_memory) return std::nullopt;
  const gantt::EventFilter filter = make_filter(o.filter);
  std::string why_not = o.files.size() != 1 || !o.job.empty() ? "several captures (put on one clock)"
                        : o.files.front() == "-"              ? "a capture on standard input"
                        : target.format == "html"             ? "the HTML page"
                        : o.view != "gantt"                   ? "--view " + o.view
                                                              : gantt::stream_render_refusal(ro);
  const auto loaded = [&] { return load_instead(o, why_not, why_whole); };
  gantt::StreamRenderOptions so;
  so.render = ro;
  // Too large to load: the flags a stream can tell (AnnotateOptions::streamed), rather than a
  // load that grows with the events. The footer and stderr say what that leaves out.
  bool too_large = false;
  if (!why_not.empty() && ro.annotate.enabled && why_not == gantt::stream_render_refusal(ro)) {
    gantt::RenderOptions flagged = ro;
    flagged.annotate.streamed = true;
    const gantt::scan::LoadEstimate load =
        gantt::scan::estimate_load(o.files, gantt::scan::WholePath::kChart, o.load.max_memory, kRenderLoadCap);
    if (gantt::stream_render_refusal(flagged).empty() && !load.fits()) {
      std::cerr << "gantt-cli: render: " << over_budget(load)
                << ": read as a stream: queue delays flagged on the kernels drawn one by one, copies that could "
                   "have overlapped not flagged (--in-memory loads it and flags all)\n";
      so.render = flagged;
      why_not.clear();
      too_large = true;
    }
  }
  if (!why_not.empty()) return loaded();
  so.threads = o.threads;
  so.load = load_options(o.load);
  so.filter = filter;
  std::optional<gantt::StreamedChart> chart;
  try {
    chart = gantt::stream_render(o.files.front(), so, &why_not);
    if (!chart && too_large) {
      // What stopped the flags may not stop the chart: drawn without them, the footer says why.
      const std::string flags_stopped = why_not;
      so.render.annotate.enabled = false;
      so.render.annotate.off_reason = "the capture was read as a stream, over --max-memory, and holds " + flags_stopped;
      chart = gantt::stream_render(o.files.front(), so, &why_not);
      if (chart) std::cerr << "gantt-cli: render: no flags: " << flags_stopped << " (--in-memory loads it and flags all)\n";
    }
  } catch (const gpuhook::CaptureError&) {
    return std::nullopt;  // the loader reports it, as for any capture
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: " << e.what() << "\n";  // a --range the capture does not have
    return kExitError;
  }
  if (!chart) return loaded();
  for (const std::string& line : chart->warnings) std::cerr << "gantt-cli: " << line << "\n";
  if (!write_chart(chart->scene, target)) return kExitError;
  std::cerr << "gantt-cli: render: " << o.output << ": " << chart->stats.events_selected << " events ("
            << chart->stats.events_individual << " drawn, " << chart->stats.events_aggregated << " as coverage)\n";
  return chart->corrupt ? kExitError : kExitOk;
}

// The HTML page of one capture by a scan (gantt/render/html.h write_html with a ChartRest):
// the widest html::kMaxPageEvents events written one by one, the others as their lanes'
// coverage, so the page and the memory are bounded whatever the capture holds. A small
// capture whose events all fit the page is loaded (*why_whole says so) and its page is as
// before: the host calls, NVTX ranges and every flag of the whole model.
std::optional<int> try_scan_page(const RenderCliOptions& o, const gantt::RenderOptions& ro, const ChartTarget& target,
                                 std::string* why_whole) {
  if (o.load.in_memory) return std::nullopt;
  gantt::RenderOptions page = ro;
  page.max_individual_events = o.page_events;
  page.annotate.streamed = true;
  std::string why_not = o.files.size() != 1 || !o.job.empty() ? "several captures (put on one clock)"
                        : o.files.front() == "-"              ? "a capture on standard input"
                                                              : gantt::stream_render_refusal(page);
  gantt::StreamRenderOptions so;
  so.render = page;
  so.threads = o.threads;
  so.load = load_options(o.load);
  so.filter = make_filter(o.filter);
  so.coverage_columns = gantt::html::kPageColumns;
  // A capture small enough to load cheaply (its records, launches included, a few times the
  // cap: some 90 MB loaded) gets the loaded page when every event fits it, as before. A large
  // one is scanned even then: a window of it (--from/--to, as the page says to ask for the
  // folded events) would otherwise load all of it for a few thousand events.
  so.refuse_unfolded =
      gantt::scan::estimate_load(o.files, gantt::scan::WholePath::kPage, o.load.max_memory, kRenderLoadCap).records <=
      4 * o.page_events;
  std::optional<gantt::StreamedParts> parts;
  try {
    const bool scanned = why_not.empty();
    if (scanned) parts = gantt::stream_chart_parts(o.files.front(), so, &why_not);
    if (scanned && !parts && ro.annotate.enabled && why_not != gantt::kEveryEventFits) {
      // What stopped the flags may not stop the page: written without them, the footer says why.
      const std::string flags_stopped = why_not;
      so.render.annotate.enabled = false;
      so.render.annotate.off_reason = "the capture was scanned for the page and holds " + flags_stopped;
      why_not.clear();
      if (gantt::stream_render_refusal(so.render).empty()) parts = gantt::stream_chart_parts(o.files.front(), so, &why_not);
      if (parts) std::cerr << "gantt-cli: render: no flags: " << flags_stopped << " (--in-memory loads it and flags all)\n";
      else why_not = flags_stopped;
    }
  } catch (const gpuhook::CaptureError&) {
    return std::nullopt;  // the loader reports it, as for any capture
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: " << e.what() << "\n";  // a --range the capture does not have
    return kExitError;
  }
  if (!parts) {
    return load_instead(o, why_not, why_whole);
  }
  for (const std::string& line : parts->warnings) std::cerr << "gantt-cli: " << line << "\n";
  gantt::HtmlStats hs;
  if (!write_html_chart(parts->held, parts->drawn, parts->render, parts->rest, target, &hs)) return kExitError;
  std::cerr << "gantt-cli: render: " << o.output << ": " << hs.events << " events on " << hs.lanes << " lanes ("
            << hs.events - hs.events_folded << " written one by one, the widest; " << hs.events_folded
            << " folded into the lanes' coverage), " << hs.annotations << " flags\n";
  return parts->corrupt ? kExitError : kExitOk;
}

// The line a flame graph ends with, the same whether the capture was scanned or loaded.
void flame_written(const std::string& output, const gantt::analysis::Stacks& stacks, uint64_t events) {
  std::cerr << "gantt-cli: render: " << output << ": a flame graph of " << stacks.size() << " stacks, " << events
            << " GPU operations\n";
}

// The flame graph of one capture, or of the ranks of one job, by a scan: the scanned stats
// keep the GPU time by NVTX range path and kernel (StreamedStats::stacks, what gpu_stacks()
// gives the loaded model), in memory that grows with the stacks, not the events; a filter on one
// capture is applied by the scan. Nothing, with *why_whole set, when a filter on several
// captures, standard input or a capture the scan cannot read asks for a load.
std::optional<int> try_scan_flame(const RenderCliOptions& o, const gantt::FlameOptions& fo, const ChartTarget& target,
                                  std::string* why_whole) {
  if (o.load.in_memory) return std::nullopt;
  const bool filtered = any_filter(o.filter);
  std::string why_not = filtered && o.files.size() != 1 ? "a filter on several captures (put on one clock)"
                        : !o.job.empty()                ? "a scheduler job's captures"
                        : std::find(o.files.begin(), o.files.end(), "-") != o.files.end() ? "a capture on standard input"
                                                                                           : "";
  namespace ga = gantt::analysis;
  ga::StreamStatsOptions so;
  so.by = {ga::GroupBy::kKernel};
  so.matches = true;  // the stacks come with diff's matches
  so.load = load_options(o.load);
  so.threads = o.threads;
  const gantt::EventFilter filter = make_filter(o.filter);
  if (filtered) so.filter = &filter;  // applied by the scan, as select_events() selects
  ga::Stacks stacks;
  uint64_t events = 0;
  bool corrupt = false;
  try {
    if (why_not.empty() && o.files.size() == 1) {
      if (auto one = ga::stream_stats(o.files.front(), so, &why_not)) {
        for (const std::string& line : one->warnings) std::cerr << "gantt-cli: " << line << "\n";
        stacks = std::move(one->stacks);
        events = one->summary.events;
        corrupt = one->corrupt;
      }
    } else if (why_not.empty()) {
      if (auto job = ga::stream_job_stats(o.files, so, &why_not)) {
        for (ga::StreamedStats& rank : job->ranks) {
          for (const std::string& line : rank.warnings) std::cerr << "gantt-cli: " << line << "\n";
          for (const auto& [stack, ns] : rank.stacks) stacks[stack] += ns;
          corrupt = corrupt || rank.corrupt;
        }
        events = job->summary.events;
      }
    }
  } catch (const gpuhook::CaptureError&) {
    return std::nullopt;  // the loader reports it, as for any capture
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: " << e.what() << "\n";  // a --range the capture does not have
    return kExitError;
  }
  if (!why_not.empty()) {
    return load_instead(o, why_not, why_whole);
  }
  if (!write_chart(gantt::flame_scene(stacks, fo), target)) return kExitError;
  flame_written(o.output, stacks, events);
  return corrupt ? kExitError : kExitOk;
}

// --topology's file (NCCL's topology XML or nvidia-smi topo -m): false, said, when it cannot be
// read or parsed; nothing in *topology without the flag.
bool read_topology(const std::string& path, std::optional<gantt::analysis::Topology>* topology) {
  if (path.empty()) return true;
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), {});
  try {
    if (!in) throw std::invalid_argument(path + ": cannot read it");
    *topology = gantt::analysis::parse_topology(text, path);
    return true;
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: --topology: " << e.what() << "\n";
    return false;
  }
}

// The line the step-time view ends with, the same whether the capture was scanned or loaded.
void steps_written(const std::string& output, const gantt::analysis::Steps& steps) {
  size_t n = 0;
  for (const gantt::analysis::StepSeries& c : steps.captures) n += c.duration_ns.size();
  std::cerr << "gantt-cli: render: " << output << ": " << n << " steps"
            << (steps.name.empty() ? std::string() : " of \"" + gantt::utf8_clean(steps.name) + "\"") << "\n";
}

// The line a chart ends with (not the flame graph or step-time view), scanned or loaded.
void chart_written(const std::string& output, const gantt::RenderStats& stats) {
  std::cerr << "gantt-cli: render: " << output << ": " << stats.events_selected << " events (" << stats.events_individual
            << " drawn, " << stats.events_aggregated << " as coverage)\n";
}

// --view utilisation, memory, comm and steps of one capture or the ranks of one job by a scan,
// put on one clock by their collectives: the devices' unions of their events
// (analysis::scan_timeline), the allocations (analysis::scan_memory), the NCCL calls and the
// kernels they launched (analysis::scan_comm) or the NVTX ranges (analysis::scan_ranges), not
// the events.
// The views select by --device, --stream, --kernel, a time window and a --range as a load does
// (the window fitted to what they select, or the one asked; a --range without an end settled
// after the scan on the load's last time). Nothing, with *why_whole set, for a scheduler job's
// captures, standard input or a capture a scan cannot read; the caller then loads.
std::optional<int> try_scan_view(const RenderCliOptions& o, gantt::RenderOptions ro, const ChartTarget& target,
                                 std::string* why_whole) {
  if (o.load.in_memory) return std::nullopt;
  const gantt::EventFilter f = make_filter(o.filter);
  std::string why_not = !o.job.empty()                                       ? "a scheduler job's captures"
                        : std::find(o.files.begin(), o.files.end(), "-") != o.files.end() ? "a capture on standard input"
                                                                                           : "";
  if (!why_not.empty()) return load_instead(o, why_not, why_whole);
  namespace ga = gantt::analysis;
  ga::EventScanOptions so;
  so.load = load_options(o.load);
  so.threads = o.threads;
  const gantt::EventFilter* filter = any_filter(o.filter) ? &f : nullptr;
  std::optional<ga::ScannedTimeline> timeline;
  std::optional<ga::ScannedRecords> records;  // the memory or comm view's
  try {
    if (o.view == "utilisation") timeline = ga::scan_timeline(o.files, so, filter, true, &why_not);
    else if (o.view == "memory") records = ga::scan_memory(o.files, so, filter, &why_not);
    else if (o.view == "steps") records = ga::scan_ranges(o.files, so, filter, &why_not);
    else records = ga::scan_comm(o.files, so, filter, &why_not);
  } catch (const gpuhook::CaptureError&) {
    return std::nullopt;  // the loader reports it, as for any capture
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: " << e.what() << "\n";  // a bad --kernel pattern
    return kExitError;
  }
  if (!timeline && !records) return load_instead(o, why_not, why_whole);
  const ga::TimedScan& scan = timeline ? static_cast<const ga::TimedScan&>(*timeline) : *records;
  // (A range's window is settled after the scan, or is its error: said below.)
  if (!o.filter.range.empty() && !scan.asked && scan.job.empty_window.empty())
    return load_instead(o, "a --range whose window a scan cannot settle", why_whole);
  if (!said_job_scan(scan.job, "render")) return kExitError;
  gantt::RenderStats stats;
  stats.events_selected = stats.events_individual = scan.job.selected_events;
  ro.filter_description = gantt::describe_filter(f);
  ro.footer_lines = gantt::rank_footer_lines(scan.records, scan.alignment);
  gantt::Selection window = scan.chart_window();
  window.description = ro.filter_description;
  gantt::Scene scene;
  if (o.view == "steps") {
    const ga::Steps steps = ga::step_series(scan.records, o.step);
    if (!write_chart(gantt::steps_scene(scan.records, window, steps, ro), target)) return kExitError;
    steps_written(o.output, steps);
    return scan.job.corrupt ? kExitError : kExitOk;
  }
  if (timeline) {
    try {
      scene = gantt::utilisation_scene(scan.records, window, timeline->timeline(bucket_of(o), window), ro);
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: render: " << e.what() << "\n";
      return kExitError;
    }
  } else if (o.view == "memory") {
    scene = gantt::memory_scene(scan.records, window, ga::memory_report(scan.records), ro);
  } else {
    std::optional<ga::Topology> topology;
    if (!read_topology(o.topology, &topology)) return kExitError;
    std::vector<std::string> notes;
    const auto matrices = ga::comm_matrices(scan.records, &notes);
    scene = gantt::comm_scene(scan.records, matrices, notes, ro, topology ? &*topology : nullptr);
  }
  if (!write_chart(scene, target)) return kExitError;
  chart_written(o.output, stats);
  return scan.job.corrupt ? kExitError : kExitOk;
}

// The step-time view of one capture without its events: it draws the NVTX ranges and the
// flight recorder's dumps (notices), which a scan reads before any event (EventScanner::context),
// on the loaded view's time origin (EventScanner::first_ns). A filter (whose window gives the
// chart its origin) and several captures (their clocks aligned on their collectives) are
// scanned as the other views are (try_scan_view). Nothing, with *why_whole set, for standard
// input or a capture a scan cannot read.
std::optional<int> try_scan_steps(const RenderCliOptions& o, const gantt::RenderOptions& ro, const ChartTarget& target,
                                  std::string* why_whole) {
  if (o.load.in_memory) return std::nullopt;
  if (any_filter(o.filter) || o.files.size() != 1) return try_scan_view(o, ro, target, why_whole);
  std::string why_not = !o.job.empty()           ? "a scheduler job's captures"
                        : o.files.front() == "-" ? "a capture on standard input"
                                                 : "";
  std::optional<gantt::analysis::EventScanner> scanner;
  if (why_not.empty()) {
    gantt::analysis::EventScanOptions so;
    so.load = load_options(o.load);
    so.threads = o.threads;
    try {
      scanner.emplace(o.files.front(), so);
    } catch (const gpuhook::CaptureError&) {
      return std::nullopt;  // the loader reports it, as for any capture
    }
    why_not = scanner->refused();
  }
  if (!why_not.empty()) {
    return load_instead(o, why_not, why_whole);
  }
  for (const std::string& line : scanner->warnings()) std::cerr << "gantt-cli: " << line << "\n";
  const gantt::Model& context = scanner->context();
  gantt::Selection sel;
  sel.origin_ns = scanner->first_ns();
  const gantt::analysis::Steps steps = gantt::analysis::step_series(context, o.step);
  if (!write_chart(gantt::steps_scene(context, sel, steps, ro), target)) return kExitError;
  steps_written(o.output, steps);
  return scanner->corrupt() ? kExitError : kExitOk;
}

int run_render(const RenderCliOptions& o) {
  ChartTarget target{"render", o.output, o.format};
  target.html_ok = true;
  if (!resolve_chart_format(target)) return kExitError;
  if (target.format == "html" && o.view != "gantt") {
    std::cerr << "gantt-cli: render: --view " << o.view << " has no HTML page yet: name the output .svg, .png or .pdf\n";
    return kExitError;
  }
  gantt::RenderOptions ro;
  if (!gantt::parse_lane_mode(o.lanes, &ro.lanes)) {
    std::cerr << "gantt-cli: render: --lanes must be stream, device, thread, rank or capture\n";
    return kExitError;
  }
  ro.width_px = o.width_px;
  ro.host_lanes = !o.no_host;
  ro.memory_strip = o.memory_strip;
  ro.memory_by = o.memory_by;
  ro.deps = o.deps;
  ro.annotate.enabled = !o.no_annotate;
  ro.annotate.queue_delay_ns = duration_arg("--queue-delay", o.queue_delay);
  ro.annotate.low_occupancy = o.low_occupancy;
  ro.annotate.idle_gap_ns = duration_arg("--idle-gap", o.idle_gap);

  const gantt::EventFilter f = make_filter(o.filter);
  gantt::FlameOptions fo;
  fo.width_px = o.width_px;
  fo.title = "GPU time by NVTX range and kernel";
  std::string why_whole;
  if (o.view == "flame") {
    if (const auto scanned = try_scan_flame(o, fo, target, &why_whole)) return *scanned;
  } else if (o.view == "steps") {
    if (const auto scanned = try_scan_steps(o, ro, target, &why_whole)) return *scanned;
  } else if (o.view == "utilisation" || o.view == "memory" || o.view == "comm") {
    if (const auto scanned = try_scan_view(o, ro, target, &why_whole)) return *scanned;
  } else if (target.format == "html" && o.view == "gantt") {
    if (const auto scanned = try_scan_page(o, ro, target, &why_whole)) return *scanned;
  } else if (const auto streamed = try_stream(o, ro, target, &why_whole)) {
    return *streamed;
  }
  WholeLoad whole{"", target.format == "html" ? gantt::scan::WholePath::kPage : gantt::scan::WholePath::kChart};
  if (!why_whole.empty())
    whole.why = "render loads the capture whole for " + why_whole +
                " (a chart or page of one capture, lanes per stream, device or rank, is read as a stream)";

  // Several captures (or a merged file) are the ranks of one job: put them on one clock and
  // say in the footer what was applied (gantt/ranks/ranks.h).
  std::vector<std::string> files = o.files;
  if (!o.job.empty()) {
    // The captures of one scheduler job: the hook records SLURM_JOB_ID (PBS_JOBID, LSB_JOBID).
    files.clear();
    for (const gantt::jobs::CaptureStamp& s : read_capture_stamps(o.files))
      if (s.job_id == o.job) files.push_back(s.path);
    if (files.empty()) {
      std::cerr << "gantt-cli: render: no capture under the given paths records job " << o.job
                << " (the hook records SLURM_JOB_ID, PBS_JOBID or LSB_JOBID; pass the files themselves otherwise)\n";
      return kExitError;
    }
    std::cerr << "gantt-cli: render: job " << o.job << ": " << files.size() << " capture(s)\n";
  }
  const LoadedJob job = load_captures(files, o.load, whole);
  const gantt::Model& model = job.model;
  const bool corrupt = job.corrupt;
  ro.footer_lines = gantt::rank_footer_lines(model, job.alignment);
  gantt::Selection sel;
  try {
    sel = gantt::select_events(model, f);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: render: " << e.what() << "\n";
    return kExitError;
  }
  ro.filter_description = sel.description;
  if (target.format == "html") {
    gantt::HtmlStats hs;
    if (!write_html_chart(model, sel, ro, target, &hs)) return kExitError;
    std::cerr << "gantt-cli: render: " << o.output << ": " << hs.events << " events on " << hs.lanes << " lanes, "
              << hs.annotations << " flags";
    if (hs.ranges) std::cerr << ", " << hs.ranges << " NVTX ranges";
    if (hs.ranges_left_out) std::cerr << " (" << hs.ranges_left_out << " more left off: past the page's limit)";
    if (hs.collectives) std::cerr << ", " << hs.collectives << " collectives across ranks";
    if (hs.syncs) std::cerr << ", " << hs.syncs << " synchronisations (host waits) left off the lanes";
    if (hs.events_untimed) std::cerr << ", " << hs.events_untimed << " without start or end left off";
    std::cerr << "\n";
    return corrupt ? kExitError : kExitOk;
  }
  gantt::RenderStats stats;
  if (o.view != "gantt") stats.events_selected = stats.events_individual = sel.events.size();
  gantt::Scene scene;
  if (o.view == "flame") {
    const gantt::analysis::Stacks stacks = gantt::analysis::gpu_stacks(model, &sel);
    if (!write_chart(gantt::flame_scene(stacks, fo), target)) return kExitError;
    uint64_t operations = 0;
    for (uint32_t e : sel.events) operations += gantt::analysis::is_gpu_work(model, e) ? 1 : 0;
    flame_written(o.output, stacks, operations);
    return corrupt ? kExitError : kExitOk;
  } else if (o.view == "comm") {
    // The traffic of the selected kernels, as stats --by comm restricts the model to them.
    std::vector<std::string> notes;
    const auto matrices = gantt::analysis::comm_matrices(any_filter(o.filter) ? gantt::restricted(model, sel) : model, &notes);
    std::optional<gantt::analysis::Topology> topo;
    if (!read_topology(o.topology, &topo)) return kExitError;
    scene = gantt::comm_scene(model, matrices, notes, ro, topo ? &*topo : nullptr);
  } else if (o.view == "steps") {
    const gantt::analysis::Steps steps = gantt::analysis::step_series(model, o.step);
    if (!write_chart(gantt::steps_scene(model, sel, steps, ro), target)) return kExitError;
    steps_written(o.output, steps);
    return corrupt ? kExitError : kExitOk;
  } else if (o.view == "memory") {
    scene = gantt::memory_scene(model, sel, gantt::analysis::memory_report(model), ro);
  } else if (o.view == "utilisation") {
    try {
      scene = gantt::utilisation_scene(model, sel, gantt::analysis::utilisation_timeline(model, sel, bucket_of(o)), ro);
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: render: " << e.what() << "\n";
      return kExitError;
    }
  } else {
    scene = gantt::build_scene(model, sel, ro, &stats);
  }

  if (!write_chart(scene, target)) return kExitError;
  chart_written(o.output, stats);
  return corrupt ? kExitError : kExitOk;
}

}  // namespace

void register_render(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RenderCliOptions>();
  CLI::App* cmd = app.add_subcommand("render",
      "Draw the captures as a Gantt chart (SVG, PNG or PDF): a lane per GPU stream, host threads\n"
      "below, each launch in its stages (launch->queued grey, queued->start light blue, execution\n"
      "coloured by kind), a utilisation strip per device, and flags computed from thresholds:\n"
      "queue delay, low occupancy, copy/compute overlap, idle gaps with the host call behind them.\n"
      "Each CUDA graph launch is bracketed on its lane (\"graph 3 \xC2\xB7 8 nodes\"); events that\n"
      "overlap on one lane get rows of their own.\n"
      "\n"
      "-o chart.html writes one self-contained page (no network; open it from file://) with the\n"
      "same lanes, colours and flags on a canvas: wheel zooms around the pointer, drag pans, hover\n"
      "shows every stage time and the host call, click selects, the search box highlights kernels.\n"
      "Zoomed out it draws per-lane coverage from a level-of-detail pyramid, zoomed in the events\n"
      "themselves. The page has the GPU lanes and utilisation strips only (--view gantt).\n"
      "\n"
      "Examples:\n"
      "  gantt-cli render app.gpuh -o gantt.png\n"
      "  gantt-cli render app.gpuh -o gantt.html   # one file, opens offline: zoom, pan, hover, search\n"
      "  gantt-cli render app.gpuh -o step3.svg --range train_step@3 --kernel 'gemm|softmax'\n"
      "  gantt-cli render rank*.gpuh -o job.pdf --lanes rank\n"
      "  gantt-cli render app.gpuh -o flame.svg --view flame\n"
      "  gantt-cli render app.gpuh -o util.png --view utilisation --bucket 10ms\n"
      "  gantt-cli render app.gpuh -o memory.svg --view memory\n"
      "  gantt-cli render rank*.gpuh -o comm.svg --view comm --topology topo.txt   # nvidia-smi topo -m > topo.txt\n"
      "  gantt-cli render rank*.gpuh -o comm.svg --view comm --topology topo.xml   # run with NCCL_TOPO_DUMP_FILE=topo.xml\n"
      "  gantt-cli render --job 4242 /shared/captures -o job4242.svg   # a Slurm job's captures\n");
  cmd->add_option("files", o->files, "capture files (.gpuh); with --job, directories to search too")->required();
  add_load_flags(*cmd, o->load);
  cmd->add_option("-o,--output", o->output, "output file: .svg, .png, .pdf or .html (- = SVG on stdout)")->required();
  cmd->add_option("--format", o->format, "svg, png, pdf or html (default: from the output name)");
  cmd->add_option("--width", o->width_px, "chart width in pixels")->capture_default_str()->check(CLI::Range(400, 16000));
  cmd->add_option("--page-events", o->page_events,
                  "-o x.html of one capture with more events than this: the page holds this many one by one, the "
                  "widest, and the rest as their lanes' coverage, which the page names where it draws them (the page "
                  "stays under 40 MB and is read by a scan, in bounded memory)")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1500000}));
  cmd->add_option("--lanes", o->lanes, "one GPU lane per stream, device, launching thread, or rank (one per capture; 'capture' says the same)")->capture_default_str();
  cmd->add_flag("--no-annotate", o->no_annotate, "no threshold flags (queue delay, occupancy, overlap, idle gaps)");
  cmd->add_flag("--no-host", o->no_host, "leave out the host thread lanes");
  cmd->add_option("--queue-delay", o->queue_delay, "flag queued->start longer than this")->capture_default_str();
  cmd->add_option("--low-occupancy", o->low_occupancy, "flag theoretical occupancy under this fraction")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--idle-gap", o->idle_gap, "flag device idle gaps longer than this (default: 2% of the window)");
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--view", o->view,
                  "gantt: the timeline; flame: a flame graph of GPU time by NVTX range and kernel; utilisation: "
                  "compute/copy/busy share per time bucket per device, drops marked; memory: memory in use "
                  "per device over time by kind, the peak and what was live at it; comm: rank x rank traffic per "
                  "NCCL communicator (p2p exact, collectives under the ring model), p2p bandwidth, slow pairs; steps: each step's duration over the run (an NVTX range, --step), the flight recorder's dumps marked")
      ->check(CLI::IsMember({"gantt", "flame", "utilisation", "memory", "comm", "steps"}))
      ->capture_default_str();
  cmd->add_option("--step", o->step,
                  "--view steps: the NVTX range that is one step (default: the top-level range that occurs most often)");
  cmd->add_flag("--deps", o->deps,
                "arrows for the dependencies the program made with events (cudaEventRecord -> cudaStreamWaitEvent): "
                "from the work the event covered to the work that waited (purple); and from each NCCL send to its "
                "matched receive on the other rank, from when both had started to when the data had arrived (teal)");
  cmd->add_option("--memory-by", o->memory_by,
                  "--view memory and --memory-strip: stack memory by kind (device, pool, pinned host, managed) or by "
                  "category (what it is for: the program's gpuhook_mem_tag(), else the NVTX range it was allocated "
                  "in); auto: by category when the program tagged any allocation")
      ->check(CLI::IsMember({"auto", "kind", "category"}))
      ->capture_default_str();
  cmd->add_flag("--memory-strip", o->memory_strip,
                "a strip of GPU memory in use (by kind, from the recorded allocations) under each device's "
                "utilisation strip");
  cmd->add_option("--topology", o->topology,
                  "--view comm: the output of `nvidia-smi topo -m` on the job's nodes, or the XML NCCL writes to "
                  "NCCL_TOPO_DUMP_FILE (told apart by content): the GPUs and their links drawn, as thick as the "
                  "measured traffic");
  cmd->add_option("--bucket", o->bucket, "--view utilisation: the time bucket (e.g. 10ms; default: about 200 over the window)");
  cmd->add_option("--job", o->job, "only the captures recorded in this scheduler job (SLURM_JOB_ID), found under the paths");
  CLI::Option* threads = cmd->add_option("-j,--threads", o->threads,
                  "threads that scan one capture's chunks side by side when it is not loaded whole (0 = the CPUs "
                  "this process may use, at most 16; the chart is the same for any number); with -j, a capture "
                  "that is loaded whole after all says why")
      ->capture_default_str();
  cmd->add_flag("--in-memory", o->load.in_memory,
                "load the capture whole before drawing, and flag all; by default the chart of one capture without "
                "annotations (--no-annotate, --view gantt, lanes per stream, device or rank; with any filter) is "
                "scanned, in memory that does not grow with its events, and is the same chart; so is one with "
                "annotations over --max-memory, with the flags a scan can tell");
  cmd->get_option("--max-memory")
      ->description("the memory the loaded capture may take, estimated from its chunk index (about 195 bytes a "
                    "record, 215 for the HTML page), e.g. 16G; over it, a chart with annotations is drawn from a scan: low occupancy, copies "
                    "overlapped and idle gaps flagged as when loaded, queue delays only on the kernels drawn one by "
                    "one, copies that could have overlapped not flagged; the footer says so (default: 1G, or half "
                    "the memory this process may use if less). A chart that needs the capture whole (the HTML page "
                    "of a small capture, several captures in the Gantt view, "
                    "--lanes thread) is not drawn over it when it is given, nor "
                    "over half the memory when it is not");
  cmd->callback([o, threads, &exit_code] {
    o->threads_given = threads->count() > 0;
    exit_code = run_render(*o);
  });
}

}  // namespace gantt_cli
