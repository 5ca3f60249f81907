// The step-time trend (analysis/steps.h).
#include "gantt/analysis/steps.h"

#include <algorithm>
#include <map>

#include "gantt/analysis/table.h"
#include "gantt/model/text.h"

namespace gantt::analysis {

Steps step_series(const Model& m, const std::string& step_range) {
  const RangeTable& r = m.ranges;
  Steps out;
  uint32_t name = kNone;
  if (!step_range.empty()) {
    name = m.find_string(step_range);
    out.name = step_range;
  } else {
    std::map<uint32_t, uint64_t> count;
    for (uint32_t i = 0; i < r.size(); ++i)
      if (r.parent[i] == kNone && r.end_ns[i] > r.start_ns[i] && r.kind[i] != RangeKind::kMark) ++count[r.name[i]];
    uint64_t best = 0;
    for (const auto& [n, c] : count)
      if (c > best) best = c, name = n;
    if (name != kNone) out.name = m.strings[name];
  }
  std::map<uint16_t, StepSeries> by_capture;
  for (uint16_t c = 0; c < m.captures.size(); ++c) {
    const CaptureInfo& info = m.captures[c];
    if (info.flight_dumps.empty() && info.header.flight_trigger().empty()) continue;
    StepSeries& s = by_capture[c];
    s.capture = c;
    s.dumps = info.flight_dumps;
    if (!info.header.flight_trigger().empty())
      s.dumps.emplace_back(info.header.flight_time_ns(), "trigger: " + info.header.flight_trigger());
  }
  if (name != kNone) {
    std::vector<uint32_t> rows;
    for (uint32_t i = 0; i < r.size(); ++i)
      if (r.name[i] == name && r.end_ns[i] > r.start_ns[i] && r.kind[i] != RangeKind::kMark) rows.push_back(i);
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return r.start_ns[a] < r.start_ns[b]; });
    for (uint32_t i : rows) {
      StepSeries& s = by_capture[r.capture[i]];
      s.capture = r.capture[i];
      s.start_ns.push_back(r.start_ns[i]);
      s.duration_ns.push_back(r.end_ns[i] - r.start_ns[i]);
    }
  }
  for (auto& [c, s] : by_capture) {
    if (!s.duration_ns.empty()) {
      std::vector<uint64_t> sorted = s.duration_ns;
      std::sort(sorted.begin(), sorted.end());
      s.median_ns = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                      : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
      s.max_ns = sorted.back();
    }
    std::sort(s.dumps.begin(), s.dumps.end());
    out.captures.push_back(std::move(s));
  }
  return out;
}

std::string format_range_occurrences(const Model& m, const std::string& format) {
  const RangeTable& r = m.ranges;
  std::map<std::string, std::vector<uint64_t>> by_name;
  for (uint32_t i = 0; i < r.size(); ++i)
    if (r.end_ns[i] > r.start_ns[i] && r.kind[i] != RangeKind::kMark) by_name[m.range_path_of_range(i)].push_back(r.end_ns[i] - r.start_ns[i]);
  Table t;
  t.header = {"range", "count", "total_us", "median_us", "p95_us", "max_us"};
  t.right = {false, true, true, true, true, true};
  for (auto& [name, d] : by_name) {
    std::sort(d.begin(), d.end());
    uint64_t total = 0;
    for (uint64_t v : d) total += v;
    const size_t p95 = std::min(d.size() - 1, (d.size() * 95 + 99) / 100 - 1);
    t.rows.push_back({utf8_clean(name), std::to_string(d.size()), us(static_cast<int64_t>(total)),
                      us(static_cast<int64_t>(d[(d.size() - 1) / 2])), us(static_cast<int64_t>(d[p95])),
                      us(static_cast<int64_t>(d.back()))});
  }
  if (format == "csv") return to_csv(t);
  if (format == "md") return to_markdown(t);
  std::string text = to_text(t);
  if (!text.empty() && text.back() != '\n') text += '\n';
  return "NVTX range occurrences (their own host durations; the capture holds no GPU work):\n" + text;
}

}  // namespace gantt::analysis
