// The GPU's own counters (MetricSample records, NVML via the hook's sampler) beside the trace:
// the series, their means while each kernel ran (stats --metrics), and the stretches where the
// SM clock dropped for a reason other than idleness (diagnose throttled, render annotations).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpuhook/v1/capture.pb.h>

#include "gantt/analysis/stats.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

// GpuMetric numbers 1..20, indexed by number: NVML's 1..10, CUPTI PM sampling's 11..20.
inline constexpr int kMetricCount = 21;
inline constexpr int kFirstPmMetric = 11;

// How a counter is shown: a short key (CSV, Chrome counter names), a column label, and the
// factor from the recorded unit to the shown one.
struct MetricInfo {
  const char* key;     // "gpu_util_pct"
  const char* label;   // "GPU util %"
  double scale;        // recorded value x scale = shown value
};
// nullptr for GPU_METRIC_UNKNOWN and numbers this build does not know.
const MetricInfo* metric_info(int metric);

// One counter of one device of one capture: rows [begin, end) of model.metrics, by time.
struct MetricSeries {
  uint16_t capture = 0;
  uint32_t device = 0;
  int metric = 0;
  size_t begin = 0, end = 0;
};
std::vector<MetricSeries> metric_series(const Model& m);

// The throttle reasons of nvmlClocksEventReasons that lower the clocks for the hardware's
// sake: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake
// 0x80. GPU idle (0x1), application clocks (0x2), sync boost (0x10) and display clocks (0x100)
// are choices or rest, not throttling.
inline constexpr uint64_t kThrottleReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// "power cap", "HW slowdown", "thermal (SW)", ... joined by " + ".
std::string throttle_reason_text(uint64_t mask);

// A stretch of samples with a throttle reason set: from the first such sample to the first
// sample after it without one (or the last sample). from_mhz: the SM clock of the last
// unthrottled busy sample before it (the capture's highest SM clock when none); to_mhz the
// lowest SM clock inside it.
struct ClockDrop {
  uint16_t capture = 0;
  uint32_t device = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t from_mhz = 0, to_mhz = 0;
  uint64_t reasons = 0;  // every throttle bit seen inside
  uint32_t samples = 0;
};
std::vector<ClockDrop> clock_drops(const Model& m);
// "power cap: SM clock 1.98 -> 1.41 GHz during 120 ms"
std::string clock_drop_text(const ClockDrop& d);

// stats --metrics: per device, the counters' means over the samples read while a kernel of
// each name ran, while any kernel ran, while none did, and over all of them.
struct MetricStatsRow {
  uint16_t capture = 0;
  uint32_t device = 0;
  std::string group;  // a kernel's display name, or "(all)", "(any kernel)", "(no kernel)"
  uint64_t samples[kMetricCount] = {};
  double sum[kMetricCount] = {};
  uint64_t throttled = 0;  // reason samples with a kThrottleReasons bit
  double mean(int metric) const { return samples[metric] ? sum[metric] / static_cast<double>(samples[metric]) : 0; }
};
// The kernels that ran at each counter sample of a model: per (capture, device), the times its
// samples were read (a read gives every counter one time), and per time the display names of the
// kernels running then (start <= t < end). NCCL's kernels are not counted, as a load names them.
// What a sample shows while a kernel ran, from a load (its events) or a scan (add() per kernel).
class KernelsAtSamples {
 public:
  explicit KernelsAtSamples(const Model& samples);
  // A kernel on (capture, device) from start to end, on the model's clock: each sample time it
  // covers gets its name once. Safe to call from several threads.
  void add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name);
  // True when a kernel covers a sample time of (capture, device) in [start, end): add() would mark one.
  bool covers_sample(uint16_t capture, uint32_t device, uint64_t start, uint64_t end) const;
  // The names running at sample time t of (capture, device), each once; empty: none ran.
  std::vector<std::string_view> at(uint16_t capture, uint32_t device, uint64_t t) const;

 private:
  struct Series {
    std::vector<uint64_t> times;                // sorted, distinct
    std::vector<std::vector<uint32_t>> names;   // per time: ids into names_
  };
  const Series* find(uint16_t capture, uint32_t device) const;
  std::map<std::pair<uint16_t, uint32_t>, Series> series_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();  // add(): movable, unlike a mutex
};
// From a loaded model: its kernels (EventKind::kKernel).
KernelsAtSamples kernels_at_samples(const Model& m);
std::vector<MetricStatsRow> metric_stats(const Model& m);
// The same from the samples of `m` and the kernels `at` says ran at them.
std::vector<MetricStatsRow> metric_stats(const Model& m, const KernelsAtSamples& at);
// No rows: text and md say why there may be none; csv is the header row, json an empty array.
std::string format_metric_stats(const Model& m, const std::vector<MetricStatsRow>& rows, Format format);

}  // namespace gantt::analysis
