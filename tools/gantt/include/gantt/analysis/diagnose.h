// `gantt-cli diagnose`: the classic scheduling mistakes, each a rule with a condition
// computed from thresholds, the evidence (which events, which numbers) and the fix.
//
//   stream-serialisation  work on the legacy default stream, or one stream doing nearly
//                         everything while others, running in the same span, sit idle
//   copy-overlap          copies that did not overlap compute (synchronous/pageable copies)
//   launch-bound          many tiny kernels: median exec shorter than the launch interval
//                         (CUDA graph nodes do not count: they share one launch); a stream
//                         repeating one kernel sequence is told to capture it as a graph
//   imbalance             busy time differs between devices or ranks
//   low-occupancy         kernels that matter with low theoretical occupancy, in grids of more
//                         than one wave (a grid that fits the device at once is not judged)
//   sync-stall            the GPU idles while the host sits in a synchronize call
//   fragmentation         a kernel's executions stretched while other kernels shared the GPU
//   priority-inversion    short kernels queued behind another stream's long ones at no higher priority
//   memory-peak           allocations of one NVTX range, freed later, hold most of a memory peak
//   pipeline-bubble       pipeline stages idle a large share of each step waiting for neighbours
//   slow-link             a rank pair's point-to-point bandwidth far under the other pairs'
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gantt/analysis/stats.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

struct StatsSummary;  // summary.h

enum class Severity { kInfo = 0, kWarning = 1, kError = 2 };
const char* to_string(Severity s);

struct Finding {
  std::string rule;       // "sync-stall"
  std::string title;      // one line
  Severity severity = Severity::kWarning;
  std::string condition;  // the thresholds that fired, in words with the numbers
  std::vector<std::string> evidence;  // events and figures, at most a handful
  std::string fix;
};

struct RuleResult {
  std::string rule;
  bool fired = false;
  std::string note;  // why it did not fire, or could not be checked
  bool ran = true;   // false: its input was not there (a summary keeps too little); `note` says what it needs
};

struct DiagnoseReport {
  std::vector<Finding> findings;  // rule order, then device
  std::vector<RuleResult> rules;  // every rule, fired or not
};

DiagnoseReport diagnose(const Model& model);

// Captures scanned, not loaded: every rule, with the rules of GPU work fed the events share
// by share, in memory that grows with devices, streams, threads and kernel names and shapes,
// not with the events (diagnose_work.h says what each keeps and bounds). Several captures are
// the ranks of one job, as diagnose(const Model&) reads them loaded together: imbalance
// compares the ranks, and names the straggler from their collectives put on one clock (kept
// one per collective and rank, up to clock_scan.h kMaxScannedCollectives). The memory rules read a
// capture's allocation records, memory tags and the calls that made them, read again after its
// scan (up to 2^20). Nothing, with *why_not ("PATH: why" among several), when the captures must
// be loaded: a merged file, memory uses (GPUHOOK_MEM_USE), GPU counter samples or NCCL sends and
// receives that the rules judge against every kernel, two captures of one rank (imbalance takes
// the union of a rank's work, which for one capture's devices the scan tracks). --range NAME@N
// on several captures is the N-th among all of theirs, as loaded.
struct DiagnoseScanOptions {
  LoadOptions load;
  unsigned threads = 0;  // 0: default_scan_threads()
  // select_events()' filters, applied by the scans as restricted() applies them to a loaded
  // model: the GPU events left out are not judged, the host's calls and the counter samples
  // are. On several captures the window counts from the job's start, on the job's clock.
  const EventFilter* filter = nullptr;
};
struct ScannedDiagnosis {
  std::string unusable;  // stats.h unusable_capture(): no report then
  DiagnoseReport report;
  std::vector<std::string> warnings;  // what load_captures() would print for the captures
  bool corrupt = false;
  // GPU work handed on after later work had been judged (the NCCL kernels a scan joins to their
  // calls at its end, or work held back past the window that puts a device's in start order):
  // the idle gaps it ran in are filled, its overlap with other kernels is not counted.
  uint64_t late_events = 0;
  // False when the shares' busy time overlapped (BusyTracker::exact): busy figures close to,
  // not equal to, the loaded ones.
  bool busy_exact = true;
  // With a filter: the GPU events of the captures, and those it selected.
  uint64_t gpu_events = 0, selected_events = 0;
};
// Throws gpuhook::CaptureError as load() does, std::invalid_argument for a filter
// select_events() would refuse.
std::optional<ScannedDiagnosis> diagnose_scan(const std::vector<std::string>& paths, const DiagnoseScanOptions& options,
                                              std::string* why_not);
// From a stats summary (summary.h; one capture's, or several merged): stream-serialisation
// (from the stream groups), copy-overlap and imbalance run on its aggregates and find what they find on the captures (imbalance without
// naming the straggler: that needs each collective's arrivals); every other rule is listed
// with ran = false and what it needs. A version 1 summary runs none.
DiagnoseReport diagnose(const StatsSummary& summary);
std::string format_diagnose(const DiagnoseReport& report, Format format);

// The names of all rules, in report order.
const std::vector<std::string>& rule_names();

}  // namespace gantt::analysis
