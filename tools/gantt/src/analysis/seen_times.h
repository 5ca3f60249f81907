// What a load times of a capture, gathered by the consumers of a scan (job_scan.cpp's timed
// scans, diagnose_scan.cpp). Internal to the analysis part.
#pragma once

#include <algorithm>
#include <cstdint>

#include <gpuhook/capture.h>

#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/model/model_builder.h"

namespace gantt::analysis {

// What a load times of a capture (ModelBuilder's first and last times), and what select_events()
// fits its window to: the events' first launch or begin and last end.
struct SeenTimes {
  uint64_t first = 0, last = 0;   // every time the loader sees (0: none)
  uint64_t lo = UINT64_MAX, hi = 0;  // the fit: begins and launches, ends
  bool any_event = false;
  void see(uint64_t t) {
    if (t == 0) return;
    if (first == 0 || t < first) first = t;
    last = std::max(last, t);
  }
  // An operation a filter left out: a load still holds its times.
  void see_unselected(const ScannedEvent& e) {
    see(e.queued_ns);
    see(e.start_ns);
    see(e.end_ns);
  }
  void see_call(const gpuhook::ApiFields& a) {
    see(builder::known(a.start_ns));
    see(builder::known(a.end_ns));
  }
  // Of the other records, the NCCL calls' times (counter samples, allocations and memory uses
  // are not timed by a load: they go on while nothing else happens).
  void see_record(const gpuhook::v1::Record& r) {
    if (r.kind_case() != gpuhook::v1::Record::kNccl) return;
    see(builder::t(r.nccl().has_start_ns(), r.nccl().start_ns()));
    see(builder::t(r.nccl().has_end_ns(), r.nccl().end_ns()));
  }
  // A GPU operation's times, and filter.cpp event_begin_ns() and event_end_ns() with its launch.
  void see_event(const ScannedEvent& e) {
    see(e.queued_ns);
    see(e.start_ns);
    see(e.end_ns);
    const uint64_t launch = e.launched ? e.launch_ns : 0;
    const uint64_t begin = e.start_ns ? e.start_ns : e.queued_ns ? e.queued_ns : launch;
    const uint64_t end = e.end_ns ? std::max(e.end_ns, begin) : begin;
    any_event = true;
    if (begin) lo = std::min(lo, begin);
    if (launch) lo = std::min(lo, launch);
    hi = std::max(hi, end);
  }
  void absorb(const SeenTimes& o) {
    see(o.first);
    see(o.last);
    lo = std::min(lo, o.lo);
    hi = std::max(hi, o.hi);
    any_event = any_event || o.any_event;
  }
  // The times of a scanner's context (its header, its NVTX ranges), which a load sees too.
  void see_context(const EventScanner& scanner) {
    see(scanner.context().captures.front().first_ns);
    see(scanner.context().captures.front().last_ns);
  }
  // The fit on the job's clock (a capture's first and last are moved with its model).
  SeenTimes fit_moved(int64_t offset) const {
    SeenTimes out;
    out.any_event = any_event;
    if (lo != UINT64_MAX) out.lo = shifted(lo, offset);
    out.hi = shifted(hi, offset);
    return out;
  }
};

}  // namespace gantt::analysis
