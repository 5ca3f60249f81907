// The diagnose rules the GPU's own counters show: clocks the hardware lowered while work ran,
// and kernels that held the GPU while its SMs sat mostly idle (analysis/metrics.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <tuple>

#include "gantt/analysis/metrics.h"
#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "diagnose_rules.h"

namespace gantt::analysis::detail {
namespace v1 = gpuhook::v1;

// ---------------------------------------------------------------- 12. throttled
// A throttle stretch shorter than this is a blip of the power controller, not a cause.
constexpr uint64_t kThrottleMinNs = 20'000'000;
// Kernels named as evidence per stretch.
constexpr size_t kThrottleKernels = 3;


ThrottleKernels::ThrottleKernels(const Model& samples) {
  for (const ClockDrop& d : clock_drops(samples))
    if (d.end_ns - d.start_ns >= kThrottleMinNs) stretches_.push_back({d, {}, 0, {}});
}

bool ThrottleKernels::wants(uint16_t capture, uint32_t device) const {
  return std::any_of(stretches_.begin(), stretches_.end(),
                     [&](const Stretch& s) { return s.drop.capture == capture && s.drop.device == device; });
}

void ThrottleKernels::add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name) {
  if (start == 0) return;
  for (Stretch& s : stretches_) {
    const ClockDrop& d = s.drop;
    if (d.capture != capture || d.device != device) continue;
    const uint64_t a = std::max(start, d.start_ns), b = std::min(end, d.end_ns);
    if (b > a) {
      auto it = s.inside.find(name);
      if (it == s.inside.end()) it = s.inside.emplace(std::string(name), 0).first;
      it->second += b - a;
      s.busy_ns += b - a;
    }
    if (end <= start) continue;
    // The same kernel's runs that started inside the stretch against those that started
    // outside it on the same device: what the lower clock cost, measured.
    auto it = s.runs.find(name);
    if (it == s.runs.end()) it = s.runs.emplace(std::string(name), Runs{}).first;
    const bool inside = start >= d.start_ns && start < d.end_ns;
    (inside ? it->second.in_ns : it->second.out_ns) += end - start;
    ++(inside ? it->second.in_n : it->second.out_n);
  }
}

void ThrottleKernels::absorb(const ThrottleKernels& other) {
  for (size_t i = 0; i < stretches_.size() && i < other.stretches_.size(); ++i) {
    Stretch& s = stretches_[i];
    const Stretch& o = other.stretches_[i];
    for (const auto& [name, ns] : o.inside) s.inside[name] += ns;
    s.busy_ns += o.busy_ns;
    for (const auto& [name, runs] : o.runs) {
      Runs& to = s.runs[name];
      to.in_ns += runs.in_ns, to.in_n += runs.in_n, to.out_ns += runs.out_ns, to.out_n += runs.out_n;
    }
  }
}

ThrottleKernels throttle_kernels(const Model& m) {
  ThrottleKernels out(m);
  if (out.empty()) return out;
  const EventTable& e = m.events;
  for (uint32_t i = 0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel && out.wants(e.capture[i], e.device[i]))
      out.add(e.capture[i], e.device[i], e.start_ns[i], e.end_ns[i], m.display_name(i));
  return out;
}

void rule_throttled(const Model& m, DiagnoseReport& r) { rule_throttled(m, throttle_kernels(m), r); }

