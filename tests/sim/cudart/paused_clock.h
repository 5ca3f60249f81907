// GPUHOOK_SIM_PAUSE_CLOCK=1: the process's CLOCK_MONOTONIC_RAW stops while the simulator is
// behind its own plan.
//
// The simulator plans the GPU's timeline, but the work behind it is real: a kernel's host twin
// computes its result on a CPU core, a copy moves its bytes. At a size where that CPU work takes
// longer than the modelled GPU time (a 16 M-element kernel: milliseconds of CPU against tens of
// microseconds of H200), a host that reads the result would wait for this machine, not for the
// GPU, and its timeline would measure the simulator. With this setting the clock stops while a
// host thread is blocked on such work (or runs it itself, as Engine::wait does): the program
// then sees the GPU the simulator models whatever the machine's speed. The hook's clock is
// CLOCK_MONOTONIC_RAW (libhook/clock.h), and so is the CUPTI clock it registers: libcudart.so.13
// defines clock_gettime, which the process's calls resolve to before libc's, and answers that
// clock on the paused time line; every other clock, and every call without the setting, goes
// to libc.
//
// A blocked host whose wait needs the clock to reach a planned time (and no late work) moves
// it there at once (advance_clock): then no time passes in this machine's scheduling at all
// while the program waits, and the program's timeline is the plan's.
//
// What it does not model: while the clock stands or skips, other host threads of the program
// run on, so their work in that time takes none, or the skipped time; so does host work in
// stream order (cudaLaunchHostFunc) that runs while the program waits for it. Separate processes pause
// their own clocks: ranks that meet in a collective must not use it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace gpuhook::sim {

// GPUHOOK_SIM_PAUSE_CLOCK is set (read once; the simulated CUPTI reads it too).
inline bool clock_pauses() {
  static const bool on = [] {
    const char* v = std::getenv("GPUHOOK_SIM_PAUSE_CLOCK");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}
// The clock stops at the first pause and runs on at the last resume (they nest across threads).
void pause_clock();
void resume_clock();

// Moves the clock on by delta_ns at once (nothing when not set, or delta_ns <= 0): a host that
// is blocked until a planned time skips to it instead of sleeping through this machine's wake-ups.
void advance_clock(int64_t delta_ns);

class ClockPause {
 public:
  ClockPause() { pause_clock(); }
  ~ClockPause() { resume_clock(); }
  ClockPause(const ClockPause&) = delete;
  ClockPause& operator=(const ClockPause&) = delete;
};

}  // namespace gpuhook::sim
