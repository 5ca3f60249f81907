// What clock alignment needs from one capture (ranks/alignment.h: its header's anchors and its
// collectives' ends), read by a scan (event_scan.h) instead of a load: merge's first pass
// keeps the NCCL kernels and their calls, not the capture.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gantt/analysis/event_scan.h"
#include "gantt/ranks/alignment.h"
#include "gantt/ranks/collectives.h"

namespace gantt::analysis {

// The collective calls a scan keeps of a job, at most (80 bytes each): past them, it is loaded.
inline constexpr size_t kMaxScannedCollectives = size_t{1} << 20;

// The collective call a scanned NCCL kernel ran (EventScanOptions::join_nccl) as
// collective_calls() has it from a loaded model, on the capture's own clock; false for any
// other event.
bool collective_call(const ScannedEvent& e, uint16_t capture, int32_t global_rank, RankCollectiveCall* out);
// True when the join gave a scanned NCCL kernel several collective calls (a group that launched
// fewer kernels than it had collectives): a load's collective_calls() lists each of them, a
// scan's collective_call() the kernel's first.
inline bool several_collectives(const ScannedEvent& e) { return e.nccl != nullptr && e.nccl->collective_calls > 1; }
// False when a capture ran one collective more than once (a process that drives it on several
// devices): match_collectives() keeps the first of them in the loaded model's order of the
// calls, which a scan does not know.
bool one_call_each(const std::vector<RankCollectiveCall>& calls);

// Capture `c`'s RankClockInput from its context and the collective calls a scan of it kept
// (collective_call()): what scan_clock_input() reads, without a scan of its own.
RankClockInput clock_input(const EventScanner& scanner, std::vector<RankCollectiveCall>::const_iterator from,
                           std::vector<RankCollectiveCall>::const_iterator to);

// A scan's collective ends in one order (the shares end in their own; alignment keys the ends by
// collective, so they are sorted only to make the input the same from run to run).
void order_ends(std::vector<CollectiveEnd>& ends);

// The capture's RankClockInput, the same as rank_clock_inputs() of the loaded capture gives
// (ends in the order of the collectives' calls). nullopt with *why_not when a scan cannot
// serve the capture (a merged file, records it cannot join): load it instead.
std::optional<RankClockInput> scan_clock_input(const std::string& path, const EventScanOptions& options,
                                               std::string* why_not);

// `why` said of capture `c` of a job: named by its path where the job has several.
inline std::string about_capture(const std::vector<std::string>& paths, size_t c, const std::string& why) {
  return paths.size() > 1 ? paths[c] + ": " + why : why;
}

// A known time moved by `offset` (0 stays unknown, as apply_rank_alignment() leaves it).
inline uint64_t shifted(uint64_t t, int64_t offset) { return t == 0 ? 0 : t + static_cast<uint64_t>(offset); }

// Several captures on one clock, as a load puts them (align_model_ranks): their headers say
// whether they share a boot (one clock, no shift); where they do not, one more scan of each
// reads its collectives' ends and align_ranks() shifts each onto the first's. With the job's
// first and last times on that clock, which a filter on several captures counts from.
struct JobClock {
  std::vector<int64_t> offsets;  // added to each capture's known times
  RankAlignment alignment;       // what gave them (nothing for one capture)
  uint64_t first_ns = 0;         // the job's first time: Model::first_ns() loaded
  uint64_t last_ns = 0;          // the job's last time, as far as the captures' indexes know it
  // With a --range on several captures (job_clock()'s filter): its window on that clock (its
  // start, and the end of the work launched in it).
  std::optional<std::pair<uint64_t, uint64_t>> range;
  // The job's first and last times as capture c's own clock reads them.
  std::pair<uint64_t, uint64_t> local_span(size_t c) const { return {local(c, first_ns), local(c, last_ns)}; }
  // The --range's window as capture c's own clock reads it.
  std::optional<std::pair<uint64_t, uint64_t>> local_range(size_t c) const {
    if (!range) return std::nullopt;
    return std::make_pair(local(c, range->first), local(c, range->second));
  }
  uint64_t local(size_t c, uint64_t t) const { return t - static_cast<uint64_t>(offsets[c]); }
};
// Each capture's scanner, its context read. nullopt with *why_not ("PATH: why" among several)
// when a scan cannot serve one. Throws gpuhook::CaptureError as load() does.
std::optional<std::vector<std::unique_ptr<EventScanner>>> open_scanners(const std::vector<std::string>& paths,
                                                                        const EventScanOptions& options,
                                                                        std::string* why_not);

// `scanners`: the captures at `paths`, their contexts read. nullopt with *why_not when a
// capture's clock needs a scan that cannot serve it (load the job instead). With a `filter`
// whose --range NAME@N is asked of several captures, JobClock::range is its window: the
// occurrence among every capture's NVTX ranges on the job's clock, numbered as a load of the
// captures numbers them (select_events()), held open until the GPU work any capture launched
// in it ends (one scan of each capture's events); a bad or missing range throws
// std::invalid_argument as select_events() does.
std::optional<JobClock> job_clock(const std::vector<std::string>& paths, const std::vector<const EventScanner*>& scanners,
                                  const EventScanOptions& options, std::string* why_not,
                                  const EventFilter* filter = nullptr);

// Each scanner selects `filter` on the job's clock: the job's span and --range as its own clock
// reads them (EventScanner::select). False with *why_not ("PATH: why" among several).
bool select_on_job_clock(const JobClock& clock, const std::vector<std::string>& paths,
                         const std::vector<std::unique_ptr<EventScanner>>& scanners, const EventFilter& filter,
                         std::string* why_not);

}  // namespace gantt::analysis