void rule_throttled(const Model& m, const ThrottleKernels& kernels, DiagnoseReport& r) {
  RuleResult res{"throttled", false, ""};
  if (m.metrics.size() == 0) {
    res.note = "no GPU metrics recorded (NVML missing, or GPUHOOK_NVML_HZ=0)";
    r.rules.push_back(res);
    return;
  }
  for (const ThrottleKernels::Stretch& s : kernels.stretches()) {
    const ClockDrop& d = s.drop;
    if (s.inside.empty()) continue;  // nothing of the program's ran slower
    std::vector<std::pair<uint64_t, std::string>> top;
    for (const auto& [name, ns] : s.inside) top.emplace_back(ns, name);
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
      const auto runs = s.runs.find(top[i].second);
      const ThrottleKernels::Runs rn = runs == s.runs.end() ? ThrottleKernels::Runs{} : runs->second;
      std::string line = utf8_clean(top[i].second) + " ran " + usn(top[i].first) + " inside it";
      if (rn.in_n != 0 && rn.out_n != 0 && rn.out_ns != 0) {
        const double in_mean = static_cast<double>(rn.in_ns) / static_cast<double>(rn.in_n);
        const double out_mean = static_cast<double>(rn.out_ns) / static_cast<double>(rn.out_n);
        line += "; its " + std::to_string(rn.in_n) + " runs that started inside took " + usn(static_cast<uint64_t>(in_mean)) +
                " on average, its " + std::to_string(rn.out_n) + " others " + usn(static_cast<uint64_t>(out_mean)) + " (" +
                fixed(in_mean / out_mean, 2) + "x)";
      }
      f.evidence.push_back(line);
    }
    const uint64_t busy_ns = s.busy_ns;
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

// ---------------------------------------------------------------- 14. stalled
// PM sampling's SM active (sm__cycles_active, GPUHOOK_METRICS=sm_active) while a kernel ran,
// under this: the kernel holds the GPU but its SMs mostly have no warp in flight.
constexpr double kStalledSmActivePct = 30;
// A kernel name needs this many samples inside its runs (10 kHz: 0.5 ms of it) and this share
// of the device's kernel time to be worth a finding.
constexpr uint64_t kStalledMinSamples = 5;
constexpr double kStalledMinShare = 0.05;
// DRAM read + write at or above this share of peak while it ran: memory-bound, else latency-bound.
constexpr double kStalledDramPct = 40;
constexpr size_t kStalledKernels = 5;  // findings per device

StallKernels::StallKernels(const Model& samples) {
  const std::vector<MetricSeries> all = metric_series(samples);
  const MetricTable& mt = samples.metrics;
  const auto centi = [&](size_t i) { return std::min<uint64_t>(mt.value[i], 10000); };
  for (const MetricSeries& s : all) {
    if (s.metric != v1::GPU_METRIC_SM_ACTIVE_CENTIPCT || s.end <= s.begin) continue;
    auto out = std::make_shared<Samples>();
    out->capture = s.capture;
    out->device = s.device;
    // DRAM read and write from the same PM sample (one record: the same time).
    std::vector<const MetricSeries*> dram;
    for (const MetricSeries& x : all)
      if (x.capture == s.capture && x.device == s.device &&
          (x.metric == v1::GPU_METRIC_DRAM_READ_CENTIPCT || x.metric == v1::GPU_METRIC_DRAM_WRITE_CENTIPCT))
        dram.push_back(&x);
    out->sm_sum.push_back(0), out->dram_sum.push_back(0), out->dram_n.push_back(0);
    for (size_t i = s.begin; i < s.end; ++i) {
      const uint64_t t = mt.time_ns[i];
      uint64_t d = 0;
      bool has_dram = false;
      for (const MetricSeries* x : dram) {
        const auto first = mt.time_ns.begin() + static_cast<std::ptrdiff_t>(x->begin);
        const auto last = mt.time_ns.begin() + static_cast<std::ptrdiff_t>(x->end);
        const auto it = std::lower_bound(first, last, t);
        if (it == last || *it != t) continue;
        d += centi(static_cast<size_t>(it - mt.time_ns.begin()));
        has_dram = true;
      }
      out->time_ns.push_back(t);
      out->sm_sum.push_back(out->sm_sum.back() + centi(i));
      out->dram_sum.push_back(out->dram_sum.back() + (has_dram ? std::min<uint64_t>(d, 10000) : 0));
      out->dram_n.push_back(out->dram_n.back() + (has_dram ? 1 : 0));
    }
    series_.push_back(Series{std::move(out), 0, {}});
  }
}

bool StallKernels::wants(uint16_t capture, uint32_t device) const {
  return std::any_of(series_.begin(), series_.end(),
                     [&](const Series& s) { return s.samples->capture == capture && s.samples->device == device; });
}

void StallKernels::add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name,
                       float occupancy) {
  if (start == 0 || end <= start) return;
  for (Series& s : series_) {
    if (s.samples->capture != capture || s.samples->device != device) continue;
    auto it = s.names.find(name);
    if (it == s.names.end()) it = s.names.emplace(std::string(name), Name{}).first;
    Name& n = it->second;
    n.ns += end - start, ++n.runs;
    s.kernel_ns += end - start;
    if (std::isfinite(occupancy)) n.occupancy_sum += occupancy, ++n.occupancy_n;
    // The samples it ran at: taken at or after its start, before its end.
    const std::vector<uint64_t>& times = s.samples->time_ns;
    const auto first = std::lower_bound(times.begin(), times.end(), start);
    const auto last = std::lower_bound(first, times.end(), end);
    if (last > first) n.samples.add(static_cast<uint64_t>(first - times.begin()), static_cast<uint64_t>(last - times.begin()));
  }
}

