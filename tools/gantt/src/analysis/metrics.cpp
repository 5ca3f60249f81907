#include "gantt/analysis/metrics.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace v1 = gpuhook::v1;

namespace {

const MetricInfo kInfo[kMetricCount] = {
    {nullptr, nullptr, 0},
    {"gpu_util_pct", "GPU util %", 1},
    {"memory_util_pct", "mem util %", 1},
    {"memory_used_gib", "mem used GiB", 1.0 / (1024.0 * 1024.0 * 1024.0)},
    {"sm_clock_mhz", "SM MHz", 1},
    {"memory_clock_mhz", "mem MHz", 1},
    {"power_w", "power W", 1e-3},
    {"temperature_c", "temp C", 1},
    {"clocks_event_reasons", "reasons", 1},
    {"pcie_tx_mbps", "PCIe TX MB/s", 1e-3},
    {"pcie_rx_mbps", "PCIe RX MB/s", 1e-3},
    // PM sampling: hundredths of a percent, shown as percent.
    {"gr_active_pct", "GR active %", 0.01},
    {"sm_active_pct", "SM active %", 0.01},
    {"sm_occupancy_pct", "SM occup. %", 0.01},
    {"tensor_active_pct", "tensor %", 0.01},
    {"dram_read_pct", "DRAM rd %", 0.01},
    {"dram_write_pct", "DRAM wr %", 0.01},
    {"pcie_rx_pct", "PCIe RX %", 0.01},
    {"pcie_tx_pct", "PCIe TX %", 0.01},
    {"nvlink_rx_pct", "NVLink RX %", 0.01},
    {"nvlink_tx_pct", "NVLink TX %", 0.01},
};

// The value of `metric` on (capture, device) at the sample nearest `t` read at the same moment
// (one read gives every counter the same time), or -1.
int64_t same_read(const Model& m, const MetricSeries& s, uint64_t t) {
  const auto& times = m.metrics.time_ns;
  auto first = times.begin() + static_cast<std::ptrdiff_t>(s.begin);
  auto last = times.begin() + static_cast<std::ptrdiff_t>(s.end);
  auto it = std::lower_bound(first, last, t);
  if (it == last || *it != t) return -1;
  return static_cast<int64_t>(m.metrics.value[static_cast<size_t>(it - times.begin())]);
}

const MetricSeries* find_series(const std::vector<MetricSeries>& all, uint16_t capture, uint32_t device, int metric) {
  for (const MetricSeries& s : all)
    if (s.capture == capture && s.device == device && s.metric == metric) return &s;
  return nullptr;
}

std::string ghz(uint64_t mhz) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(mhz) / 1000.0);
  return text;
}

std::string duration_text(uint64_t ns) {
  char text[32];
  if (ns >= 10'000'000'000u) std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000u) std::snprintf(text, sizeof text, "%.0f ms", static_cast<double>(ns) / 1e6);
  else std::snprintf(text, sizeof text, "%.0f us", static_cast<double>(ns) / 1e3);
  return text;
}

}  // namespace

const MetricInfo* metric_info(int metric) {
  if (metric <= 0 || metric >= kMetricCount) return nullptr;
  return &kInfo[metric];
}

std::vector<MetricSeries> metric_series(const Model& m) {
  std::vector<MetricSeries> out;
  const MetricTable& mt = m.metrics;
  for (size_t i = 0; i < mt.size();) {
    size_t j = i + 1;
    while (j < mt.size() && mt.capture[j] == mt.capture[i] && mt.device[j] == mt.device[i] && mt.metric[j] == mt.metric[i])
      ++j;
    out.push_back({mt.capture[i], mt.device[i], mt.metric[i], i, j});
    i = j;
  }
  return out;
}

std::string throttle_reason_text(uint64_t mask) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x4, "power cap"}, {0x8, "HW slowdown"}, {0x20, "thermal (SW)"}, {0x40, "thermal (HW)"}, {0x80, "power brake"}};
  std::string out;
  for (const auto& [bit, name] : kNames)
    if ((mask & bit) != 0) out += (out.empty() ? "" : " + ") + std::string(name);
  return out.empty() ? "no throttle reason" : out;
}

