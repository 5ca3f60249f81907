// How the simulated CUPTI's kernel stamps depart from the plan, as real ones do; shared with
// the simulator's tests.
#pragma once

#include <cstdint>

namespace gpuhook::sim {

// A kernel's queued and submitted stamps are taken on the CPU, its start and end on the GPU and
// converted to the CPU clock by CUPTI's interpolation (cupti_activity.h, CUpti_ActivityKernel10
// "submitted"): the two clocks disagree by a little, so a kernel that starts the moment it is
// submitted can show submitted > start. Modelled on the CPU stamp, which every other kernel
// record reads this late; the GPU times stay exactly as planned.
inline constexpr uint64_t kSubmittedClockErrorNs = 250;

}  // namespace gpuhook::sim
