// The --metrics strips of the jobs chart (jobs_scene.cpp lays the rows out, this draws what
// DCGM sampled under them): internal to libgantt.
#pragma once

#include <cstdint>
#include <functional>

#include "gantt/jobs/jobs.h"
#include "gantt/jobs/jobs_metrics.h"
#include "gantt/render/scene.h"

namespace gantt::jobs {

struct StripFrame {
  int64_t from_s = 0, to_s = 1;  // the chart's window
  float x0 = 0, w = 1;           // where it lies
  float strip_h = 0;
  float x(int64_t t) const {  // as the chart's own frame maps a time
    return x0 + static_cast<float>(static_cast<double>(t - from_s) * w / static_cast<double>(to_s - from_s));
  }
};

// Under node n at strip_top(n): a bar per run of buckets at one level (a pixel of the strip's
// height), the drops while a job ran over it. Counts strips and drops in *st.
void draw_utilisation_strips(Scene& s, const JobSet& set, const NodeMetrics& m, const StripFrame& f,
                             const std::function<float(size_t)>& strip_top, ChartStats* st);

}  // namespace gantt::jobs
