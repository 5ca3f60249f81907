// A filter as a scan applies it (scan_select.h).
#include "gantt/analysis/scan_select.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <tuple>

#include "gantt/analysis/event_scan.h"

namespace gantt::analysis {

std::string pattern_refusal(const KernelPattern& pattern) {
  std::vector<std::string> unjoined = {unjoined_name(EventKind::kMemset, 0), unjoined_name(EventKind::kSync, 0)};
  for (int c = 0; c < 256; ++c) unjoined.push_back(unjoined_name(EventKind::kMemcpy, static_cast<uint8_t>(c)));
  for (const std::string& n : unjoined)
    if (pattern.matches(api_display_name(n))) return "--kernel matching a copy, memset or synchronisation";
  return "";
}

ScanSelector selector_of(const EventFilter& filter, uint64_t first_ns, uint64_t origin,
                         const std::optional<std::pair<uint64_t, uint64_t>>& range, const KernelPattern* kernel) {
  ScanSelector s;
  if (range) {
    s.from = range->first;
    s.to = range->second;
  } else if (filter.from_ns >= 0) {
    s.from = first_ns;
  }
  narrow_to_window(filter, range ? range->first : origin, &s.from, &s.to);
  s.devices = filter.devices;
  s.streams = filter.streams;
  s.kernel = kernel;
  return s;
}

namespace {

// filter.cpp resolve_range(): the last end of the events launched in [from, to].
class LaunchedEnd final : public EventConsumer {
 public:
  LaunchedEnd(uint64_t from, uint64_t to) : from_(from), to_(to) {}
  void event(const ScannedEvent& e, const gpuhook::CaptureReader&) override {
    if (!e.launched || e.launch_ns < from_ || e.launch_ns > to_) return;
    const uint64_t begin = e.start_ns ? e.start_ns : e.queued_ns ? e.queued_ns : e.launch_ns;
    end = std::max(end, e.end_ns ? std::max(e.end_ns, begin) : begin);
  }
  uint64_t end = 0;

 private:
  uint64_t from_, to_;
};

}  // namespace

std::optional<std::pair<uint64_t, uint64_t>> launched_end(const std::string& path, const LoadOptions& load,
                                                          unsigned threads, uint64_t from, uint64_t to, std::string* why_not) {
  EventScanOptions so;
  so.load = load;
  so.threads = threads;
  EventScanner scanner(path, so);
  std::vector<std::unique_ptr<LaunchedEnd>> ends;
  std::vector<EventConsumer*> consumers;
  for (size_t i = 0; i < scanner.shares(); ++i) {
    ends.push_back(std::make_unique<LaunchedEnd>(from, to));
    consumers.push_back(ends.back().get());
  }
  if (!scanner.refused().empty() || !scanner.run(consumers, why_not)) {
    if (why_not && !scanner.refused().empty()) *why_not = scanner.refused();
    return std::nullopt;
  }
  for (const auto& e : ends) to = std::max(to, e->end);
  return std::make_pair(from, to);
}

std::optional<ScanFilter> resolve_scan_filter(const std::string& path, const LoadOptions& load, unsigned threads,
                                              const Model& context, uint64_t first_ns, uint64_t last_ns,
                                              const EventFilter& filter, std::string* why_not,
                                              const std::optional<std::pair<uint64_t, uint64_t>>& found_range) {
  ScanFilter out;
  if (!filter.kernel_regex.empty()) {
    out.kernel = std::make_unique<KernelPattern>(filter.kernel_regex);  // throws as select_events() does
    if (std::string no = pattern_refusal(*out.kernel); !no.empty()) {
      if (why_not) *why_not = no;
      return std::nullopt;
    }
  }
  Selection& sel = out.window;
  uint64_t from = first_ns, to = std::max(last_ns, first_ns);
  sel.origin_ns = first_ns;
  std::optional<std::pair<uint64_t, uint64_t>> range;
  if (!filter.range.empty()) {
    if (found_range) {
      range = found_range;
    } else {
      const uint32_t r = range_occurrence(context, filter.range);  // throws as select_events() does
      range = launched_end(path, load, threads, context.ranges.start_ns[r],
                           context.ranges.end_ns[r] ? context.ranges.end_ns[r] : last_ns, why_not);
      if (!range) return std::nullopt;
    }
    std::tie(from, to) = *range;
    sel.origin_ns = from;
    sel.origin_name = "the start of range " + filter.range;
  }
  set_window(filter, from, to, &sel);
  sel.description = describe_filter(filter);
  out.select = selector_of(filter, first_ns, first_ns, range, out.kernel.get());
  return out;
}

}  // namespace gantt::analysis
