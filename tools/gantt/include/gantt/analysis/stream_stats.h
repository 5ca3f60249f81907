// `stats` of one capture without loading it: the file's chunks are decoded by several threads
// (each a contiguous share of the chunk index), each thread folds its records into group
// digests, stage digests and per-device busy trackers, and the shares are merged in file
// order. Memory grows with kernel names, streams, devices and open idle gaps, not with the
// events; the summary equals summarize() of the loaded capture (tests/unit: the fixtures).
//
// NCCL calls are joined to their kernels by the loader's own join, run at the end on only the
// records it needs (the calls, the hook's external ids, the kernels named nccl* or launched
// under those ids: a few per collective). A launch's NVTX range path (--by range, a summary's
// matches) comes from a first read of only the ranges, built as the loader builds them. What
// needs the whole timeline is not streamed: CUDA graph launches in a summary (diff matches
// nodes by place), a merged file's ranks, NCCL calls without external ids (joined by launch
// times). stream_stats() then returns nothing and says why, and the caller loads the capture.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "gantt/analysis/flame.h"
#include "gantt/analysis/summary.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/ranks/alignment.h"

namespace gantt::analysis {

struct StreamStatsOptions {
  std::vector<GroupBy> by;  // kernel, stream, device, range
  size_t gaps = 3;          // idle gaps kept per device
  bool matches = false;     // diff's per-kernel samples too (add_diff_samples), for a summary file
  bool clock_ends = false;  // StreamedStats::clock's collective ends (aligning several captures)
  unsigned threads = 0;     // threads that scan the capture; 0 = every core
  LoadOptions load;
  // select_events()' filters, applied by the scan (scan_select.h) as restricted() applies them
  // to a loaded model: the GPU events it leaves out are not counted, the host's records are.
  // On a job of several captures (stream_job_stats), its window counts from the job's start.
  const EventFilter* filter = nullptr;
  // With `filter` on one of several captures: the job's first and last times as this
  // capture's clock reads them (JobClock::local_span), which its window counts from.
  std::optional<std::pair<uint64_t, uint64_t>> job_span;
  // With job_span and a --range: its window found among the job's captures, on this capture's
  // clock (JobClock::local_range).
  std::optional<std::pair<uint64_t, uint64_t>> job_range;
};

struct StreamedStats {
  StatsSummary summary;
  Model context;                      // the capture's header, devices, threads, integrity; no events
  std::vector<std::string> warnings;  // what load_captures() would print for the capture
  bool corrupt = false;
  unsigned threads = 1;               // decoding threads used
  // Busy/idle figures computed with clipped late activities (BusyTracker): close, not exact.
  uint64_t late_activities = 0;
  bool busy_exact = true;
  // Its header's clocks and, with StreamStatsOptions::clock_ends, its collectives' ends: what
  // aligning it with other ranks takes.
  RankClockInput clock;
  // With StreamStatsOptions::filter: the GPU events of the capture, and those selected.
  uint64_t gpu_events = 0, selected_events = 0;
  // With StreamStatsOptions::matches: the GPU time by NVTX range path and kernel, as
  // flame.h gpu_stacks() gives it for the loaded capture (diff -o's differential flame graph).
  Stacks stacks;
};

// Several captures as the ranks of one job, as load_captures() reads them, without loading
// any: each is streamed (the captures in parallel, one thread each, when there are at least
// as many as threads), the ranks are put on the first one's clock by their collectives
// (align_ranks), and the summaries merged in input order. One capture is stream_stats().
struct StreamedJob {
  std::vector<StreamedStats> ranks;  // each capture's own, in input order (its summary moved out)
  StatsSummary summary;              // all of them, aligned and merged
  RankAlignment alignment;
};

// What `threads` = 0 stands for: the CPUs this process may run on (its affinity
// mask, which containers and job launchers narrow), at most 16.
unsigned default_scan_threads();

// Why `by` cannot be streamed at all ("" when it can).
std::string stream_refusal(const std::vector<GroupBy>& by);

// The summary of `path`, or nullopt with *why_not set when the capture holds what needs the
// whole timeline (found while reading). Throws gpuhook::CaptureError as load() does.
std::optional<StreamedStats> stream_stats(const std::string& path, const StreamStatsOptions& options,
                                          std::string* why_not);
// nullopt with *why_not ("PATH: why") when one of the captures cannot be streamed.
std::optional<StreamedJob> stream_job_stats(const std::vector<std::string>& paths, const StreamStatsOptions& options,
                                            std::string* why_not);

}  // namespace gantt::analysis
