// gantt-cli diagnose FILE...: the classic scheduling mistakes (gantt/analysis/diagnose.h).
// Captures are scanned, every rule on the scan (diagnose_scan), several as the ranks of one job
// and the filters applied by the scans; captures the scan cannot serve are loaded whole;
// summaries (.gsum) give the rules a summary supports (diagnose(const StatsSummary&)).
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gpuhook/capture.h>
#include <gpuhook/summary_file.h>

#include <gantt/analysis/diagnose.h>
#include <gantt/analysis/stream_stats.h>
#include <gantt/analysis/summary.h>
#include <gantt/analysis/table.h>
#include <gantt/model/model.h>

#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct DiagnoseOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string fail_on = "never";
  std::string format = "text";
  FilterFlags filter;
  bool streamed = false;    // read as a stream whatever the size
  unsigned threads = 0;     // threads that scan one capture; 0 = every core
};

int report(const ga::DiagnoseReport& r, const DiagnoseOptions& o, bool corrupt) {
  std::cout << ga::format_diagnose(r, report_format(o.format));
  if (corrupt) return kExitError;
  const int bar = o.fail_on == "warning" ? 1 : o.fail_on == "error" ? 2 : 3;
  for (const ga::Finding& f : r.findings)
    if (static_cast<int>(f.severity) >= bar) return kExitCheckFailed;
  return kExitOk;
}

// The captures' summary as the ranks of one job, scanned (memory that does not grow with the
// events) and put on one clock as a load puts them (stream_job_stats). Nothing, with *why_not,
// when one of them needs the whole timeline.
std::optional<ga::StatsSummary> stream_summary(const std::vector<std::string>& captures, const DiagnoseOptions& o,
                                               bool& corrupt, bool& unusable, std::string* why_not) {
  ga::StreamStatsOptions so;
  so.by = {ga::GroupBy::kStream};  // stream-serialisation reads the stream groups
  so.gaps = 0;                     // the summary rules read the device totals, not the gaps
  so.threads = o.threads;
  so.load = load_options(o.load);
  std::optional<ga::StreamedJob> job = ga::stream_job_stats(captures, so, why_not);
  if (!job) return std::nullopt;
  for (size_t c = 0; c < job->ranks.size(); ++c) {
    const ga::StreamedStats& one = job->ranks[c];
    for (const std::string& line : one.warnings) std::cerr << "gantt-cli: " << line << "\n";
    if (!reportable(one.context)) {
      unusable = true;
      return std::nullopt;
    }
    if (!one.busy_exact)
      std::cerr << "gantt-cli: diagnose: " << captures[c] << ": " << one.late_activities
                << " GPU activities arrived after the idle time before them had been counted; busy times are within "
                   "their length of the exact figures (--in-memory computes them exactly)\n";
    corrupt = corrupt || one.corrupt;
  }
  return std::move(job->summary);
}

// Why diagnose loads the captures it does not stream, for load_captures()' refusal.
const WholeLoad kWhyDiagnoseLoads{
    "diagnose loads captures a scan cannot serve (two captures of one rank, merged or damaged files) "
    "whole",
    gantt::scan::WholePath::kDiagnose};

// Summaries among the inputs: the captures beside them are summarised as one job (scanned, as
// stats reads them) and merged before them, in the order given.
int run_on_summaries(const DiagnoseOptions& o, const std::vector<std::string>& captures,
                     const std::vector<std::string>& summaries) {
  if (any_filter(o.filter)) {
    std::cerr << "gantt-cli: diagnose: the filter flags select events, and a summary (" << summaries.front()
              << ") keeps none: filter when making it (stats CAPTURE --summary --range ...)\n";
    return kExitError;
  }
  ga::StatsSummary all;
  bool have = false, corrupt = false, unusable = false;
  std::optional<ga::StatsSummary> streamed;
  if (!captures.empty() && !o.load.in_memory && std::find(captures.begin(), captures.end(), "-") == captures.end())
    streamed = stream_summary(captures, o, corrupt, unusable, nullptr);
  if (unusable) return kExitError;
  if (streamed) {
    all = std::move(*streamed);
    have = true;
  } else if (!captures.empty()) {
    LoadedJob job = load_captures(captures, o.load, kWhyDiagnoseLoads);
    if (!reportable(job.model)) return kExitError;
    corrupt = job.corrupt;
    all = ga::summarize(job.model, {ga::GroupBy::kStream}, 0);
    have = true;
  }
  if (!merge_summary_files(summaries, o.load, all, have)) return kExitError;
  return report(ga::diagnose(all), o, corrupt);
}

