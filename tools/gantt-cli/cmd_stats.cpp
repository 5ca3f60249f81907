// gantt-cli stats FILE...: numbers on a capture (see gantt/analysis/stats.h).
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gpuhook/summary_file.h>

#include <gantt/analysis/job_scan.h>
#include <gantt/analysis/stats.h>
#include <gantt/analysis/summary.h>
#include <gantt/analysis/comm.h>
#include <gantt/analysis/memory.h>
#include <gantt/analysis/metrics.h>
#include <gantt/analysis/pipeline.h>
#include <gantt/analysis/steps.h>
#include <gantt/analysis/stream_stats.h>
#include <gantt/analysis/timeline.h>
#include <gantt/analysis/waits.h>
#include <gantt/model/model.h>
#include <gantt/ranks/ranks.h>

#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct StatsOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string by = "kernel";
  size_t top = 0;
  size_t gaps = 3;
  std::string format = "text";
  std::string step;      // --by pipeline: the step range
  std::string timeline;  // --timeline BUCKET: the utilisation series instead of the tables
  bool summary = false;
  bool metrics = false;  // --metrics: the GPU's own counters per kernel name
  unsigned threads = 0;  // threads that scan one capture; 0 = every core
  std::string output;
  FilterFlags filter;
};

// Idle gaps a summary keeps per device, whatever --gaps the report later asks for.
constexpr size_t kSummaryGaps = 16;

ga::GroupBy group_by(const std::string& by) {
  return by == "stream"   ? ga::GroupBy::kStream
         : by == "device" ? ga::GroupBy::kDevice
         : by == "range"  ? ga::GroupBy::kRange
         : by == "graph"  ? ga::GroupBy::kGraph
                          : ga::GroupBy::kKernel;
}

ga::StatsOptions report_options(const StatsOptions& o) {
  ga::StatsOptions so;
  so.by = group_by(o.by);
  so.top = o.top;
  so.gaps = o.gaps;
  return so;
}

// The warnings loading the captures would print, and the figures streaming made close.
void print_warnings(const ga::StreamedJob& job) {
  uint64_t late = 0;
  for (const ga::StreamedStats& rank : job.ranks) {
    for (const std::string& line : rank.warnings) std::cerr << "gantt-cli: " << line << "\n";
    late += rank.late_activities;
  }
  if (late != 0)
    std::cerr << "gantt-cli: stats: " << late
              << " GPU activities arrived after the idle gaps before them had been counted; busy and idle times are "
                 "within their length of the exact figures (--in-memory computes them exactly)\n";
}

