// The grammars of the hook's settings that gantt-cli also speaks: GPUHOOK_API (which API
// records to keep) and GPUHOOK_RANGE (what part of the run to capture). The hook parses its
// environment with them; `gantt-cli record` checks its --api and --range with them before it
// starts the program. Header-only: nothing links across the hook/analysis boundary.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <gpuhook/duration.h>

namespace gpuhook::settings {

// API record groups (GPUHOOK_API); a CUPTI callback id belongs to a group by its name.
enum ApiGroup : uint32_t {
  kApiLaunch = 1u << 0,
  kApiSync = 1u << 1,
  kApiMemcpy = 1u << 2,  // copies and memsets
  kApiAlloc = 1u << 3,   // also turns on MEMORY2 records
  kApiOther = 1u << 4,   // everything else ("all" only)
  kApiAll = 0x1f,
};

enum class RangeKind { kAll, kProfilerApi, kNvtx, kTime };

struct CaptureRange {
  RangeKind kind = RangeKind::kAll;
  std::string nvtx_name;      // kNvtx
  uint64_t first = 1;         // kNvtx: 1-based occurrence window, inclusive
  uint64_t last = UINT64_MAX;
  uint64_t delay_ns = 0;      // kTime: from the hook's start
  uint64_t duration_ns = 0;   // kTime: 0 = to the end
  std::string text;           // as given, for the header
};

namespace detail {

inline std::optional<int64_t> parse_int(const char* s) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

// A duration of the range grammar: gpuhook/duration.h's, at most 10^18 ns.
inline std::optional<uint64_t> duration(const std::string& text) {
  uint64_t ns = 0;
  if (!parse_duration(text, &ns, nullptr) || ns > 1'000'000'000'000'000'000ull) return std::nullopt;
  return ns;
}

}  // namespace detail

inline std::optional<uint32_t> parse_api(const std::string& text) {
  if (text == "all") return kApiAll;
  if (text == "none") return 0u;
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "launch") mask |= kApiLaunch;
    else if (item == "sync") mask |= kApiSync;
    else if (item == "memcpy") mask |= kApiMemcpy;
    else if (item == "alloc") mask |= kApiAlloc;
    else return std::nullopt;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return mask;
}

inline std::optional<CaptureRange> parse_range(const std::string& text) {
  CaptureRange r;
  r.text = text;
  if (text == "all" || text.empty()) {
    r.text.clear();
    return r;
  }
  if (text == "cudaProfilerApi") {
    r.kind = RangeKind::kProfilerApi;
    return r;
  }
  if (text.rfind("time:", 0) == 0) {
    // time:DELAY, time:DELAY+DURATION or time:DELAY-END (END counted from the start too)
    std::string rest = text.substr(5);
    size_t sep = rest.find_first_of("+-");
    auto delay = detail::duration(rest.substr(0, sep));
    if (!delay) return std::nullopt;
    r.kind = RangeKind::kTime;
    r.delay_ns = *delay;
    if (sep != std::string::npos) {
      auto second = detail::duration(rest.substr(sep + 1));
      if (!second) return std::nullopt;
      if (rest[sep] == '+') r.duration_ns = *second;
      else if (*second > *delay) r.duration_ns = *second - *delay;
      if (r.duration_ns == 0) return std::nullopt;
    }
    return r;
  }
  // nvtx:NAME[@A[-B]] or NAME[@A[-B]]
  std::string spec = text.rfind("nvtx:", 0) == 0 ? text.substr(5) : text;
  size_t at = spec.rfind('@');
  r.kind = RangeKind::kNvtx;
  r.nvtx_name = spec.substr(0, at);
  if (r.nvtx_name.empty()) return std::nullopt;
  if (at != std::string::npos) {
    std::string window = spec.substr(at + 1);
    size_t dash = window.find('-');
    auto first = detail::parse_int(window.substr(0, dash).c_str());
    if (!first || *first < 1) return std::nullopt;
    r.first = static_cast<uint64_t>(*first);
    r.last = r.first;
    if (dash != std::string::npos) {
      auto last = detail::parse_int(window.substr(dash + 1).c_str());
      if (!last || *last < *first) return std::nullopt;
      r.last = static_cast<uint64_t>(*last);
    }
  }
  return r;
}

}  // namespace gpuhook::settings
