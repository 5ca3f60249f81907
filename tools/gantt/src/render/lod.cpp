#include "gantt/render/lod.h"

#include <algorithm>
#include <cmath>

namespace gantt {

Coverage::Coverage(int columns) : busy_(static_cast<size_t>(std::max(columns, 0)), 0),
                                  count_(static_cast<size_t>(std::max(columns, 0)), 0) {}

uint64_t Coverage::units(double x) {
  // llround(ldexp(x, kUnitBits)) for 0 <= x <= columns, without the library calls (a tenth of
  // a streamed render went to them): scaling by a power of two is exact, and so is taking the
  // integer part off, so the fraction decides the rounding (half away from zero) exactly.
  const double v = x * static_cast<double>(uint64_t{1} << kUnitBits);
  const uint64_t whole = static_cast<uint64_t>(v);
  return whole + (v - static_cast<double>(whole) >= 0.5 ? 1 : 0);
}

void Coverage::add(double x0, double x1) {
  const double n = static_cast<double>(busy_.size());
  if (busy_.empty() || !(x1 > 0) || !(x0 < n)) return;
  x0 = std::max(0.0, x0);
  x1 = std::min(n, std::max(x1, x0));
  constexpr uint64_t kUnit = uint64_t{1} << kUnitBits;
  const uint64_t u0 = units(x0);
  const uint64_t u1 = std::max(u0, units(x1));
  const size_t last = busy_.size() - 1;
  const size_t c0 = std::min(static_cast<size_t>(u0 / kUnit), last);
  ++total_;
  if (u1 == u0) {  // a zero-length event still marks its column as touched
    ++count_[c0];
    busy_[c0] += kUnit >> 10;
    return;
  }
  const size_t c1 = std::min(static_cast<size_t>((u1 + kUnit - 1) / kUnit), busy_.size());
  for (size_t c = c0; c < std::max(c1, c0 + 1); ++c) {
    const uint64_t lo = std::max(u0, c * kUnit), hi = std::min(u1, (c + 1) * kUnit);
    busy_[c] += hi > lo ? hi - lo : 0;
    ++count_[c];
  }
}

void Coverage::merge(const Coverage& other) {
  if (other.busy_.size() != busy_.size()) return;
  for (size_t c = 0; c < busy_.size(); ++c) {
    busy_[c] += other.busy_[c];
    count_[c] += other.count_[c];
  }
  total_ += other.total_;
}

double Coverage::busy(int column) const {
  return std::min(1.0, std::ldexp(static_cast<double>(busy_[static_cast<size_t>(column)]), -kUnitBits));
}

std::vector<Coverage::Run> Coverage::runs(int levels) const {
  std::vector<Run> out;
  const int n = columns();
  auto level_of = [&](int c) {
    if (count_[static_cast<size_t>(c)] == 0) return 0;
    return std::clamp(static_cast<int>(std::ceil(busy(c) * levels)), 1, levels);
  };
  for (int c = 0; c < n;) {
    const int lv = level_of(c);
    if (lv == 0) { ++c; continue; }
    Run r;
    r.x0 = c;
    r.level = lv;
    double sum = 0;
    while (c < n && level_of(c) == lv) {
      r.events += count_[static_cast<size_t>(c)];
      sum += busy(c);
      ++c;
    }
    r.x1 = c;
    r.busy = sum / (r.x1 - r.x0);
    out.push_back(r);
  }
  return out;
}

int Coverage::levels_within(int levels, size_t max_runs) const {
  while (levels > 1 && runs(levels).size() > max_runs) levels /= 2;
  return std::max(levels, 1);
}

namespace {
constexpr double kWidthSteps[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181};
}  // namespace

void WidthHistogram::add(double w, size_t times) {
  static_assert(std::size(kWidthSteps) == kSteps);
  total_ += times;
  for (size_t i = 0; i < kSteps && w >= kWidthSteps[i]; ++i) at_least_[i] += times;
}

double WidthHistogram::threshold(size_t max_individual) const {
  if (total_ <= max_individual) return 0;
  for (size_t i = 0; i < kSteps; ++i)
    if (at_least_[i] <= max_individual) return kWidthSteps[i];
  return 1e9;  // nothing individually: everything as coverage
}

double individual_threshold_px(const std::vector<float>& widths_px, size_t max_individual) {
  WidthHistogram h;
  for (float w : widths_px) h.add(w);
  return h.threshold(max_individual);
}

}  // namespace gantt
