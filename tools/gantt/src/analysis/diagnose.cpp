// The diagnose rules about GPU work (serialisation, copies, imbalance, occupancy,
// fragmentation) and the registry that runs every rule; the rules the host fires are in
// diagnose_host_rules.cpp. Each threshold is named once, next to the rule that uses it, so a
// finding can quote the numbers that fired it.
#include "gantt/analysis/diagnose.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "gantt/analysis/intervals.h"
#include "gantt/noise/noise.h"
#include "gantt/analysis/table.h"
#include "gantt/model/graphs.h"
#include "gantt/ranks/ranks.h"
#include "gantt/model/text.h"
#include "diagnose_rules.h"

namespace gantt::analysis {
namespace detail {

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
    d.label = device_label(m.captures.size(), d.capture, d.ordinal);
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

}  // namespace detail

namespace {

using namespace detail;

// ---------------------------------------------------------------- 1. stream serialisation
std::vector<SerialFigures> serial_figures(const Model& m, const std::vector<Device>& devs) {
  std::vector<SerialFigures> out;
  for (const Device& d : devs) {
    SerialFigures f{d.label, {}, total_length(d.compute), {}};
    for (uint32_t e : d.events) {
      if (!is_compute(m, e)) continue;
      auto& s = f.per_stream[m.events.stream[e]];
      ++s.first;
      s.second += m.events.end_ns[e] - m.events.start_ns[e];
      const auto [span, first] = f.span.try_emplace(m.events.stream[e], m.events.start_ns[e], m.events.end_ns[e]);
      if (!first) span->second.second = std::max(span->second.second, m.events.end_ns[e]);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

namespace detail {

constexpr uint64_t kSerialMinKernels = 8;
constexpr double kLegacyShare = 0.5;     // of the device's kernel time on the legacy stream
constexpr double kDominantShare = 0.9;   // of kernel time on one stream...
constexpr uint64_t kDominantMinKernels = 16;

void rule_serialisation(const std::vector<SerialFigures>& devs, DiagnoseReport& r) {
  RuleResult res{"stream-serialisation", false, ""};
  for (const SerialFigures& d : devs) {
    const auto& per_stream = d.per_stream;
    uint64_t kernels = 0, exec = 0;
    for (const auto& [stream, work] : per_stream) {
      kernels += work.first;
      exec += work.second;
    }
    if (kernels < kSerialMinKernels || exec == 0) continue;
    const auto legacy = per_stream.find(kLegacyStream);
    const double concurrency = static_cast<double>(exec) / static_cast<double>(std::max<uint64_t>(1, d.compute_ns));
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
      // The other streams that could have taken some of its work: those busy while it was. A
      // stream whose kernels all ran before or after it (another phase of the program: set-up,
      // evaluation) was never idle beside it, and naming it is noise (issue 44, item 9). From
      // a summary older than the spans, every other stream counts.
      size_t beside = per_stream.size() - 1;
      const auto top_span = d.span.find(top->first);
      if (top_span != d.span.end()) {
        beside = 0;
        for (const auto& [stream, iv] : d.span)
          if (stream != top->first && iv.first < top_span->second.second && top_span->second.first < iv.second) ++beside;
      }
      if (beside > 0 && top->second.first >= kDominantMinKernels &&
          static_cast<double>(top->second.second) >= kDominantShare * static_cast<double>(exec)) {
        Finding f;
        f.rule = res.rule;
        f.severity = Severity::kInfo;
        f.title = d.label + ": nearly all kernel time on one stream while " + std::to_string(beside) +
                  " other stream(s) sit mostly idle";
        f.condition = "one stream holds at least " + pct(100 * kDominantShare) + " of kernel time with at least " +
                      std::to_string(kDominantMinKernels) + " kernels, and other streams ran kernels while it did";
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
  if (!res.fired)
    res.note = "no device had most of its kernel time on the legacy default stream or on one stream of several "
               "running at the same time";
  r.rules.push_back(res);
}

}  // namespace detail

namespace {

// ---------------------------------------------------------------- 2. copies without overlap
std::vector<CopyFigures> copy_figures(const Model& m, const std::vector<Device>& devs) {
  std::vector<CopyFigures> out;
  for (const Device& d : devs) {
    CopyFigures f{d.label, total_length(d.copy), total_length(d.busy), total_length(d.compute),
                  intersection_length(d.copy, d.compute)};
    for (uint32_t e : d.events) {
      if (m.events.kind[e] != EventKind::kMemcpy) continue;
      ++f.copies;
      f.bytes += m.events.bytes[e];
      if (copy_host_wait(m, e) != CopyHostWait::kNone) ++f.sync_copies;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

namespace detail {

constexpr double kCopyShareOfBusy = 0.10;  // copies matter...
constexpr double kMaxOverlap = 0.20;       // ...and at most this much of their time overlapped kernels

void rule_copy_overlap(const std::vector<CopyFigures>& devs, DiagnoseReport& r) {
  RuleResult res{"copy-overlap", false, ""};
  for (const CopyFigures& d : devs) {
    if (d.copy_ns == 0 || d.compute_ns == 0 || d.busy_ns == 0) continue;
    const double share = static_cast<double>(d.copy_ns) / static_cast<double>(d.busy_ns);
    const double overlap = static_cast<double>(d.overlap_ns) / static_cast<double>(d.copy_ns);
    if (share < kCopyShareOfBusy || overlap > kMaxOverlap) continue;
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = d.label + ": copies did not overlap compute (" + pct(100 * overlap) + " overlapped)";
    f.condition = "copies take at least " + pct(100 * kCopyShareOfBusy) + " of busy time and at most " +
                  pct(100 * kMaxOverlap) + " of copy time overlaps a kernel";
    f.evidence.push_back(std::to_string(d.copies) + " copies, " + bytes_text(d.bytes) + ", " + usn(d.copy_ns) + " (" +
                         pct(100 * share) + " of busy time), " + pct(100 * overlap) + " of it under a kernel");
    if (d.sync_copies)
      f.evidence.push_back(std::to_string(d.sync_copies) +
                           " of them held the host until they ended (a synchronous call such as cudaMemcpy, or pageable "
                           "host memory, which even cudaMemcpyAsync stages before it returns), so nothing else was "
                           "launched meanwhile");
    // A pageable copy always holds the host, so with none held there is nothing to pin (a
    // graph's memcpy nodes, cudaMemcpyAsync from pinned memory). A summary keeps no count of
    // the pageable ones, and diagnose says the same of a capture and of its summary.
    f.fix = std::string(d.sync_copies ? "if their host buffers are pageable, allocate them with cudaMallocHost (pinned); "
                                      : "") +
            "use cudaMemcpyAsync on a stream other than the one computing, and split the work into chunks so copy "
            "i+1 runs under kernel i";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = "copies were short or overlapped compute";
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 4. imbalance
constexpr double kMaxImbalance = 0.15;  // (max - mean) / mean busy time

void rule_imbalance(const std::string& unit, const ImbalanceReport& rep,
                    const std::function<std::string()>& straggler, DiagnoseReport& r) {
  RuleResult res{"imbalance", false, ""};
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
    if (std::string last = straggler ? straggler() : std::string(); !last.empty()) f.evidence.push_back(std::move(last));
    f.fix = "give every " + unit + " the same amount of work (shard evenly), or move the extra work off the critical "
            "path; the others wait for the busiest at each collective";
    r.findings.push_back(std::move(f));
    res.fired = true;
  } else {
    res.note = unit + "s within " + pct(100 * kMaxImbalance) + " of the mean busy time";
  }
  r.rules.push_back(res);
}

}  // namespace detail

namespace {

void rule_imbalance(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  if (m.captures.size() > 1) {
    // Matched only when the rule fires: it walks every collective of every rank.
    const auto straggler = [&m]() -> std::string {
      const StragglerReport s = find_straggler(match_collectives(collective_calls(m)));
      if (s.straggler < 0) return {};
      return "rank " + std::to_string(s.straggler) + " arrived last at " + pct(100 * s.straggler_last_fraction) + " of " +
             std::to_string(s.collectives) + " collectives, costing the others " + usn(s.straggler_wait_caused_ns) +
             " of waiting";
    };
    detail::rule_imbalance("rank", busy_imbalance(rank_busy_intervals(m)), straggler, r);
  } else if (devs.size() > 1) {
    detail::rule_imbalance("device", busy_imbalance(device_busy_intervals(m)), nullptr, r);
  } else {
    r.rules.push_back({"imbalance", false, kImbalanceAlone});
  }
}

// ---------------------------------------------------------------- 5. low occupancy
constexpr double kOccupancyShare = 0.10;  // a kernel matters at this share of kernel time
constexpr double kLowOccupancy = 0.5;     // theoretical occupancy at or below this is low

// A grid that fits the device at once is not judged (KernelOccupancy::fits_at_once, the rule
// the chart's flag follows too). Raising occupancy from at most kLowOccupancy at least doubles
// what fits, and ceil(w/2) < ceil(w) for every w > 1, so a grid of more than one wave always
// gets shorter.
struct Waves {
  uint64_t blocks = 0;
  uint64_t fit = 0;  // blocks resident at once on the device; 0 when the SM count is unknown
};

void rule_occupancy(const Model& m, DiagnoseReport& r) {
  RuleResult res{"low-occupancy", false, ""};
  struct Acc {
    uint64_t exec = 0, count = 0;        // launches of more than one wave, or of unknown waves
    uint64_t fits_exec = 0, fits = 0;    // launches whose grid fits the device at once
    Waves most, fitting;                 // the launch with the most waves; a fitting one of low occupancy
    std::vector<float> occ;
    std::map<OccupancyLimit, uint64_t> limits;
    uint64_t block = 0;
    uint32_t regs = 0;
  };
  std::map<std::string, Acc> by;
  std::vector<KernelOccupancy> occupancy;  // per capture: resident blocks per SM
  occupancy.reserve(m.captures.size());
  for (const CaptureInfo& c : m.captures) occupancy.emplace_back(c.devices);
  uint64_t total = 0;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (!is_gpu_work(m, e) || !is_compute(m, e)) continue;
    const uint64_t x = m.events.end_ns[e] - m.events.start_ns[e];
    total += x;
    Acc& a = by[std::string(m.display_name(e))];
    if (std::isnan(m.events.occupancy[e])) {
      a.exec += x;
      ++a.count;
      continue;
    }
    const uint16_t c = m.events.capture[e];
    const Occupancy& o = occupancy[c].of(m.events.device[e], m.events.block[e], m.events.registers_per_thread[e],
                                         uint64_t{m.events.static_smem_bytes[e]} + m.events.dynamic_smem_bytes[e]);
    const Waves w{dim3_count(m.events.grid[e]), occupancy[c].blocks_at_once(m.events.device[e], o)};
    if (occupancy[c].fits_at_once(m.events.device[e], o, w.blocks)) {
      a.fits_exec += x;
      ++a.fits;
      if (m.events.occupancy[e] <= kLowOccupancy + 1e-6) a.fitting = w;
      continue;
    }
    a.exec += x;
    ++a.count;
    a.occ.push_back(m.events.occupancy[e]);
    ++a.limits[m.events.occupancy_limit[e]];
    a.block = dim3_count(m.events.block[e]);
    a.regs = m.events.registers_per_thread[e];
    const auto waves = [](const Waves& v) { return v.fit ? (v.blocks + v.fit - 1) / v.fit : 0; };
    if (a.most.blocks == 0 || waves(w) > waves(a.most)) a.most = w;
  }
  bool any_occ = false;
  std::string fits_example;  // a kernel of low occupancy that matters but fits the device at once
  for (auto& [name, a] : by) {
    if (a.occ.empty() && a.fits == 0) continue;
    any_occ = true;
    if (a.occ.empty() || static_cast<double>(a.exec) < kOccupancyShare * static_cast<double>(total)) {
      if (fits_example.empty() && a.fitting.blocks != 0 &&
          static_cast<double>(a.exec + a.fits_exec) >= kOccupancyShare * static_cast<double>(total))
        fits_example = name + ": " + std::to_string(a.fitting.blocks) + " block(s), " +
                       std::to_string(a.fitting.fit) + " fit at once";
      continue;
    }
    std::sort(a.occ.begin(), a.occ.end());
    const double occ = a.occ[a.occ.size() / 2];
    if (occ > kLowOccupancy + 1e-6) continue;
    const auto lim = std::max_element(a.limits.begin(), a.limits.end(),
                                      [](const auto& x, const auto& y) { return x.second < y.second; });
    Finding f;
    f.rule = res.rule;
    f.severity = Severity::kWarning;
    f.title = name + ": theoretical occupancy " + pct(100 * occ) + ", limited by " + to_string(lim->first);
    f.condition = "a kernel with at least " + pct(100 * kOccupancyShare) + " of kernel time in launches whose grid "
                  "needs more than one wave (more blocks than SMs x resident blocks per SM), and theoretical occupancy "
                  "at or below " + pct(100 * kLowOccupancy);
    f.evidence.push_back(std::to_string(a.count) + " launches, " + pct(100.0 * static_cast<double>(a.exec) / static_cast<double>(total)) +
                         " of kernel time, " + std::to_string(a.block) + " threads per block, " + std::to_string(a.regs) +
                         " registers per thread");
    f.evidence.push_back(a.most.fit ? "up to " + std::to_string(a.most.blocks) + " blocks where " +
                                          std::to_string(a.most.fit) + " fit at once: " +
                                          std::to_string((a.most.blocks + a.most.fit - 1) / a.most.fit) + " waves"
                                    : std::string("the device's SM count was not recorded: whether the grid needs more "
                                                  "than one wave is unknown"));
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
  if (!res.fired)
    res.note = !any_occ ? "no occupancy could be computed (device properties missing)"
               : fits_example.empty()
                   ? "kernels that matter have enough theoretical occupancy"
                   : "kernels that matter have enough theoretical occupancy or a grid that fits the device at once, "
                     "where more occupancy would not shorten them (" + fits_example + ")";
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

// ---------------------------------------------------------------- 8. priority inversion
// Short, latency-critical kernels queued behind another stream's long kernels at no higher a
// priority: the GPU runs work in the order it was queued, so each short kernel waits for the
// long ones issued before it. More streams do not help; a higher stream priority does (the
// block scheduler gives the SMs to the higher-priority stream as soon as they free up).
constexpr uint64_t kPrioMinWaits = 2;       // short kernels that waited
constexpr double kPrioShortRatio = 0.2;     // their exec at most this share of the other's...
constexpr double kPrioWaitRatio = 5.0;      // ...and their queued->start at least this many execs
constexpr uint64_t kPrioMinWaitNs = 50'000;

// Sets each stream's `other`: the stream its kernels waited behind, the one with the longest
// kernels (median exec; the lowest id among equals) at the same or a higher priority (CUDA: a
// lower number is a higher priority), itself left out. In priority order, keeping the two best
// so far: n log n. Comparing every pair took 72.8 s on a 34 KB capture of 26,000 streams.
template <typename Streams>
void waited_behind(Streams& streams) {
  std::vector<std::pair<uint32_t, typename Streams::mapped_type*>> order;  // in stream id order
  for (auto& [s, w] : streams) order.emplace_back(s, &w);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second->priority < b.second->priority; });
  auto better = [](const auto& a, const auto& b) {
    return a.second->median_exec > b.second->median_exec ||
           (a.second->median_exec == b.second->median_exec && a.first < b.first);
  };
  const std::pair<uint32_t, typename Streams::mapped_type*>* best = nullptr;
  const std::pair<uint32_t, typename Streams::mapped_type*>* second = nullptr;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    for (; j < order.size() && order[j].second->priority == order[i].second->priority; ++j) {
      if (!best || better(order[j], *best)) {
        second = best;
        best = &order[j];
      } else if (!second || better(order[j], *second)) {
        second = &order[j];
      }
    }
    for (; i < j; ++i) {
      const auto* pick = best->first != order[i].first ? best : second;
      order[i].second->other = pick ? pick->first : kNone;
    }
  }
}

void rule_priority(const Model& m, const std::vector<Device>& devs, DiagnoseReport& r) {
  RuleResult res{"priority-inversion", false, ""};
  for (const Device& d : devs) {
    struct StreamWork {
      std::vector<int64_t> exec, waits;
      std::vector<uint32_t> events;  // its kernels, in the device's order
      int32_t priority = 0;
      uint32_t name_event = kNone;
      double median_exec = 0;
      uint32_t other = kNone;
    };
    std::map<uint32_t, StreamWork> streams;
    for (uint32_t e : d.events) {
      if (m.events.kind[e] != EventKind::kKernel) continue;
      StreamWork& w = streams[m.events.stream[e]];
      w.exec.push_back(static_cast<int64_t>(m.events.end_ns[e] - m.events.start_ns[e]));
      w.events.push_back(e);
      w.priority = m.events.priority[e];
      if (w.name_event == kNone) w.name_event = e;
    }
    if (streams.size() < 2) continue;
    for (auto& [s, w] : streams) w.median_exec = median(w.exec);
    waited_behind(streams);
    for (auto& [s, w] : streams) {
      const uint32_t other = w.other;
      if (other == kNone || w.median_exec > kPrioShortRatio * streams[other].median_exec) continue;
      for (uint32_t e : w.events) {
        const uint64_t q = m.events.queued_ns[e], b = m.events.start_ns[e];
        if (q == 0 || b < q) continue;
        const uint64_t wait = b - q;
        if (wait >= kPrioMinWaitNs && static_cast<double>(wait) >= kPrioWaitRatio * static_cast<double>(m.events.end_ns[e] - b))
          w.waits.push_back(static_cast<int64_t>(wait));
      }
      if (w.waits.size() < kPrioMinWaits) continue;
      Finding f;
      f.rule = res.rule;
      f.severity = Severity::kWarning;
      f.title = d.label + ": short kernels on stream " + std::to_string(s) + " waited behind stream " +
                std::to_string(other) + "'s long kernels at the same priority";
      f.condition = "at least " + std::to_string(kPrioMinWaits) + " kernels of one stream, their median exec at most " +
                    fixed(kPrioShortRatio * 100, 0) + "% of another stream's, waiting queued->start at least " +
                    fixed(kPrioWaitRatio, 0) + "x their exec (and " + usn(kPrioMinWaitNs) +
                    "), with no higher priority than that stream";
      f.evidence.push_back(std::to_string(w.waits.size()) + " of " + std::to_string(w.exec.size()) + " launches of " +
                           std::string(m.display_name(w.name_event)) + " waited a median " + us(median(w.waits)) +
                           " us for " + us(w.median_exec) + " us of work");
      f.evidence.push_back("stream " + std::to_string(other) + " runs kernels of a median " +
                           us(streams[other].median_exec) +
                           " us; priorities: stream " + std::to_string(s) + " " + std::to_string(w.priority) +
                           ", stream " + std::to_string(other) + " " + std::to_string(streams[other].priority));
      f.fix = "create stream " + std::to_string(s) +
              " with cudaStreamCreateWithPriority at the greatest priority of cudaDeviceGetStreamPriorityRange (more "
              "streams do not help: the GPU still runs the queued work first)";
      r.findings.push_back(std::move(f));
      res.fired = true;
    }
  }
  if (!res.fired) res.note = "no short kernels waited behind another stream's long ones at the same priority";
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
                                                 "low-occupancy", "sync-stall", "fragmentation",
                                                 "priority-inversion", "memory-peak", "memory-idle", "pipeline-bubble",
                                                 "slow-link", "throttled", "stalled"};
  return names;
}

namespace {

// Rules whose input only the hook records, or that the importers do not read: for a torch.profiler
// or nsys trace the note says what it lacks, not how to record it with the hook.
void say_what_imported_traces_lack(const Model& m, DiagnoseReport& r) {
  const std::string format = m.imported_format();
  if (format.empty()) return;
  static const std::pair<const char*, const char*> kNeeds[] = {
      {"memory-peak", "allocation records"},
      {"memory-idle", "the allocations each call used"},
      {"throttled", "NVML clock samples"},
      {"stalled", "SM-active samples (CUPTI PM sampling)"},
  };
  for (RuleResult& rule : r.rules) {
    for (const auto& [name, needs] : kNeeds) {
      if (rule.fired || rule.rule != name) continue;
      rule.ran = false;
      rule.note = std::string("needs ") + needs + ", which are not read from " + format + "s";
    }
  }
}

}  // namespace

DiagnoseReport diagnose(const Model& m) {
  DiagnoseReport r;
  const std::vector<Device> devs = devices(m);
  rule_serialisation(serial_figures(m, devs), r);
  rule_copy_overlap(copy_figures(m, devs), r);
  rule_launch_bound(m, devs, r);
  rule_imbalance(m, devs, r);
  rule_occupancy(m, r);
  rule_sync_stall(m, devs, r);
  rule_fragmentation(m, devs, r);
  rule_priority(m, devs, r);
  rule_memory_peak(m, r);
  rule_memory_unused(m, r);
  rule_pipeline_bubble(m, r);
  rule_slow_link(m, r);
  rule_throttled(m, r);
  rule_stalled(m, r);
  say_what_imported_traces_lack(m, r);
  return r;
}

}  // namespace gantt::analysis
