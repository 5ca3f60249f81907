// DCGM metrics beside the jobs (gantt/jobs/jobs_metrics.h): the Prometheus CSV forms read as
// untrusted text, the samples bucketed per node, the drops found with the timeline's rule.
#include "gantt/jobs/jobs_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "gantt/model/text.h"

namespace gantt::jobs {
namespace {

constexpr const char* kNames[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"};
static_assert(std::size(kNames) == static_cast<size_t>(MetricKind::kCount));

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return o;
}

int kind_of(std::string_view name) {
  for (size_t k = 0; k < std::size(kNames); ++k)
    if (name == kNames[k]) return static_cast<int>(k);
  return -1;
}

bool parse_double(std::string_view s, double* v) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Prometheus writes Unix seconds with a fraction; a dashboard export may write a date.
// Past year 5000 or before 1970 is a corrupt cell, not a time: int64 ms would overflow long before
// a double stops being finite.
bool parse_timestamp_ms(std::string_view s, int64_t* ms) {
  double v = 0;
  if (!s.empty() && s.find_first_not_of("0123456789.eE+") == std::string_view::npos) {
    if (!parse_double(s, &v) || !std::isfinite(v) || v < 0 || v > 1e11) return false;
    *ms = std::llround(v * 1000);
    return true;
  }
  int64_t sec = 0;
  if (!parse_wall_time(s, &sec) || sec == kUnknownTime) return false;
  *ms = sec * 1000;
  return true;
}

// A sample's value as a share 0..1, or *why.
bool to_share(MetricKind k, std::string_view cell, float* share, std::string* why) {
  double v = 0;
  const std::string shown = printable_utf8(cell.substr(0, 24));
  if (!parse_double(cell, &v)) return *why = std::string(kNames[size_t(k)]) + " '" + shown + "' is not a number", false;
  if (!std::isfinite(v)) return *why = std::string(kNames[size_t(k)]) + " " + shown + " is not a finite number", false;
  const double top = k == MetricKind::kGpuUtil ? 100 : 1;
  if (v < 0 || v > top)
    return *why = std::string(kNames[size_t(k)]) + " " + shown + " is outside 0.." + (top == 1 ? "1" : "100"), false;
  *share = static_cast<float>(v / top);
  return true;
}

struct MetricColumns {
  int ts = -1, host = -1, gpu = -1, metric = -1, value = -1;
  std::vector<std::pair<int, int>> wide;  // (column, kind) of utilisation series
  std::vector<int> wide_other;            // columns of other DCGM_FI_* series
  size_t needed = 0;
};

const char* const kFormHelp =
    "expected a Prometheus CSV of the DCGM_FI_* series: timestamp,Hostname,gpu,metric,value "
    "(one row per sample) or timestamp,Hostname,gpu,DCGM_FI_DEV_GPU_UTIL,... (a column per series)";

bool read_header(const std::vector<std::string>& cells, MetricColumns* l, std::string* why) {
  int host_rank = 99;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int c = static_cast<int>(i);
    const std::string n = lower(cells[i]);
    if (n == "timestamp" || n == "time" || n == "ts") l->ts = c;
    // dcgm-exporter labels the node Hostname; Prometheus adds instance (host:port); a relabelled
    // scrape often has node or host. The most specific present wins.
    static const char* const kHosts[] = {"hostname", "node", "host", "instance"};
    for (int r = 0; r < 4; ++r)
      if (n == kHosts[r] && r < host_rank) host_rank = r, l->host = c;
    if (n == "gpu") l->gpu = c;
    if (n == "__name__" || n == "metric" || n == "name") l->metric = c;
    if (n == "value") l->value = c;
    if (const int k = kind_of(cells[i]); k >= 0) l->wide.emplace_back(c, k);
    else if (cells[i].rfind("DCGM_FI_", 0) == 0) l->wide_other.push_back(c);
  }
  std::string missing;
  if (l->ts < 0) missing += "a timestamp column";
  if (l->host < 0) missing += std::string(missing.empty() ? "" : ", ") + "a host column (Hostname, instance, node or host)";
  if (l->gpu < 0) missing += std::string(missing.empty() ? "" : ", ") + "a gpu column";
  const bool long_form = l->metric >= 0 && l->value >= 0;
  if (missing.empty() && !long_form && l->wide.empty())
    missing = l->wide_other.empty() ? "metric and value columns, or DCGM_FI_* columns"
                                    : "a utilisation series (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_SM_ACTIVE or "
                                      "DCGM_FI_PROF_GR_ENGINE_ACTIVE)";
  if (!missing.empty()) return *why = "header lacks " + missing + ": " + kFormHelp, false;
  if (long_form) l->wide.clear(), l->wide_other.clear();
  for (int c : {l->ts, l->host, l->gpu, l->metric, l->value}) l->needed = std::max(l->needed, static_cast<size_t>(c + 1));
  for (const auto& [c, k] : l->wide) l->needed = std::max(l->needed, static_cast<size_t>(c + 1));
  return true;
}

// `dcgmi dmon` prints "#Entity   GPUTL ..." then "GPU 0   87 ...": no time, no host.
bool looks_like_dmon(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line.rfind("#Entity", 0) == 0 || line.rfind("# Entity", 0) == 0;
}

}  // namespace

