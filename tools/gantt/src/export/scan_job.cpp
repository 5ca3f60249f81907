// Several captures scanned on one clock (scan_job.h).
#include "scan_job.h"

#include <algorithm>

#include "gantt/analysis/clock_scan.h"

namespace gantt::exporting {

std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not) {
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScanJob> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (paths.empty()) return refuse("no capture");
  // --range names an occurrence in one capture's NVTX ranges; loaded, the job's ranges are
  // numbered across its captures.
  if (filter && paths.size() > 1 && !filter->range.empty()) return refuse("--range on several captures");
  ScanJob job;
  for (const std::string& path : paths) {
    job.scanners.push_back(std::make_unique<analysis::EventScanner>(path, options));
    analysis::EventScanner& scanner = *job.scanners.back();
    if (!scanner.refused().empty()) return refuse(paths.size() > 1 ? path + ": " + scanner.refused() : scanner.refused());
  }
  if (filter && paths.size() == 1 && !job.scanners.front()->select(*filter, why_not)) return std::nullopt;
  std::vector<const analysis::EventScanner*> scanners;
  for (const auto& scanner : job.scanners) scanners.push_back(scanner.get());
  std::optional<analysis::JobClock> clock = analysis::job_clock(paths, scanners, options, why_not);
  if (!clock) return std::nullopt;
  job.offsets = clock->offsets;
  job.first_ns = clock->first_ns;
  // Several captures' window counts from the job's start, as loaded: each capture selects by
  // the job's first and last times as its own clock reads them.
  for (size_t c = 0; filter && paths.size() > 1 && c < paths.size(); ++c) {
    analysis::EventScanner& scanner = *job.scanners[c];
    if (scanner.index_last_ns() == 0)
      return refuse(paths[c] + ": a filter on a capture without a chunk index (its end is known only when it is read)");
    const auto [first, last] = clock->local_span(c);
    if (!scanner.select(*filter, first, last, why_not)) {
      if (why_not) *why_not = paths[c] + ": " + *why_not;
      return std::nullopt;
    }
  }
  return job;
}

}  // namespace gantt::exporting
