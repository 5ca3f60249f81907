#include "nvtx_range_window.h"

#include <atomic>
#include <cstring>

#include "clock.h"
#include "message_text.h"
#include "recorder.h"

namespace gpuhook::hook {
namespace {

const CaptureRange* g_range = nullptr;
WindowSetter g_setter = nullptr;
WindowEdge g_open = nullptr, g_close = nullptr;
uint64_t g_seed = 0;
std::atomic<uint64_t> g_occurrences{0};
std::atomic<uint64_t> g_recorded{0};
std::atomic<uint64_t> g_open_ns{0};

// A sampled range's drawn occurrences in flight, on all threads, and the windows opened so far,
// in one word: (windows << kInFlightBits) | in flight. A window opens when the first goes in
// flight and closes when the last ends, so occurrences that overlap on several threads (each
// of a job's worker threads pushing "step") are one window, and the windows follow each other
// in time as Writer::in_window needs. Two counters could not say which window a pop closes
// once another thread has opened the next.
constexpr uint32_t kInFlightBits = 24;
constexpr uint64_t kInFlightMask = (uint64_t{1} << kInFlightBits) - 1;
std::atomic<uint64_t> g_sampled{0};

// The range names pushed while an nvtx: window waits, for the message when it never opens (a
// typo, a name from another domain). Lock-free: a slot is claimed by its name's hash; the
// claiming thread copies the name, then publishes it.
struct SeenName {
  std::atomic<uint64_t> hash{0};
  std::atomic<uint64_t> count{0};
  std::atomic<bool> ready{false};
  char name[48] = {};
};
SeenName g_seen[16];
std::atomic<uint64_t> g_seen_other{0};

void note_name(const char* name) {
  uint64_t h = 1469598103934665603ull;
  for (const char* p = name; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  h |= 1;  // 0 marks a free slot
  for (SeenName& s : g_seen) {
    uint64_t cur = s.hash.load(std::memory_order_acquire);
    if (cur == 0 && s.hash.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) {
      std::strncpy(s.name, name, sizeof s.name - 1);
      s.ready.store(true, std::memory_order_release);
      cur = h;
    }
    if (cur == h) {
      s.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  g_seen_other.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void window_configure(const CaptureRange* range, WindowSetter setter, WindowEdge open, WindowEdge close, uint64_t seed) {
  g_range = range;
  g_setter = setter;
  g_open = open;
  g_close = close;
  g_seed = seed;
}

uint64_t windows_claimed() { return g_sampled.load(std::memory_order_acquire) >> kInFlightBits; }
uint64_t window_occurrences() { return g_occurrences.load(std::memory_order_relaxed); }
uint64_t window_recorded() { return g_recorded.load(std::memory_order_relaxed); }

void nvtx_window_push(const char* name, int depth) {
  if (g_range == nullptr || g_range->kind != RangeKind::kNvtx || name == nullptr) return;
  if (g_open_ns.load(std::memory_order_relaxed) == 0) note_name(name);
  if (std::strcmp(name, g_range->nvtx_name.c_str()) != 0) return;
  uint64_t occurrence = g_occurrences.fetch_add(1, std::memory_order_relaxed) + 1;
  if (g_range->sampled()) {
    // Each occurrence drawn is recorded to its own pop (a nested push of the same name on a
    // thread with one in flight stays inside it). The time is read first: the window then
    // never opens after a record of this occurrence.
    if (t_state.close_depth >= 0 || !settings::occurrence_sampled(*g_range, occurrence, g_seed)) return;
    const uint64_t t = now_ns();
    uint64_t s = g_sampled.load(std::memory_order_relaxed), next = 0;
    do {
      next = (s & kInFlightMask) == 0 ? (((s >> kInFlightBits) + 1) << kInFlightBits) | 1 : s + 1;
    } while (!g_sampled.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    if ((s & kInFlightMask) == 0) {
      g_open_ns.store(t, std::memory_order_relaxed);
      g_open((next >> kInFlightBits) - 1, t);
    }
    g_recorded.fetch_add(1, std::memory_order_relaxed);
    t_state.close_depth = depth;
    return;
  }
  if (occurrence == g_range->first) {
    uint64_t t = now_ns();
    g_open_ns.store(t, std::memory_order_relaxed);
    g_setter(t, UINT64_MAX);
  }
  if (occurrence == g_range->last) t_state.close_depth = depth;
}

void nvtx_window_pop(int depth) {
  if (t_state.close_depth < 0 || depth != t_state.close_depth) return;
  t_state.close_depth = -1;
  if (g_range != nullptr && g_range->sampled()) {
    const uint64_t t = now_ns();  // before the count drops: no later window can close before this one
    const uint64_t s = g_sampled.fetch_sub(1, std::memory_order_acq_rel);
    if ((s & kInFlightMask) == 1) g_close((s >> kInFlightBits) - 1, t);
  } else {
    g_setter(g_open_ns.load(std::memory_order_relaxed), now_ns());
  }
}

void window_after_fork() {
  if (g_range == nullptr || g_range->kind != RangeKind::kNvtx || !g_range->sampled()) return;
  const bool mine = t_state.close_depth >= 0;
  g_sampled.store(mine ? (uint64_t{1} << kInFlightBits) | 1 : 0, std::memory_order_relaxed);
  if (mine) g_open(0, now_ns());
}

// The window spans the first start to the last stop: one window per capture.
void profiler_window_start() {
  if (g_range == nullptr || g_range->kind != RangeKind::kProfilerApi) return;
  uint64_t expected = 0;
  uint64_t t = now_ns();
  if (g_open_ns.compare_exchange_strong(expected, t)) g_setter(t, UINT64_MAX);
  else g_setter(expected, UINT64_MAX);
}

void profiler_window_stop() {
  if (g_range == nullptr || g_range->kind != RangeKind::kProfilerApi) return;
  uint64_t open = g_open_ns.load(std::memory_order_relaxed);
  if (open != 0) g_setter(open, now_ns());
}

std::string window_never_opened() {
  if (g_range == nullptr || g_open_ns.load(std::memory_order_acquire) != 0) return {};
  if (g_range->kind == RangeKind::kProfilerApi)
    return "capture range " + quoted(g_range->text) +
           " never opened: the program never called cudaProfilerStart (or gpuhook_capture_start); nothing was recorded";
  if (g_range->kind != RangeKind::kNvtx) return {};
  const uint64_t seen = g_occurrences.load(std::memory_order_relaxed);
  std::string why = "capture range " + quoted(g_range->text) + " never opened: " + quoted(g_range->nvtx_name) + " was pushed " +
                    std::to_string(seen) + " time" + (seen == 1 ? "" : "s");
  if (seen != 0 && g_range->sampled())
    why += " (none of them drawn: occurrences from " + std::to_string(g_range->first) + ", " +
           (g_range->every ? "every " + std::to_string(g_range->every) + "th"
                           : "each with probability " + std::to_string(g_range->probability)) + ")";
  else if (seen != 0)
    why += " (occurrence " + std::to_string(g_range->first) + " was asked for)";
  std::string names;
  for (const SeenName& s : g_seen) {
    if (!s.ready.load(std::memory_order_acquire)) continue;
    names += (names.empty() ? "" : ", ") + shown(s.name) + " (" +
             std::to_string(s.count.load(std::memory_order_relaxed)) + ")";
  }
  if (const uint64_t other = g_seen_other.load(std::memory_order_relaxed)) names += ", " + std::to_string(other) + " more pushes";
  why += names.empty() ? "; the program pushed no NVTX range" : "; the NVTX ranges pushed were: " + names;
  return why + "; nothing was recorded";
}

}  // namespace gpuhook::hook
