// `render` of one capture without loading it: the Gantt chart's picture is bounded (narrow
// events become per-lane coverage, at most RenderOptions::max_individual_events are drawn one
// by one, lod.h), so only the input has to be bounded too. Two reads of the file, each on
// several threads (contiguous shares of the chunk index):
//   1. the window (first launch to last end), the lanes, the widest events' widths (hence
//      the width above which events are drawn one by one), the counts;
//   2. the events at least that wide, kept as records, and every other event folded into its
//      lane's coverage and its device's busy union; each host call in the window folded into
//      its thread's lane, the blocking ones wide enough for a bar kept (ChartRest, render.h).
// A model of only the kept events and what they need (their launch calls, the host calls
// drawn as bars, the NCCL records, the capture's context) then goes through build_scene() with the folds:
// the same scene builder as the loaded chart, and the same bytes (tests/e2e/cli
// render_stream_test.sh). Memory grows with lanes, pixels and names, not with events.
//
// A filter (StreamRenderOptions::filter, as select_events() takes it: a time window, a range,
// devices, streams, a kernel pattern) keeps to both reads the events it selects, those begun
// by their launch calls once the call is read; every operation still reaches the drawn
// kernels' wait split, as in wait_causes(). The window counts from the capture's first time,
// known after read 1: read 1 runs with the header's start for it, and again with the first
// time it found when a record was earlier. A --range is found in a read of only the ranges,
// and a first read 1 measures how long the work launched in it runs.
//
// Annotations are streamed only when asked for as such (AnnotateOptions::streamed): low
// occupancy counted over every kernel in read 2; copies overlapped, every copy (up to a
// million a share) against its device's compute union once read 2 is done; idle gaps from
// each device's activity union of read 1 (GapUnion), the host call behind the longest found
// in read 2; queue delays on the drawn kernels only; not the copies that could have
// overlapped, which need every kernel's readiness on its stream.
//
// What needs the whole timeline is not streamed; stream_render() then returns nothing and
// says why, and the caller loads the capture: annotations in full, views other than the Gantt
// chart, lanes per thread (a rank's lane, one a capture, sits under its last device), --deps, --kernel patterns that match the names of API calls
// (copies, memsets and synchronisations are named after theirs), --memory-strip, stream waits on CUDA
// events, host functions, CUDA graphs, merged files, damaged files, NCCL calls without
// external ids, files whose launches lie too far from their GPU records for the join's
// window, and, with host lanes, host calls that share a correlation id (a launch's tick names
// the last of them). The drawn kernels' queued -> start split is computed from their stream's and device's operations
// (stream_waits.h); NVTX range records (up to half a million, for the drawn events' range
// paths) and GPU counter samples (up to a million, for the measured strips) are kept whole.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/render/render.h"

namespace gantt {

struct StreamRenderOptions {
  RenderOptions render;
  // Its window, range, devices, streams and kernel pattern. A --range the capture does not have,
  // or a bad pattern, throws std::invalid_argument from stream_render(), as from select_events().
  EventFilter filter;
  // Where the filter's --from and --to count from, in the capture's clock: 0 for its first
  // time, as select_events() counts them. The chart's axis still counts from its first time.
  uint64_t window_origin_ns = 0;
  // The chart's own window, absolute on the capture's clock, where it is not the filter's: the
  // events the filter selects that overlap it, drawn over it, the axis counted from the
  // capture's first time (diff -o of sides cut to a window: each chart from its run's first
  // selected work for the longer run's length, as the loaded diff draws them).
  std::optional<std::pair<uint64_t, uint64_t>> chart_window;
  // The chart's window drawn this long from its start where the filter's is shorter, the
  // selection unchanged (diff --align-range: each chart as long as the longer occurrence).
  uint64_t window_length = 0;
  // Stop once the window is known: StreamedParts::drawn holds it (its origin, start, end and
  // description) and no events; nothing is drawn (diff --align-range asks each side first).
  bool window_only = false;
  unsigned threads = 0;  // threads that scan the capture; 0 = every core (analysis::default_scan_threads)
  LoadOptions load;
  // The HTML page (html.h) rather than a picture of `render.width_px`: the lanes' coverage in
  // up to this many columns over the window (a power of two; fewer with many lanes, so that
  // lanes x columns stays within kPageCoverageCells), and the widest
  // `render.max_individual_events` events held one by one whatever their width, as the page
  // zooms. 0: the chart's pixels and its width threshold.
  int coverage_columns = 0;
  // With coverage_columns: refuse (kEveryEventFits) when no event would be folded, so that
  // the caller loads the capture and writes the page of every event as before.
  bool refuse_unfolded = false;
};

// stream_chart_parts()' reason with refuse_unfolded when every event fits the page.
inline constexpr char kEveryEventFits[] = "the HTML page of every event (no more than --page-events)";

// Lanes x columns of coverage a page's scan keeps (each cell 24 bytes a share: exec and wait).
inline constexpr size_t kPageCoverageCells = size_t{1} << 20;

struct StreamedChart {
  Scene scene;
  RenderStats stats;
  Model context;                      // the capture's header, devices, threads; no events
  std::vector<std::string> warnings;  // what load_captures() would print for the capture
  bool corrupt = false;
  unsigned threads = 1;               // decoding threads used
};

// What a streamed chart is drawn from: the model of the held events (and what they need), the
// selection of them over the whole window, and the rest folded as it was read (render.h
// ChartRest). build_scene(held, drawn, render, rest) is the chart; write_html() with `rest`
// the page.
struct StreamedParts {
  Model held;
  Selection drawn;
  ChartRest rest;
  RenderOptions render;               // the options the chart is drawn with (the filter described)
  Model context;                      // the capture's header, devices, threads; no events
  std::vector<std::string> warnings;  // what load_captures() would print for the capture
  bool corrupt = false;
  unsigned threads = 1;               // decoding threads used
};

// Why charts with `options` cannot be streamed at all ("" when they can).
std::string stream_render_refusal(const RenderOptions& options);

// The chart of `path`, or nullopt with *why_not set when the capture holds what needs the
// whole timeline (found while reading). Throws gpuhook::CaptureError as load() does.
std::optional<StreamedChart> stream_render(const std::string& path, const StreamRenderOptions& options,
                                           std::string* why_not);
// The same reads, stopped before the scene is built.
std::optional<StreamedParts> stream_chart_parts(const std::string& path, const StreamRenderOptions& options,
                                                std::string* why_not);

}  // namespace gantt
