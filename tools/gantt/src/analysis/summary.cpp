// Summaries: made from a model (summarize, add_diff_samples), merged, and turned into the stats
// and diff inputs. Their file message is summary_proto.cpp.
#include "gantt/analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/table.h"
#include "gantt/ranks/ranks.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace {

uint64_t device_key(uint16_t capture, uint32_t device) { return (uint64_t{capture} << 32) | device; }

// The host API call that overlaps [from, to) the most in this capture, in words. A linear
// scan per gap: only a few gaps are listed, and sorting a million calls costs more.
std::string host_activity(const Model& m, uint16_t capture, uint64_t from, uint64_t to) {
  uint64_t best = 0;
  uint32_t best_row = kNone;
  for (uint32_t a = 0; a < m.api.size(); ++a) {
    if (m.api.capture[a] != capture || m.api.start_ns[a] == 0 || m.api.start_ns[a] >= to || m.api.end_ns[a] <= from)
      continue;
    const uint64_t lo = std::max(from, m.api.start_ns[a]), hi = std::min(to, m.api.end_ns[a]);
    if (hi > lo && hi - lo > best) {
      best = hi - lo;
      best_row = a;
    }
  }
  if (best_row == kNone) return host_activity_text({}, 0, 0, from, to);
  return host_activity_text(m.string(m.api.name[best_row]), m.threads.thread_id[m.api.thread[best_row]], best, from, to);
}

// The id a grouping resolves once per distinct value (name, range row, stream), not per event.
uint64_t group_id(const Model& m, uint32_t e, GroupBy by) {
  const EventKind kind = m.events.kind[e];
  switch (by) {
    case GroupBy::kKernel: {
      const uint32_t name = m.events.name[e];
      const uint32_t disp = name < m.demangled.size() && m.demangled[name] != kNone ? m.demangled[name] : name;
      return kind == EventKind::kMemcpy ? (uint64_t{1} << 40) | m.events.copy_kind[e]
             : kind == EventKind::kMemset ? (uint64_t{2} << 40)
                                          : disp;
    }
    case GroupBy::kStream:
      return (uint64_t{m.events.capture[e]} << 48) | (uint64_t{m.events.device[e] & 0xFFFF} << 32) | m.events.stream[e];
    case GroupBy::kDevice: return device_key(m.events.capture[e], m.events.device[e]);
    case GroupBy::kRange: return m.events.range[e];
    case GroupBy::kGraph: break;
  }
  return 0;
}

SummaryGroup new_group(const Model& m, uint32_t e, GroupBy by) {
  SummaryGroup g;
  g.capture = m.events.capture[e];
  g.device = m.events.device[e];
  switch (by) {
    case GroupBy::kKernel: g.key = kernel_key(m, e); break;
    case GroupBy::kStream: g.stream = m.events.stream[e]; break;
    case GroupBy::kDevice: break;
    case GroupBy::kRange: {
      const uint32_t rr = m.events.range[e];
      g.key = rr == kNone ? "(no range)" : m.range_path_of_range(rr);
      break;
    }
    case GroupBy::kGraph: break;
  }
  if (by == GroupBy::kKernel || by == GroupBy::kRange) g.capture = g.device = 0;
  return g;
}

std::string group_key(const SummaryGroup& g, GroupBy by, size_t captures) {
  switch (by) {
    case GroupBy::kStream: return device_label(captures, g.capture, g.device) + " stream " + std::to_string(g.stream);
    case GroupBy::kDevice: return device_label(captures, g.capture, g.device);
    default: return g.key;
  }
}

Distribution distribution(const DurationDigest& d) {
  Distribution out;
  out.count = d.count();
  if (out.count == 0) return out;
  out.total_ns = d.total_ns();
  out.mean_ns = static_cast<double>(out.total_ns) / static_cast<double>(out.count);
  out.median_ns = d.median_ns();
  out.p95_ns = d.p95_ns();
  out.min_ns = d.min_ns();
  out.max_ns = d.max_ns();
  return out;
}

}  // namespace

std::string host_activity_text(std::string_view call, uint64_t thread_id, uint64_t overlap_ns, uint64_t from, uint64_t to) {
  if (overlap_ns == 0 || to <= from) return "no host API call recorded";
  const uint64_t pct = (overlap_ns * 100 + (to - from) / 2) / (to - from);
  // A call that touched the gap only at its edge: "0% of the gap" read as a contradiction.
  const std::string share = pct == 0 ? "<1%" : std::to_string(pct) + "%";
  return std::string(api_display_name(call)) + " (tid " + std::to_string(thread_id) + ") " + share + " of the gap";
}

