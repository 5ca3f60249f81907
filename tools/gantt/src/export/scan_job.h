// Several captures written as they are scanned, on one clock (Exporter::write_scanned): each
// capture's scanner, and the shift that puts its times on the first capture's clock as
// align_model_ranks() shifts a loaded job's (ranks/alignment.h). Internal to the export part.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gantt/analysis/event_scan.h"
#include "gantt/export/export.h"
#include "gantt/model/filter.h"

namespace gantt::exporting {

struct ScanJob {
  std::vector<std::unique_ptr<analysis::EventScanner>> scanners;  // one a capture, in order
  std::vector<int64_t> offsets;  // added to each capture's known times
  uint64_t first_ns = 0;         // the job's first time on that clock: Model::first_ns() loaded
};

// A known time moved by `offset` (0 stays unknown, as apply_rank_alignment() leaves it).
inline uint64_t shifted(uint64_t t, int64_t offset) { return t == 0 ? 0 : t + static_cast<uint64_t>(offset); }

// A capture's shares' spools, in order, put into the job's first share's (`first`: null before
// the first capture, which then gives it), and what its scanner says of it noted in `result`;
// the scanner is then let go. False when the output passed its limit (`result->over`).
template <class Share>
bool end_capture(ScanJob& job, size_t capture, std::unique_ptr<Share>& first, std::vector<std::unique_ptr<Share>>& shares,
                 ScannedExport* result) {
  const analysis::EventScanner& scanner = *job.scanners[capture];
  result->corrupt = result->corrupt || scanner.corrupt();
  for (const std::string& w : scanner.warnings()) result->warnings.push_back(w);
  for (auto& sh : shares) {
    result->events += sh->events;
    sh->spool.flush();
  }
  size_t from = 0;
  if (!first) {
    first = std::move(shares.front());
    from = 1;
  }
  for (size_t i = from; i < shares.size(); ++i) first->spool.absorb(shares[i]->spool);
  job.scanners[capture].reset();
  result->over = first->spool.over();
  return !result->over;
}

// The captures' scanners, their filter selected (one capture only) and their clocks aligned:
// from the headers when every capture has the same boot id (one clock: no shift), else with
// their collectives' ends, read in one more scan of each. Null with *why_not when a capture
// must be loaded. Throws gpuhook::CaptureError as load() does.
std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not);

}  // namespace gantt::exporting
