// Several captures scanned on one clock (scan_job.h).
#include "scan_job.h"

namespace gantt::exporting {

std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not) {
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScanJob> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (paths.empty()) return refuse("no capture");
  ScanJob job;
  for (size_t c = 0; c < paths.size(); ++c) {
    job.scanners.push_back(std::make_unique<analysis::EventScanner>(paths[c], options));
    if (!job.scanners.back()->refused().empty()) return refuse(about_capture(paths, c, job.scanners.back()->refused()));
  }
  std::vector<const analysis::EventScanner*> scanners;
  for (const auto& scanner : job.scanners) scanners.push_back(scanner.get());
  std::optional<analysis::JobClock> clock = analysis::job_clock(paths, scanners, options, why_not);
  if (!clock) return std::nullopt;
  // --range NAME@N on several captures: the N-th among all of theirs, as loaded.
  if (filter && paths.size() > 1 && !filter->range.empty() &&
      !analysis::find_job_range(*clock, paths, scanners, filter->range, options, why_not))
    return std::nullopt;
  job.offsets = clock->offsets;
  job.first_ns = clock->first_ns;
  // The window counts from the job's start, as loaded: each capture selects by the job's first
  // and last times as its own clock reads them (one capture's: its own first and last).
  for (size_t c = 0; filter && c < paths.size(); ++c) {
    const auto [first, last] = clock->local_span(c);
    std::string why;
    if (!job.scanners[c]->select(*filter, first, last, &why, clock->local_range(c)))
      return refuse(about_capture(paths, c, why));
  }
  return job;
}

}  // namespace gantt::exporting
