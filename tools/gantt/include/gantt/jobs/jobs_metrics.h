// GPU metrics exported by DCGM beside the jobs of the cluster view (`gantt-cli jobs --metrics`):
// per node, the utilisation of its GPUs over time, and its sudden drops while a job ran.
//
//   NodeMetrics m = parse_dcgm_metrics(text, "dcgm.csv", set);   // after parse_jobs
//   NodeUtilisation u = node_utilisation(set, m, from_s, to_s);   // buckets and drops per node
//   MetricsStats st = metrics_stats(set, m, u);                   // `jobs --stats --metrics`
//
// The input is a Prometheus range query of the DCGM_FI_* series saved as CSV, in one of two
// forms told apart by the header line:
//   long: timestamp,Hostname,gpu,metric,value        (one row per sample; `__name__` also names
//         the metric column, and `instance`, `node` or `host` the host)
//   wide: timestamp,Hostname,gpu,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_PROF_SM_ACTIVE,...
// Timestamps are Unix seconds (Prometheus' own, fractions allowed) or 2024-03-01T09:00:00[Z],
// both read as UTC: read the jobs in UTC too (TZ=UTC sacct ...), the record has no zone.
// `dcgmi dmon` output is refused with a message: it has neither timestamps nor host names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/timeline.h"
#include "gantt/jobs/jobs.h"

namespace gantt::jobs {

// What one metrics file may hold: a week of 1,000 nodes x 8 GPUs at one sample a minute is
// 80 million samples per series; past these the rest is left out, said once.
inline constexpr size_t kMaxMetricSamples = 10'000'000;  // 24 bytes each: 240 MB at most
inline constexpr size_t kMaxMetricHosts = kMaxNodes;
inline constexpr uint32_t kMaxMetricGpu = kMaxGpusPerNode;  // a gpu label above this is a bad line
// Buckets over the window, for the strips and the drops (the timeline's drop rule needs
// kDropWindow buckets of history; 300 keep a drop of a few minutes visible over a day).
inline constexpr size_t kMetricBuckets = 300;

// The series that count as utilisation, best first: the first one present in the file is
// drawn, the others are read and left aside. Units per the DCGM field reference
// (https://docs.nvidia.com/datacenter/dcgm/latest/reference/field-identifiers.html) and
// dcgm-exporter's default counters (etc/default-counters.csv: "GPU utilization (in %)"):
//   DCGM_FI_PROF_SM_ACTIVE (1002): ratio 0..1 of cycles an SM had a warp resident, averaged
//     over the SMs: low while a kernel "runs" on few SMs or stalls;
//   DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001): ratio 0..1 of time the graphics/compute engine was busy;
//   DCGM_FI_DEV_GPU_UTIL (203): percent 0..100 of time a kernel was running (NVML's measure).
enum class MetricKind : uint8_t { kSmActive, kGrEngineActive, kGpuUtil, kCount };
const char* metric_name(MetricKind k);

struct MetricSample {
  int64_t t_ms = 0;
  uint32_t node = 0;   // index into JobSet::nodes
  uint16_t gpu = 0;
  uint8_t kind = 0;    // MetricKind
  float share = 0;     // 0..1 (GPU_UTIL divided by 100)
};
static_assert(sizeof(MetricSample) == 24, "kMaxMetricSamples is sized for 24-byte samples");

struct NodeMetrics {
  std::string source;
  std::vector<MetricSample> samples;  // of the nodes in the job record only
  std::vector<ParseProblem> problems;
  size_t samples_read = 0;            // every sample of a DCGM_FI_* utilisation series
  size_t other_series_ignored = 0;    // cells or rows of series that are not utilisation
  size_t unknown_node_samples = 0;    // of hosts not in the job record: left out, said once
  std::vector<std::string> unknown_nodes;  // the first few, for that message
  size_t unknown_node_count = 0;
  bool truncated = false;             // kMaxMetricSamples reached
  MetricKind kind = MetricKind::kGpuUtil;  // the series drawn: the first present, best first
  bool has_kind = false;
};

// Reads the CSV forms above; hosts are matched to the record's nodes by name, by the name
// without a ":port" (Prometheus' instance label), or by the first label of a domain name.
NodeMetrics parse_dcgm_metrics(std::string_view text, std::string source, const JobSet& set,
                               size_t max_samples = kMaxMetricSamples);

struct NodeUtilisation {
  int64_t from_s = 0, bucket_s = 1;
  size_t buckets = 0;
  struct Node {
    std::vector<double> share;  // per bucket, mean of the node's samples; NaN: no sample
    std::vector<analysis::DeviceTimeline::Drop> drops;  // with a job running over all of it
  };
  std::vector<Node> nodes;  // as JobSet::nodes
  int64_t bucket_start(size_t b) const { return from_s + static_cast<int64_t>(b) * bucket_s; }
};

// Buckets of about (to - from) / kMetricBuckets, never finer than the samples' median step
// (a bucket between two samples would be empty and cut the drop rule's history).
NodeUtilisation node_utilisation(const JobSet& set, const NodeMetrics& m, int64_t from_s, int64_t to_s);

struct MetricsStats {
  std::string metric;
  int64_t bucket_s = 0;
  struct Node {
    std::string node;
    double mean_while_jobs = 0;  // of the samples taken while a job ran on the node
    size_t samples_while_jobs = 0, drops = 0;
  };
  std::vector<Node> nodes;  // nodes with samples, in the record's order
  struct DropAt {
    std::string node;
    int64_t from_s = 0, to_s = 0;
    double lowest = 0, median = 0;
  };
  std::vector<DropAt> drops;  // by time, then node
};
MetricsStats metrics_stats(const JobSet& set, const NodeMetrics& m, const NodeUtilisation& u);

}  // namespace gantt::jobs
