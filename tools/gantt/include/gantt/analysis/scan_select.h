// select_events()' filters (model/filter.h) as a scan applies them, record by record: one
// selector that the scanned chart (render/stream_*), stats (stream_stats.h) and export
// (event_scan.h) share, made once per capture before its events are read. Selected as
// select_events() selects: the same devices and streams, the same window counted from the same
// origin, the same --range occurrence; --kernel matches kernels by their demangled names, and a
// pattern that could match a copy's, memset's or synchronisation's name (their calls' names, or
// their kinds' without one) leaves the capture to be loaded, where the join names them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpuhook/capture.h>

#include "gantt/analysis/stream_shares.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/model/text.h"

namespace gantt::analysis {

// The devices and streams (--device, --stream), the time window (--from, --to, --range,
// absolute), in which an event with a begin is kept when it overlaps [from, to] and one without
// always, and the kernels whose names --kernel matches. The default keeps every event.
struct ScanSelector {
  uint64_t from = 0, to = UINT64_MAX;
  std::vector<uint32_t> devices, streams;  // empty: all
  const KernelPattern* kernel = nullptr;
  // Only kernels, by their demangled name (`name`, a string id of `reader`), once per name in
  // `cache`; any event without a pattern.
  bool named(NameFlags& cache, EventKind kind, uint32_t name, const gpuhook::CaptureReader& reader) const {
    if (!kernel) return true;
    if (kind != EventKind::kKernel) return false;
    return cache.test(reader, name, [this](std::string_view s) { return kernel->matches(demangle(s)); });
  }
  // An API call's name that the pattern matches: copies, memsets and synchronisations are
  // named after their calls, which only the load joins (the scan then refuses).
  bool call_named(NameFlags& cache, uint32_t call_name, const gpuhook::CaptureReader& reader) const {
    return kernel && cache.test(reader, call_name, [this](std::string_view s) { return kernel->matches(api_display_name(s)); });
  }
  bool on(uint32_t device, uint32_t stream) const {
    return (devices.empty() || std::find(devices.begin(), devices.end(), device) != devices.end()) &&
           (streams.empty() || std::find(streams.begin(), streams.end(), stream) != streams.end());
  }
  // filter.cpp event_begin_ns() and event_end_ns(): `begin` the start, else queued, else the launch.
  bool in_time(uint64_t begin, uint64_t end) const {
    if (begin == 0) return true;
    const uint64_t e = end ? std::max(end, begin) : begin;
    return e >= from && begin <= to;
  }
  bool keeps_all() const { return from == 0 && to == UINT64_MAX && devices.empty() && streams.empty() && !kernel; }
};

// Why a scan cannot select by `pattern` ("" when it can): it matches the name of a copy, memset
// or synchronisation recorded without its call (named after its kind).
std::string pattern_refusal(const KernelPattern& pattern);

// The selector of `filter`: without --range its window counted from `origin` (the capture's
// first time, or a chart's own origin), from `first_ns` on when --from is given; with it,
// `range` (the occurrence's start, and the end of the work launched in it) narrowed by
// --from/--to from the range's start. `kernel` outlives the selector.
ScanSelector selector_of(const EventFilter& filter, uint64_t first_ns, uint64_t origin,
                         const std::optional<std::pair<uint64_t, uint64_t>>& range, const KernelPattern* kernel);

// A filter resolved for one capture before its scan: the selector, and select_events()'
// window (origin, start, end, asked or fitted, description) for what the consumer writes
// besides the GPU events (API calls, NVTX ranges, counters).
struct ScanFilter {
  std::unique_ptr<KernelPattern> kernel;
  ScanSelector select;
  Selection window;  // no events
  // The host records an export writes: those that overlap an asked window, all without one.
  bool host_in_window(uint64_t start, uint64_t end) const {
    return !window.window_asked || (end >= window.window_start_ns && start <= window.window_end_ns);
  }
};

// `filter` for the capture at `path` whose context (header, NVTX ranges) a scan has read, its
// first and last times `first_ns` and `last_ns` (from its index): --range's occurrence, and the
// end of the GPU work launched in it measured by one scan of the events (filter.cpp
// resolve_range), unless `found_range` gives that window already (a job's, on this capture's
// clock). Throws std::invalid_argument as select_events() does (a bad pattern, an unknown
// range, an empty window); nullopt with *why_not when a scan cannot select as the load does.
std::optional<ScanFilter> resolve_scan_filter(const std::string& path, const LoadOptions& load, unsigned threads,
                                              const Model& context, uint64_t first_ns, uint64_t last_ns,
                                              const EventFilter& filter, std::string* why_not,
                                              const std::optional<std::pair<uint64_t, uint64_t>>& found_range = {});
// The window of the work launched in [from, to] of the capture at `path` (on its clock): from,
// and the later of `to` and that work's last end (filter.cpp resolve_range), by one scan of
// its events. nullopt with *why_not when a scan cannot serve the capture.
std::optional<std::pair<uint64_t, uint64_t>> launched_end(const std::string& path, const LoadOptions& load,
                                                          unsigned threads, uint64_t from, uint64_t to, std::string* why_not);

}  // namespace gantt::analysis
