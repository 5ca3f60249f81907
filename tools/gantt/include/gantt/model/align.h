// Clock alignment of GPU timestamps onto the host clock, within one capture.
//
// The hook registers CUPTI's timestamp callback (cuptiActivityRegisterTimestampCallback) and
// refuses to trace without it, so CUPTI stamps every GPU record with CLOCK_MONOTONIC_RAW, the
// clock of the host records: Header.features has FEATURE_HOST_CLOCK_CALLBACK and nothing is
// shifted. A capture without that feature (written by another tool) has GPU times on a clock
// of its own; they are drawn as recorded and every output says so. ClockSync records, which
// the hook never writes, are read and ignored. Aligning captures with each other is
// gantt/ranks/alignment.h.
#pragma once

#include <cstdint>
#include <string>

namespace gantt {

enum class AlignMethod : uint8_t {
  kSharedClock = 0,  // host and GPU share one clock: no shift
  kNone = 2,         // no shared clock: GPU times used as recorded (unaligned)
};

struct ClockAlignment {
  AlignMethod method = AlignMethod::kSharedClock;
};

// From the capture's Header.features.
ClockAlignment clock_alignment(uint64_t header_features);

// One line for `info` and the chart footer, e.g. "shared clock (CUPTI timestamp callback)".
std::string describe(const ClockAlignment& alignment);

}  // namespace gantt