const char* metric_name(MetricKind k) { return k < MetricKind::kCount ? kNames[size_t(k)] : "?"; }

NodeMetrics parse_dcgm_metrics(std::string_view text, std::string source, const JobSet& set, size_t max_samples) {
  max_samples = std::min(max_samples, kMaxMetricSamples);
  NodeMetrics m;
  m.source = std::move(source);
  std::unordered_map<std::string, uint32_t> by_name;
  for (uint32_t n = 0; n < set.nodes.size(); ++n) by_name.emplace(set.nodes[n], n);
  constexpr uint32_t kUnknown = UINT32_MAX;
  std::unordered_map<std::string, uint32_t> host_cache;  // label -> node or kUnknown
  const auto resolve = [&](const std::string& host) {
    if (auto it = host_cache.find(host); it != host_cache.end()) return it->second;
    std::string h = host;
    uint32_t node = kUnknown;
    if (auto it = by_name.find(h); it != by_name.end()) node = it->second;
    if (node == kUnknown && h.rfind(':') != std::string::npos) h.resize(h.rfind(':'));  // instance: host:9400
    if (auto it = by_name.find(h); node == kUnknown && it != by_name.end()) node = it->second;
    if (node == kUnknown && h.find('.') != std::string::npos) h.resize(h.find('.'));  // gpu01.cluster.local
    if (auto it = by_name.find(h); node == kUnknown && it != by_name.end()) node = it->second;
    if (node == kUnknown) {
      ++m.unknown_node_count;
      if (m.unknown_nodes.size() < 3) m.unknown_nodes.push_back(printable_utf8(std::string_view(host).substr(0, 60)));
    }
    host_cache.emplace(host, node);
    return node;
  };
  size_t count[size_t(MetricKind::kCount)] = {};
  MetricColumns layout;
  bool have_header = false;
  std::vector<std::string> cells;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::string why;
    if (!have_header) {
      if (looks_like_dmon(line)) {
        m.problems.push_back({line_no,
                              "this is dcgmi dmon output: it has no timestamps and no host names, so its samples "
                              "cannot be placed on the jobs' nodes and times; export the DCGM_FI_* series with "
                              "dcgm-exporter and save a Prometheus range query as CSV (docs/jobs.md)"});
        return m;
      }
      if (!split_csv(line, &cells, &why) || !read_header(cells, &layout, &why)) {
        m.problems.push_back({line_no, why});
        return m;
      }
      have_header = true;
      continue;
    }
    if (!split_csv(line, &cells, &why)) {
      m.problems.push_back({line_no, why});
      continue;
    }
    if (cells.size() < layout.needed) {
      m.problems.push_back({line_no, std::to_string(cells.size()) + " fields, the header needs " + std::to_string(layout.needed)});
      continue;
    }
    MetricSample base;
    uint64_t gpu = 0;
    const std::string& gpu_cell = cells[size_t(layout.gpu)];
    if (!parse_timestamp_ms(cells[size_t(layout.ts)], &base.t_ms)) {
      why = "timestamp '" + printable_utf8(std::string_view(cells[size_t(layout.ts)]).substr(0, 40)) +
            "' is not Unix seconds (1970 to year 5000) nor a time like 2024-03-01T09:00:00";
    } else if (cells[size_t(layout.host)].empty()) {
      why = "empty host";
    } else if (auto [p, ec] = std::from_chars(gpu_cell.data(), gpu_cell.data() + gpu_cell.size(), gpu);
               ec != std::errc() || p != gpu_cell.data() + gpu_cell.size() || gpu_cell.empty() || gpu >= kMaxMetricGpu) {
      why = "gpu '" + printable_utf8(std::string_view(gpu_cell).substr(0, 24)) + "' is not an index below " +
            std::to_string(kMaxMetricGpu);
    }
    base.gpu = static_cast<uint16_t>(gpu);
    // The samples of this line: one in the long form, one per non-empty series cell in the wide.
    MetricSample out[size_t(MetricKind::kCount)];
    size_t n_out = 0;
    if (why.empty()) {
      if (layout.metric >= 0) {
        const int k = kind_of(cells[size_t(layout.metric)]);
        if (k < 0) {
          ++m.other_series_ignored;
          continue;
        }
        MetricSample s = base;
        s.kind = static_cast<uint8_t>(k);
        if (to_share(MetricKind(k), cells[size_t(layout.value)], &s.share, &why)) out[n_out++] = s;
      } else {
        for (const auto& [col, k] : layout.wide) {
          if (cells[size_t(col)].empty()) continue;  // this series has no sample at this time
          MetricSample s = base;
          s.kind = static_cast<uint8_t>(k);
          if (!to_share(MetricKind(k), cells[size_t(col)], &s.share, &why)) break;
          out[n_out++] = s;
        }
        for (int col : layout.wide_other) m.other_series_ignored += cells.size() > size_t(col) && !cells[size_t(col)].empty();
      }
    }
    if (!why.empty()) {
      m.problems.push_back({line_no, why});
      continue;
    }
    if (n_out == 0) continue;
    if (host_cache.size() >= kMaxMetricHosts && !host_cache.count(cells[size_t(layout.host)])) {
      m.problems.push_back({line_no, "more than " + std::to_string(kMaxMetricHosts) + " hosts: the rest is left out"});
      m.truncated = true;
      break;
    }
    const uint32_t node = resolve(cells[size_t(layout.host)]);
    m.samples_read += n_out;
    if (node == kUnknown) {
      m.unknown_node_samples += n_out;
      continue;
    }
    if (m.samples.size() + n_out > max_samples) {
      m.problems.push_back({line_no, "more than " + std::to_string(max_samples) +
                                         " samples: the rest is left out (query a shorter range or a larger step)"});
      m.truncated = true;
      break;
    }
    for (size_t i = 0; i < n_out; ++i) {
      out[i].node = node;
      ++count[out[i].kind];
      m.samples.push_back(out[i]);
    }
  }
  if (!have_header) m.problems.push_back({0, std::string("no header line: ") + kFormHelp});
  for (size_t k = 0; k < size_t(MetricKind::kCount); ++k)
    if (count[k]) {
      m.kind = MetricKind(k);
      m.has_kind = true;
      break;
    }
  return m;
}

