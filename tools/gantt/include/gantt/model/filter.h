// Which events an output covers: a time window and filters, shared by render and export.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/model/model.h"

namespace re2 {
class RE2;
}

namespace gantt {

struct EventFilter {
  // Window relative to the model's first time (capture start), or with `range` to that
  // occurrence's start and inside it; <0 = open.
  int64_t from_ns = -1;
  int64_t to_ns = -1;
  std::string range;              // "NAME@N": the N-th (1-based) occurrence of that range
  std::string kernel_regex;       // RE2 syntax, searched in the demangled name
  std::vector<uint32_t> devices;  // empty = all
  std::vector<uint32_t> streams;  // empty = all
};

// --kernel's pattern: RE2 syntax, searched in an event's display name (Model::display_name).
// Throws std::invalid_argument on a bad pattern, with the message select_events() gives.
class KernelPattern {
 public:
  explicit KernelPattern(const std::string& regex);
  ~KernelPattern();
  KernelPattern(const KernelPattern&) = delete;
  KernelPattern& operator=(const KernelPattern&) = delete;
  bool matches(std::string_view display_name) const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

struct Selection {
  std::vector<uint32_t> events;  // sorted by (start, index); events without times go last
  uint64_t window_start_ns = 0;  // absolute; the span the output shows
  uint64_t window_end_ns = 0;
  std::string description;       // "", or e.g. "range step@3, kernel ~ gemm"
  // No window was asked for (--from, --to, --range): the window above was fitted to the
  // selected GPU work for a chart. Exports then keep every host record, before and after.
  bool window_fitted = false;
  // --from, --to or --range was given: the window above is the one asked for. Records that
  // are not GPU work (GPU counter samples) are cut to it only then.
  bool window_asked = false;
  // Where --from/--to count from, and the chart's axis with them: the capture's start, or
  // with --range the start of that range occurrence.
  uint64_t origin_ns = 0;
  std::string origin_name = "capture start";
};

// Throws std::invalid_argument with a clear message on a bad regex or an unknown range.
Selection select_events(const Model& model, const EventFilter& filter);

// The row of a --range's NAME@N: the N-th occurrence by start time of the push/pop or
// start/end ranges so named. Throws std::invalid_argument as select_events() does (a bad N,
// fewer occurrences, with the names the capture has when it has none of that name).
uint32_t range_occurrence(const Model& model, const std::string& spec);
// The same over ranges listed elsewhere (a job's captures, each read by a scan): push/pop and
// start/end ranges only, with their starts on the clock the occurrences are counted on, in the
// order a load of them would hold them. The index in `ranges`.
struct NamedRange {
  std::string_view name;
  uint64_t start_ns = 0;
};
size_t range_occurrence(const std::vector<NamedRange>& ranges, const std::string& spec);

// select_events()' window step: [*from, *to] (the capture's, or the range's) narrowed to what
// --from and --to ask for, counted from `origin`; without a range, --to may reach past it.
void narrow_to_window(const EventFilter& filter, uint64_t origin, uint64_t* from, uint64_t* to);
// select_events()' error for a window narrowed to nothing (to < from): --from past the end of
// the span [sel.origin_ns, span_end], or --to before --from. Throws std::invalid_argument.
[[noreturn]] void throw_empty_window(const EventFilter& filter, const Selection& sel, uint64_t span_end);

// select_events()' window on *sel: [from, to] (the capture's first and last times, or with
// --range its occurrence's window) narrowed by --from and --to from sel->origin_ns, and whether
// one was asked for. Throws as select_events() does when that leaves nothing.
void set_window(const EventFilter& filter, uint64_t from, uint64_t to, Selection* sel);

// What a filter selects, in words, as Selection::description says it ("" for none).
std::string describe_filter(const EventFilter& filter);

// The window a chart fits to its selected work when none was asked for: from the first begin
// or launch `lo` to the last end `hi`, padded by 2% (at least 1 us), within [from, to].
void fit_window(uint64_t from, uint64_t to, uint64_t lo, uint64_t hi, Selection* selection);

// The model with only the selection's GPU events (API calls, ranges, NCCL calls and threads
// kept whole; NCCL calls whose kernel was left out lose that link): how the analyses that
// read a whole model (stats, diagnose, diff) take the same filter flags as render and export.
Model restricted(const Model& model, const Selection& selection);

// The time an event occupies for windowing: [start,end] when known, else its launch.
uint64_t event_begin_ns(const Model& model, uint32_t e);
uint64_t event_end_ns(const Model& model, uint32_t e);

}  // namespace gantt
