// What `stats` needs of a capture, kept small enough to move and merge: the map step of a job
// too large to load in one place. Each rank's capture is summarised where it was written
// (`gantt-cli stats CAPTURE --summary -o rank.gsum`), only the summaries travel, and `stats`
// merges them into one report. compute_stats() goes through the same summary, so a report
// from summaries and one from captures read the same on the same data (exact quantiles below
// DurationDigest::kExactSamples instances per group, within kSketchRelativeError above).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/diff.h"
#include "gantt/analysis/sketch.h"
#include "gantt/analysis/stats.h"
#include "gantt/model/model.h"

namespace gpuhook::v1 {
class StatsSummary;
}

namespace gantt::analysis {

// A stream's kernels from the first start to the last end (0, 0: not known, as in a summary
// written before it was kept).
struct KernelSpan {
  uint64_t first_ns = 0, last_ns = 0;
  void add(uint64_t start_ns, uint64_t end_ns) {
    if (start_ns == 0 || end_ns < start_ns) return;
    first_ns = first_ns == 0 ? start_ns : std::min(first_ns, start_ns);
    last_ns = std::max(last_ns, end_ns);
  }
  void add(const KernelSpan& o) { add(o.first_ns, o.last_ns); }
};

struct SummaryGroup {
  std::string key;  // kernel and range groups
  uint32_t capture = 0, device = 0, stream = 0;  // stream and device groups
  DurationDigest exec;
  uint64_t bytes = 0;
  // Stream groups: the kernels among exec's instances (NCCL's too) and their time, which
  // diagnose's stream-serialisation weighs (summaries from version 2 on).
  uint64_t kernels = 0, kernel_ns = 0;
  KernelSpan kernel_span;  // stream groups (summaries from version 2 on may lack it)
};

struct SummaryCapture {
  std::string path, host;
  uint32_t pid = 0;
  int32_t rank = -1;
  // The union of the capture's GPU work without NCCL kernels, its devices together: what
  // diagnose's imbalance compares between ranks (ranks.h rank_busy_intervals).
  uint64_t busy_ns_without_nccl = 0;
};

// diff's per-kernel match (diff.h MatchSamples) as digests.
struct SummaryMatch {
  std::string name, range;
  uint32_t graph_node = 0;
  DurationDigest exec, queue;
};

// The groupings a summary keeps: GroupBy's first four (kernel, stream, device, range).
inline constexpr size_t kSummaryGroupings = 4;

struct StatsSummary {
  std::vector<SummaryCapture> captures;
  uint64_t events = 0;
  uint64_t gpu_time_ns = 0;
  uint64_t first_ns = 0, last_ns = 0;
  // Indexed by GroupBy (kernel, stream, device, range); graph rows need the timeline and are
  // not summarised.
  std::array<std::vector<SummaryGroup>, kSummaryGroupings> groups;
  std::array<bool, kSummaryGroupings> grouped{};  // which groupings were summarised
  DurationDigest launch_to_queued, queued_to_start, exec;
  std::vector<DeviceRow> devices;  // label empty: named by the report
  std::vector<NcclRow> nccl;
  size_t gaps_kept = 0;
  bool merged = false;  // from summaries whose captures were not aligned together
  // What diff needs (add_diff_samples): per match key, and top-level range durations by name.
  bool has_matches = false;
  std::map<std::string, SummaryMatch> matches;
  std::map<std::string, DurationDigest> top_ranges;
  // The aggregates diagnose reads (SummaryCapture::busy_ns_without_nccl, DeviceRow::copies
  // ...): false for a version 1 file, and for a merge with one.
  bool has_diagnose = true;
};

// What the host did during an idle gap [from, to): the API call that overlapped it the most
// (`overlap_ns`; 0 = none recorded), "cudaStreamSynchronize (tid 12) 98% of the gap".
std::string host_activity_text(std::string_view call, uint64_t thread_id, uint64_t overlap_ns, uint64_t from, uint64_t to);

// Adds `from`'s rows to `into`'s, one row per key text (kernel, range) or per place (stream,
// device: capture, device, stream); `placed` rows' captures move by `capture_shift`. New keys
// go at the end, in `from`'s order.
void merge_groups(std::vector<SummaryGroup>& into, const std::vector<SummaryGroup>& from, uint32_t capture_shift,
                  bool placed);

// Every grouping in `by` (GroupBy::kGraph is ignored), and up to `gaps` idle gaps per device.
StatsSummary summarize(const Model& model, const std::vector<GroupBy>& by, size_t gaps);

// summarize()'s NCCL rows alone, one per entry point in name order: what the streamed stats
// need of their small model of NCCL records (the rest of a summary sorts every event).
std::vector<NcclRow> nccl_rows(const Model& model);
// One NCCL call counted in its row of `rows` (by entry point, as nccl_rows() keeps them): named
// "nccl op N" without a name; its time the kernel's exec where the join found the kernel (0,0:
// none), else the call's host enter->exit. The streamed stats count the calls they settle so.
void count_nccl_call(std::map<std::string, NcclRow>& rows, std::string_view name, uint8_t op, uint64_t bytes,
                     uint64_t kernel_start_ns, uint64_t kernel_end_ns, uint64_t call_start_ns, uint64_t call_end_ns);

// Adds what diff compares (matches by range path and name, top-level range durations), so
// that `gantt-cli diff` can take the summary as one side.
void add_diff_samples(StatsSummary& summary, const Model& model);

// diff's input from a summary: samples from the exact values, or from the sketch's buckets
// (each bucket's value as many times as it holds, within kSketchRelativeError). Throws
// std::invalid_argument when the summary has no matches.
DiffInput diff_input(const StatsSummary& summary, bool match_range);

// Appends `other`'s captures after this one's (capture indices shift) and adds its figures.
// Associative, and the report of a merge does not depend on the order of the summaries.
void merge(StatsSummary& into, const StatsSummary& other);

// The report of a summary: the same tables compute_stats() gives. Throws std::invalid_argument
// when the summary lacks the grouping asked for.
StatsReport report(const StatsSummary& summary, const StatsOptions& options);

// To and from the .gsum message (gpuhook/summary_file.h reads and writes the file). from_proto
// checks what a hostile file could say (counts that disagree, indices out of range) and throws
// std::invalid_argument with what was wrong.
void to_proto(const StatsSummary& summary, gpuhook::v1::StatsSummary* out);
StatsSummary from_proto(const gpuhook::v1::StatsSummary& in);

}  // namespace gantt::analysis
