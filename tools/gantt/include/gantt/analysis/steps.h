// The step-time trend of a run: each occurrence of the step range (an NVTX range, by default
// the top-level name that occurs most often) with its duration, per capture, and the flight
// recorder's dumps on the same clock (from a flight summary's notices, or a dump's own
// header). `render --view steps` draws it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

struct StepSeries {
  uint16_t capture = 0;
  std::vector<uint64_t> start_ns, duration_ns;  // by start
  uint64_t median_ns = 0, max_ns = 0;
  std::vector<std::pair<uint64_t, std::string>> dumps;  // time, what
};

struct Steps {
  std::string name;  // the step range; "" when the captures have no closed top-level range
  std::vector<StepSeries> captures;
};

// step_range: the NVTX range that is one step; "" picks it as the header says.
Steps step_series(const Model& model, const std::string& step_range = "");

// The ranges' own (host) durations per name: count, total, median, p95, max. `stats --by
// range` prints it for a capture of ranges without GPU work (a flight summary).
std::string format_range_occurrences(const Model& model, const std::string& format);

}  // namespace gantt::analysis
