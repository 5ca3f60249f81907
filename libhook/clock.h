// The one clock of the capture: CLOCK_MONOTONIC_RAW (CUPTI is told to use it too), plus the
// test-only offset of GPUHOOK_TEST_CLOCK_OFFSET_NS that makes one machine look like several.
#pragma once

#include <cstdint>
#include <ctime>

namespace gpuhook::hook {

extern int64_t g_clock_offset_ns;  // set once at start, before any thread reads it

inline uint64_t monotonic_raw_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t now_ns() { return monotonic_raw_ns() + static_cast<uint64_t>(g_clock_offset_ns); }

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gpuhook::hook
