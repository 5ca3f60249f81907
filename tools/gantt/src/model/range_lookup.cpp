#include "gantt/model/range_lookup.h"

#include <algorithm>

namespace gantt {

RangeLookup::RangeLookup(const RangeTable& ranges, size_t first) : ranges_(ranges) {
  for (size_t i = first; i < ranges.size(); ++i)
    if (ranges.kind[i] == RangeKind::kPushPop) by_thread_[ranges.thread[i]].push_back(static_cast<uint32_t>(i));
  for (auto& [thread, rows] : by_thread_)
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return ranges.start_ns[a] < ranges.start_ns[b]; });
}

// Push/pop ranges nest, so the latest-started range before `when`, or one of its ancestors,
// is the innermost one containing it.
uint32_t RangeLookup::at(uint32_t thread, uint64_t when) const {
  auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return kNone;
  const std::vector<uint32_t>& rows = it->second;
  auto up = std::upper_bound(rows.begin(), rows.end(), when, [&](uint64_t v, uint32_t row) { return v < ranges_.start_ns[row]; });
  if (up == rows.begin()) return kNone;
  uint32_t r = *(up - 1);
  while (r != kNone && ranges_.end_ns[r] != 0 && ranges_.end_ns[r] < when) r = ranges_.parent[r];
  return r;
}

}  // namespace gantt
