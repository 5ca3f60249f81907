// Colours of the chart. Kernel colours come from a stable hash of the name (FNV-1a), so
// the same kernel has the same colour in two charts of two runs.
#pragma once

#include <cstdint>
#include <string_view>

#include "gantt/model/model.h"
#include "gantt/render/scene.h"

namespace gantt {

uint64_t fnv1a(std::string_view s);
// Kernels: hues 180..265 (teal to violet), varied lightness; kinds below keep other hues.
Color kernel_color(std::string_view name);
// Exec colour of an event: kernels by name hash, others by kind and copy direction.
Color exec_color(const Model& model, uint32_t event);
Color kind_color(EventKind kind, uint8_t copy_kind);
// An NVTX range's fill: the ARGB colour the program gave it (opaque, drawn at 200/255 like
// every range), or the range green when it gave none (0).
Color range_color(uint32_t argb);
// Black or white, whichever contrasts more with `background` (WCAG 2 relative luminance):
// labels on the flame graph's dark violet frames were black on near-black.
Color text_color_on(Color background);

namespace palette {
inline constexpr Color kLaunchToQueued{160, 160, 160, 255};   // grey
inline constexpr Color kQueuedToStart{166, 206, 235, 255};    // light blue: behind its own stream
// queued -> start by cause (analysis/waits.h); own stream stays kQueuedToStart.
inline constexpr Color kWaitDependency{197, 176, 213, 255};   // light violet: an event, the legacy stream
inline constexpr Color kWaitPriority{247, 182, 210, 255};     // light pink: higher-priority work
inline constexpr Color kWaitDeviceFull{255, 187, 120, 255};   // light orange: no room on the device
inline constexpr Color kWaitLaunch{199, 199, 199, 255};       // light grey: the launch path
inline constexpr Color kHtoD{230, 159, 0, 255};               // amber
inline constexpr Color kDtoH{166, 86, 40, 255};               // brown
inline constexpr Color kDtoD{188, 189, 34, 255};              // olive
inline constexpr Color kMemset{127, 127, 127, 255};
inline constexpr Color kNccl{227, 119, 194, 255};             // pink
inline constexpr Color kSync{90, 90, 90, 160};
inline constexpr Color kApi{200, 200, 210, 255};
inline constexpr Color kHostFunc{148, 103, 189, 255};          // purple: host work holding a stream
inline constexpr Color kBlocking{192, 80, 77, 255};           // host blocked
inline constexpr Color kLaunchTick{40, 40, 40, 255};
inline constexpr Color kRange{120, 170, 120, 255};
inline constexpr Color kQueueDelay{214, 39, 40, 255};         // red, dashed
inline constexpr Color kLowOccupancy{245, 200, 0, 255};       // yellow
inline constexpr Color kOverlap{44, 160, 44, 255};            // green
inline constexpr Color kMissedOverlap{255, 127, 14, 255};     // orange
inline constexpr Color kIdle{214, 39, 40, 255};
inline constexpr Color kComputeUtil{70, 110, 190, 255};
inline constexpr Color kCopyUtil{230, 159, 0, 255};
inline constexpr Color kText{30, 30, 30, 255};
inline constexpr Color kMuted{110, 110, 110, 255};
inline constexpr Color kGrid{225, 225, 225, 255};
inline constexpr Color kLaneBand{246, 247, 250, 255};
inline constexpr Color kGraph{23, 128, 130, 255};            // teal: a CUDA graph launch's bracket
inline constexpr Color kRankLink{90, 90, 90, 200};           // one collective's kernels joined across ranks
inline constexpr Color kLastArrival{200, 30, 30, 255};       // the rank that arrived last at a collective
}  // namespace palette

}  // namespace gantt