// The captures as ranks of one job read as streams (gantt/analysis/stream_stats.h): memory
// bounded by names, streams and devices, chunks or captures decoded on every core. Nothing
// when one of them needs the whole timeline (the caller then loads them). The caller that
// uses the job prints its warnings (print_warnings).
// A filter is applied by the scans (on several captures its window counts from the job's start,
// on the job's clock: stream_job_stats); its error sets *bad_filter, said as
// restrict_to_filter() says it.
std::optional<ga::StreamedJob> stream_captures(const StatsOptions& o, const std::vector<std::string>& captures,
                                               std::vector<ga::GroupBy> by, size_t gaps, bool matches, bool* bad_filter) {
  const bool filtered = any_filter(o.filter);
  if (captures.empty() || o.load.in_memory ||
      std::find(captures.begin(), captures.end(), "-") != captures.end())
    return std::nullopt;
  const gantt::EventFilter f = make_filter(o.filter);
  ga::StreamStatsOptions so;
  so.by = std::move(by);
  so.gaps = gaps;
  so.threads = o.threads;
  so.load = load_options(o.load);
  so.matches = matches;
  if (filtered) so.filter = &f;
  std::optional<ga::StreamedJob> job;
  std::string error;
  try {
    job = ga::stream_job_stats(captures, so, nullptr);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  // A window that starts past the last time a load has is the load's error, said after the
  // captures' warnings with the load's span. The stream counts the window on the chunk indexes,
  // which also time records a load does not (counter samples, allocations): past their end it
  // fails with their span, short of it it selects nothing. Either way a job scan, which settles
  // the window on a load's times, says what the load says.
  const bool none = job && std::all_of(job->ranks.begin(), job->ranks.end(),
                                       [](const ga::StreamedStats& r) { return r.selected_events == 0; });
  if (windowed(o.filter) && (!error.empty() || none)) {
    ga::EventScanOptions eso;
    eso.load = so.load;
    eso.threads = o.threads;
    try {
      std::string why_not;
      if (const auto settled = ga::scan_ranges(captures, eso, &f, &why_not); settled && !settled->job.empty_window.empty()) {
        said_job_scan(settled->job, "stats");
        *bad_filter = true;
        return std::nullopt;
      }
    } catch (const std::exception&) {
      // the stream's own error, below, or its tables
    }
  }
  if (!error.empty()) {
    std::cerr << "gantt-cli: stats: " << error << "\n";
    *bad_filter = true;
    return std::nullopt;
  }
  return job;
}

// What the filter selected, as restrict_to_filter() says it of a loaded capture.
void print_selection(const StatsOptions& o, const ga::StreamedJob& job) {
  if (!any_filter(o.filter)) return;
  uint64_t selected = 0, all = 0;
  for (const ga::StreamedStats& rank : job.ranks) selected += rank.selected_events, all += rank.gpu_events;
  std::cerr << "gantt-cli: stats: " << selected << " of " << all << " GPU events ("
            << gantt::describe_filter(make_filter(o.filter)) << ")\n";
}

// Why stats loads the captures it does not stream, for load_captures()' refusal.
const WholeLoad kWhyStatsLoads{
    "stats loads captures whole for standard input or a capture a stream cannot read "
    "(without them, the tables are read as a stream)",
    gantt::scan::WholePath::kStats};

// What stats does with a capture it cannot report (no header): true when every rank can be.
bool all_reportable(const ga::StreamedJob& job) {
  return std::all_of(job.ranks.begin(), job.ranks.end(), [](const ga::StreamedStats& r) { return reportable(r.context); });
}
bool corrupt(const ga::StreamedJob& job) {
  return std::any_of(job.ranks.begin(), job.ranks.end(), [](const ga::StreamedStats& r) { return r.corrupt; });
}

// The map step (--summary -o) and the reduce step (summary files among the inputs): captures
// are read together, as ranks of one job, and summarised with every grouping; summary
// files are read and merged after them, in the order given.
int run_summaries(const StatsOptions& o, const std::vector<std::string>& captures,
                  const std::vector<std::string>& summaries) {
  if (!o.summary && (o.by == "graph" || o.by == "collective" || o.by == "wait" || o.by == "memory" || o.by == "comm" ||
                     o.by == "pipeline")) {
    std::cerr << "gantt-cli: stats: --by " << o.by << " needs captures: a summary keeps per-group totals, not "
              << (o.by == "graph" ? "graph launches" : o.by == "wait" ? "kernel waits" : o.by == "memory" ? "allocations" : o.by == "comm" || o.by == "pipeline" ? "rank pairs" : "collective calls") << "\n";
    return kExitError;
  }
  const std::vector<ga::GroupBy> every = {ga::GroupBy::kKernel, ga::GroupBy::kStream, ga::GroupBy::kDevice,
                                          ga::GroupBy::kRange};
  ga::StatsSummary all;
  bool have = false, damaged = false;
  bool bad_filter = false;
  if (auto streamed = stream_captures(o, captures, every, std::max(kSummaryGaps, o.gaps), o.summary, &bad_filter)) {
    print_warnings(*streamed);
    print_selection(o, *streamed);
    if (!all_reportable(*streamed)) return kExitError;
    damaged = corrupt(*streamed);
    all = std::move(streamed->summary);
    have = true;
  } else if (bad_filter) {
    return kExitError;
  } else if (!captures.empty()) {
    LoadedJob job = load_captures(captures, o.load, kWhyStatsLoads);
    if (!reportable(job.model) || !restrict_to_filter(job.model, o.filter, "stats")) return kExitError;
    damaged = job.corrupt;
    all = ga::summarize(job.model, every, std::max(kSummaryGaps, o.gaps));
    if (o.summary) ga::add_diff_samples(all, job.model);  // a written summary can be diffed
    have = true;
  }
  if (!merge_summary_files(summaries, o.load, all, have)) return kExitError;
  if (o.summary) {
    gpuhook::v1::StatsSummary message;
    ga::to_proto(all, &message);
    std::string error;
    if (!gpuhook::write_summary_file(o.output, message, &error)) {
      std::cerr << "gantt-cli: stats: --summary: " << error << "\n";
      return kExitError;
    }
    std::cerr << "gantt-cli: wrote " << o.output << ": summary of " << all.captures.size() << " capture(s), "
              << all.events << " GPU activities\n";
    return damaged ? kExitError : kExitOk;
  }
  std::cout << ga::format_stats(ga::report(all, report_options(o)), report_format(o.format));
  return damaged ? kExitError : kExitOk;
}

// The tables without loading the captures (stream_captures). Nothing when the report needs
// the whole timeline; the caller then loads them.
std::optional<int> try_stream(const StatsOptions& o) {
  if (!o.timeline.empty() || o.metrics || (o.by != "kernel" && o.by != "stream" && o.by != "device" && o.by != "range"))
    return std::nullopt;
  bool bad_filter = false;
  std::optional<ga::StreamedJob> streamed = stream_captures(o, o.files, {group_by(o.by)}, o.gaps, false, &bad_filter);
  if (bad_filter) return kExitError;
  if (!streamed) return std::nullopt;
  // No GPU work: --by range times the ranges themselves (a flight summary), from the loaded capture.
  if (o.by == "range" && streamed->summary.events == 0 && o.format != "json") return std::nullopt;
  print_warnings(*streamed);
  print_selection(o, *streamed);
  if (!all_reportable(*streamed)) return kExitError;
  std::cout << ga::format_stats(ga::report(streamed->summary, report_options(o)), report_format(o.format));
  return corrupt(*streamed) ? kExitError : kExitOk;
}

// What a scan of the job says before its report, as a load of it says it (said_job_scan()), and
// what the filter selected. False: exit 2.
bool said_stats_scan(const StatsOptions& o, const ga::JobScan& job) {
  if (!said_job_scan(job, "stats")) return false;
  if (any_filter(o.filter))
    std::cerr << "gantt-cli: stats: " << job.selected_events << " of " << job.gpu_events << " GPU events ("
              << gantt::describe_filter(make_filter(o.filter)) << ")\n";
  return true;
}

// A job scan of the captures (analysis/job_scan.h): `scan(files, options, filter, why_not)`. In
// *exit, nothing when the caller is to load them (standard input, --in-memory, a scan that
// cannot serve, a capture the loader reports), exit 2 for a bad filter, said as
// restrict_to_filter() says it; the scan's figures when it served.
template <class Scan>
auto scan_job(const StatsOptions& o, Scan&& scan, std::optional<int>* exit)
    -> decltype(scan(o.files, ga::EventScanOptions{}, nullptr, nullptr)) {
  *exit = std::nullopt;
  if (o.load.in_memory || std::find(o.files.begin(), o.files.end(), "-") != o.files.end()) return std::nullopt;
  const gantt::EventFilter filter = make_filter(o.filter);
  ga::EventScanOptions so;
  so.load = load_options(o.load);
  so.threads = o.threads;
  try {
    std::string why_not;
    return scan(o.files, so, any_filter(o.filter) ? &filter : nullptr, &why_not);
  } catch (const gpuhook::CaptureError&) {
    return std::nullopt;  // the loader reports it, as for any capture
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: stats: " << e.what() << "\n";
    *exit = kExitError;
    return std::nullopt;
  }
}

// --by collective by one scan of each capture (analysis::scan_collective_calls): the collectives
// on the job's clock, in memory that grows with them, not with the events. Nothing when a scan
// cannot tell them as a load would; the caller then loads the captures.
std::optional<int> try_scan_collectives(const StatsOptions& o) {
  std::optional<int> exit;
  const std::optional<ga::ScannedCollectives> scanned = scan_job(o, ga::scan_collective_calls, &exit);
  if (!scanned) return exit;
  if (!said_stats_scan(o, scanned->job)) return kExitError;
  std::cout << ga::format_collective_stats(gantt::collective_stats(gantt::match_collectives(scanned->calls)), o.format);
  return scanned->job.corrupt ? kExitError : kExitOk;
}

// --by graph by a scan: the tables' header figures from the streamed summary (no grouping), the
// graphs from one more scan of each capture (analysis::scan_graph_launches). Nothing when
// either cannot serve; the caller then loads the captures.
std::optional<int> try_scan_graphs(const StatsOptions& o) {
  std::optional<int> exit;
  const std::optional<ga::ScannedGraphs> scanned = scan_job(o, ga::scan_graph_launches, &exit);
  if (!scanned) return exit;
  bool bad_filter = false;
  std::optional<ga::StreamedJob> streamed = stream_captures(o, o.files, {}, o.gaps, false, &bad_filter);
  if (bad_filter) return kExitError;
  if (!streamed) return std::nullopt;
  // The streamed summary says what a load says (warnings, the filter's selection, an unusable
  // capture); the graph scan read the same files.
  print_warnings(*streamed);
  print_selection(o, *streamed);
  if (!all_reportable(*streamed)) return kExitError;
  ga::StatsReport r = ga::report(streamed->summary, report_options(o));
  r.graphs = ga::graph_rows(scanned->launches, o.files.size() > 1);
  r.groups_total = r.graphs.size();
  if (o.top > 0 && r.graphs.size() > o.top) r.graphs.resize(o.top);
  std::cout << ga::format_stats(r, report_format(o.format));
  return scanned->job.corrupt || corrupt(*streamed) ? kExitError : kExitOk;
}

// --by memory and --by comm by a scan (analysis::scan_memory, scan_comm): the event scan says
// what a load says of the files (and puts a job's captures on one clock by their collectives),
// and only the records the report reads are held (the memory records, ranges and the calls that
// made the allocations; the NCCL calls and the kernels they launched). `scan(files, options,
// filter, why_not)`. Nothing when a scan cannot serve; the caller then loads.
template <class ScanRecords, class Report>
std::optional<int> try_scan_records(const StatsOptions& o, ScanRecords scan, Report report) {
  std::optional<int> exit;
  const std::optional<ga::ScannedRecords> scanned = scan_job(o, scan, &exit);
  if (!scanned) return exit;
  if (!said_stats_scan(o, scanned->job)) return kExitError;
  std::cout << report(scanned->records, o.format);
  return scanned->job.corrupt ? kExitError : kExitOk;
}

// --metrics by a scan (analysis::scan_metrics): the counter samples held, and which of the
// selected kernels ran at each from a second scan of the events. Nothing when a scan cannot
// serve; the caller then loads.
std::optional<int> try_scan_metrics(const StatsOptions& o) {
  std::optional<int> exit;
  const std::optional<ga::ScannedMetrics> scanned = scan_job(o, ga::scan_metrics, &exit);
  if (!scanned) return exit;
  if (!said_stats_scan(o, scanned->job)) return kExitError;
  std::cout << ga::format_metric_stats(scanned->records, ga::metric_stats(scanned->records, scanned->kernels),
                                       report_format(o.format));
  return scanned->job.corrupt ? kExitError : kExitOk;
}

// --timeline by a scan (analysis::scan_timeline): each device's unions of its selected events,
// not the events; the filter flags select as a load restricted to them does.
// Nothing when a scan cannot serve; the caller then loads.
std::optional<int> try_scan_timeline(const StatsOptions& o) {
  const int64_t bucket = o.timeline == "auto" ? 0 : duration_arg("--timeline", o.timeline);
  std::optional<int> exit;
  const std::optional<ga::ScannedTimeline> scanned = scan_job(
      o, [](const std::vector<std::string>& files, const ga::EventScanOptions& so, const gantt::EventFilter* filter,
            std::string* why_not) { return ga::scan_timeline(files, so, filter, false, why_not); },
      &exit);
  if (!scanned) return exit;
  if (!said_stats_scan(o, scanned->job)) return kExitError;
  try {
    std::cout << ga::format_timeline(scanned->records, scanned->timeline(bucket > 0 ? static_cast<uint64_t>(bucket) : 0, scanned->window),
                                     o.format);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: stats: --timeline: " << e.what() << "\n";
    return kExitError;
  }
  return scanned->job.corrupt ? kExitError : kExitOk;
}

// --by pipeline by scans (analysis::scan_pipelines): the NCCL calls and their kernels held, and
// each stage's busy time step by step from one more scan of the events, the filter flags
// selecting as a load restricted to them does. Nothing when a scan cannot serve; the caller
// then loads.
std::optional<int> try_scan_pipelines(const StatsOptions& o) {
  std::optional<int> exit;
  const std::optional<ga::ScannedPipelines> scanned = scan_job(
      o, [&o](const std::vector<std::string>& files, const ga::EventScanOptions& so, const gantt::EventFilter* filter,
              std::string* why_not) { return ga::scan_pipelines(files, so, filter, o.step, why_not); },
      &exit);
  if (!scanned) return exit;
  if (!said_stats_scan(o, scanned->comm.job)) return kExitError;
  std::cout << ga::format_pipeline_stats(scanned->comm.records, scanned->reports, o.format, scanned->notes);
  return scanned->comm.job.corrupt ? kExitError : kExitOk;
}

std::string memory_stats(const gantt::Model& m, const std::string& format) {
  return ga::format_memory_stats(m, ga::memory_report(m), format);
}
std::string comm_stats(const gantt::Model& m, const std::string& format) {
  std::vector<std::string> notes;
  const std::vector<ga::CommMatrix> matrices = ga::comm_matrices(m, &notes);
  return ga::format_comm_stats(matrices, notes, format);
}

int run_stats(const StatsOptions& o) {
  std::vector<std::string> captures, summaries;
  for (const std::string& f : o.files) (gpuhook::is_summary_file(f) ? summaries : captures).push_back(f);
  if (o.summary && o.output.empty()) {
    std::cerr << "gantt-cli: stats: --summary writes a file: give it with -o FILE.gsum\n";
    return kExitError;
  }
  if (!o.summary && !o.output.empty()) {
    std::cerr << "gantt-cli: stats: -o goes with --summary (the report itself goes to stdout)\n";
    return kExitError;
  }
  if (!summaries.empty() && any_filter(o.filter)) {
    std::cerr << "gantt-cli: stats: the filter flags select events, and a summary (" << summaries.front()
              << ") keeps none: filter when making it (stats CAPTURE --summary --range ...)\n";
    return kExitError;
  }
  if (o.metrics && (o.summary || !summaries.empty())) {
    std::cerr << "gantt-cli: stats: --metrics needs captures: a summary keeps no GPU metrics\n";
    return kExitError;
  }
  if (o.summary || !summaries.empty()) return run_summaries(o, captures, summaries);
  if (const auto streamed = try_stream(o)) return *streamed;
  // --timeline, then --metrics, then --by: what the load below reports when several are given.
  const bool tables = o.timeline.empty() && !o.metrics;
  if (tables && o.by == "collective")
    if (const auto scanned = try_scan_collectives(o)) return *scanned;
  if (tables && o.by == "graph")
    if (const auto scanned = try_scan_graphs(o)) return *scanned;
  // The memory report reads no GPU events: a filter only says how many it selected, as a load's
  // restriction does. The communication matrix times the kernels the calls launched: a filter
  // leaves out those a load's restriction drops.
  if (tables && o.by == "memory")
    if (const auto scanned = try_scan_records(o, ga::scan_memory, memory_stats)) return *scanned;
  if (tables && o.by == "comm")
    if (const auto scanned = try_scan_records(o, ga::scan_comm, comm_stats)) return *scanned;
  if (tables && o.by == "pipeline")
    if (const auto scanned = try_scan_pipelines(o)) return *scanned;
  if (!o.timeline.empty())
    if (const auto scanned = try_scan_timeline(o)) return *scanned;
  if (o.metrics && o.timeline.empty())
    if (const auto scanned = try_scan_metrics(o)) return *scanned;
  LoadedJob job = load_captures(o.files, o.load, kWhyStatsLoads);
  gantt::Model& model = job.model;
  const bool corrupt = job.corrupt;
  if (!reportable(model) || !restrict_to_filter(model, o.filter, "stats")) return kExitError;

  if (!o.timeline.empty()) {
    // The series `render --view utilisation` draws (analysis/timeline.h).
    const int64_t bucket = o.timeline == "auto" ? 0 : duration_arg("--timeline", o.timeline);
    gantt::Selection sel = gantt::select_events(model, {});
    try {
      std::cout << ga::format_timeline(model, ga::utilisation_timeline(model, sel, bucket > 0 ? static_cast<uint64_t>(bucket) : 0),
                                       o.format);
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: stats: --timeline: " << e.what() << "\n";
      return kExitError;
    }
    return corrupt ? kExitError : kExitOk;
  }
  if (o.metrics) {
    std::cout << ga::format_metric_stats(model, ga::metric_stats(model), report_format(o.format));
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "comm") {
    std::cout << comm_stats(model, o.format);
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "pipeline") {
    std::vector<std::string> notes;
    const auto reports = ga::pipeline_reports(model, o.step, &notes);
    std::cout << ga::format_pipeline_stats(model, reports, o.format, notes);
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "memory") {
    std::cout << memory_stats(model, o.format);
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "wait") {
    // Why each kernel waited between queued and start (analysis/waits.h).
    std::vector<uint32_t> all(model.events.size());
    for (uint32_t e = 0; e < all.size(); ++e) all[e] = e;
    std::cout << ga::format_wait_stats(model, ga::wait_causes(model, all), o.format);
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "collective") {
    // One row per (op, size class, ranks) over the collectives matched across captures.
    std::cout << ga::format_collective_stats(
        gantt::collective_stats(gantt::match_collectives(gantt::collective_calls(model))), o.format);
    return corrupt ? kExitError : kExitOk;
  }
  if (o.by == "range" && model.events.size() == 0 && model.ranges.size() != 0 && o.format != "json") {
    // A flight summary (GPUHOOK_FLIGHT_SUMMARY): ranges without GPU work, timed on the host.
    std::cout << ga::format_range_occurrences(model, o.format);
    return corrupt ? kExitError : kExitOk;
  }
  std::cout << ga::format_stats(ga::compute_stats(model, report_options(o)), report_format(o.format));
  // A damaged capture still gets its numbers, but the exit code says they are partial.
  return corrupt ? kExitError : kExitOk;
}

}  // namespace