namespace {
// Kernel and range rows are one per key text; stream and device rows one per place.
using GroupIdentity = std::tuple<std::string, uint32_t, uint32_t, uint32_t>;
GroupIdentity identity(const SummaryGroup& g) { return {g.key, g.capture, g.device, g.stream}; }
}  // namespace

void merge_groups(std::vector<SummaryGroup>& into, const std::vector<SummaryGroup>& from, uint32_t capture_shift,
                  bool placed) {
  std::map<GroupIdentity, size_t> at;
  for (size_t i = 0; i < into.size(); ++i) at[identity(into[i])] = i;
  for (SummaryGroup g : from) {
    if (placed) g.capture += capture_shift;
    auto [it, fresh] = at.try_emplace(identity(g), into.size());
    if (fresh) {
      into.push_back(std::move(g));
    } else {
      into[it->second].exec.merge(g.exec);
      into[it->second].bytes += g.bytes;
      into[it->second].kernels += g.kernels;
      into[it->second].kernel_ns += g.kernel_ns;
      into[it->second].kernel_span.add(g.kernel_span);
    }
  }
}

StatsSummary summarize(const Model& m, const std::vector<GroupBy>& by, size_t gaps) {
  StatsSummary s;
  s.gaps_kept = gaps;
  for (const CaptureInfo& c : m.captures)
    s.captures.push_back({c.path, c.header.host_name(), c.header.pid(),
                          c.header.has_rank() ? static_cast<int32_t>(c.header.rank()) : -1});
  std::array<std::unordered_map<uint64_t, size_t>, kSummaryGroupings> slot_of;
  std::array<std::vector<SummaryGroup>, kSummaryGroupings> slots;
  std::vector<GroupBy> groupings;
  for (GroupBy g : by)
    if (g != GroupBy::kGraph && !s.grouped[static_cast<size_t>(g)]) {
      s.grouped[static_cast<size_t>(g)] = true;
      groupings.push_back(g);
    }
  std::map<uint64_t, std::vector<Interval>> compute_iv, copy_iv, all_iv, work_iv;  // work: without NCCL kernels
  struct Copies {
    uint64_t count = 0, bytes = 0, sync = 0;
  };
  std::map<uint64_t, Copies> copies;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (!is_gpu_work(m, e)) continue;
    const uint64_t b = m.events.start_ns[e], t = m.events.end_ns[e];
    const int64_t dur = static_cast<int64_t>(t - b);
    ++s.events;
    s.gpu_time_ns += static_cast<uint64_t>(dur);
    s.first_ns = s.first_ns == 0 ? b : std::min(s.first_ns, b);
    s.last_ns = std::max(s.last_ns, t);
    const uint64_t dk = device_key(m.events.capture[e], m.events.device[e]);
    const EventKind kind = m.events.kind[e];
    all_iv[dk].emplace_back(b, t);
    if (kind == EventKind::kMemcpy) {
      copy_iv[dk].emplace_back(b, t);
      Copies& c = copies[dk];
      ++c.count;
      c.bytes += m.events.bytes[e];
      if (copy_host_wait(m, e) != CopyHostWait::kNone) ++c.sync;
    }
    else if (kind == EventKind::kKernel || kind == EventKind::kNccl) compute_iv[dk].emplace_back(b, t);
    if (kind != EventKind::kNccl) work_iv[dk].emplace_back(b, t);
    if (kind == EventKind::kKernel || kind == EventKind::kNccl) {
      const Stages st = m.stages(e);
      if (st.launch_to_queued_ns) s.launch_to_queued.add(*st.launch_to_queued_ns);
      if (st.queued_to_start_ns) s.queued_to_start.add(*st.queued_to_start_ns);
      s.exec.add(dur);
    }
    for (GroupBy g : groupings) {
      const size_t gi = static_cast<size_t>(g);
      auto [it, fresh] = slot_of[gi].try_emplace(group_id(m, e, g), slots[gi].size());
      if (fresh) slots[gi].push_back(new_group(m, e, g));
      SummaryGroup& row = slots[gi][it->second];
      row.exec.add(dur);
      row.bytes += m.events.bytes[e];
      if (g == GroupBy::kStream && (kind == EventKind::kKernel || kind == EventKind::kNccl)) {
        ++row.kernels;
        row.kernel_ns += static_cast<uint64_t>(dur);
        row.kernel_span.add(m.events.start_ns[e], m.events.end_ns[e]);
      }
    }
  }
  // Different ids can share a key (two range rows with one path, two mangled names with one
  // demangled form): merged by key so each key is one row.
  for (GroupBy g : groupings) merge_groups(s.groups[static_cast<size_t>(g)], slots[static_cast<size_t>(g)], 0, false);

  for (auto& [dk, all] : all_iv) {
    DeviceRow d;
    d.capture = static_cast<uint16_t>(dk >> 32);
    d.device = static_cast<uint32_t>(dk & 0xFFFFFFFF);
    merge_intervals(all);
    auto& comp = compute_iv[dk];
    auto& copy = copy_iv[dk];
    merge_intervals(comp);
    merge_intervals(copy);
    d.span_ns = all.back().second - all.front().first;
    d.busy_ns = total_length(all);
    d.compute_ns = total_length(comp);
    d.copy_ns = total_length(copy);
    d.overlap_ns = intersection_length(comp, copy);
    d.idle_ns = d.span_ns - d.busy_ns;
    const Copies& c = copies[dk];
    d.copies = c.count;
    d.copy_bytes = c.bytes;
    d.sync_copies = c.sync;
    auto& work = work_iv[dk];
    merge_intervals(work);
    d.busy_ns_without_nccl = total_length(work);
    std::vector<Interval> holes;
    for (size_t i = 1; i < all.size(); ++i) holes.emplace_back(all[i - 1].second, all[i].first);
    std::stable_sort(holes.begin(), holes.end(), [](const Interval& a, const Interval& b) {
      return a.second - a.first > b.second - b.first;
    });
    if (holes.size() > gaps) holes.resize(gaps);
    for (const Interval& h : holes) d.gaps.push_back({h.first, h.second, host_activity(m, d.capture, h.first, h.second)});
    s.devices.push_back(std::move(d));
  }
  std::vector<RankIntervals> ranks = rank_busy_intervals(m);
  for (size_t c = 0; c < ranks.size() && c < s.captures.size(); ++c) {
    merge_intervals(ranks[c].intervals);
    s.captures[c].busy_ns_without_nccl = total_length(ranks[c].intervals);
  }

  s.nccl = nccl_rows(m);
  return s;
}

