// Annotations computed from thresholds, never placed by hand. Each rule is a pure function
// of the model and the selection, so it can be tested on synthetic events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantt/analysis/waits.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt {

struct AnnotateOptions {
  bool enabled = true;
  int64_t queue_delay_ns = 100'000;  // queued -> start over this: red dashed
  double low_occupancy = 0.5;        // theoretical occupancy under this: yellow marker
  int64_t idle_gap_ns = -1;          // device idle over this; <0: 2% of the window, at least 50 us
  int64_t adjacent_ns = 20'000;      // a copy with compute this close before/after, but none during it
  std::string off_reason;            // why they are off, for the footer ("": --no-annotate)
  // The chart is read as a stream (stream_render.h): it flags what a stream can tell exactly,
  // low occupancy, copies overlapped with compute and idle gaps with their host labels, for
  // every event, and queue delays on the kernels drawn one by one; copies that could have
  // overlapped are not flagged. The footer says so.
  bool streamed = false;
};

enum class AnnotationKind : uint8_t { kQueueDelay, kLowOccupancy, kOverlap, kMissedOverlap, kIdleGap };
const char* to_string(AnnotationKind kind);

struct Annotation {
  AnnotationKind kind;
  uint32_t event = kNone;   // the event it is about (the copy for overlaps; next event for gaps)
  uint16_t capture = 0;
  uint32_t device = 0;
  uint64_t start_ns = 0;    // the span it marks
  uint64_t end_ns = 0;
  std::string label;        // short text for the chart ("idle 2.30 ms — host in cudaStreamSynchronize")
};

struct Annotations {
  std::vector<Annotation> items;  // sorted by (kind, start, event); at most max_per_kind per kind
  uint64_t count[5] = {};         // all found, by kind (items may hold fewer)
  // Kinds a streamed chart could not count (bits by kind): the footer says "not flagged".
  uint8_t not_counted = 0;
  bool counted(AnnotationKind k) const { return (not_counted >> static_cast<unsigned>(k) & 1) == 0; }
};

// The per-event rules (queue delay, low occupancy) keep the first `max_per_kind` in time;
// counts are always complete. `waits`: analysis::wait_causes of the selection when the caller
// has them already (the chart draws them too); computed here when null.
inline constexpr size_t kMaxAnnotationsPerKind = 10000;
Annotations annotate(const Model& model, const Selection& selection, const AnnotateOptions& options,
                     size_t max_per_kind = kMaxAnnotationsPerKind, const std::vector<analysis::WaitSplit>* waits = nullptr);

// The idle-gap threshold actually used for a window: the given one, else an fiftieth of the
// window and at least kMinIdleGapNs.
inline constexpr uint64_t kMinIdleGapNs = 50'000;
int64_t idle_gap_threshold_ns(const AnnotateOptions& options, uint64_t window_ns);

// The idle-gap flag's parts that the streamed chart (stream_render.h) shares with annotate().
// Of a device's gaps (their lengths, in time order), the kExplainedGaps longest get a host
// label; the earlier of equal ones first.
inline constexpr size_t kExplainedGaps = 64;
std::vector<bool> explained_gaps(const std::vector<uint64_t>& lengths);
// The host side of a gap: the launch call of the event that ended it, and the call of that
// call's thread that covers most of the gap, blocking calls first (its name as recorded).
struct GapHost {
  bool launch_known = false;
  uint64_t launch_start = 0;
  bool found = false;
  std::string_view best_call;
  uint64_t best_cover = 0;
};
std::string gap_host_text(const GapHost& host, uint64_t begin, uint64_t end);
// "idle 1.20 ms", then " - " and why, when there is a why.
std::string idle_gap_label(uint64_t begin, uint64_t end, const std::string& why);
// "overlap 40%": the part of a copy [begin, end) that ran beside compute.
std::string overlap_label(uint64_t overlap_ns, uint64_t begin, uint64_t end);
// Annotations::items' order: by kind, then start, then event.
void sort_items(std::vector<Annotation>& items);

// True for host calls that block the calling thread until GPU work finishes
// (cudaStreamSynchronize, cudaDeviceSynchronize, synchronous cudaMemcpy, ...).
bool is_blocking_call(std::string_view api_name);

}  // namespace gantt