namespace {

// Each node's job runs, sorted: [start, end) in seconds.
std::vector<std::vector<std::pair<int64_t, int64_t>>> runs_by_node(const JobSet& set) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(set.nodes.size());
  for (const Job& j : set.jobs)
    if (j.started())
      for (uint32_t n : j.nodes) runs[n].emplace_back(j.start_s, set.end_of(j));
  for (auto& r : runs) std::sort(r.begin(), r.end());
  return runs;
}

}  // namespace

NodeUtilisation node_utilisation(const JobSet& set, const NodeMetrics& m, int64_t from_s, int64_t to_s) {
  NodeUtilisation u;
  u.nodes.resize(set.nodes.size());
  if (to_s <= from_s) to_s = from_s + 60;
  u.from_s = from_s;
  // The chosen series' samples inside the window, by (node, gpu, time).
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < m.samples.size(); ++i) {
    const MetricSample& s = m.samples[i];
    if (m.has_kind && s.kind == uint8_t(m.kind) && s.t_ms >= from_s * 1000 && s.t_ms < to_s * 1000) idx.push_back(i);
  }
  std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    const MetricSample &x = m.samples[a], &y = m.samples[b];
    return std::tie(x.node, x.gpu, x.t_ms) < std::tie(y.node, y.gpu, y.t_ms);
  });
  std::vector<int64_t> steps;
  for (size_t i = 1; i < idx.size(); ++i) {
    const MetricSample &a = m.samples[idx[i - 1]], &b = m.samples[idx[i]];
    if (a.node == b.node && a.gpu == b.gpu && b.t_ms > a.t_ms) steps.push_back(b.t_ms - a.t_ms);
  }
  int64_t step_s = 1;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
    step_s = (steps[steps.size() / 2] + 999) / 1000;
  }
  const int64_t want = std::max<int64_t>(step_s, (to_s - from_s + int64_t(kMetricBuckets) - 1) / int64_t(kMetricBuckets));
  static const int64_t kNice[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  u.bucket_s = want;
  for (int64_t n : kNice)
    if (n >= want) {
      u.bucket_s = n;
      break;
    }
  u.buckets = static_cast<size_t>((to_s - from_s + u.bucket_s - 1) / u.bucket_s);
  const auto runs = runs_by_node(set);
  for (size_t i = 0; i < idx.size();) {
    const uint32_t node = m.samples[idx[i]].node;
    std::vector<double> sum(u.buckets, 0);
    std::vector<uint32_t> n(u.buckets, 0);
    for (; i < idx.size() && m.samples[idx[i]].node == node; ++i) {
      const MetricSample& s = m.samples[idx[i]];
      const size_t b = static_cast<size_t>((s.t_ms - from_s * 1000) / (u.bucket_s * 1000));
      sum[b] += s.share;
      ++n[b];
    }
    NodeUtilisation::Node& out = u.nodes[node];
    out.share.assign(u.buckets, std::numeric_limits<double>::quiet_NaN());
    for (size_t b = 0; b < u.buckets; ++b)
      if (n[b]) out.share[b] = sum[b] / n[b];
    // The drop rule over each stretch of buckets with samples: a hole in the export is no drop.
    for (size_t b = 0; b < u.buckets;) {
      if (std::isnan(out.share[b])) {
        ++b;
        continue;
      }
      size_t e = b;
      while (e < u.buckets && !std::isnan(out.share[e])) ++e;
      const std::vector<double> stretch(out.share.begin() + static_cast<std::ptrdiff_t>(b),
                                        out.share.begin() + static_cast<std::ptrdiff_t>(e));
      for (analysis::DeviceTimeline::Drop d : analysis::find_drops(stretch)) {
        d.first += b;
        // Only while one job ran over the whole drop: the gap between two jobs is the
        // scheduler's idle time (the chart's orange), not a job that stalled.
        const int64_t lo = u.bucket_start(d.first), hi = u.bucket_start(d.first + d.buckets);
        if (std::any_of(runs[node].begin(), runs[node].end(), [&](const auto& r) { return r.first <= lo && r.second >= hi; }))
          out.drops.push_back(d);
      }
      b = e;
    }
  }
  return u;
}