void count_nccl_call(std::map<std::string, NcclRow>& rows, std::string_view name, uint8_t op, uint64_t bytes,
                     uint64_t kernel_start_ns, uint64_t kernel_end_ns, uint64_t call_start_ns, uint64_t call_end_ns) {
  std::string key(name);
  if (key.empty()) key = "nccl op " + std::to_string(op);
  NcclRow& row = rows[key];
  if (row.op.empty()) row.op = std::move(key);
  ++row.calls;
  row.bytes += bytes;
  if (kernel_end_ns > kernel_start_ns && kernel_start_ns != 0) row.time_ns += kernel_end_ns - kernel_start_ns;
  else if (call_end_ns > call_start_ns && call_start_ns != 0) row.time_ns += call_end_ns - call_start_ns;
}

std::vector<NcclRow> nccl_rows(const Model& m) {
  std::map<std::string, NcclRow> nccl;
  for (size_t i = 0; i < m.nccl.size(); ++i) {
    const uint8_t op = m.nccl.op[i];
    if (op == gpuhook::v1::NCCL_GROUP_START || op == gpuhook::v1::NCCL_GROUP_END ||
        op == gpuhook::v1::NCCL_COMM_INIT || op == gpuhook::v1::NCCL_COMM_DESTROY)
      continue;
    const uint32_t ev = m.nccl.event[i];
    count_nccl_call(nccl, m.string(m.nccl.name[i]), op, m.nccl.bytes[i], ev != kNone ? m.events.start_ns[ev] : 0,
                    ev != kNone ? m.events.end_ns[ev] : 0, m.nccl.start_ns[i], m.nccl.end_ns[i]);
  }
  std::vector<NcclRow> rows;
  rows.reserve(nccl.size());
  for (auto& [k, v] : nccl) rows.push_back(std::move(v));
  return rows;
}

