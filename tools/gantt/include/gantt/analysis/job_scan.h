// Scans of a job's captures for the figures a report needs of them all: each capture in turn,
// one consumer per share, on the job's clock (clock_scan.h), as a load of the captures reads
// them. stats --by collective and --by graph read through these.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/metrics.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/timeline.h"
#include "gantt/model/record_spool.h"
#include "gantt/ranks/collectives.h"

namespace gantt::analysis {

// What one scan of a job's captures read besides its consumers' figures (scan_job()).
struct JobScan {
  std::string unusable;  // unusable_capture() of the captures: nothing was scanned
  Model context;         // the captures' headers, devices and threads, as a load of them has them
  std::optional<JobClock> clock;  // with a filter: the job's clock it selected on
  std::vector<std::string> warnings;  // as loading the captures would print them
  bool corrupt = false;
  uint64_t gpu_events = 0, selected_events = 0;  // for "N of M GPU events" under a filter
  // A window settled after the scan (WindowEnd::kSettledAfter): select_events()' error where it
  // starts past the job's end as a load has it, the scan having selected nothing. The caller
  // says it after the warnings, as a load does.
  std::string empty_window;
  // With a --range: select_events()' origin and window of it on the job's clock, as the scan
  // selected them (the range's start, and the end of the work launched in it); and whether the
  // range may have no end (then it ends at the job's last time, which the scan took from the
  // chunk indexes: a load's may differ).
  std::optional<Selection> range_window;
  bool range_open = false;
};
// Where a job scan's time window (--from without --to or --range) meets the job's end. kIndexed:
// the end the captures' chunk indexes tell, select_events()' error thrown before the scan when
// the window starts past it. kSettledAfter: the window held open from its start (nothing lies
// past the indexes' end: they time every record), and the caller settles it after the scan on
// the first and last times a load has, which only a scan tells (an index also times records a
// load does not: counter samples, allocations).
enum class WindowEnd { kIndexed, kSettledAfter };
// Scans each capture of a job in turn (the capture's scanner let go after it), `filter` selected
// on the job's clock as a load of them restricts it (the window from the job's start). For
// capture c, `consumers(c, scanner, context)` gives one consumer per share of it, and after its
// scan `done(c, scanner, ran)` says "" or why the job must be loaded instead (`ran` false: the
// scanner refused, or a consumer stopped). nullopt with *why_not ("PATH: why" among several)
// where a scan cannot serve. Throws gpuhook::CaptureError as load() does, and
// std::invalid_argument for a bad filter as select_events() does.
using ShareConsumers = std::function<std::vector<EventConsumer*>(size_t capture, const EventScanner&, const Model& context)>;
using CaptureScanned = std::function<std::string(size_t capture, const EventScanner&, bool ran, const std::string& why)>;
std::optional<JobScan> scan_job(const std::vector<std::string>& paths, const EventScanOptions& options,
                                const EventFilter* filter, const ShareConsumers& consumers, const CaptureScanned& done,
                                std::string* why_not, WindowEnd end = WindowEnd::kIndexed);

// Each capture's offset onto the job's clock, as a load puts the captures together: the
// JobClock's where scan_job() made one (a filter), else align_ranks() on `clocks`, what the scans
// kept of each capture's collectives (clock_input(); none for one capture); the alignment that
// gave them in *alignment where given (empty for one capture).
std::vector<int64_t> job_offsets(const JobScan& job, const std::vector<RankClockInput>& clocks,
                                 RankAlignment* alignment = nullptr);
// `calls`' kernel times moved by their captures' `offsets`.
void move_calls(std::vector<RankCollectiveCall>& calls, const std::vector<int64_t>& offsets);

// The collective calls of a job whose kernels ran, on one clock: what collective_calls() of a
// load of the captures gives match_collectives() (the filter applied as restrict_to_filter()
// applies it, its window counted from the job's start), from one scan of each capture (one
// record of 80 bytes per collective and rank, at most kMaxScannedCollectives). nullopt with
// *why_not where a scan cannot tell them as a load would: a kernel with several collective
// calls, a capture that ran one collective twice, more collectives than it keeps, or what
// scan_job() refuses; throws as scan_job() does.
struct ScannedCollectives {
  JobScan job;
  std::vector<RankCollectiveCall> calls;
};
std::optional<ScannedCollectives> scan_collective_calls(const std::vector<std::string>& paths,
                                                        const EventScanOptions& options, const EventFilter* filter,
                                                        std::string* why_not);

// The launches of every CUDA graph of a job, as graph_launches() of a load of the captures
// (filtered as restrict_to_filter() filters it) gives them to graph_rows(): each launch's nodes
// are held until its capture's scan ends (16 bytes a node, about 100 a launch; at most
// kMaxScannedGraphNodes nodes for the job, some 250 MB where every launch ran one node). nullopt
// with *why_not where a scan cannot tell them; throws as scan_job() does.
inline constexpr size_t kMaxScannedGraphNodes = size_t{1} << 21;
struct ScannedGraphs {
  JobScan job;
  std::vector<GraphLaunchFigures> launches;
};
std::optional<ScannedGraphs> scan_graph_launches(const std::vector<std::string>& paths, const EventScanOptions& options,
                                                 const EventFilter* filter, std::string* why_not);

// Allocation records, memory tags and memory uses a capture may hold for a scan's memory
// figures; past them, it is loaded (the loader keeps as many tags).
inline constexpr size_t kMaxMemoryRecords = size_t{1} << 20;
inline constexpr size_t kMaxMemoryUses = size_t{1} << 21;

// What the memory figures read of a capture (memory_report(), the memory rules of diagnose):
// its context records, NVTX ranges, allocation records and memory tags, with `with_uses` its
// memory uses (GPUHOOK_MEM_USE), in one read of those kinds; then the API calls that made the
// allocations (a second read, of the calls, keeping those with their correlation ids: a graph
// launch's allocation nodes carry the launch's). nullopt with *why_not past kMaxMemoryRecords or
// kMaxMemoryUses. Throws gpuhook::CaptureError as load() does.
std::optional<RecordSpool> memory_records(const std::string& path, const LoadOptions& load, bool with_uses,
                                          std::string* why_not);

// The GPU operations (kernels, copies, memsets) with the correlation ids `correlations`, and the
// calls that launched them, in one read of those kinds: what names the call of an allocation's
// last use (diagnose memory-idle), as a load names that operation. With `select` (on the
// capture's clock: EventScanner::filter()), only the operations it selects, as a load restricted
// to the filter keeps them. Throws gpuhook::CaptureError as load() does.
RecordSpool launch_records(const std::string& path, const LoadOptions& load, const std::unordered_set<uint32_t>& correlations,
                           const ScanSelector* select = nullptr);

// A model of only the records `add(c, builder)` gives capture c (between its begin and end), each
// capture's first and last times `spans[c]` as a load has them, a job's captures moved by
// `offsets` as align_model_ranks() moves a loaded job: what diagnose's rules of records and
// stats --by memory read of a scan.
using AddRecords = std::function<void(size_t capture, ModelBuilder& builder)>;
Model records_model(const std::vector<std::string>& paths, const AddRecords& add,
                    const std::vector<std::pair<uint64_t, uint64_t>>& spans, const std::vector<int64_t>& offsets);

// A scan's model of some of a job's records: each capture's span as a load has it, the captures
// of a job put on one clock by their collectives as scan_collective_calls() puts them; and the
// windows a load of the job selects.
struct TimedScan {
  JobScan job;
  // The captures (headers, devices, first and last times as a load has them) and the records
  // kept, on the job's clock.
  Model records;
  std::vector<int64_t> offsets;  // each capture's move onto the job's clock, as records' are moved
  RankAlignment alignment;       // the alignment behind them (nothing for one capture)
  // select_events()' origin and window of a load of the job without a filter (fitted to its
  // selected events, within its first and last times as a load has them), without the events:
  // the window a chart of the records draws, and a load restricted to the filter selects.
  Selection window;
  // With a time window or a --range: select_events()' origin and window of a load of the job
  // with the filter, the window as asked: what a chart of the selection draws.
  std::optional<Selection> asked;
  const Selection& chart_window() const { return asked ? *asked : window; }
};
struct ScannedRecords : TimedScan {};

// stats --by memory from a scan: the model memory_report() reads, holding only each capture's
// memory records (memory_records()). The report reads no GPU events: a `filter` (null: none)
// only selects the events the job scan counts, as a load's restriction leaves the memory records
// whole. nullopt with *why_not where a scan cannot serve (collectives it cannot tell as a load
// does); throws as scan_job() does.
std::optional<ScannedRecords> scan_memory(const std::vector<std::string>& paths, const EventScanOptions& options,
                                          const EventFilter* filter, std::string* why_not);

// NVTX range records a capture may hold for a scan's step times; past them, it is loaded.
inline constexpr size_t kMaxScannedRanges = size_t{1} << 21;

// render --view steps of several captures or under a filter: the model step_series() reads,
// holding only each capture's NVTX ranges and notices (the flight recorder's dumps), in one read
// of those kinds, on the job's clock; the window a load selected with `filter` (null: none)
// gives the chart its origin (and settles a streamed stats' window: JobScan::empty_window). nullopt with *why_not where a scan cannot serve; throws as
// scan_job() does.
std::optional<ScannedRecords> scan_ranges(const std::vector<std::string>& paths, const EventScanOptions& options,
                                          const EventFilter* filter, std::string* why_not);

// NCCL calls a capture may hold for a scan's communication figures, and NCCL kernels a filter
// may leave out; past them, it is loaded.
inline constexpr size_t kMaxCommRecords = size_t{1} << 21;

// Kernels by (correlation id, start time): those of NCCL calls that a filter left out.
using LeftOutKernels = std::set<std::pair<uint32_t, uint64_t>>;

// What the communication figures read of a capture (comm_matrices(), the p2p and collective
// matches): its NCCL calls and the external correlations the hook pushed around them (one
// read of those kinds), then the kernels those launched but `left_out` (a second read, of the
// kernels). About 150 bytes held a call. nullopt with *why_not past kMaxCommRecords, or for
// NCCL calls without external ids (an older hook's: the loader finds their kernels among the
// thread's launches). Throws gpuhook::CaptureError as load() does.
std::optional<RecordSpool> comm_records(const std::string& path, const LoadOptions& load, const LeftOutKernels& left_out,
                                        std::string* why_not);

// stats --by comm and render --view comm from a scan: the model comm_matrices() reads, holding
// only each capture's communication records (comm_records()); a `filter` (null: none) leaves
// out the kernels a load restricted to it drops, their calls kept without them. nullopt with
// *why_not where a scan cannot serve; throws as scan_job() does.
std::optional<ScannedRecords> scan_comm(const std::vector<std::string>& paths, const EventScanOptions& options,
                                        const EventFilter* filter, std::string* why_not);

// stats --by pipeline, and diagnose's pipeline-bubble and slow-link, from scans: the calls and
// kernels scan_comm() holds (match_p2p() reads them), the pipelines among them, and each
// stage's work step by step from one more scan of the events (pipeline_reports() of a load of
// the captures, the same reports). The work is held as the union of each step's busy time per
// stage device: memory grows with the steps and the idle gaps, not with the events. A `filter`
// (null: none) leaves out what a load restricted to it drops: the kernels of the calls it does
// not select (the calls kept) and the work it does not select. nullopt with *why_not where a
// scan cannot serve; throws as scan_job() does.
struct ScannedPipelines {
  ScannedRecords comm;
  std::vector<PipelineReport> reports;
  std::vector<std::string> notes;  // what pipeline_reports() says it left out
};
std::optional<ScannedPipelines> scan_pipelines(const std::vector<std::string>& paths, const EventScanOptions& options,
                                               const EventFilter* filter, const std::string& step_range,
                                               std::string* why_not);

// Counter samples (NVML, PM sampling) a capture may hold for a scan's metric figures; past them,
// it is loaded.
inline constexpr size_t kMaxScannedMetricSamples = size_t{1} << 22;

// export --format metrics-csv from a scan: the model of only each capture's counter samples
// (one read of them, about 50 bytes a sample) on the job's clock, and the window a load selects
// with `filter` (null: none), which cuts the samples when a window or range was asked. nullopt
// with *why_not past kMaxScannedMetricSamples or where a scan cannot serve; throws as
// scan_job() does.
std::optional<ScannedRecords> scan_samples(const std::vector<std::string>& paths, const EventScanOptions& options,
                                           const EventFilter* filter, std::string* why_not);

// stats --metrics from a scan: the model metric_stats() reads, holding only each capture's counter
// samples (one read of them, about 50 bytes a sample), and which kernels ran at each (a second
// scan of the events, one mark per sample a kernel covers), of those `filter` selects (null:
// all) as a load restricted to it keeps them; the samples are kept whole, as that load keeps
// them. nullopt with *why_not past kMaxScannedMetricSamples or where a scan cannot serve; throws
// as scan_job() does.
struct ScannedMetrics {
  JobScan job;
  Model records;
  KernelsAtSamples kernels;
};
std::optional<ScannedMetrics> scan_metrics(const std::vector<std::string>& paths, const EventScanOptions& options,
                                           const EventFilter* filter, std::string* why_not);

// Disjoint spans a scan's timeline holds for a job (16 bytes each, per device and kind of work:
// 128 MiB, and as much again for the busy unions made of them at the end); past them, the job is
// loaded. A stretch of work between idle gaps is one span: 8 M kernels that each leave the GPU
// idle before the next.
inline constexpr size_t kMaxTimelineSpans = size_t{1} << 23;

// stats --timeline and render --view utilisation from a scan: each device's compute, copy and
// memset unions of the events, merged as they are read, so that memory grows with the idle gaps,
// not with the events (at most kMaxTimelineSpans), and the busy union made of them at the end
// (timeline_of()'s inputs); and the window a load
// restricted to `filter` (null: none) selects (select_events() of the restricted model): fitted
// to the selected events, from the first launch or begin to the last end, padded, within the
// job's first and last times, which the scan takes from every record a load times (header,
// ranges, calls, NCCL calls, GPU operations, selected or not). With `with_samples`, the GPU
// counter samples the view draws beside the unions (at most kMaxScannedMetricSamples). A job's
// captures go on one clock by their collectives as scan_collective_calls() puts them. nullopt
// with *why_not where a scan cannot serve; throws as scan_job() does.
struct ScannedTimeline : TimedScan {  // its records: the counter samples
  UnionsByDevice unions;  // on the job's clock
  // utilisation_timeline() of a load over `over` (window or chart_window()): throws
  // std::invalid_argument as timeline_of() does.
  Timeline timeline(uint64_t bucket_ns, const Selection& over) const {
    Timeline t = timeline_of(unions, over.window_start_ns, over.window_end_ns, bucket_ns);
    t.events = job.selected_events;
    return t;
  }
};
std::optional<ScannedTimeline> scan_timeline(const std::vector<std::string>& paths, const EventScanOptions& options,
                                             const EventFilter* filter, bool with_samples, std::string* why_not);

}  // namespace gantt::analysis
