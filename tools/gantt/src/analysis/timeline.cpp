// Utilisation over time (analysis/timeline.h).
#include "gantt/analysis/timeline.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "gantt/model/text.h"

namespace gantt::analysis {

namespace {

// Adds the parts of the merged intervals `u` that fall in each bucket to `share` (as ns).
void spread(const std::vector<Interval>& u, uint64_t start, uint64_t bucket, std::vector<double>& share) {
  const uint64_t end = start + bucket * share.size();
  for (const Interval& iv : u) {
    const uint64_t b = std::max(iv.first, start), e = std::min(iv.second, end);
    if (e <= b) continue;
    for (uint64_t i = (b - start) / bucket; i < share.size(); ++i) {
      const uint64_t lo = start + i * bucket, hi = lo + bucket;
      if (lo >= e) break;
      share[i] += static_cast<double>(std::min(e, hi) - std::max(b, lo));
    }
  }
  for (double& s : share) s = std::min(1.0, s / static_cast<double>(bucket));
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string device_name(const Model& m, const DeviceTimeline& d) { return device_label(m.captures.size(), d.capture, d.device); }

}  // namespace

bool DeviceTimeline::in_drop(size_t bucket) const {
  auto it = std::upper_bound(drops.begin(), drops.end(), bucket, [](size_t b, const Drop& d) { return b < d.first; });
  return it != drops.begin() && bucket < (it - 1)->first + (it - 1)->buckets;
}

std::vector<DeviceTimeline::Drop> find_drops(const std::vector<double>& share) {
  std::vector<DeviceTimeline::Drop> drops;
  for (size_t i = kDropWindow; i < share.size(); ++i) {
    const double med = median_of(std::vector<double>(share.begin() + static_cast<std::ptrdiff_t>(i - kDropWindow),
                                                     share.begin() + static_cast<std::ptrdiff_t>(i)));
    if (med < kDropMinMedian || share[i] >= kDropFraction * med) continue;
    size_t j = i;
    double lowest = 1;
    while (j < share.size() && share[j] < kDropFraction * med) lowest = std::min(lowest, share[j++]);
    if (j == share.size()) break;  // never busy again: the end of the work, not a drop
    drops.push_back({i, j - i, med, lowest});
    i = j;
  }
  return drops;
}

uint64_t auto_bucket_ns(uint64_t span_ns, size_t target) {
  const uint64_t want = std::max<uint64_t>(1, span_ns / std::max<size_t>(target, 1));
  uint64_t p = 1;
  while (p <= want / 10) p *= 10;
  for (uint64_t m : {1, 2, 5, 10})
    if (p * m >= want) return p * m;
  return p * 10;
}

TimelineWork timeline_work(EventKind kind) {
  switch (kind) {
    case EventKind::kSync:
    case EventKind::kHostFunc: return TimelineWork::kNone;  // waits and host work: not device activity
    case EventKind::kKernel:
    case EventKind::kNccl: return TimelineWork::kCompute;
    case EventKind::kMemcpy: return TimelineWork::kCopy;
    default: return TimelineWork::kBusy;
  }
}

Timeline timeline_of(const UnionsByDevice& devices, uint64_t window_start_ns, uint64_t window_end_ns, uint64_t bucket_ns) {
  Timeline t;
  const uint64_t span = window_end_ns > window_start_ns ? window_end_ns - window_start_ns : 1;
  t.bucket_ns = bucket_ns ? bucket_ns : auto_bucket_ns(span);
  const uint64_t n = (span + t.bucket_ns - 1) / t.bucket_ns;
  if (n > kMaxBuckets)
    throw std::invalid_argument("a bucket of " + format_duration(static_cast<int64_t>(t.bucket_ns)) + " makes " +
                                std::to_string(n) + " buckets over " + format_duration(static_cast<int64_t>(span)) +
                                "; at most " + std::to_string(kMaxBuckets) + ": give a larger --bucket");
  t.start_ns = window_start_ns;
  t.buckets = static_cast<size_t>(std::max<uint64_t>(n, 1));
  for (const auto& [key, u] : devices) {
    DeviceTimeline d;
    d.capture = key.first;
    d.device = key.second;
    d.compute.assign(t.buckets, 0);
    d.copy.assign(t.buckets, 0);
    d.busy.assign(t.buckets, 0);
    spread(u.compute, t.start_ns, t.bucket_ns, d.compute);
    spread(u.copy, t.start_ns, t.bucket_ns, d.copy);
    spread(u.busy, t.start_ns, t.bucket_ns, d.busy);
    d.drops = find_drops(d.busy);
    t.devices.push_back(std::move(d));
  }
  return t;
}

Timeline utilisation_timeline(const Model& m, const Selection& sel, uint64_t bucket_ns) {
  UnionsByDevice by_device;
  const EventTable& ev = m.events;
  for (uint32_t e : sel.events) {
    if (!ev.start_ns[e] || ev.end_ns[e] <= ev.start_ns[e]) continue;
    const TimelineWork work = timeline_work(ev.kind[e]);
    if (work == TimelineWork::kNone) continue;
    DeviceUnions& u = by_device[{ev.capture[e], ev.device[e]}];
    const Interval iv{ev.start_ns[e], ev.end_ns[e]};
    u.busy.push_back(iv);
    if (work == TimelineWork::kCompute) u.compute.push_back(iv);
    else if (work == TimelineWork::kCopy) u.copy.push_back(iv);
  }
  for (auto& [key, u] : by_device)
    for (auto* v : {&u.compute, &u.copy, &u.busy}) merge_intervals(*v);
  Timeline t = timeline_of(by_device, sel.window_start_ns, sel.window_end_ns, bucket_ns);
  t.events = sel.events.size();
  return t;
}

std::string format_timeline(const Model& m, const Timeline& t, const std::string& format) {
  if (format == "json") {
    std::string o = "{\"start_ns\":" + std::to_string(t.start_ns) + ",\"bucket_ns\":" + std::to_string(t.bucket_ns) +
                    ",\"devices\":[";
    for (size_t d = 0; d < t.devices.size(); ++d) {
      const DeviceTimeline& x = t.devices[d];
      o += (d ? "," : "") + std::string("{\"device\":") + json::quoted(device_name(m, x)) + ",\"compute\":[";
      auto series = [&](const std::vector<double>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) {
          if (i) s += ",";
          json::append_number(s, v[i], 4);
        }
        return s;
      };
      o += series(x.compute) + "],\"copy\":[" + series(x.copy) + "],\"busy\":[" + series(x.busy) + "],\"drops\":[";
      for (size_t i = 0; i < x.drops.size(); ++i)
        o += (i ? "," : "") + std::string("{\"first\":") + std::to_string(x.drops[i].first) +
             ",\"buckets\":" + std::to_string(x.drops[i].buckets) + "}";
      o += "]}";
    }
    return o + "]}\n";
  }
  Table tb;
  tb.header = {"start_us", "device", "compute_%", "copy_%", "busy_%", "idle_%", "drop"};
  tb.right = {true, false, true, true, true, true, true};
  for (size_t i = 0; i < t.buckets; ++i)
    for (const DeviceTimeline& d : t.devices) {
      const bool drop = d.in_drop(i);
      tb.rows.push_back({us(static_cast<int64_t>(i * t.bucket_ns)), device_name(m, d), fixed(100 * d.compute[i], 1),
                         fixed(100 * d.copy[i], 1), fixed(100 * d.busy[i], 1), fixed(100 * (1 - d.busy[i]), 1),
                         drop ? "1" : "0"});
    }
  if (format == "csv") return to_csv(tb);
  if (format == "md") return to_markdown(tb);
  return "utilisation per " + format_duration(static_cast<int64_t>(t.bucket_ns)) + " bucket (start_us from " +
         std::to_string(t.start_ns) + " ns):\n" + to_text(tb);
}

}  // namespace gantt::analysis