namespace {

// A digest's values for the rank tests: the exact ones, or each sketch bucket's value as many
// times as it holds. At most kMaxExpanded values: larger sketches (or a hostile file's counts)
// are scaled down bucket by bucket, which keeps the distribution's shape. A diff holds every
// match's values at once, exec and queue on both sides: 3.2 MB a kernel at this bound (it was
// 1,000,000, and a diff of two 10 M-kernel captures of 18 kernels took 400 MiB); the rank test
// and the bootstrap are as decisive on 100,000 stand-in values as on more.
constexpr uint64_t kMaxExpanded = 100'000;

std::vector<int64_t> expand(const DurationDigest& d) {
  if (d.exact()) return d.samples();
  std::vector<int64_t> out;
  const QuantileSketch& sk = d.sketch();
  const double scale = sk.count() > kMaxExpanded ? static_cast<double>(kMaxExpanded) / static_cast<double>(sk.count()) : 1.0;
  const auto put = [&](double value, uint64_t n) {
    const auto k = static_cast<uint64_t>(std::llround(static_cast<double>(n) * scale));
    const int64_t v = static_cast<int64_t>(std::llround(std::clamp(value, static_cast<double>(d.min_ns()), static_cast<double>(d.max_ns()))));
    out.insert(out.end(), std::min<uint64_t>(std::max<uint64_t>(k, 1), kMaxExpanded - std::min<uint64_t>(out.size(), kMaxExpanded)), v);
  };
  const auto neg = sk.negative();
  for (auto it = neg.rbegin(); it != neg.rend(); ++it) put(-QuantileSketch::bucket_value(it->first), it->second);
  if (sk.zeros()) put(0, sk.zeros());
  for (const auto& [i, n] : sk.positive()) put(QuantileSketch::bucket_value(i), n);
  return out;
}

}  // namespace

void add_diff_samples(StatsSummary& s, const Model& m) {
  const DiffInput in = diff_samples(m, true);  // the summary has its own stats
  for (const auto& [key, samples] : in.matches) {
    SummaryMatch& row = s.matches[key];
    row.name = samples.name;
    row.range = samples.range;
    row.graph_node = samples.graph_node;
    for (int64_t v : samples.exec) row.exec.add(v);
    for (int64_t v : samples.queue) row.queue.add(v);
  }
  for (const auto& [name, durations] : in.top_ranges)
    for (int64_t v : durations) s.top_ranges[name].add(v);
  s.has_matches = true;
}

DiffInput diff_input(const StatsSummary& s, bool match_range) {
  if (!s.has_matches)
    throw std::invalid_argument("the summary holds no per-kernel matches for diff (make it with gantt-cli stats --summary)");
  DiffInput in;
  struct Totals {
    Distribution d;
    bool sketched = false;
  };
  std::map<std::string, Totals> totals;
  const auto key_of = [](const MatchSamples& m) { return match_key(m.range, m.name, m.graph_node); };
  for (const auto& [key, row] : s.matches) {
    // Name only (diff --name-only): the same kernel in every range is one match.
    const std::string range = match_range ? row.range : std::string();
    MatchSamples& m = in.matches[match_key(range, row.name, row.graph_node)];
    m.name = row.name;
    m.range = range;
    m.graph_node = row.graph_node;
    const std::vector<int64_t> e = expand(row.exec), q = expand(row.queue);
    m.exec.insert(m.exec.end(), e.begin(), e.end());
    m.queue.insert(m.queue.end(), q.begin(), q.end());
    // The exact count, total and extremes, summed over the rows merged into this match.
    Totals& t = totals[key_of(m)];
    t.sketched = t.sketched || !row.exec.exact();
    const bool first = t.d.count == 0;
    t.d.count += row.exec.count();
    t.d.total_ns += row.exec.total_ns();
    t.d.min_ns = first ? row.exec.min_ns() : std::min(t.d.min_ns, row.exec.min_ns());
    t.d.max_ns = first ? row.exec.max_ns() : std::max(t.d.max_ns, row.exec.max_ns());
  }
  // Stand-in samples (some row was sketched): the report shows the exact figures beside them.
  for (auto& [key, m] : in.matches) {
    const Totals& t = totals[key];
    if (!t.sketched) continue;
    m.exec_exact = t.d;
    m.exec_exact->mean_ns = t.d.count ? static_cast<double>(t.d.total_ns) / static_cast<double>(t.d.count) : 0;
  }
  for (const auto& [name, d] : s.top_ranges) in.top_ranges[name] = expand(d);
  in.stats = report(s, StatsOptions{});
  return in;
}