std::vector<ClockDrop> clock_drops(const Model& m) {
  std::vector<ClockDrop> out;
  const std::vector<MetricSeries> all = metric_series(m);
  for (const MetricSeries& reasons : all) {
    if (reasons.metric != v1::GPU_METRIC_CLOCKS_EVENT_REASONS) continue;
    const MetricSeries* sm = find_series(all, reasons.capture, reasons.device, v1::GPU_METRIC_SM_CLOCK_MHZ);
    uint64_t top_mhz = 0;
    if (sm != nullptr)
      for (size_t i = sm->begin; i < sm->end; ++i) top_mhz = std::max(top_mhz, m.metrics.value[i]);
    uint64_t last_good_mhz = 0;
    ClockDrop open;
    bool in_drop = false;
    for (size_t i = reasons.begin; i < reasons.end; ++i) {
      const uint64_t t = m.metrics.time_ns[i];
      const uint64_t mask = m.metrics.value[i];
      const int64_t mhz = sm != nullptr ? same_read(m, *sm, t) : -1;
      if ((mask & kThrottleReasons) != 0) {
        if (!in_drop) {
          open = ClockDrop{reasons.capture, reasons.device, t, t, last_good_mhz != 0 ? last_good_mhz : top_mhz,
                           mhz >= 0 ? static_cast<uint64_t>(mhz) : 0, 0, 0};
          in_drop = true;
        }
        open.end_ns = t;
        open.reasons |= mask & kThrottleReasons;
        open.samples++;
        if (mhz >= 0 && (open.to_mhz == 0 || static_cast<uint64_t>(mhz) < open.to_mhz)) open.to_mhz = static_cast<uint64_t>(mhz);
        continue;
      }
      if (in_drop) {
        open.end_ns = t;  // throttled until this read saw it lifted
        if (open.to_mhz < open.from_mhz) out.push_back(open);
        in_drop = false;
      }
      // An idle GPU's low clock is rest, not the clock a busy one runs at.
      if ((mask & 0x1) == 0 && mhz > 0) last_good_mhz = static_cast<uint64_t>(mhz);
    }
    if (in_drop && open.to_mhz < open.from_mhz) out.push_back(open);
  }
  return out;
}

std::string clock_drop_text(const ClockDrop& d) {
  return throttle_reason_text(d.reasons) + ": SM clock " + ghz(d.from_mhz) + " -> " + ghz(d.to_mhz) + " GHz during " +
         duration_text(d.end_ns - d.start_ns);
}

KernelsAtSamples::KernelsAtSamples(const Model& samples) {
  const MetricTable& mt = samples.metrics;
  for (size_t i = 0; i < mt.size(); ++i) series_[{mt.capture[i], mt.device[i]}].times.push_back(mt.time_ns[i]);
  for (auto& [key, s] : series_) {
    std::sort(s.times.begin(), s.times.end());
    s.times.erase(std::unique(s.times.begin(), s.times.end()), s.times.end());
    s.names.resize(s.times.size());
  }
}

const KernelsAtSamples::Series* KernelsAtSamples::find(uint16_t capture, uint32_t device) const {
  const auto it = series_.find({capture, device});
  return it == series_.end() ? nullptr : &it->second;
}

bool KernelsAtSamples::covers_sample(uint16_t capture, uint32_t device, uint64_t start, uint64_t end) const {
  const Series* s = find(capture, device);
  if (s == nullptr || end <= start) return false;
  const auto first = std::lower_bound(s->times.begin(), s->times.end(), start);
  return first != s->times.end() && *first < end;
}