int run_diagnose(const DiagnoseOptions& o) {
  if (o.load.in_memory && o.streamed) {
    std::cerr << "gantt-cli: diagnose: --in-memory and --streamed choose opposite ways: give one\n";
    return kExitError;
  }
  std::vector<std::string> captures, summaries;
  for (const std::string& f : o.files) (gpuhook::is_summary_file(f) ? summaries : captures).push_back(f);
  if (!summaries.empty()) return run_on_summaries(o, captures, summaries);

  // Every rule on a scan, in memory that does not grow with the events.
  if (!o.load.in_memory && std::find(captures.begin(), captures.end(), "-") == captures.end()) {
    const gantt::EventFilter filter = make_filter(o.filter);
    ga::DiagnoseScanOptions so;
    so.load = load_options(o.load);
    so.threads = o.threads;
    if (any_filter(o.filter)) so.filter = &filter;
    std::string why_not;
    std::optional<ga::ScannedDiagnosis> scanned;
    try {
      scanned = ga::diagnose_scan(captures, so, &why_not);
    } catch (const gpuhook::CaptureError&) {
      // the loader reports it, as for any capture
    } catch (const std::invalid_argument& e) {  // the filter's error, as restrict_to_filter() says it
      std::cerr << "gantt-cli: diagnose: " << e.what() << "\n";
      return kExitError;
    }
    if (scanned) {
      if (!scanned->unusable.empty()) {
        std::cerr << "gantt-cli: " << scanned->unusable << "\n";
        return kExitError;
      }
      for (const std::string& line : scanned->warnings) std::cerr << "gantt-cli: " << line << "\n";
      if (any_filter(o.filter))
        std::cerr << "gantt-cli: diagnose: " << scanned->selected_events << " of " << scanned->gpu_events
                  << " GPU events (" << gantt::describe_filter(filter) << ")\n";
      const std::string which = captures.size() == 1 ? captures.front() : "the captures";
      if (scanned->late_events != 0)
        std::cerr << "gantt-cli: diagnose: " << which << ": " << scanned->late_events
                  << " GPU activities came after later ones had been judged (kernels NCCL ran are joined to their calls "
                     "at the end of a scan): fragmentation does not count their overlap with other kernels "
                     "(--in-memory does)\n";
      if (!scanned->busy_exact)
        std::cerr << "gantt-cli: diagnose: " << which
                  << ": busy times are within a few activities' length of the exact figures (--in-memory computes them "
                     "exactly)\n";
      return report(scanned->report, o, scanned->corrupt);
    }
    if (o.streamed) {
      if (captures.size() == 1) std::cerr << "gantt-cli: diagnose: cannot scan " << captures.front() << " (" << why_not << "): loading it whole\n";
      else std::cerr << "gantt-cli: diagnose: cannot scan the captures (" << why_not << "): loading them whole\n";
    }
  }

  LoadedJob job = load_captures(o.files, o.load, kWhyDiagnoseLoads);
  gantt::Model& model = job.model;
  if (!reportable(model) || !restrict_to_filter(model, o.filter, "diagnose")) return kExitError;
  return report(ga::diagnose(model), o, job.corrupt);
}

}  // namespace

void register_diagnose(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Point out the classic scheduling mistakes, each with its condition (thresholds and the\n"
      "numbers that crossed them), the evidence and the fix. Rules: stream-serialisation,\n"
      "copy-overlap, launch-bound, imbalance (devices or ranks), low-occupancy, sync-stall,\n"
      "fragmentation, priority-inversion (short kernels queued behind another stream's long\n"
      "ones at no higher priority: the fix is a stream priority), memory-peak (allocations of one\n"
      "NVTX range, freed later, holding most of a device's memory peak: recompute or free them earlier),\n"
      "memory-idle (allocations held at the peak that no call used after it; needs GPUHOOK_MEM_USE=1),\n"
      "pipeline-bubble, slow-link, throttled (NVML: clocks lowered for power or heat while kernels\n"
      "ran), stalled (CUPTI PM sampling: kernels running while SM active stayed low; record with\n"
      "GPUHOOK_METRICS=sm_active,dram_read,dram_write).\n"
      "launch-bound does not count kernels that run as CUDA graph nodes, and\n"
      "names a graph as the fix when a stream repeats one kernel sequence. Exit 1 when\n"
      "--fail-on is given and a finding is that severe or worse.\n"
      "\n"
      "Captures are scanned, not loaded: every rule runs, in memory that does not grow with their\n"
      "events. Several captures are the ranks of one job: imbalance compares the ranks and names\n"
      "the straggler from their collectives, on one clock; the filter flags count their window\n"
      "from the job's start, --range NAME@N the N-th among all of their ranges. Two captures\n"
      "of one rank load the captures whole.\n"
      "Summaries (gantt-cli stats CAPTURE --summary -o rank.gsum) are diagnosed too, merged:\n"
      "stream-serialisation, copy-overlap and imbalance run on their totals and find what they find\n"
      "on the captures; the report lists the other rules as not run, each with what it needs.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli diagnose app.gpuh\n"
      "  gantt-cli diagnose rank0.gpuh rank1.gpuh --fail-on warning --format md\n"
      "  gantt-cli diagnose app.gpuh --range train_step@10   # one iteration, past the warm-up\n"
      "  gantt-cli diagnose summaries/*.gsum                 # the reduce step of a large job\n");
  cmd->add_option("files", o->files,
                  "capture files (.gpuh; several = ranks of one job) and summary files (.gsum)")
      ->required();
  add_load_flags(*cmd, o->load);
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--fail-on", o->fail_on, "exit 1 on a finding of this severity or worse")
      ->check(CLI::IsMember({"never", "warning", "error"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json"}))
      ->capture_default_str();
  cmd->get_option("--max-memory")
      ->description("the memory captures that are loaded may take, estimated from their chunk indexes (about 140 "
                    "bytes a record), e.g. 16G: captures a scan cannot serve are not loaded over it when it is "
                    "given, nor over half the memory when it is not (the others are scanned, whatever their size)");
  cmd->add_flag("--in-memory", o->load.in_memory, "load the captures whole whatever their size instead of scanning them");
  cmd->add_flag("--streamed", o->streamed,
                "scan the captures (the default); say on stderr why when they must be "
                "loaded instead");
  cmd->add_option("-j,--threads", o->threads,
                  "threads that scan a capture's chunks side by side when it is not loaded whole (0 = the CPUs "
                  "this process may use, at most 16)")
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_diagnose(*o); });
}

}  // namespace gantt_cli
