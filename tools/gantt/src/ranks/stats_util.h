// Small order statistics shared by the rank analyses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gantt::ranks_detail {

// Median of `v` (reorders it). 0 for an empty vector; the mean of the two middle values
// for an even count, so the result does not depend on input order.
template <typename T>
double median(std::vector<T>& v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = static_cast<double>(v[mid]);
  if (v.size() % 2) return hi;
  double lo = static_cast<double>(*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
  return (lo + hi) / 2;
}

// Nearest-rank percentile (0..100) of `v` (reorders it).
template <typename T>
double percentile(std::vector<T>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(idx, v.size() - 1)]);
}

}  // namespace gantt::ranks_detail