void StallKernels::absorb(const StallKernels& other) {
  for (size_t i = 0; i < series_.size() && i < other.series_.size(); ++i) {
    Series& s = series_[i];
    s.kernel_ns += other.series_[i].kernel_ns;
    for (const auto& [name, o] : other.series_[i].names) {
      Name& n = s.names[name];
      n.ns += o.ns, n.runs += o.runs, n.occupancy_sum += o.occupancy_sum, n.occupancy_n += o.occupancy_n;
      n.samples.absorb(o.samples);
    }
  }
}

StallKernels stall_kernels(const Model& m) {
  StallKernels out(m);
  if (out.empty()) return out;
  const EventTable& e = m.events;
  for (uint32_t i = 0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel && out.wants(e.capture[i], e.device[i]))
      out.add(e.capture[i], e.device[i], e.start_ns[i], e.end_ns[i], m.display_name(i), e.occupancy[i]);
  return out;
}

void rule_stalled(const Model& m, DiagnoseReport& r) { rule_stalled(m, stall_kernels(m), r); }

void rule_stalled(const Model& m, const StallKernels& kernels, DiagnoseReport& r) {
  RuleResult res{"stalled", false, ""};
  if (kernels.empty()) {
    res.note = "no SM-active samples: record with GPUHOOK_METRICS=sm_active,dram_read,dram_write (or `gantt-cli record "
               "--metrics sm_active,dram_read,dram_write`); CUPTI PM sampling needs profiling permission "
               "(NVreg_RestrictProfilingToAdminUsers=0, or root)";
    r.rules.push_back(res);
    return;
  }
  for (const StallKernels::Series& s : kernels.series()) {
    if (s.names.empty() || s.kernel_ns == 0) continue;
    const uint64_t kernel_ns = s.kernel_ns;
    // Per name: SM active and DRAM read + write summed over the samples taken while it ran.
    struct Acc {
      uint64_t sm = 0, n = 0, dram = 0, dram_n = 0;
    };
    std::map<std::string, Acc, std::less<>> acc;
    for (const auto& [name, n] : s.names) {
      Acc a;
      const StallKernels::Samples& x = *s.samples;
      for (const auto& [lo, hi] : n.samples.spans()) {
        a.sm += x.sm_sum[hi] - x.sm_sum[lo], a.n += hi - lo;
        a.dram += x.dram_sum[hi] - x.dram_sum[lo], a.dram_n += x.dram_n[hi] - x.dram_n[lo];
      }
      if (a.n != 0) acc[name] = a;
    }
    // The stalled names, the most kernel time first.
    const auto mean_pct = [](uint64_t centi, uint64_t n) { return static_cast<double>(centi) / 100.0 / static_cast<double>(n); };
    std::vector<std::pair<uint64_t, std::string>> hits;
    for (const auto& [name, a] : acc) {
      const uint64_t ns = s.names.find(name)->second.ns;
      if (a.n < kStalledMinSamples || mean_pct(a.sm, a.n) >= kStalledSmActivePct) continue;
      if (static_cast<double>(ns) < kStalledMinShare * static_cast<double>(kernel_ns)) continue;
      hits.emplace_back(ns, name);
    }
    std::stable_sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const std::string dev = device_label(m.captures.size(), s.samples->capture, s.samples->device);
    for (size_t h = 0; h < hits.size() && h < kStalledKernels; ++h) {
      const std::string& name = hits[h].second;
      const Acc& a = acc[name];
      const StallKernels::Name& n = s.names.find(name)->second;
      const double mean_sm = mean_pct(a.sm, a.n);
      const bool dram_known = a.dram_n != 0;
      const double mean_dram = dram_known ? mean_pct(a.dram, a.dram_n) : 0;
      const bool memory_bound = dram_known && mean_dram >= kStalledDramPct;
      Finding f;
      f.rule = res.rule;
      f.title = dev + ": " + utf8_clean(name) + " ran with its SMs mostly idle (SM active " + fixed(mean_sm, 1) + "%" +
                (dram_known ? std::string(memory_bound ? ", memory-bound" : ", latency-bound") : std::string()) + ")";
      f.condition = "PM sampling's SM active averaged under " + fixed(kStalledSmActivePct, 0) + "% over at least " +
                    std::to_string(kStalledMinSamples) + " samples taken while the kernel ran, and the kernel took at least " +
                    fixed(100 * kStalledMinShare, 0) + "% of the device's kernel time";
      f.evidence.push_back("SM active " + fixed(mean_sm, 1) + "% on average over " + std::to_string(a.n) +
                           " samples while it ran");
      f.evidence.push_back(std::to_string(n.runs) + " runs, " + usn(n.ns) + " in all: " +
                           fixed(100.0 * static_cast<double>(n.ns) / static_cast<double>(kernel_ns), 1) +
                           "% of the device's kernel time");
      if (dram_known)
        f.evidence.push_back("DRAM read + write " + fixed(mean_dram, 1) + "% of peak while it ran (" +
                             (memory_bound ? "at or above " : "under ") + fixed(kStalledDramPct, 0) + "%: " +
                             (memory_bound ? "waiting on memory bandwidth" : "neither the SMs nor DRAM busy: latency") + ")");
      else
        f.evidence.push_back("DRAM throughput not sampled: add dram_read,dram_write to GPUHOOK_METRICS to tell "
                             "memory-bound from latency-bound");
      if (n.occupancy_n != 0)
        f.evidence.push_back("theoretical occupancy " + fixed(100 * n.occupancy_sum / static_cast<double>(n.occupancy_n), 0) +
                             "% (the launch shape allows it; the SMs did not use it)");
      f.fix = memory_bound
                  ? "the kernel waits on DRAM: make its accesses coalesced (neighbouring threads read neighbouring "
                    "addresses; sort or bucket gather indices), reuse data through shared memory or L2, fuse it with "
                    "its neighbours so the data is read once, or move fewer bytes (lower precision)"
                  : "the kernel waits on latency: give each SM more independent work (more blocks or more work per "
                    "thread, fewer dependent loads in a chain), cut atomics and in-kernel synchronisation, and check "
                    "`ncu --section WarpStateStats` for the stall reason";
      r.findings.push_back(std::move(f));
      res.fired = true;
    }
  }
  if (!res.fired)
    res.note = "no kernel with SM active under " + fixed(kStalledSmActivePct, 0) + "% while it ran (of those with " +
               std::to_string(kStalledMinSamples) + "+ samples and " + fixed(100 * kStalledMinShare, 0) +
               "%+ of the kernel time)";
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
