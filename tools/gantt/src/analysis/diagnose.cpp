// The diagnose rules. Each threshold is named once, next to the rule that uses it, so a
// finding can quote the numbers that fired it.
#include "gantt/analysis/diagnose.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/noise.h"
#include "gantt/analysis/table.h"
#include "gantt/graphs.h"
#include "gantt/ranks.h"
#include "gantt/text.h"

namespace gantt::analysis {
namespace {

// CUPTI gives the legacy default stream (the NULL stream) id 7.
constexpr uint32_t kLegacyStream = 7;

struct Device {
  std::string label;
  uint16_t capture = 0;
  uint32_t ordinal = 0;
  std::vector<uint32_t> events;  // GPU work, by start time
  std::vector<Interval> busy, compute, copy;
  uint64_t span_ns = 0;
};

std::string pct(double v) { return fixed(v, 1) + "%"; }
std::string usn(uint64_t ns) { return us(static_cast<int64_t>(ns)) + " us"; }

bool is_compute(const Model& m, uint32_t e) {
  return m.events.kind[e] == EventKind::kKernel || m.events.kind[e] == EventKind::kNccl;
}

std::vector<Device> devices(const Model& m) {
  std::map<uint64_t, Device> by;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (!is_gpu_work(m, e)) continue;
    const uint64_t key = (uint64_t{m.events.capture[e]} << 32) | m.events.device[e];
    Device& d = by[key];
    d.capture = m.events.capture[e];
    d.ordinal = m.events.device[e];
    d.events.push_back(e);
  }
  std::vector<Device> out;
  for (auto& [k, d] : by) {
    d.label = (m.captures.size() > 1 ? "c" + std::to_string(d.capture) + ".gpu" : "gpu") + std::to_string(d.ordinal);
    std::sort(d.events.begin(), d.events.end(), [&](uint32_t a, uint32_t b) {
      return m.events.start_ns[a] != m.events.start_ns[b] ? m.events.start_ns[a] < m.events.start_ns[b] : a < b;
    });
    for (uint32_t e : d.events) {
      const Interval iv{m.events.start_ns[e], m.events.end_ns[e]};
      d.busy.push_back(iv);
      if (is_compute(m, e)) d.compute.push_back(iv);
      else if (m.events.kind[e] == EventKind::kMemcpy) d.copy.push_back(iv);
    }
    merge_intervals(d.busy);
    merge_intervals(d.compute);
    merge_intervals(d.copy);
    d.span_ns = d.busy.empty() ? 0 : d.busy.back().second - d.busy.front().first;
    out.push_back(std::move(d));
  }
  return out;
}

std::string api_name(const Model& m, uint32_t e) {
  const uint32_t a = m.events.api[e];
  return a == kNone ? std::string() : std::string(m.string(m.api.name[a]));
}

// ---------------------------------------------------------------- 1. stream serialisation
constexpr uint64_t kSerialMinKernels = 8;
constexpr double kLegacyShare = 0.5;     // of the device's kernel time on the legacy stream
constexpr double kDominantShare = 0.9;   // of kernel time on one stream...
constexpr uint64_t kDominantMinKernels = 16;

void rule_serialisation(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"stream-serialisation", false, ""};
  for (const Device& d : devs) {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_stream;  // stream -> (kernels, exec ns)
    uint64_t kernels = 0, exec = 0;
    for (uint32_t e : d.events) {
      if (!is_compute(m, e)) continue;
      auto& s = per_stream[m.events.stream[e]];
      ++s.first;
      s.second += m.events.end_ns[e] - m.events.start_ns[e];
      ++kernels;
      exec += m.events.end_ns[e] - m.events.start_ns[e];
    }
    if (kernels < kSerialMinKernels || exec == 0) continue;
    const auto legacy = per_stream.find(kLegacyStream);
    const double concurrency = static_cast<double>(exec) / static_cast<double>(std::max<uint64_t>(1, total_length(d.compute)));
    if (legacy != per_stream.end() && static_cast<double>(legacy->second.second) >= kLegacyShare * static_cast<double>(exec)) {
      Finding f;
      f.rule = res.rule;
      f.severity = Severity::kWarning;
      f.title = d.label + ": kernels run on the legacy default stream, which serialises with every blocking stream";
      f.condition = "at least " + std::to_string(kSerialMinKernels) + " kernels and at least " + pct(100 * kLegacyShare) +
                    " of kernel time on stream " + std::to_string(kLegacyStream) + " (CUPTI's legacy default stream)";
      f.evidence.push_back(std::to_string(legacy->second.first) + " of " + std::to_string(kernels) + " kernels (" +
                           pct(100.0 * static_cast<double>(legacy->second.second) / static_cast<double>(exec)) +
                           " of kernel time) on the legacy default stream");
      f.evidence.push_back("kernels used " + std::to_string(per_stream.size()) + " stream(s); average kernels running at once " +
                           fixed(concurrency, 2));
      f.fix = "issue independent work on streams created with cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) "
              "(or compile with --default-stream per-thread) so kernels can run side by side";
      r.findings.push_back(std::move(f));
      res.fired = true;
      continue;
    }
    if (per_stream.size() >= 2) {
      auto top = std::max_element(per_stream.begin(), per_stream.end(),
                                  [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
      if (top->second.first >= kDominantMinKernels &&
          static_cast<double>(top->second.second) >= kDominantShare * static_cast<double>(exec)) {
        Finding f;
        f.rule = res.rule;
        f.severity = Severity::kInfo;
        f.title = d.label + ": nearly all kernel time on one stream while " + std::to_string(per_stream.size() - 1) +
                  " other stream(s) sit mostly idle";
        f.condition = "one stream holds at least " + pct(100 * kDominantShare) + " of kernel time with at least " +
                      std::to_string(kDominantMinKernels) + " kernels, and other streams exist";
        f.evidence.push_back("stream " + std::to_string(top->first) + ": " + std::to_string(top->second.first) +
                             " kernels, " + pct(100.0 * static_cast<double>(top->second.second) / static_cast<double>(exec)) +
                             " of kernel time");
        f.fix = "if those kernels are independent, spread them over the other streams; if they depend on each other, "
                "this is expected";
        r.findings.push_back(std::move(f));
        res.fired = true;
      }
    }
  }
  if (!res.fired) res.note = "no device had most of its kernel time on the legacy default stream or on one stream of several";
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 2. copies without overlap
constexpr double kCopyShareOfBusy = 0.10;  // copies matter...
constexpr double kMaxOverlap = 0.20;       // ...and at most this much of their time overlapped kernels

void rule_copy_overlap(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"copy-overlap", false, ""};
  for (const Device& d : devs) {
    const uint64_t copy = total_length(d.copy), busy = total_length(d.busy), comp = total_length(d.compute);
    if (copy == 0 || comp == 0 || busy == 0) continue;
    const double share = static_cast<double>(copy) / static_cast<double>(busy);
    const double overlap = static_cast<double>(intersection_length(d.copy, d.compute)) / static_cast<double>(copy);
    if (share < kCopyShareOfBusy || overlap > kMaxOverlap) continue;
    uint64_t copies = 0, sync_copies = 0, bytes = 0;
    for (uint32_t e : d.events) {
      if (m.events.kind[e] != EventKind::kMemcpy) continue;
      ++copies;
      bytes += m.events.bytes[e];
      const std::string api = api_name(m, e);
      if (!api.empty() && api.find("Async") == std::string::npos) ++sync_copies;
    }
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = d.label + ": copies did not overlap compute (" + pct(100 * overlap) + " overlapped)";
    f.condition = "copies take at least " + pct(100 * kCopyShareOfBusy) + " of busy time and at most " +
                  pct(100 * kMaxOverlap) + " of copy time overlaps a kernel";
    f.evidence.push_back(std::to_string(copies) + " copies, " + bytes_text(bytes) + ", " + usn(copy) + " (" +
                         pct(100 * share) + " of busy time), " + pct(100 * overlap) + " of it under a kernel");
    if (sync_copies)
      f.evidence.push_back(std::to_string(sync_copies) + " of them issued by a synchronous call (cudaMemcpy): the host "
                           "waits, so nothing else is launched meanwhile");
    f.fix = "allocate host buffers with cudaMallocHost (pinned), use cudaMemcpyAsync on a stream other than the one "
            "computing, and split the work into chunks so copy i+1 runs under kernel i";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = "copies were short or overlapped compute";
  r.rules.push_back(res);
}

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
size_t repeat_period(const std::vector<uint32_t>& names) {
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
      f.evidence.push_back("stream " + std::to_string(busiest->first) + " launches " +
                           ellipsize(demangle(m.string(busiest->second[0])), 60) + " over and over (" +
                           std::to_string(busiest->second.size()) + " launches)");
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

// ---------------------------------------------------------------- 4. imbalance
constexpr double kMaxImbalance = 0.15;  // (max - mean) / mean busy time

void rule_imbalance(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"imbalance", false, ""};
  ImbalanceReport rep;
  std::string unit = "rank";
  if (m.captures.size() > 1) {
    rep = busy_imbalance(rank_busy_intervals(m));
  } else if (devs.size() > 1) {
    unit = "device";
    std::vector<RankIntervals> in;
    for (const Device& d : devs) in.push_back({static_cast<int32_t>(d.ordinal), d.busy});
    rep = busy_imbalance(in);
  } else {
    res.note = "one device in one capture: nothing to compare";
    r.rules.push_back(res);
    return;
  }
  if (rep.ranks.size() >= 2 && rep.imbalance > kMaxImbalance) {
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = unit + " " + std::to_string(rep.busiest_rank) + " is busier than the others by " +
              pct(100 * rep.imbalance) + " of the mean";
    f.condition = "(max - mean) / mean busy time over " + unit + "s > " + pct(100 * kMaxImbalance);
    std::string line = "busy time per " + unit + ":";
    for (const RankBusy& b : rep.ranks) line += " " + std::to_string(b.global_rank) + "=" + usn(b.busy_ns);
    f.evidence.push_back(line);
    if (m.captures.size() > 1) {
      const StragglerReport s = find_straggler(match_collectives(collective_calls(m)));
      if (s.straggler >= 0)
        f.evidence.push_back("rank " + std::to_string(s.straggler) + " arrived last at " +
                             pct(100 * s.straggler_last_fraction) + " of " + std::to_string(s.collectives) +
                             " collectives, costing the others " + usn(s.straggler_wait_caused_ns) + " of waiting");
    }
    f.fix = "give every " + unit + " the same amount of work (shard evenly), or move the extra work off the critical "
            "path; the others wait for the busiest at each collective";
    r.findings.push_back(std::move(f));
    res.fired = true;
  } else {
    res.note = unit + "s within " + pct(100 * kMaxImbalance) + " of the mean busy time";
  }
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 5. low occupancy
constexpr double kOccupancyShare = 0.10;  // a kernel matters at this share of kernel time
constexpr double kLowOccupancy = 0.5;     // theoretical occupancy at or below this is low

void rule_occupancy(const Model& m, DiagnoseReport& r) {
  RuleResult res{"low-occupancy", false, ""};
  struct Acc {
    uint64_t exec = 0, count = 0;
    std::vector<float> occ;
    std::map<OccupancyLimit, uint64_t> limits;
    uint64_t block = 0;
    uint32_t regs = 0;
    std::string name;
  };
  std::map<std::string, Acc> by;
  uint64_t total = 0;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (!is_gpu_work(m, e) || !is_compute(m, e)) continue;
    const uint64_t x = m.events.end_ns[e] - m.events.start_ns[e];
    total += x;
    Acc& a = by[std::string(m.display_name(e))];
    a.exec += x;
    ++a.count;
    if (!std::isnan(m.events.occupancy[e])) a.occ.push_back(m.events.occupancy[e]);
    ++a.limits[m.events.occupancy_limit[e]];
    a.block = dim3_count(m.events.block[e]);
    a.regs = m.events.registers_per_thread[e];
  }
  bool any_occ = false;
  for (auto& [name, a] : by) {
    if (a.occ.empty()) continue;
    any_occ = true;
    if (static_cast<double>(a.exec) < kOccupancyShare * static_cast<double>(total)) continue;
    std::sort(a.occ.begin(), a.occ.end());
    const double occ = a.occ[a.occ.size() / 2];
    if (occ > kLowOccupancy + 1e-6) continue;
    const auto lim = std::max_element(a.limits.begin(), a.limits.end(),
                                      [](const auto& x, const auto& y) { return x.second < y.second; });
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = name + ": theoretical occupancy " + pct(100 * occ) + ", limited by " + to_string(lim->first);
    f.condition = "a kernel with at least " + pct(100 * kOccupancyShare) + " of kernel time and theoretical occupancy at "
                  "or below " + pct(100 * kLowOccupancy);
    f.evidence.push_back(std::to_string(a.count) + " launches, " + pct(100.0 * static_cast<double>(a.exec) / static_cast<double>(total)) +
                         " of kernel time, " + std::to_string(a.block) + " threads per block, " + std::to_string(a.regs) +
                         " registers per thread");
    switch (lim->first) {
      case OccupancyLimit::kBlocks:
        f.fix = "blocks are too small: the per-SM block limit caps resident threads; use larger blocks "
                "(cudaOccupancyMaxPotentialBlockSize suggests one)";
        break;
      case OccupancyLimit::kRegisters:
        f.fix = "too many registers per thread: cap them with __launch_bounds__ or -maxrregcount, or split the kernel";
        break;
      case OccupancyLimit::kSharedMemory:
        f.fix = "too much shared memory per block: shrink the tile or use fewer stages";
        break;
      default:
        f.fix = "choose the block size with cudaOccupancyMaxPotentialBlockSize";
    }
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = any_occ ? "kernels that matter have enough theoretical occupancy"
                                     : "no occupancy could be computed (device properties missing)";
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

// ---------------------------------------------------------------- 7. fragmentation
constexpr size_t kFragMinInstances = 5;
constexpr double kStretch = 2.0;         // exec at least this many times the median of its twins...
constexpr double kSharedFraction = 0.5;  // ...while other kernels ran for at least half of it
constexpr uint64_t kFragMinStretched = 3;

void rule_fragmentation(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"fragmentation", false, ""};
  for (const Device& d : devs) {
    // Same kernel, same launch shape: the instances should take about the same time.
    std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::vector<uint32_t>> groups;
    for (uint32_t e : d.events)
      if (is_compute(m, e))
        groups[{m.events.name[e], dim3_count(m.events.grid[e]), dim3_count(m.events.block[e])}].push_back(e);
    for (const auto& [key, evs] : groups) {
      if (evs.size() < kFragMinInstances) continue;
      std::vector<int64_t> x;
      for (uint32_t e : evs) x.push_back(static_cast<int64_t>(m.events.end_ns[e] - m.events.start_ns[e]));
      const double med = median(x);
      uint64_t stretched = 0;
      uint64_t worst = 0;
      size_t checked = 0;
      for (uint32_t e : evs) {
        const uint64_t s = m.events.start_ns[e], t = m.events.end_ns[e];
        if (static_cast<double>(t - s) < kStretch * med) continue;
        // Each check scans the device's earlier events: bound the work on huge captures.
        if (++checked > 256) break;
        // Time other kernels on this device ran during this one.
        std::vector<Interval> others;
        for (uint32_t o : d.events) {
          if (o == e || !is_compute(m, o)) continue;
          if (m.events.start_ns[o] >= t) break;
          if (m.events.end_ns[o] > s) others.emplace_back(std::max(s, m.events.start_ns[o]), std::min(t, m.events.end_ns[o]));
        }
        merge_intervals(others);
        if (static_cast<double>(total_length(others)) < kSharedFraction * static_cast<double>(t - s)) continue;
        ++stretched;
        worst = std::max(worst, t - s);
      }
      if (stretched < kFragMinStretched) continue;
      Finding f;
      f.rule = res.rule;
      f.severity = Severity::kInfo;
      f.title = d.label + ": " + std::string(m.display_name(evs.front())) + " ran stretched " + std::to_string(stretched) +
                " times while other kernels shared the GPU";
      f.condition = "at least " + std::to_string(kFragMinStretched) + " launches of one kernel and shape taking at least " +
                    fixed(kStretch, 1) + "x their median while other kernels ran for at least half of that time";
      f.evidence.push_back(std::to_string(stretched) + " of " + std::to_string(evs.size()) + " launches; median " +
                           us(med) + " us, longest " + usn(worst));
      f.fix = "the kernel is time-sliced or starved of SMs by concurrent work: give it a higher stream priority, or "
              "limit the concurrent kernels' grids";
      r.findings.push_back(std::move(f));
      res.fired = true;
    }
  }
  if (!res.fired) res.note = "no kernel's launches were stretched by concurrent work";
  r.rules.push_back(res);
}

}  // namespace

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "?";
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = {"stream-serialisation", "copy-overlap", "launch-bound", "imbalance",
                                                 "low-occupancy", "sync-stall", "fragmentation"};
  return names;
}

DiagnoseReport diagnose(const Model& m) {
  DiagnoseReport r;
  const std::vector<Device> devs = devices(m);
  rule_serialisation(m, devs, r);
  rule_copy_overlap(m, devs, r);
  rule_launch_bound(m, devs, r);
  rule_imbalance(m, devs, r);
  rule_occupancy(m, r);
  rule_sync_stall(m, devs, r);
  rule_fragmentation(m, devs, r);
  return r;
}

}  // namespace gantt::analysis
