// Interval unions and intersections on [start, end) ns pairs: the arithmetic behind busy %,
// overlap % and idle gaps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
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

// The union of intervals given one by one, as merge_intervals() merges them: intervals that
// overlap or touch are one. Kept as disjoint intervals by start, 16 bytes each: those that come
// in start order are merged at once, the others gathered and merged in batches. Memory grows
// with the gaps between the intervals, not with how many are given.
class IntervalUnion {
 public:
  using Span = Interval;
  void add(uint64_t b, uint64_t e) {
    if (!spans_.empty() && b >= spans_.back().first) {  // at or after the last span's start
      if (b <= spans_.back().second) spans_.back().second = std::max(spans_.back().second, e);
      else spans_.emplace_back(b, e);
      return;
    }
    if (spans_.empty()) {
      spans_.emplace_back(b, e);
      return;
    }
    pending_.emplace_back(b, e);
    if (pending_.size() >= std::max<size_t>(4096, spans_.size() / 4)) merge_pending();
  }
  void absorb(const IntervalUnion& other) {
    for (const auto& [b, e] : other.spans()) add(b, e);
  }
  size_t size() const { return spans().size(); }
  // Intervals held now, merged or not: the memory this union uses, in 16-byte units.
  size_t held() const { return spans_.size() + pending_.size(); }
  const std::vector<Span>& spans() const {
    merge_pending();
    return spans_;
  }
  // The spans, merged, moved out: the union is empty after.
  std::vector<Span> take() {
    merge_pending();
    return std::exchange(spans_, {});
  }

 private:
  void merge_pending() const {
    if (pending_.empty()) return;
    std::sort(pending_.begin(), pending_.end());
    std::vector<Span> all;
    all.reserve(spans_.size() + pending_.size());
    std::merge(spans_.begin(), spans_.end(), pending_.begin(), pending_.end(), std::back_inserter(all));
    pending_.clear();
    spans_.clear();
    for (const Span& s : all) {
      if (!spans_.empty() && s.first <= spans_.back().second) spans_.back().second = std::max(spans_.back().second, s.second);
      else spans_.push_back(s);
    }
  }
  // Merged lazily by the readers: logically the union either way.
  mutable std::vector<Span> spans_, pending_;
};

}  // namespace gantt::analysis
