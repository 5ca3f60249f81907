// GPUHOOK_RANGE=nvtx:NAME@FIRST-LAST: the capture window opens at the push of occurrence
// FIRST of NAME and closes at the pop that ends occurrence LAST (on the thread that pushed it).
// Sampled, nvtx:NAME%N or NAME~P (with @FIRST-LAST or not): each occurrence drawn is a window
// of its own, from its push to its pop; what runs between them is not recorded.
#pragma once

#include <cstdint>
#include <string>

#include "config.h"

namespace gpuhook::hook {

using WindowSetter = void (*)(uint64_t open_ns, uint64_t close_ns);
using WindowMark = void (*)(uint64_t ns);

// range: the configured range (only kNvtx and kProfilerApi windows are driven from here).
// setter sets the one window; open_next / close start and end the next window of a sampled
// range; seed draws nvtx:NAME~P's occurrences.
void window_configure(const CaptureRange* range, WindowSetter setter, WindowMark open_next, WindowMark close,
                      uint64_t seed);
// Occurrences of a sampled range seen and recorded so far (for the exit line and the header).
uint64_t window_occurrences();
uint64_t window_recorded();
void nvtx_window_push(const char* name, int depth);
void nvtx_window_pop(int depth);
// cudaProfilerStart/Stop and gpuhook_capture_start/stop.
void profiler_window_start();
void profiler_window_stop();

// At exit: "" when the window opened (or none was configured), else why nothing was recorded
// in words, with the NVTX range names pushed while the window waited (the first 16, counted).
std::string window_never_opened();

}  // namespace gpuhook::hook
