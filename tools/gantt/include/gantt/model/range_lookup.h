// The innermost push/pop range on a thread containing a time: the range ModelBuilder gives
// each launch (model_join.cpp build_ranges), and the one a streamed read gives it from a
// model of only the ranges (stream_stats.cpp). Internal to libgantt.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gantt/model/model.h"

namespace gantt {

class RangeLookup {
 public:
  // Over rows [first, size) of `ranges`, which must outlive the lookup.
  RangeLookup(const RangeTable& ranges, size_t first);
  bool empty() const { return by_thread_.empty(); }
  // The range of thread row `thread` that contains `when`, kNone when none does.
  uint32_t at(uint32_t thread, uint64_t when) const;

 private:
  const RangeTable& ranges_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_thread_;  // push/pop rows by start
};

}  // namespace gantt