void KernelsAtSamples::add(uint16_t capture, uint32_t device, uint64_t start, uint64_t end, std::string_view name) {
  const auto found = series_.find({capture, device});
  if (found == series_.end() || end <= start) return;
  Series& s = found->second;
  const auto first = std::lower_bound(s.times.begin(), s.times.end(), start);
  const auto last = std::lower_bound(first, s.times.end(), end);
  if (first == last) return;  // no sample read while it ran
  const std::lock_guard<std::mutex> lock(*mu_);
  auto [it, added] = ids_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(it->first);
  for (auto t = first; t != last; ++t) {
    std::vector<uint32_t>& at = s.names[static_cast<size_t>(t - s.times.begin())];
    if (std::find(at.begin(), at.end(), it->second) == at.end()) at.push_back(it->second);
  }
}

std::vector<std::string_view> KernelsAtSamples::at(uint16_t capture, uint32_t device, uint64_t t) const {
  std::vector<std::string_view> out;
  const Series* s = find(capture, device);
  if (s == nullptr) return out;
  const auto it = std::lower_bound(s->times.begin(), s->times.end(), t);
  if (it == s->times.end() || *it != t) return out;
  for (uint32_t id : s->names[static_cast<size_t>(it - s->times.begin())]) out.push_back(names_[id]);
  std::sort(out.begin(), out.end());
  return out;
}

KernelsAtSamples kernels_at_samples(const Model& m) {
  KernelsAtSamples at(m);
  const EventTable& e = m.events;
  for (uint32_t i = 0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel && e.start_ns[i] != 0 && e.end_ns[i] > e.start_ns[i])
      at.add(e.capture[i], e.device[i], e.start_ns[i], e.end_ns[i], m.display_name(i));
  return at;
}

std::vector<MetricStatsRow> metric_stats(const Model& m) { return metric_stats(m, kernels_at_samples(m)); }

std::vector<MetricStatsRow> metric_stats(const Model& m, const KernelsAtSamples& kernels) {
  std::map<std::tuple<uint16_t, uint32_t, int, std::string>, MetricStatsRow> rows;  // int: 0 all, 1 any, 2 none, 3 named
  auto row = [&](uint16_t c, uint32_t d, int order, std::string_view group) -> MetricStatsRow& {
    MetricStatsRow& r = rows[{c, d, order, std::string(group)}];
    r.capture = c, r.device = d, r.group = std::string(group);
    return r;
  };
  for (const MetricSeries& s : metric_series(m)) {
    if (s.metric <= 0 || s.metric >= kMetricCount) continue;
    for (size_t i = s.begin; i < s.end; ++i) {
      const uint64_t v = m.metrics.value[i];
      auto add = [&](MetricStatsRow& r) {
        r.samples[s.metric]++;
        if (s.metric == v1::GPU_METRIC_CLOCKS_EVENT_REASONS) {
          if ((v & kThrottleReasons) != 0) r.throttled++;
        } else {
          r.sum[s.metric] += static_cast<double>(v);
        }
      };
      add(row(s.capture, s.device, 0, "(all)"));
      const std::vector<std::string_view> names = kernels.at(s.capture, s.device, m.metrics.time_ns[i]);
      if (names.empty()) {
        add(row(s.capture, s.device, 2, "(no kernel)"));
        continue;
      }
      add(row(s.capture, s.device, 1, "(any kernel)"));
      for (std::string_view n : names) add(row(s.capture, s.device, 3, n));
    }
  }
  std::vector<MetricStatsRow> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) out.push_back(std::move(r));
  return out;
}

