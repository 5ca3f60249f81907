// What the diagnose rules share (diagnose.cpp, the diagnose_*_rules.cpp files): the words,
// and the signatures of the rules that read a model of records (the rules of GPU work read
// DiagnoseWork, diagnose_work.h). Internal to libgantt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/intervals.h"
#include "gantt/analysis/metrics.h"
#include "gantt/analysis/p2p.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

namespace gantt::analysis::detail {

inline constexpr uint32_t kLegacyStream = kLegacyStreamId;  // model.h

std::string pct(double v);
std::string usn(uint64_t ns);

// What stream-serialisation judges of one device, from its timeline or from a summary's stream
// groups: per stream its kernels (NCCL's too) and their exec time, and the union of that time.
struct SerialFigures {
  std::string label;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_stream;  // stream -> (kernels, exec ns)
  uint64_t compute_ns = 0;
  // stream -> (first kernel's start, last kernel's end): which streams ran at the same time.
  // Empty from a summary written before it kept them (SummaryGroup::kernel_span).
  std::map<uint32_t, Interval> span;
};
void rule_serialisation(const std::vector<SerialFigures>& devices, DiagnoseReport& r);
// What copy-overlap judges of one device, from its timeline or from a summary's aggregates.
struct CopyFigures {
  std::string label;
  uint64_t copy_ns = 0, busy_ns = 0, compute_ns = 0;
  uint64_t overlap_ns = 0;  // copy time under compute
  uint64_t copies = 0, bytes = 0;
  uint64_t sync_copies = 0;  // held the host until they ended (copy_host_wait())
};
void rule_copy_overlap(const std::vector<CopyFigures>& devices, DiagnoseReport& r);
// imbalance over `unit`s ("rank", "device"); `straggler` (may be empty) gives the evidence line
// on which rank arrived last at the collectives, asked only when the rule fires.
void rule_imbalance(const std::string& unit, const ImbalanceReport& report,
                    const std::function<std::string()>& straggler, DiagnoseReport& r);
// That evidence line for a straggler report: "" when it names no rank.
std::string straggler_text(const StragglerReport& report);
inline constexpr const char* kImbalanceAlone = "one device in one capture: nothing to compare";

// What dominated a memory peak (diagnose_memory_rules.cpp).
void rule_memory_peak(const Model& m, DiagnoseReport& r);
// `last_graph_ns`: per capture, the last start of work a CUDA graph ran (null: from m's events).
void rule_memory_unused(const Model& m, DiagnoseReport& r, const std::vector<uint64_t>* last_graph_ns = nullptr);
// What the ranks' point-to-point traffic shows (diagnose_comm_rules.cpp).
// `reports`: pipeline_reports() of `m`, or of a scan of its captures (job_scan.h).
void rule_pipeline_bubble(const Model& m, const std::vector<PipelineReport>& reports, DiagnoseReport& r);
void rule_slow_link(const P2pMatch& matched, DiagnoseReport& r);
// Clocks the hardware lowered while kernels ran (diagnose_metric_rules.cpp): of each throttle
// stretch long enough to judge (the samples' clock drops), what its device's kernels show, from
// a load's kernels or a scan's, kernel by kernel. Memory grows with the stretches and the names.
class ThrottleKernels {
 public:
  // The stretches of `samples` (a model of at least the counter samples) that throttled judges.
  explicit ThrottleKernels(const Model& samples);
  bool empty() const { return stretches_.empty(); }
  bool wants(uint16_t capture, uint32_t device) const;
  // A kernel on (capture, device) that ran from start to end (0: unknown), on the samples'
  // clock, `name` as Model::display_name() gives it.
  void add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name);
  // Another share's kernels, added to these (made from the same samples).
  void absorb(const ThrottleKernels& other);

  struct Runs {  // a name's runs on the stretch's device that started inside it, and the others
    uint64_t in_ns = 0, in_n = 0, out_ns = 0, out_n = 0;
  };
  struct Stretch {
    ClockDrop drop;
    std::map<std::string, uint64_t, std::less<>> inside;  // name -> its kernels' time inside the stretch
    uint64_t busy_ns = 0;                                  // their time inside it, summed
    std::map<std::string, Runs, std::less<>> runs;        // every name on the device
  };
  const std::vector<Stretch>& stretches() const { return stretches_; }

 private:
  std::vector<Stretch> stretches_;  // in clock_drops() order
};
// The same from a loaded model's kernels (EventKind::kKernel: NCCL's joined kernels are not).
ThrottleKernels throttle_kernels(const Model& m);
void rule_throttled(const Model& m, const ThrottleKernels& kernels, DiagnoseReport& r);
void rule_throttled(const Model& m, DiagnoseReport& r);
// Kernels running while PM sampling's SM active read low (diagnose_metric_rules.cpp): of each
// device's SM-active samples, each kernel name's time, runs and theoretical occupancy there and
// the samples taken while it ran, from a load's kernels or a scan's. Memory grows with the
// samples and the names (a name's samples held as runs of consecutive ones).
class StallKernels {
 public:
  // The SM-active series of `samples` (a model of at least the counter samples), with the DRAM
  // read and write samples taken at the same times.
  explicit StallKernels(const Model& samples);
  bool empty() const { return series_.empty(); }
  bool wants(uint16_t capture, uint32_t device) const;
  // A kernel on (capture, device) that ran from start to end, on the samples' clock, `name` as
  // Model::display_name() gives it, `occupancy` its theoretical occupancy (NaN: unknown).
  void add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name, float occupancy);
  // Another share's kernels, added to these (a copy of the same, its samples shared).
  void absorb(const StallKernels& other);

  struct Name {
    uint64_t ns = 0, runs = 0;
    double occupancy_sum = 0;
    uint64_t occupancy_n = 0;
    IntervalUnion samples;  // [first, last) indices of the series' samples taken while it ran
  };
  struct Samples {  // one series' samples, shared by the copies (a scan's shares)
    uint16_t capture = 0;
    uint32_t device = 0;
    std::vector<uint64_t> time_ns;  // the SM-active samples' times, ascending
    // Sums of the first i samples: SM active, and DRAM read + write (capped at 100%) and how
    // many had it, in hundredths of a percent (integers, so that any order sums alike).
    std::vector<uint64_t> sm_sum, dram_sum, dram_n;
  };
  struct Series {
    std::shared_ptr<const Samples> samples;
    uint64_t kernel_ns = 0;
    std::map<std::string, Name, std::less<>> names;
  };
  const std::vector<Series>& series() const { return series_; }

 private:
  std::vector<Series> series_;  // in metric_series() order
};
// The same from a loaded model's kernels (EventKind::kKernel: NCCL's joined kernels are not).
StallKernels stall_kernels(const Model& m);
void rule_stalled(const Model& m, const StallKernels& kernels, DiagnoseReport& r);
void rule_stalled(const Model& m, DiagnoseReport& r);

}  // namespace gantt::analysis::detail
