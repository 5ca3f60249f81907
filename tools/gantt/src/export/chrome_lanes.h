// The tracks of a Chrome trace, shared by its two writers (chrome_export.cpp, the loaded
// model; chrome_export_scan.cpp, a capture scanned). Internal to libgantt's export part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "gantt/export/export.h"

namespace gantt::exporting {

// Exporter::write_scanned() of the Chrome trace (chrome_export_scan.cpp).
bool write_chrome_scanned(const std::vector<std::string>& paths, const ScanExportOptions& options,
                          const Exporter::OpenOutput& open_output, ScannedExport* result, std::string* why_not);

// Tracks of one (pid, logical track): slices are placed on the first lane where they either
// start after everything open has ended or nest inside the innermost open slice.
class LaneAssigner {
 public:
  size_t place(uint64_t s, uint64_t e) {
    for (size_t i = 0; i < lanes_.size(); ++i) {
      auto& open = lanes_[i];
      while (!open.empty() && open.back() <= s) open.pop_back();
      if (open.empty() || e <= open.back()) {
        open.push_back(e);
        return i;
      }
    }
    lanes_.push_back({e});
    return lanes_.size() - 1;
  }

 private:
  std::vector<std::vector<uint64_t>> lanes_;  // per lane, the ends of its open slices (innermost last)
};

// The same for slices that come nearly, not quite, in start order (a scan's file order: CUPTI
// does not sort a buffer, and a GPU record read before its launch call is handed on when the
// call is read). A slice goes on the first lane where it is disjoint from, inside, or around
// each of the lane's last kKeep slices, which is what viewers need of a track as long as
// slices come less than kKeep out of their place.
class RecentLanes {
 public:
  static constexpr size_t kKeep = 64;
  // A track's lanes at most: a hostile stream of slices that all overlap would otherwise cost
  // a lane each, and each slice a look at every lane. The last takes what fits nowhere.
  static constexpr size_t kMaxLanes = 64;
  size_t place(uint64_t s, uint64_t e) {
    for (size_t i = 0; i < lanes_.size(); ++i)
      if (fits(lanes_[i], s, e)) {
        add(lanes_[i], s, e);
        return i;
      }
    if (lanes_.size() >= kMaxLanes) {
      add(lanes_.back(), s, e);
      return lanes_.size() - 1;
    }
    lanes_.emplace_back();
    add(lanes_.back(), s, e);
    return lanes_.size() - 1;
  }
  // Slices another writer placed on lane `lane`.
  void add(size_t lane, uint64_t s, uint64_t e) {
    if (lane >= kMaxLanes) return;
    if (lanes_.size() <= lane) lanes_.resize(lane + 1);
    add(lanes_[lane], s, e);
  }
  size_t lanes() const { return lanes_.size(); }

 private:
  struct Lane {
    std::vector<std::pair<uint64_t, uint64_t>> recent;  // a ring of kKeep
    size_t next = 0;
  };
  static bool fits(const Lane& lane, uint64_t s, uint64_t e) {
    for (const auto& [a, b] : lane.recent)
      if (!(e <= a || s >= b || (s >= a && e <= b) || (s <= a && e >= b))) return false;
    return true;
  }
  static void add(Lane& lane, uint64_t s, uint64_t e) {
    if (lane.recent.size() < kKeep) lane.recent.emplace_back(s, e);
    else lane.recent[lane.next] = {s, e};
    lane.next = (lane.next + 1) % kKeep;
  }
  std::vector<Lane> lanes_;
};

}  // namespace gantt::exporting