std::string format_metric_stats(const Model& m, const std::vector<MetricStatsRow>& rows, Format format) {
  // The counters a row shows, in this order; reasons become "throttled %".
  // NVML's always (a capture without any shows "-"), PM sampling's only those some row has.
  std::vector<int> shown = {v1::GPU_METRIC_GPU_UTIL_PERCENT, v1::GPU_METRIC_MEMORY_UTIL_PERCENT, v1::GPU_METRIC_SM_CLOCK_MHZ,
                            v1::GPU_METRIC_MEMORY_CLOCK_MHZ, v1::GPU_METRIC_POWER_MW,           v1::GPU_METRIC_TEMPERATURE_C,
                            v1::GPU_METRIC_MEMORY_USED_BYTES, v1::GPU_METRIC_PCIE_TX_KBPS,      v1::GPU_METRIC_PCIE_RX_KBPS};
  for (int k = kFirstPmMetric; k < kMetricCount; ++k)
    if (std::any_of(rows.begin(), rows.end(), [k](const MetricStatsRow& r) { return r.samples[k] != 0; })) shown.push_back(k);
  if (format == Format::kJson) {
    std::string out = "{\"metrics\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const MetricStatsRow& r = rows[i];
      out += (i ? "," : "") + std::string("{\"capture\":") + std::to_string(r.capture) +
             ",\"device\":" + std::to_string(r.device) + ",\"group\":" + gantt::json::quoted(r.group);
      for (int k : shown) {
        if (r.samples[k] == 0) continue;
        out += ",\"" + std::string(kInfo[k].key) + "\":" + fixed(r.mean(k) * kInfo[k].scale, 3) + ",\"" + kInfo[k].key +
               "_samples\":" + std::to_string(r.samples[k]);
      }
      const uint64_t n = r.samples[v1::GPU_METRIC_CLOCKS_EVENT_REASONS];
      if (n != 0) out += ",\"throttled_pct\":" + fixed(100.0 * static_cast<double>(r.throttled) / static_cast<double>(n), 1);
      out += "}";
    }
    return out + "]}\n";
  }
  if (rows.empty() && format != Format::kCsv)
    return "no GPU metrics recorded in the capture(s) (NVML missing, or GPUHOOK_NVML_HZ=0)\n";
  Table t;
  t.header = {"device", "while", "samples"};
  for (int k : shown) t.header.push_back(kInfo[k].label);
  t.header.push_back("throttled %");
  t.right.assign(t.header.size(), true);
  t.right[0] = t.right[1] = false;
  for (const MetricStatsRow& r : rows) {
    std::vector<std::string> cells = {device_label(m.captures.size(), r.capture, r.device), utf8_clean(r.group)};
    uint64_t samples = 0;
    for (int k : shown) samples = std::max(samples, r.samples[k]);
    cells.push_back(std::to_string(samples));
    for (int k : shown) {
      const int decimals = k == v1::GPU_METRIC_MEMORY_USED_BYTES ? 2 : 1;
      cells.push_back(r.samples[k] ? fixed(r.mean(k) * kInfo[k].scale, decimals) : "-");
    }
    const uint64_t n = r.samples[v1::GPU_METRIC_CLOCKS_EVENT_REASONS];
    cells.push_back(n ? fixed(100.0 * static_cast<double>(r.throttled) / static_cast<double>(n), 1) : "-");
    t.rows.push_back(std::move(cells));
  }
  if (format == Format::kCsv) return to_csv(t);
  const bool md = format == Format::kMarkdown;
  std::string out = md ? to_markdown(t) : to_text(t);
  // A capture's path starts the line: in Markdown, its own paragraph.
  const auto line = [md](const std::string& s) { return md ? "\n" + markdown_text(s, true) + "\n" : s + "\n"; };
  for (size_t c = 0; c < m.captures.size(); ++c)
    if (m.captures[c].metric_samples_left_out != 0)
      out += line(m.captures[c].path + ": " + std::to_string(m.captures[c].metric_samples_left_out) +
                  " samples left out (a counter this version does not know, a device number past 4095, no time, or past " +
                  std::to_string(MetricTable::kMaxRowsPerCapture) + " samples)");
  std::vector<ClockDrop> drops = clock_drops(m);
  for (const ClockDrop& d : drops)
    out += line(device_label(m.captures.size(), d.capture, d.device) + " at +" +
                us(static_cast<int64_t>(d.start_ns - std::min(d.start_ns, m.first_ns()))) + " us: " + clock_drop_text(d));
  return out;
}

}  // namespace gantt::analysis
