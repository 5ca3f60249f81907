#include "gantt/model/filter.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include <re2/re2.h>

#include "gantt/model/text.h"

namespace gantt {

uint64_t event_begin_ns(const Model& m, uint32_t e) {
  if (m.events.start_ns[e]) return m.events.start_ns[e];
  if (m.events.queued_ns[e]) return m.events.queued_ns[e];
  return m.launch_ns(e);
}

uint64_t event_end_ns(const Model& m, uint32_t e) {
  if (m.events.end_ns[e]) return std::max(m.events.end_ns[e], event_begin_ns(m, e));
  return event_begin_ns(m, e);
}

size_t range_occurrence(const std::vector<NamedRange>& ranges, const std::string& spec) {
  const size_t at = spec.rfind('@');
  std::string name = spec;
  long n = 1;
  if (at != std::string::npos) {
    name = spec.substr(0, at);
    const std::string num = spec.substr(at + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || p != num.data() + num.size() || n < 1)
      throw std::invalid_argument("--range " + spec + ": expected NAME@N with N >= 1");
  }
  std::vector<size_t> hits;
  for (size_t r = 0; r < ranges.size(); ++r)
    if (ranges[r].name == name) hits.push_back(r);
  std::stable_sort(hits.begin(), hits.end(), [&](size_t a, size_t b) { return ranges[a].start_ns < ranges[b].start_ns; });
  if (hits.size() < static_cast<size_t>(n)) {
    std::string msg = "--range " + spec + ": the capture has " + std::to_string(hits.size()) + " range(s) named '" +
                      name + "'";
    if (hits.empty()) {
      // The names it does have, most frequent first: a typo or a domain prefix shows at once.
      std::map<std::string_view, size_t> count;
      for (const NamedRange& r : ranges) ++count[r.name];
      std::vector<std::pair<size_t, std::string_view>> by_count;
      for (const auto& [k, c] : count) by_count.emplace_back(c, k);
      std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::string seen;
      for (size_t i = 0; i < by_count.size() && i < 8; ++i)
        seen += (i ? ", " : "") + printable_utf8(ellipsize(by_count[i].second, 40)) + " (" + std::to_string(by_count[i].first) + ")";
      if (by_count.size() > 8) seen += ", ...";
      msg += seen.empty() ? " (it has no NVTX ranges)" : "; the names it has: " + seen;
    }
    throw std::invalid_argument(msg);
  }
  return hits[static_cast<size_t>(n - 1)];
}

uint32_t range_occurrence(const Model& m, const std::string& spec) {
  std::vector<NamedRange> ranges;
  std::vector<uint32_t> rows;
  for (uint32_t r = 0; r < m.ranges.size(); ++r)
    if (m.ranges.kind[r] != RangeKind::kMark) {
      ranges.push_back({m.string(m.ranges.name[r]), m.ranges.start_ns[r]});
      rows.push_back(r);
    }
  return rows[range_occurrence(ranges, spec)];
}

namespace {

// The window of a --range: its occurrence, open until the GPU work launched in it ends.
void resolve_range(const Model& m, const std::string& spec, uint64_t* from, uint64_t* to) {
  const uint32_t r = range_occurrence(m, spec);
  *from = m.ranges.start_ns[r];
  *to = m.ranges.end_ns[r] ? m.ranges.end_ns[r] : m.last_ns();
  // GPU work launched inside the range runs after it on the host clock: the window stays
  // open until the last of it ends, so an iteration shows its own kernels in full.
  const uint64_t launch_end = *to;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    const uint64_t l = m.launch_ns(e);
    if (l >= *from && l <= launch_end) *to = std::max(*to, event_end_ns(m, e));
  }
}

}  // namespace

// RE2, not std::regex: names come from the traced app, and libstdc++'s backtracking matcher
// recursed once per character (a 50,000-character name overflowed the stack). RE2 matches in
// linear time with bounded memory; it has no backreferences or lookaround, which a name
// filter does not need.
KernelPattern::KernelPattern(const std::string& regex) {
  RE2::Options options;
  options.set_log_errors(false);
  re_ = std::make_unique<RE2>(regex, options);
  if (!re_->ok())
    throw std::invalid_argument("--kernel '" + regex + "': not a valid regular expression (" + re_->error() + ")");
}

KernelPattern::~KernelPattern() = default;

bool KernelPattern::matches(std::string_view display_name) const { return RE2::PartialMatch(display_name, *re_); }

void fit_window(uint64_t from, uint64_t to, uint64_t lo, uint64_t hi, Selection* sel) {
  const uint64_t pad = std::max<uint64_t>((hi - lo) / 50, 1000);
  sel->window_start_ns = std::max(from, lo > pad ? lo - pad : 0);
  sel->window_end_ns = std::min(to, hi + pad);
  if (sel->window_end_ns < sel->window_start_ns) sel->window_end_ns = sel->window_start_ns;
  sel->window_fitted = true;
}

void narrow_to_window(const EventFilter& f, uint64_t origin, uint64_t* from, uint64_t* to) {
  if (f.from_ns >= 0) *from = std::max(*from, origin + static_cast<uint64_t>(f.from_ns));
  if (f.to_ns >= 0) {
    const uint64_t asked = origin + static_cast<uint64_t>(f.to_ns);
    *to = f.range.empty() ? asked : std::min(*to, asked);  // past the capture's end: empty space, as asked
  }
}