void merge(StatsSummary& into, const StatsSummary& o) {
  const auto shift = static_cast<uint32_t>(into.captures.size());
  into.captures.insert(into.captures.end(), o.captures.begin(), o.captures.end());
  into.events += o.events;
  into.gpu_time_ns += o.gpu_time_ns;
  if (o.first_ns != 0) into.first_ns = into.first_ns == 0 ? o.first_ns : std::min(into.first_ns, o.first_ns);
  into.last_ns = std::max(into.last_ns, o.last_ns);
  for (size_t g = 0; g < kSummaryGroupings; ++g) {
    // A grouping is in the merge only when every part has it.
    into.grouped[g] = into.grouped[g] && o.grouped[g];
    if (!into.grouped[g]) {
      into.groups[g].clear();
      continue;
    }
    const bool placed = g == static_cast<size_t>(GroupBy::kStream) || g == static_cast<size_t>(GroupBy::kDevice);
    merge_groups(into.groups[g], o.groups[g], shift, placed);
  }
  into.launch_to_queued.merge(o.launch_to_queued);
  into.queued_to_start.merge(o.queued_to_start);
  into.exec.merge(o.exec);
  for (DeviceRow d : o.devices) {
    d.capture = static_cast<uint16_t>(d.capture + shift);
    into.devices.push_back(std::move(d));
  }
  std::map<std::string, NcclRow> nccl;
  const std::vector<NcclRow>* const parts[] = {&into.nccl, &o.nccl};
  for (const std::vector<NcclRow>* rows : parts)
    for (const NcclRow& r : *rows) {
      NcclRow& row = nccl[r.op];
      row.op = r.op;
      row.calls += r.calls;
      row.time_ns += r.time_ns;
      row.bytes += r.bytes;
    }
  into.nccl.clear();
  for (auto& [k, v] : nccl) into.nccl.push_back(v);
  into.gaps_kept = std::min(into.gaps_kept, o.gaps_kept);
  into.merged = true;
  into.has_diagnose = into.has_diagnose && o.has_diagnose;
  // A merge can be diffed only when every part could.
  into.has_matches = into.has_matches && o.has_matches;
  if (!into.has_matches) {
    into.matches.clear();
    into.top_ranges.clear();
    return;
  }
  for (const auto& [key, row] : o.matches) {
    auto [it, fresh] = into.matches.try_emplace(key, row);
    if (!fresh) {
      it->second.exec.merge(row.exec);
      it->second.queue.merge(row.queue);
    }
  }
  for (const auto& [name, d] : o.top_ranges) into.top_ranges[name].merge(d);
}

StatsReport report(const StatsSummary& s, const StatsOptions& o) {
  StatsReport r;
  r.by = o.by;
  r.events = s.events;
  r.gpu_time_ns = s.gpu_time_ns;
  r.makespan_ns = s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0;
  r.first_ns = s.first_ns;
  r.from_unaligned_summaries = s.merged;
  if (o.by != GroupBy::kGraph) {
    const size_t gi = static_cast<size_t>(o.by);
    if (!s.grouped[gi])
      throw std::invalid_argument(std::string("the summary has no --by ") + to_string(o.by) + " grouping");
    for (const SummaryGroup& g : s.groups[gi]) {
      GroupRow row;
      row.key = group_key(g, o.by, s.captures.size());
      row.exec = distribution(g.exec);
      row.exact = g.exec.exact();
      row.bytes = g.bytes;
      row.share = r.gpu_time_ns ? static_cast<double>(row.exec.total_ns) / static_cast<double>(r.gpu_time_ns) : 0;
      r.groups.push_back(std::move(row));
    }
    std::sort(r.groups.begin(), r.groups.end(), [](const GroupRow& a, const GroupRow& b) {
      return a.exec.total_ns != b.exec.total_ns ? a.exec.total_ns > b.exec.total_ns : a.key < b.key;
    });
    r.groups_total = r.groups.size();
    for (const GroupRow& g : r.groups) r.sketched_groups += g.exact ? 0 : 1;
    if (o.top > 0 && r.groups.size() > o.top) r.groups.resize(o.top);
  }
  const auto stage = [&r](const char* name, const DurationDigest& d) {
    if (!d.exact()) ++r.sketched_groups;
    return StageRow{name, d.count(), d.median_ns(), d.p95_ns()};
  };
  r.stages.push_back(stage("launch->queued", s.launch_to_queued));
  r.stages.push_back(stage("queued->start", s.queued_to_start));
  r.stages.push_back(stage("exec", s.exec));
  r.devices = s.devices;
  std::stable_sort(r.devices.begin(), r.devices.end(), [](const DeviceRow& a, const DeviceRow& b) {
    return std::tie(a.capture, a.device) < std::tie(b.capture, b.device);
  });
  for (DeviceRow& d : r.devices) {
    d.label = device_label(s.captures.size(), d.capture, d.device);
    d.busy_pct = d.span_ns ? 100.0 * static_cast<double>(d.busy_ns) / static_cast<double>(d.span_ns) : 0;
    d.overlap_pct = d.copy_ns ? 100.0 * static_cast<double>(d.overlap_ns) / static_cast<double>(d.copy_ns) : 0;
    if (d.gaps.size() > o.gaps) d.gaps.resize(o.gaps);
  }
  r.nccl = s.nccl;
  return r;
}

}  // namespace gantt::analysis
