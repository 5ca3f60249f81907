// The diagnose rules about GPU work (serialisation, copies, imbalance, occupancy,
// fragmentation) and the registry that runs every rule; the rules the host fires are in
// diagnose_host_rules.cpp. Each threshold is named once, next to the rule that uses it, so a
// finding can quote the numbers that fired it.
#include "gantt/analysis/diagnose.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "gantt/analysis/intervals.h"
#include "gantt/noise/noise.h"
#include "gantt/analysis/table.h"
#include "gantt/model/graphs.h"
#include "gantt/ranks/ranks.h"
#include "gantt/model/text.h"
#include "diagnose_work.h"

namespace gantt::analysis {
namespace detail {

std::string pct(double v) { return fixed(v, 1) + "%"; }
std::string usn(uint64_t ns) { return us(static_cast<int64_t>(ns)) + " us"; }

}  // namespace detail

namespace {

using namespace detail;

// ---------------------------------------------------------------- 1. stream serialisation
std::vector<SerialFigures> serial_figures(const DiagnoseWork& w) {
  std::vector<SerialFigures> out;
  for (const auto& d : w.devices()) {
    SerialFigures f{device_label(w, *d), {}, d->totals.compute_ns, {}};
    for (const auto& [stream, s] : d->streams) {
      if (s.compute == 0) continue;
      f.per_stream[stream] = {s.compute, s.compute_ns};
      f.span[stream] = s.span;
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
std::vector<CopyFigures> copy_figures(const DiagnoseWork& w) {
  std::vector<CopyFigures> out;
  for (const auto& d : w.devices())
    out.push_back({device_label(w, *d), d->totals.copy_ns, d->totals.busy_ns, d->totals.compute_ns, d->totals.overlap_ns,
                   d->copies, d->copy_bytes, d->sync_copies});
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

void rule_imbalance(const Model& m, const DiagnoseWork& w, DiagnoseReport& r) {
  if (m.captures.size() > 1) {
    // Matched only when the rule fires: it walks every collective of every rank.
    const auto straggler = [&m] { return straggler_text(find_straggler(match_collectives(collective_calls(m)))); };
    detail::rule_imbalance("rank", busy_imbalance(rank_busy_intervals(m)), straggler, r);
  } else {
    rule_device_imbalance(w, r);
  }
}

}  // namespace

namespace detail {

std::string straggler_text(const StragglerReport& s) {
  if (s.straggler < 0) return {};
  return "rank " + std::to_string(s.straggler) + " arrived last at " + pct(100 * s.straggler_last_fraction) + " of " +
         std::to_string(s.collectives) + " collectives, costing the others " + usn(s.straggler_wait_caused_ns) +
         " of waiting";
}

void rule_device_imbalance(const DiagnoseWork& w, DiagnoseReport& r) {
  if (w.devices().size() < 2) {
    r.rules.push_back({"imbalance", false, kImbalanceAlone});
    return;
  }
  std::vector<RankBusy> busy;
  for (const auto& d : w.devices())
    busy.push_back({static_cast<int32_t>(d->ordinal), d->balance_totals.busy_ns,
                    d->balance_totals.last_ns - d->balance_totals.first_ns});
  detail::rule_imbalance("device", busy_imbalance(std::move(busy)), nullptr, r);
}

void rule_serialisation(const DiagnoseWork& w, DiagnoseReport& r) { rule_serialisation(serial_figures(w), r); }
void rule_copy_overlap(const DiagnoseWork& w, DiagnoseReport& r) { rule_copy_overlap(copy_figures(w), r); }

// ---------------------------------------------------------------- 5. low occupancy
constexpr double kOccupancyShare = 0.10;  // a kernel matters at this share of kernel time

// A grid that fits the device at once is not judged (KernelOccupancy::fits_at_once, the rule
// the chart's flag follows too). Raising occupancy from at most kLowOccupancy at least doubles
// what fits, and ceil(w/2) < ceil(w) for every w > 1, so a grid of more than one wave always
// gets shorter.
void rule_occupancy(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r) {
  RuleResult res{"low-occupancy", false, ""};
  // By the name shown: two recorded names that demangle alike are one kernel to the reader.
  std::map<std::string, OccupancyWork> by;
  for (const auto& [id, one] : w.occupancy()) by[names.display(id)].merge(one);
  const uint64_t total = w.occupancy_total_ns();
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
    // The middle launch's occupancy (the upper of the two for an even count).
    uint64_t launches = 0;
    for (const auto& [v, n] : a.occ) launches += n;
    double occ = 0;
    for (uint64_t seen = 0; const auto& [v, n] : a.occ) {
      seen += n;
      if (seen > launches / 2) {
        occ = v;
        break;
      }
    }
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
constexpr double kStretch = 2.0;  // exec at least this many times the median of its twins, while
                                  // other kernels ran for kSharedFraction of it (diagnose_work.h)
constexpr uint64_t kFragMinStretched = 3;
// Launches checked one by one per kernel and shape: the first this many at least kStretch
// times their median, in start order. Past kFragKept launches, each is counted.
constexpr size_t kFragMaxChecked = 256;

void rule_fragmentation(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r) {
  RuleResult res{"fragmentation", false, ""};
  for (const auto& d : w.devices()) {
    // Same kernel, same launch shape: the instances should take about the same time.
    for (const auto& [key, shape] : d->shapes) {
      if (shape.exec.count() < kFragMinInstances) continue;
      const double med = shape.exec.median_ns();
      uint64_t stretched = 0, worst = 0;
      size_t checked = 0;
      for (const auto& [exec, shared] : shape.kept) {
        if (static_cast<double>(exec) < kStretch * med) continue;
        if (++checked > kFragMaxChecked) break;
        if (!shared) continue;
        ++stretched;
        worst = std::max(worst, exec);
      }
      if (checked <= kFragMaxChecked) {
        const uint64_t more = count_at_least(shape.shared_exec, kStretch * med);
        stretched += more;
        if (more != 0) worst = std::max(worst, static_cast<uint64_t>(shape.shared_exec.max_ns()));
      }
      if (stretched < kFragMinStretched) continue;
      Finding f;
      f.rule = res.rule;
      f.severity = Severity::kInfo;
      f.title = device_label(w, *d) + ": " + names.display(shape.name) + " ran stretched " + std::to_string(stretched) +
                " times while other kernels shared the GPU";
      f.condition = "at least " + std::to_string(kFragMinStretched) + " launches of one kernel and shape taking at least " +
                    fixed(kStretch, 1) + "x their median while other kernels ran for at least half of that time";
      f.evidence.push_back(std::to_string(stretched) + " of " + std::to_string(shape.exec.count()) + " launches; median " +
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
constexpr uint64_t kPrioMinWaits = 2;       // short kernels that waited (kPrioWaitRatio, diagnose_work.h)
constexpr double kPrioShortRatio = 0.2;     // their exec at most this share of the other's

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

void rule_priority(const DiagnoseWork& work, const WorkNames& names, DiagnoseReport& r) {
  RuleResult res{"priority-inversion", false, ""};
  for (const auto& d : work.devices()) {
    struct Stream {
      const StreamWork* work;
      int32_t priority = 0;
      double median_exec = 0;
      uint32_t other = kNone;
    };
    std::map<uint32_t, Stream> streams;
    for (const auto& [id, s] : d->streams)
      if (s.kernel_exec.count() != 0) streams[id] = {&s, s.priority, s.kernel_exec.median_ns(), kNone};
    if (streams.size() < 2) continue;
    waited_behind(streams);
    for (auto& [s, w] : streams) {
      const uint32_t other = w.other;
      if (other == kNone || w.median_exec > kPrioShortRatio * streams[other].median_exec) continue;
      const DurationDigest& waits = w.work->waits;
      if (waits.count() < kPrioMinWaits) continue;
      Finding f;
      f.rule = res.rule;
      f.severity = Severity::kWarning;
      f.title = device_label(work, *d) + ": short kernels on stream " + std::to_string(s) + " waited behind stream " +
                std::to_string(other) + "'s long kernels at the same priority";
      f.condition = "at least " + std::to_string(kPrioMinWaits) + " kernels of one stream, their median exec at most " +
                    fixed(kPrioShortRatio * 100, 0) + "% of another stream's, waiting queued->start at least " +
                    fixed(kPrioWaitRatio, 0) + "x their exec (and " + usn(kPrioMinWaitNs) +
                    "), with no higher priority than that stream";
      f.evidence.push_back(std::to_string(waits.count()) + " of " + std::to_string(w.work->kernel_exec.count()) +
                           " launches of " + names.display(w.work->first_name) + " waited a median " +
                           us(waits.median_ns()) + " us for " + us(w.median_exec) + " us of work");
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

namespace detail {

void rule_records(const Model& m, DiagnoseReport& r, const ScannedBeside& scanned) {
  rule_memory_peak(m, r);
  rule_memory_unused(m, r, scanned.last_graph_ns);
  rule_pipeline_bubble(m, scanned.pipelines ? *scanned.pipelines : pipeline_reports(m), r);
  rule_slow_link(scanned.p2p ? *scanned.p2p : match_p2p(m), r);
  if (scanned.throttle) rule_throttled(m, *scanned.throttle, r);
  else rule_throttled(m, r);
  if (scanned.stall) rule_stalled(m, *scanned.stall, r);
  else rule_stalled(m, r);
}

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

}  // namespace detail

namespace {

// The model's synchronize calls and GPU work fed as a scan feeds them, each device's work in
// start order (index order among equal starts).
DiagnoseWork model_work(const Model& m) {
  DiagnoseWork w(m);
  // The calls first: the idle gaps no call overlaps are let go as the events come.
  for (uint32_t a = 0; a < m.api.size(); ++a)
    if (m.api.start_ns[a] && m.api.end_ns[a] > m.api.start_ns[a] && is_sync_call(m.string(m.api.name[a])))
      w.add_sync({m.api.start_ns[a], m.api.end_ns[a], m.api.capture[a], m.api.name[a]});
  const EventTable& ev = m.events;
  std::vector<uint32_t> order;
  for (uint32_t e = 0; e < ev.size(); ++e)
    if (is_gpu_work(m, e)) order.push_back(e);
  std::stable_sort(order.begin(), order.end(), [&ev](uint32_t a, uint32_t b) {
    return std::tie(ev.capture[a], ev.device[a], ev.start_ns[a]) < std::tie(ev.capture[b], ev.device[b], ev.start_ns[b]);
  });
  for (uint32_t e : order) {
    WorkEvent x{ev.kind[e], ev.capture[e], ev.device[e], ev.stream[e], ev.priority[e], ev.name[e], ev.start_ns[e],
                ev.end_ns[e], ev.queued_ns[e], ev.bytes[e], ev.grid[e], ev.block[e], ev.registers_per_thread[e],
                uint64_t{ev.static_smem_bytes[e]} + ev.dynamic_smem_bytes[e], is_graph_node(m, e),
                ev.kind[e] == EventKind::kMemcpy && copy_host_wait(m, e) != CopyHostWait::kNone};
    if (const uint32_t a = ev.api[e]; a != kNone && m.api.start_ns[a] != 0) {
      x.launch_ns = m.api.start_ns[a];
      x.launch_thread = m.api.thread[a];
    }
    w.add(x);
  }
  w.complete();
  return w;
}

}  // namespace

namespace detail {

void rules_on_work(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r,
                   const std::function<void(DiagnoseReport&)>& imbalance) {
  rule_serialisation(w, r);
  rule_copy_overlap(w, r);
  rule_launch_bound(w, names, r);
  if (imbalance) imbalance(r);
  else rule_device_imbalance(w, r);
  rule_occupancy(w, names, r);
  rule_sync_stall(w, names, r);
  rule_fragmentation(w, names, r);
  rule_priority(w, names, r);
}

}  // namespace detail

DiagnoseReport diagnose(const Model& m) {
  DiagnoseReport r;
  const DiagnoseWork w = model_work(m);
  const WorkNames names{[&m](uint32_t id) { return std::string(m.string(id)); },
                        [&m](uint32_t id) {
                          return std::string(id < m.demangled.size() && m.demangled[id] != kNone ? m.string(m.demangled[id])
                                                                                                 : m.string(id));
                        }};
  rules_on_work(w, names, r, [&](DiagnoseReport& out) { rule_imbalance(m, w, out); });
  rule_records(m, r);
  say_what_imported_traces_lack(m, r);
  return r;
}

}  // namespace gantt::analysis
