// Interval unions and intersections on [start, end) ns pairs: the arithmetic behind busy %,
// overlap % and idle gaps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace gantt::analysis {

using Interval = std::pair<uint64_t, uint64_t>;

// Sorts and merges in place: afterwards disjoint, ascending, non-empty.
inline void merge_intervals(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.second <= iv.first) continue;
    if (out > 0 && iv.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, iv.second);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

inline uint64_t total_length(const std::vector<Interval>& merged) {
  uint64_t t = 0;
  for (const Interval& iv : merged) t += iv.second - iv.first;
  return t;
}

// Length of the intersection of two merged lists.
inline uint64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t t = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return t;
}

}  // namespace gantt::analysis