void throw_empty_window(const EventFilter& f, const Selection& sel, uint64_t span_end) {
  if (f.to_ns < 0)
    throw std::invalid_argument("--from " + format_duration(f.from_ns) + " is past the end of the " +
                                (f.range.empty() ? std::string("capture") : "range " + f.range) + " (span " +
                                format_duration(static_cast<int64_t>(span_end - sel.origin_ns)) + "; times count from " +
                                sel.origin_name + ")");
  throw std::invalid_argument("the window ends before it starts (--to < --from)");
}

void set_window(const EventFilter& f, uint64_t from, uint64_t to, Selection* sel) {
  const uint64_t span_end = to;
  narrow_to_window(f, sel->origin_ns, &from, &to);
  sel->window_asked = !f.range.empty() || f.from_ns >= 0 || f.to_ns >= 0;
  if (to < from) throw_empty_window(f, *sel, span_end);
  sel->window_start_ns = from;
  sel->window_end_ns = to;
}

std::string describe_filter(const EventFilter& f) {
  std::vector<std::string> desc;
  if (!f.range.empty()) desc.push_back("range " + f.range);
  if (f.from_ns >= 0 || f.to_ns >= 0) desc.push_back("window");
  if (!f.kernel_regex.empty()) desc.push_back("kernel ~ " + f.kernel_regex);
  if (!f.devices.empty()) desc.push_back("device filter");
  if (!f.streams.empty()) desc.push_back("stream filter");
  std::string out;
  for (size_t i = 0; i < desc.size(); ++i) out += (i ? ", " : "") + desc[i];
  return out;
}

Selection select_events(const Model& m, const EventFilter& f) {
  Selection sel;
  const uint64_t t0 = m.first_ns();
  uint64_t from = t0, to = std::max(m.last_ns(), t0);
  sel.origin_ns = t0;
  if (!f.range.empty()) {
    // --from/--to inside the range: offsets from its start, the window no wider than it.
    resolve_range(m, f.range, &from, &to);
    sel.origin_ns = from;
    sel.origin_name = "the start of range " + f.range;
  }
  set_window(f, from, to, &sel);
  from = sel.window_start_ns;
  to = sel.window_end_ns;

  std::optional<KernelPattern> pattern;
  std::vector<int8_t> name_match;  // per string id: -1 unknown, 0 no, 1 yes
  if (!f.kernel_regex.empty()) {
    pattern.emplace(f.kernel_regex);
    name_match.assign(m.strings.size(), -1);
  }

  const EventTable& ev = m.events;
  for (uint32_t e = 0; e < ev.size(); ++e) {
    if (!f.devices.empty() && std::find(f.devices.begin(), f.devices.end(), ev.device[e]) == f.devices.end()) continue;
    if (!f.streams.empty() && std::find(f.streams.begin(), f.streams.end(), ev.stream[e]) == f.streams.end()) continue;
    const uint64_t b = event_begin_ns(m, e), en = event_end_ns(m, e);
    if (b != 0 && (en < from || b > to)) continue;
    if (pattern) {
      int8_t& hit = name_match[ev.name[e]];
      if (hit < 0) hit = pattern->matches(m.display_name(e)) ? 1 : 0;
      if (!hit) continue;
    }
    sel.events.push_back(e);
  }
  if (f.range.empty() && f.from_ns < 0 && f.to_ns < 0 && !sel.events.empty()) {
    // No window asked for: fit the selected work (from the first launch to the last end),
    // not the whole capture, whose start is usually process and CUDA start-up.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t e : sel.events) {
      const uint64_t b = event_begin_ns(m, e), l = m.launch_ns(e);
      if (b) lo = std::min(lo, b);
      if (l) lo = std::min(lo, l);
      hi = std::max(hi, event_end_ns(m, e));
    }
    if (lo != UINT64_MAX && hi >= lo) fit_window(from, to, lo, hi, &sel);
  }
  std::stable_sort(sel.events.begin(), sel.events.end(), [&](uint32_t a, uint32_t b) {
    const uint64_t ta = event_begin_ns(m, a), tb = event_begin_ns(m, b);
    if ((ta == 0) != (tb == 0)) return tb == 0;
    return ta < tb;
  });
  sel.description = describe_filter(f);
  return sel;
}

Model restricted(const Model& m, const Selection& sel) {
  Model out = m;
  std::vector<uint32_t> keep = sel.events;
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<uint32_t> new_index(m.events.size(), kNone);
  for (uint32_t k = 0; k < keep.size(); ++k) new_index[keep[k]] = k;
  // In place, front to back: keep is ascending and keep[k] >= k.
  out.events.for_each_column([&](auto& column, auto) {
    for (size_t k = 0; k < keep.size(); ++k) column[k] = column[keep[k]];
    column.resize(keep.size());
  });
  for (uint32_t& e : out.nccl.event) e = e < new_index.size() ? new_index[e] : kNone;
  return out;
}

}  // namespace gantt
