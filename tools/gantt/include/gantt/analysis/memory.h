// GPU memory in use over time, per device, from the allocations and frees the hook recorded
// (CUPTI MEMORY2 records: GPUHOOK_API with alloc, the default), and what was live at its peak.
// Stacked two ways: by how it was allocated (the class), and by what it is for (the category:
// the gpuhook_mem_tag() the program gave the allocation, else "range NAME", the top-level NVTX
// range it was made in, else "(no range)").
// `render --view memory` draws it; `stats --by memory` tabulates it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

// How the memory was allocated, as the chart stacks it.
enum class MemoryClass : uint8_t { kDevice = 0, kPool = 1, kPinnedHost = 2, kManaged = 3, kOther = 4 };
inline constexpr size_t kMemoryClasses = 5;
// Categories drawn apart: the first kMemoryCategories - 1 met on any device, then "other".
inline constexpr size_t kMemoryCategories = 8;
const char* to_string(MemoryClass c);
MemoryClass memory_class(uint8_t memory_kind, bool pool);

// Sums of allocation sizes stop at UINT64_MAX: a hostile file's sizes must not wrap a peak
// into a small number.
inline uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

struct LiveAllocation {
  uint32_t row = kNone;      // in Model::memory (the allocation)
  uint64_t bytes = 0;
  MemoryClass cls = MemoryClass::kOther;
  uint64_t alloc_ns = 0;
  std::string where;         // NVTX range path of the allocating call, "" when none
  std::string category;      // as the header says
  uint64_t freed_ns = 0;     // when it was freed, 0 = never in the capture
  // GPUHOOK_MEM_USE (MemoryTable): when calls were given it, 0 = never; how often.
  uint64_t first_use_ns = 0, last_use_ns = 0;
  uint32_t uses = 0;
  uint32_t last_use_correlation = 0;
  // Held without use after its last one until freed or the capture ended (alloc time when
  // never used); 0 when uses were not recorded.
  uint64_t idle_ns = 0;
};

// The allocations live at a peak that were made under one NVTX range path.
struct PeakGroup {
  std::string path;          // "" = outside any range
  uint64_t bytes = 0, count = 0;
  uint64_t freed_later_bytes = 0;  // of those, freed after the peak (transient)
};

struct DeviceMemory {
  uint16_t capture = 0;
  uint32_t device = 0;
  // The step function: after the change at t[i], in_use[i] bytes by class.
  std::vector<uint64_t> t;
  std::vector<std::array<uint64_t, kMemoryClasses>> in_use;
  uint64_t peak_bytes = 0, peak_ns = 0;
  std::array<uint64_t, kMemoryClasses> peak_by_class{};
  // The same steps by category: categories[k] is layer k ("other" last when there were more).
  // The layers are the same on every device (one legend), so a device may have none of some.
  std::vector<std::string> categories;
  std::vector<std::array<uint64_t, kMemoryCategories>> in_use_by_category;
  std::array<uint64_t, kMemoryCategories> peak_by_category{};
  bool tagged = false;  // some allocation of the device has a gpuhook_mem_tag() category
  std::vector<LiveAllocation> at_peak;  // live at the peak, largest first (at most kPeakList)
  std::vector<std::pair<std::string, uint64_t>> peak_by_range;  // top-level range at allocation -> bytes at peak
  std::vector<PeakGroup> peak_by_path;  // full range path at allocation, most bytes first
  uint64_t allocations = 0, frees = 0, live_at_end_bytes = 0;
  // GPUHOOK_MEM_USE was on: the allocations live at the peak that no call was given after
  // it (a device, pool or managed allocation last used before the peak, or never), and for
  // how long they stayed so; largest first (at most kPeakList), and their total.
  bool uses_recorded = false;
  std::vector<LiveAllocation> unused_after_peak;
  uint64_t unused_after_peak_bytes = 0;
  uint64_t total(size_t i) const {
    uint64_t s = 0;
    for (uint64_t v : in_use[i]) s = saturating_add(s, v);
    return s;
  }
};

inline constexpr size_t kPeakList = 10;

// Every device of every capture that has allocation records. Frees of allocations made before
// the capture began (address unknown) change nothing.
std::vector<DeviceMemory> memory_report(const Model& model);

// `stats --by memory`: per device the peak and its make-up, then what was live at each peak.
// No allocations: text and md say so, json has no devices and csv the header rows.
std::string format_memory_stats(const Model& model, const std::vector<DeviceMemory>& report, const std::string& format);

}  // namespace gantt::analysis
