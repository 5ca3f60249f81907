// diagnose from a stats summary (.gsum, summary.h): the rules whose figures a summary keeps
// (stream-serialisation, copy-overlap, imbalance) run on them with the thresholds and words they
// use on a capture (diagnose.cpp), so a job's summaries give the findings its captures give;
// every other rule is listed as not run, with what it reads that a summary does not keep.
#include <algorithm>
#include <map>
#include <tuple>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/summary.h"
#include "gantt/analysis/table.h"
#include "diagnose_rules.h"

namespace gantt::analysis {
namespace {

using namespace detail;

// What each rule reads that a summary does not keep (a summary is per-group and per-device
// totals: nothing per launch, per host call, per allocation or per sample).
const std::map<std::string, std::string>& not_in_summaries() {
  static const std::map<std::string, std::string> why = {
      {"launch-bound", "needs the interval between each host thread's launches"},
      {"low-occupancy", "needs each kernel's theoretical occupancy"},
      {"sync-stall", "needs every idle gap beside the host's synchronize calls (a summary keeps the largest few)"},
      {"fragmentation", "needs each launch's exec time beside the kernels that ran with it"},
      {"priority-inversion", "needs each kernel's queued->start wait with its stream and priority"},
      {"memory-peak", "needs the allocations and frees"},
      {"memory-idle", "needs the allocations and the calls that used them"},
      {"pipeline-bubble", "needs the ranks' point-to-point calls"},
      {"slow-link", "needs the ranks' point-to-point calls"},
      {"throttled", "needs the GPU metrics samples"},
      {"stalled", "needs the PM sampling records"},
  };
  return why;
}

// Per device, its stream groups' kernels (the summary's --by stream rows).
void rule_serialisation(const StatsSummary& s, const std::vector<DeviceRow>& devices, DiagnoseReport& r) {
  std::map<std::pair<uint32_t, uint32_t>, SerialFigures> by_device;
  for (const DeviceRow& d : devices)
    by_device[{d.capture, d.device}] = {device_label(s.captures.size(), d.capture, d.device), {}, d.compute_ns, {}};
  for (const SummaryGroup& g : s.groups[static_cast<size_t>(GroupBy::kStream)]) {
    const auto it = by_device.find({g.capture, g.device});
    if (it == by_device.end() || g.kernels == 0) continue;
    auto& work = it->second.per_stream[g.stream];
    work.first += g.kernels;
    work.second += g.kernel_ns;
    if (g.kernel_span.last_ns != 0) it->second.span[g.stream] = {g.kernel_span.first_ns, g.kernel_span.last_ns};
  }
  std::vector<SerialFigures> figures;
  for (auto& [key, f] : by_device) figures.push_back(std::move(f));
  detail::rule_serialisation(figures, r);
}

void rule_copy_overlap(const StatsSummary& s, const std::vector<DeviceRow>& devices, DiagnoseReport& r) {
  std::vector<CopyFigures> figures;
  for (const DeviceRow& d : devices)
    figures.push_back({device_label(s.captures.size(), d.capture, d.device), d.copy_ns, d.busy_ns, d.compute_ns,
                       d.overlap_ns, d.copies, d.copy_bytes, d.sync_copies});
  detail::rule_copy_overlap(figures, r);
}

// The captures' ranks, as load() numbers them (gantt/ranks/ranks.h global_rank): the header's rank,
// else the capture's place among all of them. Captures of one rank add up.
void rule_imbalance(const StatsSummary& s, const std::vector<DeviceRow>& devices, DiagnoseReport& r) {
  std::map<int32_t, uint64_t> busy;
  std::string unit = "rank";
  if (s.captures.size() > 1) {
    for (size_t c = 0; c < s.captures.size(); ++c)
      busy[s.captures[c].rank >= 0 ? s.captures[c].rank : static_cast<int32_t>(c)] += s.captures[c].busy_ns_without_nccl;
  } else if (devices.size() > 1) {
    unit = "device";
    for (const DeviceRow& d : devices) busy[static_cast<int32_t>(d.device)] += d.busy_ns_without_nccl;
  } else {
    r.rules.push_back({"imbalance", false, kImbalanceAlone});
    return;
  }
  std::vector<RankBusy> ranks;
  for (const auto& [rank, ns] : busy) ranks.push_back({rank, ns, 0});
  detail::rule_imbalance(unit, busy_imbalance(std::move(ranks)), nullptr, r);
}

}  // namespace

DiagnoseReport diagnose(const StatsSummary& s) {
  DiagnoseReport r;
  std::vector<DeviceRow> devices = s.devices;
  std::stable_sort(devices.begin(), devices.end(), [](const DeviceRow& a, const DeviceRow& b) {
    return std::tie(a.capture, a.device) < std::tie(b.capture, b.device);
  });
  for (const std::string& rule : rule_names()) {
    const bool from_summary = rule == "stream-serialisation" || rule == "copy-overlap" || rule == "imbalance";
    if (from_summary && !s.has_diagnose) {
      r.rules.push_back({rule, false,
                         "needs what summaries keep from version 2 on, and this one is older: make it again with "
                         "gantt-cli stats CAPTURE --summary -o FILE.gsum, or run diagnose on the capture",
                         false});
    } else if (rule == "stream-serialisation" && !s.grouped[static_cast<size_t>(GroupBy::kStream)]) {
      r.rules.push_back({rule, false,
                         "needs the summary's stream groups, and this one has none: make it with gantt-cli stats "
                         "CAPTURE --summary -o FILE.gsum, or run diagnose on the capture",
                         false});
    } else if (rule == "stream-serialisation") {
      rule_serialisation(s, devices, r);
    } else if (rule == "copy-overlap") {
      rule_copy_overlap(s, devices, r);
    } else if (rule == "imbalance") {
      rule_imbalance(s, devices, r);
    } else {
      const auto why = not_in_summaries().find(rule);
      r.rules.push_back({rule, false,
                         (why != not_in_summaries().end() ? why->second : std::string("needs the timeline")) +
                             "; run diagnose on the capture",
                         false});
    }
  }
  return r;
}

}  // namespace gantt::analysis