MetricsStats metrics_stats(const JobSet& set, const NodeMetrics& m, const NodeUtilisation& u) {
  MetricsStats st;
  st.metric = m.has_kind ? metric_name(m.kind) : "";
  st.bucket_s = u.bucket_s;
  // Per node, the time some job ran: runs merged, so a sample finds its run by one search
  // (a node of a busy month has thousands of jobs and each of its samples is looked up).
  auto runs = runs_by_node(set);
  for (auto& r : runs) {
    size_t w = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (w > 0 && r[i].first <= r[w - 1].second) r[w - 1].second = std::max(r[w - 1].second, r[i].second);
      else r[w++] = r[i];
    }
    r.resize(w);
  }
  const int64_t from_ms = u.from_s * 1000, to_ms = u.bucket_start(u.buckets) * 1000;
  std::vector<double> sum(set.nodes.size(), 0);
  std::vector<size_t> n(set.nodes.size(), 0), any(set.nodes.size(), 0);
  for (const MetricSample& s : m.samples) {
    if (!m.has_kind || s.kind != uint8_t(m.kind) || s.t_ms < from_ms || s.t_ms >= to_ms) continue;
    ++any[s.node];
    const auto& r = runs[s.node];
    auto it = std::upper_bound(r.begin(), r.end(), s.t_ms,
                               [](int64_t t_ms, const std::pair<int64_t, int64_t>& x) { return t_ms < x.first * 1000; });
    if (it != r.begin() && s.t_ms < (it - 1)->second * 1000) {
      sum[s.node] += s.share;
      ++n[s.node];
    }
  }
  for (uint32_t node = 0; node < set.nodes.size(); ++node) {
    if (!any[node]) continue;
    st.nodes.push_back({set.nodes[node], n[node] ? sum[node] / static_cast<double>(n[node]) : 0, n[node],
                        u.nodes[node].drops.size()});
    for (const auto& d : u.nodes[node].drops)
      st.drops.push_back({set.nodes[node], u.bucket_start(d.first), u.bucket_start(d.first + d.buckets), d.lowest, d.median});
  }
  std::stable_sort(st.drops.begin(), st.drops.end(),
                   [](const MetricsStats::DropAt& a, const MetricsStats::DropAt& b) { return a.from_s < b.from_s; });
  return st;
}

}  // namespace gantt::jobs
