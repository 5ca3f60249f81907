// One device's busy, compute and copy time, their overlap and its largest idle gaps, from
// activities given one by one in any order, in memory that grows with the idle gaps still
// open rather than with the activities: what `stats` computes from the whole timeline
// (summarize()), for a capture read as a stream.
//
// Activities are staged, then sorted and merged into disjoint lists (busy, compute, copy).
// Those lists hold one interval per stretch of work between idle gaps; when the busy list
// passes `pending_cap` intervals, its older half is summed and forgotten up to a frontier
// (the start of the first interval kept). An activity that arrives later and starts before
// the frontier is clipped to it and counted in late(): only then do the figures differ from
// the whole-timeline ones, and the report says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gantt/analysis/intervals.h"

namespace gantt::analysis {

class BusyTracker {
 public:
  enum class Work : uint8_t { kCompute, kCopy, kOther };  // kernels (and NCCL), copies, memsets

  struct Totals {
    uint64_t first_ns = 0, last_ns = 0;  // earliest start, latest end
    uint64_t busy_ns = 0, compute_ns = 0, copy_ns = 0, overlap_ns = 0;
    std::vector<Interval> gaps;  // the largest idle gaps, largest first, earlier first on ties
  };

  explicit BusyTracker(size_t gaps, size_t pending_cap = size_t{1} << 19);

  void add(uint64_t start_ns, uint64_t end_ns, Work work);
  // Everything `later` was given, as if given to this tracker (a later part of the file).
  void absorb(BusyTracker&& later);
  Totals finish();

  uint64_t late() const { return late_; }
  // False when late activities were clipped, or when two trackers that had each settled a
  // part were absorbed into one (their parts may overlap in time): the figures are then
  // close to, not equal to, the whole-timeline ones.
  bool exact() const { return late_ == 0 && !approximate_; }
  // Intervals held now: the memory this tracker uses, in 16-byte units.
  size_t held() const { return staged_.size() + busy_.size() + compute_.size() + copy_.size(); }

 private:
  struct Staged {
    uint64_t start, end;
    Work work;
  };
  void flush();
  void settle(uint64_t frontier);  // sums and forgets everything before `frontier`
  void offer_gap(uint64_t from, uint64_t to);

  size_t gaps_, cap_;
  std::vector<Staged> staged_;
  std::vector<Interval> busy_, compute_, copy_;  // merged, after frontier_
  uint64_t frontier_ = 0;                        // 0: nothing settled yet
  uint64_t settled_end_ = 0;                     // end of the last settled busy interval
  uint64_t first_ = 0, last_ = 0;
  uint64_t busy_ns_ = 0, compute_ns_ = 0, copy_ns_ = 0, overlap_ns_ = 0;
  uint64_t late_ = 0;
  bool approximate_ = false;
  std::vector<Interval> top_gaps_;
};

}  // namespace gantt::analysis
