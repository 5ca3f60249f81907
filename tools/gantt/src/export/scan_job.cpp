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
  uint64_t last_ns = 0;  // the job's, on the first capture's clock
  for (size_t c = 0; c < paths.size(); ++c) {
    const analysis::EventScanner& scanner = *job.scanners[c];
    const uint64_t t = shifted(scanner.first_ns(), job.offsets[c]);
    if (t != 0 && (job.first_ns == 0 || t < job.first_ns)) job.first_ns = t;
    last_ns = std::max(last_ns, shifted(std::max(scanner.index_last_ns(), scanner.first_ns()), job.offsets[c]));
  }
  // Several captures' window counts from the job's start, as loaded: each capture selects by
  // the job's first and last times as its own clock reads them.
  for (size_t c = 0; filter && paths.size() > 1 && c < paths.size(); ++c) {
    analysis::EventScanner& scanner = *job.scanners[c];
    if (scanner.index_last_ns() == 0)
      return refuse(paths[c] + ": a filter on a capture without a chunk index (its end is known only when it is read)");
    const auto local = [&](uint64_t t) { return t - static_cast<uint64_t>(job.offsets[c]); };
    if (!scanner.select(*filter, local(job.first_ns), local(last_ns), why_not)) {
      if (why_not) *why_not = paths[c] + ": " + *why_not;
      return std::nullopt;
    }
  }
  return job;
}

}  // namespace gantt::exporting
