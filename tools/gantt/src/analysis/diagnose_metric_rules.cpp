// The diagnose rule the GPU's own counters show: clocks the hardware lowered while work ran
// (analysis/metrics.h).
#include <algorithm>
#include <map>

#include "gantt/analysis/metrics.h"
#include "gantt/analysis/table.h"
#include "gantt/text.h"
#include "diagnose_rules.h"

namespace gantt::analysis::detail {

// ---------------------------------------------------------------- 12. throttled
// A throttle stretch shorter than this is a blip of the power controller, not a cause.
constexpr uint64_t kThrottleMinNs = 20'000'000;
// Kernels named as evidence per stretch.
constexpr size_t kThrottleKernels = 3;

void rule_throttled(const Model& m, DiagnoseReport& r) {
  RuleResult res{"throttled", false, ""};
  if (m.metrics.size() == 0) {
    res.note = "no GPU metrics recorded (NVML missing, or GPUHOOK_NVML_HZ=0)";
    r.rules.push_back(res);
    return;
  }
  for (const ClockDrop& d : clock_drops(m)) {
    if (d.end_ns - d.start_ns < kThrottleMinNs) continue;
    // The kernels that ran on that device inside the stretch, by their time inside it.
    std::map<std::string, uint64_t> inside;
    uint64_t busy_ns = 0;
    const EventTable& e = m.events;
    for (uint32_t i = 0; i < e.size(); ++i) {
      if (e.kind[i] != EventKind::kKernel || e.capture[i] != d.capture || e.device[i] != d.device) continue;
      const uint64_t a = std::max(e.start_ns[i], d.start_ns), b = std::min(e.end_ns[i], d.end_ns);
      if (e.start_ns[i] == 0 || b <= a) continue;
      inside[std::string(m.display_name(i))] += b - a;
      busy_ns += b - a;
    }
    if (inside.empty()) continue;  // nothing of the program's ran slower
    std::vector<std::pair<uint64_t, std::string>> top;
    for (auto& [name, ns] : inside) top.emplace_back(ns, name);
    std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const std::string dev = device_label(m.captures.size(), d.capture, d.device);
    Finding f;
    f.rule = res.rule;
    f.title = dev + ": " + clock_drop_text(d);
    f.condition = "NVML reported a throttle reason (power cap, thermal, HW slowdown or power brake) for at least " +
                  usn(kThrottleMinNs) + " while kernels ran, and the SM clock was lower than before it";
    f.evidence.push_back("from +" + usn(d.start_ns - std::min(d.start_ns, m.first_ns())) + ", " +
                         std::to_string(d.samples) + " samples with the reason set; SM clock " +
                         std::to_string(d.from_mhz) + " MHz before, " + std::to_string(d.to_mhz) + " MHz at the lowest");
    for (size_t i = 0; i < top.size() && i < kThrottleKernels; ++i) {
      // The same kernel's runs that started inside the stretch against those that started
      // outside it on the same device: what the lower clock cost, measured.
      uint64_t in_ns = 0, out_ns = 0, in_n = 0, out_n = 0;
      for (uint32_t k = 0; k < e.size(); ++k) {
        if (e.kind[k] != EventKind::kKernel || e.capture[k] != d.capture || e.device[k] != d.device ||
            e.start_ns[k] == 0 || e.end_ns[k] <= e.start_ns[k] || m.display_name(k) != top[i].second)
          continue;
        const bool inside_drop = e.start_ns[k] >= d.start_ns && e.start_ns[k] < d.end_ns;
        (inside_drop ? in_ns : out_ns) += e.end_ns[k] - e.start_ns[k];
        ++(inside_drop ? in_n : out_n);
      }
      std::string line = utf8_clean(top[i].second) + " ran " + usn(top[i].first) + " inside it";
      if (in_n != 0 && out_n != 0 && out_ns != 0) {
        const double in_mean = static_cast<double>(in_ns) / static_cast<double>(in_n);
        const double out_mean = static_cast<double>(out_ns) / static_cast<double>(out_n);
        line += "; its " + std::to_string(in_n) + " runs that started inside took " + usn(static_cast<uint64_t>(in_mean)) +
                " on average, its " + std::to_string(out_n) + " others " + usn(static_cast<uint64_t>(out_mean)) + " (" +
                fixed(in_mean / out_mean, 2) + "x)";
      }
      f.evidence.push_back(line);
    }
    const double slower = d.to_mhz ? static_cast<double>(d.from_mhz) / static_cast<double>(d.to_mhz) : 0;
    if (slower > 1)
      f.evidence.push_back("compute-bound kernels in it run up to " + fixed(slower, 2) + "x longer than at " +
                           std::to_string(d.from_mhz) + " MHz (" + usn(busy_ns) + " of kernel time affected)");
    f.fix = (d.reasons & 0x4) != 0
                ? "the board hit its power limit: compare `nvidia-smi -q -d POWER` (limit, draw) with the default limit, "
                  "check that no one lowered it (nvidia-smi -pl), and for benchmarks lock the clocks (nvidia-smi -lgc) "
                  "below the power-limited clock so every run sees the same one"
                : "the GPU protected itself from heat or an electrical limit: check cooling and airflow "
                  "(`nvidia-smi -q -d TEMPERATURE,PERFORMANCE`), the node's power supply, and neighbours' load";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  if (!res.fired) res.note = "no throttle stretch of " + usn(kThrottleMinNs) + " or more with kernels running";
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
