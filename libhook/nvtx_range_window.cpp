#include "nvtx_range_window.h"

#include <atomic>
#include <cstring>

#include "clock.h"
#include "recorder.h"

namespace gpuhook::hook {
namespace {

const CaptureRange* g_range = nullptr;
WindowSetter g_setter = nullptr;
std::atomic<uint64_t> g_occurrences{0};
std::atomic<uint64_t> g_open_ns{0};

}  // namespace

void window_configure(const CaptureRange* range, WindowSetter setter) {
  g_range = range;
  g_setter = setter;
}

void nvtx_window_push(const char* name, int depth) {
  if (g_range == nullptr || g_range->kind != RangeKind::kNvtx || name == nullptr) return;
  if (std::strcmp(name, g_range->nvtx_name.c_str()) != 0) return;
  uint64_t occurrence = g_occurrences.fetch_add(1, std::memory_order_relaxed) + 1;
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
  g_setter(g_open_ns.load(std::memory_order_relaxed), now_ns());
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

}  // namespace gpuhook::hook
