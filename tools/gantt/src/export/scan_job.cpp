// Several captures scanned on one clock (scan_job.h).
#include "scan_job.h"

namespace gantt::exporting {

std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not) {
  if (paths.empty()) {
    if (why_not) *why_not = "no capture";
    return std::nullopt;
  }
  std::optional<std::vector<std::unique_ptr<analysis::EventScanner>>> opened = analysis::open_scanners(paths, options, why_not);
  if (!opened) return std::nullopt;
  ScanJob job;
  job.scanners = std::move(*opened);
  std::vector<const analysis::EventScanner*> scanners;
  for (const auto& scanner : job.scanners) scanners.push_back(scanner.get());
  std::optional<analysis::JobClock> clock = analysis::job_clock(paths, scanners, options, why_not, filter);
  if (!clock) return std::nullopt;
  job.offsets = clock->offsets;
  job.first_ns = clock->first_ns;
  // The window counts from the job's start, as loaded (one capture's: its own first and last).
  if (filter && !analysis::select_on_job_clock(*clock, paths, job.scanners, *filter, why_not)) return std::nullopt;
  return job;
}

}  // namespace gantt::exporting