void register_stats(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StatsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "stats",
      "Numbers on a capture: per kernel (or stream, device, range path, collective) count and\n"
      "total/mean/median/p95 exec time with its share of GPU time; with --by graph, per CUDA\n"
      "graph its launches, nodes per launch, total and median launch span (first node start to\n"
      "last node end), GPU busy time inside the launches and the host time of the\n"
      "cudaGraphLaunch calls (the launch overhead); the launch stages\n"
      "(launch->queued, queued->start, exec); per device busy %, copy/compute overlap % and the\n"
      "largest idle gaps with the host API call the host sat in; NCCL calls, time and bytes.\n"
      "Times are in microseconds (text, md, csv) or integer nanoseconds (json). Medians and\n"
      "p95 are exact up to 10000 instances per group; above, they come from a mergeable\n"
      "sketch within 1% (the report says which).\n"
      "\n"
      "A job too large for one machine: summarise each capture where it was written\n"
      "(--summary -o rank.gsum, a few KB to MB), move only the summaries, and give them all to\n"
      "stats, which merges them (any order gives the same report). Summaries and captures\n"
      "mix; --by graph and --by collective need captures.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli stats app.gpuh --top 10\n"
      "  gantt-cli stats app.gpuh --by range --format json > stats.json\n"
      "  gantt-cli stats app.gpuh --by graph\n"
      "  gantt-cli stats app.gpuh --by wait      # why kernels waited: own stream, event, priority, device full\n"
      "  gantt-cli stats app.gpuh --timeline 10ms --format csv > util.csv   # utilisation over time\n"
      "  gantt-cli stats app.gpuh --by memory    # peak memory per device and what was live at it\n"
      "  gantt-cli stats app.gpuh --metrics      # NVML counters: means while each kernel ran, clock drops\n"
      "  gantt-cli stats rank*.gpuh --by comm    # bytes and bandwidth per rank pair, slow pairs\n"
      "  gantt-cli stats stage*.gpuh --by pipeline --step train_step   # bubble per pipeline stage\n"
      "  gantt-cli stats rank0.gpuh rank1.gpuh --by collective\n"
      "  gantt-cli stats rank7.gpuh --summary -o rank7.gsum      # on the node, by the job launcher\n"
      "  gantt-cli stats summaries/*.gsum --top 20               # anywhere, afterwards\n");
  cmd->add_option("files", o->files, "capture files (.gpuh; several = ranks of one job) and summary files (.gsum)")
      ->required();
  cmd->add_flag("--summary", o->summary, "write a mergeable summary of the inputs to -o instead of a report");
  cmd->add_option("-o,--output", o->output, "the summary file to write (with --summary; never overwritten)");
  add_load_flags(*cmd, o->load);
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--by", o->by, "group by (graph: one row per CUDA graph; pipeline: bubble per pipeline stage)")
      ->check(CLI::IsMember({"kernel", "stream", "device", "range", "graph", "collective", "wait", "memory", "comm",
                            "pipeline"}))
      ->capture_default_str();
  cmd->add_option("--step", o->step,
                  "--by pipeline: the NVTX range that is one training step (default: the top-level range that "
                  "encloses the stages' sends and receives most often)");
  cmd->add_option("--top", o->top, "only the N groups with the most GPU time, or graphs with the most launch span (0 = all)")->capture_default_str();
  cmd->add_option("--gaps", o->gaps, "idle gaps listed per device")->capture_default_str();
  cmd->add_option("-j,--threads", o->threads,
                  "threads that scan one capture's chunks side by side (0 = the CPUs this process may use, at "
                  "most 16; the tables are the same for any number)")
      ->capture_default_str();
  cmd->add_flag("--in-memory", o->load.in_memory,
                "load the captures whole before counting, as render and diagnose do; by default they are "
                "scanned (--by kernel, stream, device, range, graph, collective, memory, comm, --metrics, --timeline "
                "and --summary), in memory that does not grow with their events, the filters applied by the scan "
                "(merged files, NVTX ranges for --by range and --summary, and graph launches for --summary load them "
                "whole)");
  cmd->add_flag("--metrics", o->metrics,
                "instead of the tables: the GPU's own counters (NVML: utilisation, clocks, power, temperature, memory, "
                "PCIe) per device, their means over the samples read while each kernel name ran, while any ran, while "
                "none did, and the stretches where the SM clock dropped for power or heat");
  cmd->add_option("--timeline", o->timeline,
                  "instead of the tables: per device and time bucket of this size (e.g. 10ms, or auto), compute, "
                  "copy, busy and idle % and the drops, as render --view utilisation draws them");
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json", "csv"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_stats(*o); });
}

}  // namespace gantt_cli
