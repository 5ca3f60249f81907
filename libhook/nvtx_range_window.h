// GPUHOOK_RANGE=nvtx:NAME@FIRST-LAST: the capture window opens at the push of occurrence
// FIRST of NAME and closes at the pop that ends occurrence LAST (on the thread that pushed it).
// Sampled, nvtx:NAME%N or NAME~P (with @FIRST-LAST or not): each occurrence drawn is recorded
// from its push to its pop (occurrences in flight on several threads at once share a window);
// what runs between them is not recorded.
#pragma once

#include <cstdint>
#include <string>

#include "config.h"

namespace gpuhook::hook {

using WindowSetter = void (*)(uint64_t open_ns, uint64_t close_ns);
using WindowEdge = void (*)(uint64_t number, uint64_t ns);  // window `number` opens or closes

// range: the configured range (only kNvtx and kProfilerApi windows are driven from here).
// setter sets the one window; open / close start and end the numbered windows of a sampled
// range; seed draws nvtx:NAME~P's occurrences.
void window_configure(const CaptureRange* range, WindowSetter setter, WindowEdge open, WindowEdge close, uint64_t seed);
// Windows of a sampled range whose opening a push has claimed so far: a window is claimed
// before the pushing thread publishes it (WindowEdge open), and another thread's records in it
// can reach the writer in between (Writer::in_window waits for it).
uint64_t windows_claimed();
// Occurrences of a sampled range seen and recorded so far (for the exit line and the header).
uint64_t window_occurrences();
uint64_t window_recorded();
void nvtx_window_push(const char* name, int depth);
// In a fork child, once its writer is in place: only the forking thread lives on, so only its
// own drawn occurrence (if it has one in flight) is, and the child's windows start anew.
void window_after_fork();
void nvtx_window_pop(int depth);
// cudaProfilerStart/Stop and gpuhook_capture_start/stop.
void profiler_window_start();
void profiler_window_stop();

// At exit: "" when the window opened (or none was configured), else why nothing was recorded
// in words, with the NVTX range names pushed while the window waited (the first 16, counted).
std::string window_never_opened();

}  // namespace gpuhook::hook
