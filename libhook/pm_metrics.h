// GPUHOOK_METRICS: the short names of <gpuhook/settings.h> mapped to the CUPTI metrics PM
// sampling reads on the device, and one decoded sample turned into a GpuMetricsPayload. Pure
// code, no CUPTI call: the sampler (pm_sampler.cpp) and the unit tests share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "host_record.h"

namespace gpuhook::hook {

// How a short name's value comes from its CUPTI metrics' values.
enum class PmCombine : uint8_t {
  kValue,            // the first metric as it is
  kHundredMinusSum,  // 100 - first - second (occupancy from the two kinds of unused warp slot)
};

struct PmMetricDef {
  const char* short_name;  // settings::kPmMetricNames[i]
  uint32_t metric;         // GpuMetric (capture.proto)
  const char* cupti[2];    // CUPTI metric names; the second nullptr unless combined
  PmCombine combine;
};

// Row i is settings::kPmMetricNames[i].
const PmMetricDef* pm_metric_table();

// What one device's sampler asks CUPTI for: the CUPTI metrics (each once) and how each short
// name is made from them.
struct PmPlan {
  struct Output {
    uint32_t slot;          // GpuMetric - kPmMetricOffset, 1..10
    uint32_t first;         // index in `cupti`
    uint32_t second;        // index in `cupti`, kNone when not combined
    PmCombine combine;
    const char* short_name;
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<std::string> cupti;
  std::vector<Output> outputs;
};

// The plan for a GPUHOOK_METRICS mask (bit i = settings::kPmMetricNames[i]).
PmPlan plan_pm_metrics(uint32_t mask);
// The plan without the CUPTI metrics for which usable[i] is false, and the short names that
// needed them in *dropped ("tensor_active,nvlink_rx").
PmPlan usable_part(const PmPlan& plan, const std::vector<bool>& usable, std::string* dropped);

// One sample's CUPTI values (values[i] for plan.cupti[i]) into `out`: each output a percentage
// in hundredths, clamped to 0..10000; a NaN or infinite value leaves its slot absent. Returns
// the number of slots set.
uint32_t decode_pm_sample(const PmPlan& plan, const double* values, size_t count, uint16_t device,
                          GpuMetricsPayload* out);

// PM sampling stamps samples with "CPU based time stamps" (CUPTI User Guide, PM sampling,
// evaluation), converted on the Activity API's path, so through the timestamp callback the hook
// registers (NVIDIA's answer quoted in pytorch/kineto#1526): the capture's clock. Not in the
// headers, so it is checked: given the newest sample's end and "now" on each candidate clock
// (candidate 0 = the capture's), the offset to add to a sample time to put it on the capture's
// clock: that of the first candidate whose now is at or after the sample and less than
// `horizon_ns` past it. false when none fits.
bool pick_pm_clock(uint64_t sample_end, const uint64_t* now, size_t candidates, uint64_t horizon_ns,
                   int64_t* offset_ns, size_t* chosen);

}  // namespace gpuhook::hook
