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
bool write_chrome_scanned(const std::string& path, const ScanExportOptions& options, const Exporter::OpenOutput& open_output,
                          ScannedExport* result, std::string* why_not);

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

}  // namespace gantt::exporting
