// Several captures written as they are scanned, on one clock (Exporter::write_scanned): each
// capture's scanner, and the shift that puts its times on the first capture's clock as
// align_model_ranks() shifts a loaded job's (ranks/alignment.h). Internal to the export part.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/export/export.h"
#include "gantt/model/filter.h"
#include "gantt/model/range_lookup.h"
#include "scan_spool.h"

namespace gantt::exporting {

struct ScanJob {
  std::vector<std::unique_ptr<analysis::EventScanner>> scanners;  // one a capture, in order
  std::vector<int64_t> offsets;  // added to each capture's known times
  uint64_t first_ns = 0;         // the job's first time on that clock: Model::first_ns() loaded
};

using analysis::about_capture;
using analysis::shifted;

// The innermost NVTX range of a scanned operation's launch, as ModelBuilder gives an event its
// range: the range row open on the launching thread at the launch, from the capture's context.
class LaunchRanges {
 public:
  explicit LaunchRanges(const Model& context) {
    for (uint32_t i = 0; i < context.threads.size(); ++i) thread_rows_.emplace(context.threads.thread_id[i], i);
    if (context.ranges.size() != 0) ranges_ = std::make_unique<RangeLookup>(context.ranges, 0);
  }
  // The range row, kNone outside every range or without a launch call.
  uint32_t of(const analysis::ScannedEvent& e) const {
    if (!ranges_ || !e.launched) return kNone;
    const auto th = thread_rows_.find(e.launch_thread_id);
    return th == thread_rows_.end() ? kNone : ranges_->at(th->second, e.launch_ns);
  }

 private:
  std::unordered_map<uint64_t, uint32_t> thread_rows_;  // thread id -> row
  std::unique_ptr<RangeLookup> ranges_;
};

// A capture's shares once its scan has ended, and what its scanner says of it noted in
// `result`; the scanner is then let go. `kept` gathers the shares whose spools go to the output
// (deliver(spools_of(kept), ...)): a job of one capture keeps each share, whose spool deliver()
// copies or appends once; in a job of several, each later share's spool is appended to the
// first's at once (Spool::absorb), so that the job holds one file, not one a share. False when
// the output passed its limit (`result->over`).
template <class Share>
bool end_capture(ScanJob& job, size_t capture, std::vector<std::unique_ptr<Share>>& kept,
                 std::vector<std::unique_ptr<Share>>& shares, ScannedExport* result) {
  const analysis::EventScanner& scanner = *job.scanners[capture];
  result->corrupt = result->corrupt || scanner.corrupt();
  for (const std::string& w : scanner.warnings()) result->warnings.push_back(w);
  for (auto& sh : shares) {
    result->events += sh->events;
    sh->spool.flush();
    if (kept.empty() || job.scanners.size() == 1) kept.push_back(std::move(sh));
    else kept.front()->spool.absorb(sh->spool);
  }
  job.scanners[capture].reset();
  result->over = std::any_of(kept.begin(), kept.end(), [](const auto& sh) { return sh->spool.over(); });
  return !result->over;
}

// The spools of end_capture()'s `kept` shares, in order.
template <class Share>
std::vector<Spool*> spools_of(const std::vector<std::unique_ptr<Share>>& kept) {
  std::vector<Spool*> spools;
  for (const auto& sh : kept) spools.push_back(&sh->spool);
  return spools;
}

// The captures' scanners, their clocks aligned and their filter selected on the job's clock:
// from the headers when every capture has the same boot id (one clock: no shift), else with
// their collectives' ends, read in one more scan of each. Null with *why_not when a capture
// must be loaded. Throws gpuhook::CaptureError as load() does.
std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not);

}  // namespace gantt::exporting
