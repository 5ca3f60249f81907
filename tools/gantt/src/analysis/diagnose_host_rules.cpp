// The diagnose rules the host's behaviour fires: launch-overhead bound streams (the CPU cannot
// launch fast enough) and host synchronisation stalls. Thresholds named next to their rule.
#include <algorithm>
#include <cmath>
#include <map>

#include "gantt/noise/noise.h"
#include "gantt/analysis/table.h"
#include "gantt/model/graphs.h"
#include "gantt/ranks/ranks.h"
#include "gantt/model/text.h"
#include "diagnose_work.h"

namespace gantt::analysis::detail {

// ---------------------------------------------------------------- 3. launch-overhead bound
constexpr uint64_t kLaunchMinKernels = 32;
constexpr double kLaunchMaxBusy = 60.0;  // busy %: a launch-bound GPU waits for the host

// A launch-bound stream that issues the same kernel sequence over and over is what CUDA graphs
// are for: captured once, replayed with one launch whose nodes run back to back.
constexpr size_t kRepeatMaxPeriod = 256;      // kernels in one repeated sequence, at most
                                              // (kRepeatWindow launches examined per stream)
constexpr uint64_t kRepeatMinTimes = 3;
constexpr double kRepeatMatch = 0.9;          // share of positions i with name[i] == name[i + period]

// The shortest period with which the name sequence repeats itself, or 0.
static size_t repeat_period(const std::vector<uint32_t>& names) {
  const size_t n = std::min(names.size(), kRepeatWindow);
  for (size_t p = 1; p <= kRepeatMaxPeriod && p * kRepeatMinTimes <= n; ++p) {
    size_t same = 0;
    for (size_t i = 0; i + p < n; ++i) same += names[i] == names[i + p];
    if (static_cast<double>(same) >= kRepeatMatch * static_cast<double>(n - p)) return p;
  }
  return 0;
}

void rule_launch_bound(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r) {
  RuleResult res{"launch-bound", false, ""};
  uint64_t graph_nodes = 0;
  for (const auto& dev : w.devices()) {
    const DeviceWork& d = *dev;
    // A graph's nodes share one cudaGraphLaunch: they are not launched one by one, and the
    // fix this rule proposes is already in place.
    graph_nodes += d.graph_nodes;
    if (d.compute_exec.count() < kLaunchMinKernels) continue;
    if (d.launch_intervals.count() < kMinSamples) continue;
    const double med_exec = d.compute_exec.median_ns(), med_gap = d.launch_intervals.median_ns();
    const uint64_t span_ns = d.last_ns - d.first_ns;
    const double busy = span_ns ? 100.0 * static_cast<double>(d.totals.busy_ns) / static_cast<double>(span_ns) : 100;
    if (med_exec >= med_gap || busy >= kLaunchMaxBusy) continue;
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = device_label(w, d) + ": launch-overhead bound: kernels finish faster than the host can launch them";
    f.condition = "at least " + std::to_string(kLaunchMinKernels) + " kernels, median exec < median interval between "
                  "launches, device busy < " + pct(kLaunchMaxBusy);
    f.evidence.push_back(std::to_string(d.compute_exec.count()) + " kernels, median exec " + us(med_exec) +
                         " us, median launch interval " + us(med_gap) + " us");
    f.evidence.push_back("device busy " + pct(busy) + " of " + usn(span_ns));
    // The stream launching the most kernels one by one, and the sequence it repeats.
    const auto busiest = std::max_element(d.streams.begin(), d.streams.end(), [](const auto& a, const auto& b) {
      return a.second.launches < b.second.launches;
    });
    const StreamWork& launched = busiest->second;
    const size_t period = repeat_period(launched.names);
    const uint64_t times = period ? std::min<uint64_t>(launched.launches, kRepeatWindow) / period : 0;
    if (period > 1) {
      std::string seq;
      for (size_t i = 0; i < period && i < 4; ++i) {
        seq += i ? ", " : "";
        seq += ellipsize(demangle(names.raw(launched.names[i])), 40);
      }
      if (period > 4) seq += ", ...";
      f.evidence.push_back("stream " + std::to_string(busiest->first) + " launches the same sequence of " +
                           std::to_string(period) + " kernels (" + seq + ") " + std::to_string(times) +
                           (launched.launches > kRepeatWindow ? "+" : "") + " times, one launch per kernel");
      f.fix = "capture the repeated sequence on stream " + std::to_string(busiest->first) +
              " once as a CUDA graph (cudaStreamBeginCapture ... cudaStreamEndCapture, cudaGraphInstantiate) and "
              "replay it with one cudaGraphLaunch per iteration: its nodes run back to back without a launch each; "
              "fusing the kernels also cuts launches";
    } else if (period == 1) {
      // Runs of one kernel after another: name the one launched most, not merely the first.
      const auto most = std::max_element(launched.by_name.begin(), launched.by_name.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      f.evidence.push_back("stream " + std::to_string(busiest->first) + " launches " +
                           ellipsize(demangle(names.raw(most->first)), 60) + " over and over (" +
                           std::to_string(most->second) + " of its " + std::to_string(launched.launches) +
                           " launches)");
      f.fix = "do more work per launch (fuse kernels, a grid-stride loop over all elements), or capture the sequence "
              "in a CUDA graph and launch it once";
    } else {
      f.fix = "do more work per launch (fuse kernels, a grid-stride loop over all elements); a CUDA graph helps "
              "once the sequence of launches repeats";
    }
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) {
    res.note = "no device with many kernels shorter than their launch interval";
    if (graph_nodes)
      res.note += " (" + std::to_string(graph_nodes) + " kernels ran as CUDA graph nodes, launched with their graph: "
                  "not counted)";
  }
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 6. host sync stalls
constexpr uint64_t kStallMinGaps = 3;
constexpr double kStallShare = 0.05;  // of the device span spent idle after host syncs

void rule_sync_stall(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r) {
  RuleResult res{"sync-stall", false, ""};
  // A gap is a sync stall when a synchronize call of the same capture overlaps it: the host
  // stopped to wait for the GPU, so nothing new was queued, and the GPU ran dry until the
  // host returned and launched again. Calls sorted by start; a gap looks back from the first
  // call that starts after it (a thread is in one call at a time, so a few steps suffice).
  const std::vector<SyncCall>& syncs = w.syncs();
  constexpr size_t kLookBack = 64;
  std::string capped;
  for (const auto& dev : w.devices()) {
    const DeviceWork& d = *dev;
    const uint64_t span_ns = d.last_ns - d.first_ns;
    if (d.gaps_capped && capped.empty() && !syncs.empty()) capped = device_label(w, d);
    uint64_t gaps = 0, stalled = 0;
    std::map<std::string, uint64_t> calls;
    for (const auto& [g0, g1] : d.gaps) {
      auto it = std::lower_bound(syncs.begin(), syncs.end(), g1, [](const SyncCall& a, uint64_t t) { return a.start_ns < t; });
      for (size_t k = 0; k < kLookBack && it != syncs.begin(); ++k) {
        --it;
        if (it->capture != d.capture || it->end_ns <= g0) continue;
        ++gaps;
        stalled += g1 - g0;
        ++calls[names.raw(it->name)];
        break;
      }
    }
    if (gaps < kStallMinGaps || static_cast<double>(stalled) < kStallShare * static_cast<double>(span_ns)) continue;
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = device_label(w, d) + ": the GPU idled " + std::to_string(gaps) + " times while the host sat in a synchronize call";
    f.condition = "at least " + std::to_string(kStallMinGaps) + " idle gaps during which the host was in a "
                  "synchronize call, adding up to at least " + pct(100 * kStallShare) + " of the device span";
    std::string which;
    for (const auto& [n, c] : calls) which += (which.empty() ? "" : ", ") + n + " x" + std::to_string(c);
    f.evidence.push_back(usn(stalled) + " idle in those gaps (" +
                         pct(100.0 * static_cast<double>(stalled) / static_cast<double>(span_ns)) + " of " +
                         usn(span_ns) + "); calls: " + which);
    f.fix = "synchronise only where the host needs a result: queue the next steps first, use events "
            "(cudaEventRecord + cudaStreamWaitEvent) for ordering between streams, and synchronise once at the end";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = "no repeated idle gaps behind synchronize calls";
  if (!capped.empty() || w.syncs_capped())
    res.note += std::string(res.note.empty() ? "" : "; ") + "judged on the first " +
                (w.syncs_capped() ? std::to_string(kMaxSyncs) + " synchronize calls" : std::to_string(kMaxGaps) + " idle gaps of " + capped);
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
