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
#include "diagnose_rules.h"

namespace gantt::analysis::detail {

// ---------------------------------------------------------------- 3. launch-overhead bound
constexpr uint64_t kLaunchMinKernels = 32;
constexpr double kLaunchMaxBusy = 60.0;  // busy %: a launch-bound GPU waits for the host

// A launch-bound stream that issues the same kernel sequence over and over is what CUDA graphs
// are for: captured once, replayed with one launch whose nodes run back to back.
constexpr size_t kRepeatMaxPeriod = 256;      // kernels in one repeated sequence, at most
constexpr size_t kRepeatWindow = 8192;        // launches examined per stream
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

void rule_launch_bound(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"launch-bound", false, ""};
  uint64_t graph_nodes = 0;
  for (const Device& d : devs) {
    std::vector<int64_t> exec;
    std::map<uint32_t, std::vector<uint64_t>> launches_by_thread;
    std::map<uint32_t, std::vector<uint32_t>> names_by_stream;  // in start order
    for (uint32_t e : d.events) {
      if (!is_compute(m, e)) continue;
      // A graph's nodes share one cudaGraphLaunch: they are not launched one by one, and the
      // fix this rule proposes is already in place.
      if (is_graph_node(m, e)) {
        ++graph_nodes;
        continue;
      }
      exec.push_back(static_cast<int64_t>(m.events.end_ns[e] - m.events.start_ns[e]));
      names_by_stream[m.events.stream[e]].push_back(m.events.name[e]);
      const uint32_t a = m.events.api[e];
      if (a != kNone && m.api.start_ns[a]) launches_by_thread[m.api.thread[a]].push_back(m.api.start_ns[a]);
    }
    if (exec.size() < kLaunchMinKernels) continue;
    std::vector<int64_t> interval;
    for (auto& [t, v] : launches_by_thread) {
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i < v.size(); ++i) interval.push_back(static_cast<int64_t>(v[i] - v[i - 1]));
    }
    if (interval.size() < kMinSamples) continue;
    const double med_exec = median(exec), med_gap = median(interval);
    const double busy = d.span_ns ? 100.0 * static_cast<double>(total_length(d.busy)) / static_cast<double>(d.span_ns) : 100;
    if (med_exec >= med_gap || busy >= kLaunchMaxBusy) continue;
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = d.label + ": launch-overhead bound: kernels finish faster than the host can launch them";
    f.condition = "at least " + std::to_string(kLaunchMinKernels) + " kernels, median exec < median interval between "
                  "launches, device busy < " + pct(kLaunchMaxBusy);
    f.evidence.push_back(std::to_string(exec.size()) + " kernels, median exec " + us(med_exec) +
                         " us, median launch interval " + us(med_gap) + " us");
    f.evidence.push_back("device busy " + pct(busy) + " of " + usn(d.span_ns));
    // The stream launching the most kernels one by one, and the sequence it repeats.
    const auto busiest = std::max_element(names_by_stream.begin(), names_by_stream.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    const size_t period = repeat_period(busiest->second);
    const uint64_t times = period ? std::min(busiest->second.size(), kRepeatWindow) / period : 0;
    if (period > 1) {
      std::string seq;
      for (size_t i = 0; i < period && i < 4; ++i) {
        seq += i ? ", " : "";
        seq += ellipsize(demangle(m.string(busiest->second[i])), 40);
      }
      if (period > 4) seq += ", ...";
      f.evidence.push_back("stream " + std::to_string(busiest->first) + " launches the same sequence of " +
                           std::to_string(period) + " kernels (" + seq + ") " + std::to_string(times) +
                           (busiest->second.size() > kRepeatWindow ? "+" : "") + " times, one launch per kernel");
      f.fix = "capture the repeated sequence on stream " + std::to_string(busiest->first) +
              " once as a CUDA graph (cudaStreamBeginCapture ... cudaStreamEndCapture, cudaGraphInstantiate) and "
              "replay it with one cudaGraphLaunch per iteration: its nodes run back to back without a launch each; "
              "fusing the kernels also cuts launches";
    } else if (period == 1) {
      // Runs of one kernel after another: name the one launched most, not merely the first.
      std::map<uint32_t, uint64_t> count;
      for (uint32_t name : busiest->second) ++count[name];
      const auto most = std::max_element(count.begin(), count.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      f.evidence.push_back("stream " + std::to_string(busiest->first) + " launches " +
                           ellipsize(demangle(m.string(most->first)), 60) + " over and over (" +
                           std::to_string(most->second) + " of its " + std::to_string(busiest->second.size()) +
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

void rule_sync_stall(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"sync-stall", false, ""};
  // A gap is a sync stall when a synchronize call of the same capture overlaps it: the host
  // stopped to wait for the GPU, so nothing new was queued, and the GPU ran dry until the
  // host returned and launched again. Calls sorted by start; a gap looks back from the first
  // call that starts after it (a thread is in one call at a time, so a few steps suffice).
  std::vector<uint32_t> syncs;
  for (uint32_t a = 0; a < m.api.size(); ++a)
    if (m.api.start_ns[a] && m.api.end_ns[a] > m.api.start_ns[a] &&
        m.string(m.api.name[a]).find("Synchronize") != std::string_view::npos)
      syncs.push_back(a);
  std::sort(syncs.begin(), syncs.end(), [&](uint32_t a, uint32_t b) { return m.api.start_ns[a] < m.api.start_ns[b]; });
  constexpr size_t kLookBack = 64;
  for (const Device& d : devs) {
    uint64_t gaps = 0, stalled = 0;
    std::map<std::string, uint64_t> calls;
    for (size_t i = 1; i < d.busy.size(); ++i) {
      const uint64_t g0 = d.busy[i - 1].second, g1 = d.busy[i].first;
      auto it = std::lower_bound(syncs.begin(), syncs.end(), g1,
                                 [&](uint32_t a, uint64_t t) { return m.api.start_ns[a] < t; });
      for (size_t k = 0; k < kLookBack && it != syncs.begin(); ++k) {
        --it;
        if (m.api.capture[*it] != d.capture || m.api.end_ns[*it] <= g0) continue;
        ++gaps;
        stalled += g1 - g0;
        ++calls[std::string(m.string(m.api.name[*it]))];
        break;
      }
    }
    if (gaps < kStallMinGaps || static_cast<double>(stalled) < kStallShare * static_cast<double>(d.span_ns)) continue;
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = d.label + ": the GPU idled " + std::to_string(gaps) + " times while the host sat in a synchronize call";
    f.condition = "at least " + std::to_string(kStallMinGaps) + " idle gaps during which the host was in a "
                  "synchronize call, adding up to at least " + pct(100 * kStallShare) + " of the device span";
    std::string which;
    for (const auto& [n, c] : calls) which += (which.empty() ? "" : ", ") + n + " x" + std::to_string(c);
    f.evidence.push_back(usn(stalled) + " idle in those gaps (" +
                         pct(100.0 * static_cast<double>(stalled) / static_cast<double>(d.span_ns)) + " of " +
                         usn(d.span_ns) + "); calls: " + which);
    f.fix = "synchronise only where the host needs a result: queue the next steps first, use events "
            "(cudaEventRecord + cudaStreamWaitEvent) for ordering between streams, and synchronise once at the end";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = "no repeated idle gaps behind synchronize calls";
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
