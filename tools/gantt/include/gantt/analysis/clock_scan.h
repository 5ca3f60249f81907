// What clock alignment needs from one capture (ranks/alignment.h: its header's anchors and its
// collectives' ends), read by a scan (event_scan.h) instead of a load: merge's first pass
// keeps the NCCL kernels and their calls, not the capture.
#pragma once

#include <optional>
#include <string>

#include "gantt/analysis/event_scan.h"
#include "gantt/ranks/alignment.h"

namespace gantt::analysis {

// The capture's RankClockInput, the same as rank_clock_inputs() of the loaded capture gives
// (ends in the order of the collectives' calls). nullopt with *why_not when a scan cannot
// serve the capture (a merged file, records it cannot join): load it instead.
std::optional<RankClockInput> scan_clock_input(const std::string& path, const EventScanOptions& options,
                                               std::string* why_not);

}  // namespace gantt::analysis
