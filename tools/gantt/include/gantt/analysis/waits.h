// Why each launch waited: a kernel's queued -> start interval split by cause.
//
// CUPTI stamps when a launch was queued and when it started; the interval between is not one
// thing. In order:
//   own stream   behind the previous operation of its own stream (the program's own order);
//   dependency   behind an event it was told to wait for (cudaStreamWaitEvent), or the legacy
//                default stream's implicit barrier with every blocking stream;
//   priority     ready, but kernels of higher-priority streams were running;
//   device full  ready, but other kernels were running (no room for its blocks);
//   launch       ready and nothing else running: the launch path itself (submission, the
//                host pushing the work), what remains.
// Only the last three are waits the program did not ask for: the queue-delay flag counts
// those (annotate.h), so a kernel that simply follows its predecessor is not flagged.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

enum class WaitCause : uint8_t { kOwnStream = 0, kDependency = 1, kPriority = 2, kDeviceFull = 3, kLaunch = 4 };
inline constexpr size_t kWaitCauses = 5;
const char* to_string(WaitCause cause);
// True for the causes that are the program's own ordering (its stream, its events).
inline bool is_own_ordering(WaitCause c) { return c == WaitCause::kOwnStream || c == WaitCause::kDependency; }

struct WaitSplit {
  uint32_t event = kNone;
  std::array<uint64_t, kWaitCauses> ns{};  // by WaitCause; they add up to start - queued
  uint64_t total() const {
    uint64_t t = 0;
    for (uint64_t v : ns) t += v;
    return t;
  }
  // The part not of the program's own ordering.
  uint64_t unexplained_by_program() const {
    return ns[static_cast<size_t>(WaitCause::kPriority)] + ns[static_cast<size_t>(WaitCause::kDeviceFull)] +
           ns[static_cast<size_t>(WaitCause::kLaunch)];
  }
  WaitCause largest() const;
  WaitCause largest_not_own() const;
};

// How many operations before a kernel's start are looked at for one still running then: a
// kernel that ran through the whole wait started among the last few on its device.
inline constexpr size_t kWaitLookBack = 64;

// The split of every kernel of `events` that has a queued stamp and started after it, sorted
// by event. Context (other streams, events, priorities) comes from the whole model.
std::vector<WaitSplit> wait_causes(const Model& model, const std::vector<uint32_t>& events);

// Cross-stream dependencies the program made with events: for each cudaStreamWaitEvent, the
// last operation its event's cudaEventRecord covered (on the recording stream) and the first
// operation the waiting stream launched after the wait. (source event, waiting event) pairs,
// in the order of the waits. `render --deps` draws them as arrows.
std::vector<std::pair<uint32_t, uint32_t>> event_dependencies(const Model& model);

// `stats --by wait`: per stream, the kernels that waited and their queued time by cause, and
// a last row over all streams. `format`: text, md, csv or json. No kernel waited: text and md
// say so, csv is the header row and json has no streams and an "all" of zeros.
std::string format_wait_stats(const Model& model, const std::vector<WaitSplit>& splits, const std::string& format);

}  // namespace gantt::analysis
