// The diagnose rule memory shows: what dominated a device's memory peak (analysis/memory.h).
#include <algorithm>

#include "gantt/analysis/memory.h"
#include "gantt/analysis/table.h"
#include "gantt/text.h"
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

}  // namespace gantt::analysis::detail
