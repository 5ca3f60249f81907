// Level of detail: where more events fall into a pixel column than can be seen, the chart
// draws their coverage instead of each rectangle, so output size and drawing cost follow
// the picture (columns x lanes), not the event count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gantt {

// Busy fraction per pixel column of one lane. Spans are summed in fixed point (1/2^20 px),
// not in floats: a sum of integers is the same in any order, so coverage folded from a
// capture's chunks by several threads, or from the loaded model, comes out identical.
class Coverage {
 public:
  explicit Coverage(int columns);
  // Adds [x0, x1) in pixels (fractional), clipped to the columns. Overlapping spans add
  // up; busy() clamps to 1.
  void add(double x0, double x1);
  // Adds another lane's coverage of the same columns (nothing when the widths differ).
  void merge(const Coverage& other);
  int columns() const { return static_cast<int>(busy_.size()); }
  double busy(int column) const;
  uint32_t count(int column) const { return count_[static_cast<size_t>(column)]; }
  bool empty() const { return total_ == 0; }

  // Runs of adjacent columns with the same quantised level (1..levels): one rectangle each.
  struct Run {
    int x0 = 0, x1 = 0;   // columns [x0, x1)
    int level = 0;        // 1..levels
    uint64_t events = 0;  // events that touched the run (an event spanning columns counts in each)
    double busy = 0;      // mean busy fraction over the run
  };
  std::vector<Run> runs(int levels = 4) const;
  // The most levels, from `levels` halved down to 1, whose runs number at most `max_runs`.
  // A lane whose busy fraction hovers on a level boundary flickers column by column and
  // would cost one rectangle per column; with 64 ranks that was 8 MiB of SVG for detail no
  // eye can read, so fewer levels it is (still 1 when even that stays above the budget).
  int levels_within(int levels, size_t max_runs) const;
  // A pixel position in fixed-point units: llround(ldexp(x, 20)), for 0 <= x <= columns.
  static uint64_t units(double x);

 private:
  static constexpr int kUnitBits = 20;  // fixed-point units per pixel: 2^20
  std::vector<uint64_t> busy_;          // per column, in units
  std::vector<uint32_t> count_;
  uint64_t total_ = 0;
};

// Counts of event widths against the thresholds 1, 2, 3, 5, 8, ... px (Fibonacci steps),
// so choosing the threshold needs no per-event storage.
class WidthHistogram {
 public:
  void add(double width_px, size_t times = 1);
  // 0 when all events fit the budget (each is drawn, at least 1 px wide); otherwise the
  // smallest step that keeps the events at least that wide within `max_individual`.
  double threshold(size_t max_individual) const;

 private:
  static constexpr size_t kSteps = 18;
  size_t total_ = 0;
  size_t at_least_[kSteps] = {};
};

// The narrowest on-screen width (px) an event may have to be drawn as its own rectangle,
// so that at most `max_individual` events are: 0 when all fit, else the smallest of 1, 2,
// 3, 5, 8, ... px that keeps the count under the budget. `widths_px` are the events' widths.
double individual_threshold_px(const std::vector<float>& widths_px, size_t max_individual);

}  // namespace gantt
