// Several captures scanned on one clock (scan_job.h).
#include "scan_job.h"

#include <algorithm>

#include "gantt/analysis/clock_scan.h"
#include "gantt/ranks/alignment.h"

namespace gantt::exporting {

std::optional<ScanJob> open_scan_job(const std::vector<std::string>& paths, const analysis::EventScanOptions& options,
                                     const EventFilter* filter, std::string* why_not) {
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScanJob> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (paths.empty()) return refuse("no capture");
  // Its window counts from the job's start, which is known only once every clock is.
  if (filter && paths.size() > 1) return refuse("a filter on several captures (put on one clock when loaded)");
  ScanJob job;
  for (const std::string& path : paths) {
    job.scanners.push_back(std::make_unique<analysis::EventScanner>(path, options));
    analysis::EventScanner& scanner = *job.scanners.back();
    if (!scanner.refused().empty()) return refuse(paths.size() > 1 ? path + ": " + scanner.refused() : scanner.refused());
    if (filter && !scanner.select(*filter, why_not)) return std::nullopt;
  }
  job.offsets.assign(paths.size(), 0);
  if (paths.size() > 1) {
    std::vector<RankClockInput> clocks;
    for (const auto& scanner : job.scanners) clocks.push_back(rank_clock_inputs(scanner->context()).front());
    const bool one_clock = std::all_of(clocks.begin(), clocks.end(), [&](const RankClockInput& c) {
      return !c.boot_id.empty() && c.boot_id == clocks.front().boot_id;
    });
    for (size_t c = 0; c < paths.size() && !one_clock; ++c) {
      std::string why;
      std::optional<RankClockInput> scanned = analysis::scan_clock_input(paths[c], options, &why);
      if (!scanned) return refuse(paths[c] + ": " + why);
      clocks[c] = std::move(*scanned);
    }
    const RankAlignment alignment = align_ranks(clocks);
    for (size_t c = 0; c < paths.size() && c < alignment.captures.size(); ++c) job.offsets[c] = alignment.captures[c].offset_ns;
  }
  for (size_t c = 0; c < paths.size(); ++c) {
    const uint64_t t = shifted(job.scanners[c]->first_ns(), job.offsets[c]);
    if (t != 0 && (job.first_ns == 0 || t < job.first_ns)) job.first_ns = t;
  }
  return job;
}

}  // namespace gantt::exporting
