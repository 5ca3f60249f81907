// The diagnose rules of memory (analysis/memory.h): what dominated a device's memory peak, and
// memory held at it that nothing used any more.
#include <algorithm>

#include "gantt/analysis/memory.h"
#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "diagnose_rules.h"

namespace gantt::analysis::detail {

// ---------------------------------------------------------------- 9. memory peak
// Allocations made under one NVTX range path, still live at the peak and freed later, that
// hold at least this share of it: memory kept for a later phase (activations kept for the
// backward pass are the classic case), which recomputation or earlier frees give back.
constexpr double kPeakShare = 0.5;
constexpr uint64_t kPeakMinBytes = 1u << 20;  // a peak under 1 MiB is not worth a finding

void rule_memory_peak(const Model& m, DiagnoseReport& r) {
  RuleResult res{"memory-peak", false, ""};
  const std::vector<DeviceMemory> report = memory_report(m);
  if (report.empty()) res.note = "no allocations recorded (GPUHOOK_API without alloc?)";
  for (const DeviceMemory& d : report) {
    if (d.peak_bytes < kPeakMinBytes) continue;
    const PeakGroup* top = nullptr;
    for (const PeakGroup& g : d.peak_by_path)
      if (!g.path.empty() && (!top || g.freed_later_bytes > top->freed_later_bytes)) top = &g;
    if (!top || static_cast<double>(top->freed_later_bytes) < kPeakShare * static_cast<double>(d.peak_bytes)) continue;
    const double share = static_cast<double>(top->freed_later_bytes) / static_cast<double>(d.peak_bytes);
    const std::string dev = "gpu" + std::to_string(d.device);
    Finding f;
    f.rule = res.rule;
    f.title = dev + ": allocations made in " + utf8_clean(top->path) + " and freed later hold " + pct(100 * share) +
              " of the " + bytes_text(d.peak_bytes) + " memory peak";
    f.condition = "at the device's memory peak, allocations of one NVTX range path that are freed later in the run hold "
                  "at least " + pct(100 * kPeakShare) + " of the memory in use (peak at least " +
                  bytes_text(kPeakMinBytes) + ")";
    f.evidence.push_back("peak " + bytes_text(d.peak_bytes) + " at +" + usn(d.peak_ns - std::min(d.peak_ns, m.first_ns())));
    f.evidence.push_back(std::to_string(top->count) + " allocations of " + utf8_clean(top->path) + " live then: " +
                         bytes_text(top->bytes) + ", " + bytes_text(top->freed_later_bytes) + " of it freed after the peak");
    uint64_t kept = 0;
    for (const PeakGroup& g : d.peak_by_path) kept += g.bytes - g.freed_later_bytes;
    if (kept) f.evidence.push_back(bytes_text(kept) + " live at the peak and never freed in the capture (weights, state)");
    if (d.tagged) {
      // What the program said each allocation was for (gpuhook_mem_tag), largest first.
      std::vector<std::pair<uint64_t, std::string>> parts;
      for (size_t c = 0; c < d.categories.size(); ++c)
        if (d.peak_by_category[c]) parts.emplace_back(d.peak_by_category[c], d.categories[c]);
      std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::string line = "at the peak, by what it is for:";
      for (size_t i = 0; i < parts.size(); ++i)
        line += (i ? ", " : " ") + utf8_clean(parts[i].second) + " " + bytes_text(parts[i].first);
      f.evidence.push_back(line);
    }
    f.fix = "the memory is held for a later phase: recompute it there instead of keeping it (activation checkpointing), "
            "free each buffer as soon as it has been read, or split the batch; `render --view memory` shows what was "
            "live at the peak";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired && res.note.empty())
    res.note = "no device's memory peak was held mostly (" + pct(100 * kPeakShare) + ") by allocations of one range freed later";
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 12. memory held unused
// GPUHOOK_MEM_USE: allocations live at a device's memory peak that no kernel, copy, memset or
// NCCL call was given from then on, and that stayed so for a good part of the capture: memory
// the program holds but no longer uses (a staging table kept after initialisation, a previous
// model's weights, a cache nobody reads). An allocation last used before a CUDA graph ran is
// not judged: the hook cannot see a graph's kernels' arguments when it is replayed.
constexpr double kUnusedShare = 0.10;      // of the peak, at least
constexpr double kUnusedSpanShare = 0.5;  // of the capture: held unused at least this long
constexpr uint64_t kUnusedMinBytes = 1u << 20;

void rule_memory_unused(const Model& m, DiagnoseReport& r, const std::vector<uint64_t>* scanned_graph_ns) {
  RuleResult res{"memory-idle", false, ""};
  const std::vector<DeviceMemory> report = memory_report(m);
  bool recorded = false;
  uint64_t behind_graphs = 0, capped = 0;
  // Per capture, the last start of a kernel, copy or memset run by a CUDA graph.
  std::vector<uint64_t> last_graph_ns(m.captures.size(), 0);
  if (scanned_graph_ns) {
    for (size_t c = 0; c < last_graph_ns.size() && c < scanned_graph_ns->size(); ++c) last_graph_ns[c] = (*scanned_graph_ns)[c];
  } else {
    for (size_t e = 0; e < m.events.size(); ++e)
      if (m.events.graph_id[e] != 0 && m.events.capture[e] < last_graph_ns.size())
        last_graph_ns[m.events.capture[e]] = std::max(last_graph_ns[m.events.capture[e]], m.events.start_ns[e]);
  }
  for (const DeviceMemory& d : report) {
    if (!d.uses_recorded) continue;
    recorded = true;
    const CaptureInfo& c = m.captures[d.capture];
    // Uses past the loader's bound were not read: the last uses it has may be early ones.
    if (c.memory_uses_ignored != 0) {
      ++capped;
      continue;
    }
    const uint64_t span = c.last_ns - std::min(c.last_ns, c.first_ns);
    if (d.peak_bytes < kUnusedMinBytes || span == 0) continue;
    std::vector<const LiveAllocation*> idle;
    uint64_t idle_bytes = 0;
    for (const LiveAllocation& a : d.unused_after_peak) {
      if (static_cast<double>(a.idle_ns) < kUnusedSpanShare * static_cast<double>(span)) continue;
      if (last_graph_ns[d.capture] > std::max(a.alloc_ns, a.last_use_ns)) {
        ++behind_graphs;
        continue;
      }
      idle.push_back(&a);
      idle_bytes = saturating_add(idle_bytes, a.bytes);
    }
    if (idle_bytes < kUnusedMinBytes || static_cast<double>(idle_bytes) < kUnusedShare * static_cast<double>(d.peak_bytes))
      continue;
    const uint64_t first = m.first_ns();
    auto at = [&](uint64_t t) { return "+" + usn(t - std::min(first, t)); };
    const std::string dev = "gpu" + std::to_string(d.device);
    Finding f;
    f.rule = res.rule;
    f.title = dev + ": " + bytes_text(idle_bytes) + " of the " + bytes_text(d.peak_bytes) + " memory peak (" +
              pct(100.0 * static_cast<double>(idle_bytes) / static_cast<double>(d.peak_bytes)) +
              ") is held by " + std::to_string(idle.size()) + (idle.size() == 1 ? " allocation" : " allocations") +
              " that nothing used from then on";
    f.condition = "at the device's memory peak, allocations that no kernel, copy, memset or NCCL call was given from "
                  "then on, each held so for at least " + pct(100 * kUnusedSpanShare) + " of the capture, hold at least " +
                  pct(100 * kUnusedShare) + " of the memory in use and " + bytes_text(kUnusedMinBytes) +
                  " (uses recorded with GPUHOOK_MEM_USE)";
    f.evidence.push_back("peak " + bytes_text(d.peak_bytes) + " at " + at(d.peak_ns) + "; the capture spans " + usn(span));
    for (size_t i = 0; i < idle.size() && i < 3; ++i) {
      const LiveAllocation& a = *idle[i];
      std::string line = bytes_text(a.bytes) + " (" + utf8_clean(a.category) + ") allocated at " + at(a.alloc_ns);
      if (a.uses == 0) {
        line += ", never given to a kernel, copy, memset or NCCL call";
      } else {
        line += ", last used at " + at(a.last_use_ns);
        // The call of the last use: the kernel, copy or memset with its correlation id.
        for (size_t e = 0; a.last_use_correlation != 0 && e < m.events.size(); ++e) {
          if (m.events.capture[e] == d.capture && m.events.correlation_id[e] == a.last_use_correlation) {
            line += " by " + utf8_clean(std::string(m.display_name(static_cast<uint32_t>(e))));
            break;
          }
        }
        line += " (" + std::to_string(a.uses) + (a.uses == 1 ? " use" : " uses") + " recorded)";
      }
      line += ", then held unused for " + usn(a.idle_ns) + (a.freed_ns != 0 ? " until freed at " + at(a.freed_ns)
                                                                             : " to the end of the capture");
      f.evidence.push_back(std::move(line));
    }
    if (idle.size() > 3) f.evidence.push_back(std::to_string(idle.size() - 3) + " more such allocations");
    f.fix = "free each allocation after its last use (cudaFree, cudaFreeAsync; in a framework, drop the last "
            "reference) or reuse it for the later phase; `stats --by memory` gives the last use of each allocation "
            "live at the peak";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!recorded) {
    res.note = "which allocations calls were given was not recorded (GPUHOOK_MEM_USE=1 records it)";
  } else if (!res.fired) {
    res.note = "no device's memory peak held " + pct(100 * kUnusedShare) + " or more in allocations unused from then on";
    if (behind_graphs != 0)
      res.note += " (" + std::to_string(behind_graphs) + " allocations last used before a CUDA graph ran not judged)";
    if (capped != 0)
      res.note += " (" + std::to_string(capped) + " devices not judged: their capture has more memory uses than the "
                  "loader reads)";
  }
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
