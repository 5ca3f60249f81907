// `gantt-cli stats`: numbers on a capture. Per group (kernel, stream, device or range path)
// the count and exec-time distribution; the launch stages; per device busy %, copy/compute
// overlap and the largest idle gaps with what the host was doing; NCCL time and bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

enum class GroupBy { kKernel, kStream, kDevice, kRange, kGraph };
enum class Format { kText, kMarkdown, kJson, kCsv };

struct Distribution {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double mean_ns = 0;
  double median_ns = 0;
  int64_t p95_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
};
// Sorts `samples` in place.
Distribution summarize(std::vector<int64_t>& samples);

struct GroupRow {
  std::string key;   // demangled kernel name, "[memcpy HtoD]", "gpu0 stream 7", "step/forward", ...
  Distribution exec;
  double share = 0;  // of all GPU exec time in the report
  uint64_t bytes = 0;
  bool exact = true;  // false: median and p95 from the sketch, within kSketchRelativeError
};

// --by graph: one row per CUDA graph, over its launches (graphs.h says what a launch is).
struct GraphRow {
  std::string key;             // "graph 3" ("c1 graph 3" with several captures)
  uint16_t capture = 0;
  uint64_t graph_id = 0;
  uint64_t launches = 0;
  double nodes_per_launch = 0; // mean nodes (kernels, copies, memsets) that ran per launch
  uint64_t nodes_min = 0;
  uint64_t nodes_max = 0;
  Distribution span;           // per launch: first node start -> last node end
  uint64_t busy_ns = 0;        // union of the nodes' exec time inside each launch, summed
  double busy_pct = 0;         // busy / total span: what the gaps between nodes cost
  Distribution launch_call;    // per launch: host time in the cudaGraphLaunch call (the launch overhead)
};

struct StageRow {
  std::string stage;  // "launch->queued", "queued->start", "exec"
  uint64_t known = 0; // launches whose timestamps give this stage
  double median_ns = 0;
  int64_t p95_ns = 0;
};

struct IdleGap {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string host;  // "cudaStreamSynchronize (tid 123) 98% of the gap", or "no host API call recorded"
};

struct DeviceRow {
  std::string label;  // "gpu0", or "c1.gpu0" when several captures are loaded
  uint16_t capture = 0;
  uint32_t device = 0;
  uint64_t span_ns = 0;     // first GPU start to last GPU end on this device
  uint64_t busy_ns = 0;     // union of kernels, copies, memsets
  uint64_t compute_ns = 0;  // union of kernels
  uint64_t copy_ns = 0;     // union of copies
  uint64_t overlap_ns = 0;  // copy time during which a kernel also ran
  double busy_pct = 0;
  double overlap_pct = 0;   // overlap / copy time: how much copying was hidden under compute
  uint64_t idle_ns = 0;
  std::vector<IdleGap> gaps;  // largest first
  // What diagnose's copy-overlap quotes (summaries from version 2 on): the copies, their
  // bytes, and those that held the host until they ended (copy_host_wait(): a synchronous
  // call, or pageable memory).
  uint64_t copies = 0, copy_bytes = 0, sync_copies = 0;
  // The union of the device's work without NCCL kernels: what diagnose's imbalance compares
  // between the devices of one process (ranks.h device_busy_intervals).
  uint64_t busy_ns_without_nccl = 0;
};

struct NcclRow {
  std::string op;  // entry point, "ncclAllReduce"
  uint64_t calls = 0;
  uint64_t time_ns = 0;  // kernel exec when the kernel was found, else host enter->exit
  uint64_t bytes = 0;
};

struct StatsOptions {
  GroupBy by = GroupBy::kKernel;
  size_t top = 0;   // 0 = every group
  size_t gaps = 3;  // idle gaps listed per device
};

struct StatsReport {
  GroupBy by = GroupBy::kKernel;
  uint64_t events = 0;       // GPU activities counted (kernels, copies, memsets)
  uint64_t gpu_time_ns = 0;  // sum of their exec times
  uint64_t makespan_ns = 0;  // first GPU start to last GPU end, all devices
  uint64_t first_ns = 0;     // first GPU start: times in the text are shown relative to it
  uint64_t groups_total = 0; // before --top
  std::vector<GroupRow> groups;  // by total time, descending; ties by key (empty with --by graph)
  std::vector<GraphRow> graphs;  // --by graph only: by total span, descending; ties by key
  std::vector<StageRow> stages;
  std::vector<DeviceRow> devices;
  std::vector<NcclRow> nccl;
  // Groups and stages whose quantiles come from a sketch (more than
  // DurationDigest::kExactSamples instances): within kSketchRelativeError. 0 = all exact.
  uint64_t sketched_groups = 0;
  // Merged from summaries of captures that were never aligned together: the makespan spans
  // their clocks as they were (summary.h).
  bool from_unaligned_summaries = false;
};

// One launch of a CUDA graph as --by graph counts it (graphs.h graph_launches()).
struct GraphLaunchFigures {
  uint16_t capture = 0;
  uint64_t graph_id = 0;
  uint64_t nodes = 0;
  uint64_t start_ns = 0, end_ns = 0;  // its nodes' first start and last end; 0: none known
  uint64_t busy_ns = 0;               // the union of its nodes' GPU work
  int64_t call_ns = -1;               // its cudaGraphLaunch call's time; -1: not recorded
};
// The --by graph rows from every launch (`several`: keys name the capture, "c1 graph 3").
std::vector<GraphRow> graph_rows(const std::vector<GraphLaunchFigures>& launches, bool several);

StatsReport compute_stats(const Model& model, const StatsOptions& options = {});
std::string format_stats(const StatsReport& report, Format format);

const char* to_string(GroupBy by);

// "" when every capture of the model has a header; otherwise "FILE: what is wrong". A file
// that ends before its header (empty, or killed at once) holds nothing to analyse, and an
// analysis of nothing must not pass as a clean result in CI.
std::string unusable_capture(const Model& model);

// The key a GPU event is grouped under for --by kernel (and matched by in diff).
std::string kernel_key(const Model& model, uint32_t event);
// True for events that are GPU work (kernels, NCCL kernels, copies, memsets; not syncs, not
// host functions).
bool is_gpu_work(const Model& model, uint32_t event);
// Whether a copy held the host thread that issued it until it ended, and why. The one rule
// for every consumer: stats' and summaries' synchronous copies, diagnose's copy-overlap and
// whatif's async-copies and pin-copies.
enum class CopyHostWait : uint8_t {
  kNone,             // the call returned once the copy was queued
  kSynchronousCall,  // the call itself waited for the copy (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...)
  kPageableMemory,   // an asynchronous call, but CUDA staged pageable host memory before it returned
};
// True for a call that returns once its copy is queued: cudaMemcpyAsync, cuMemcpyHtoDAsync_v2, ...
bool async_copy_call(std::string_view api_name);
// From the record: `async_call` what the launching call's name says (false when no call was
// recorded), `async` CUPTI's flag, `pageable` one end in pageable host memory, `graph_node` a
// copy run by a graph launch.
CopyHostWait copy_host_wait(bool async_call, uint8_t copy_kind, bool async, bool pageable, bool graph_node);
CopyHostWait copy_host_wait(bool async_call, const gpuhook::v1::Memcpy& record);
// A copy of a loaded capture (EventKind::kMemcpy), with the call it was joined with.
CopyHostWait copy_host_wait(const Model& model, uint32_t event);

}  // namespace gantt::analysis
