// `render -o chart.html`: one self-contained page (no network; opens from file://) that draws
// the Gantt chart of build_scene on a canvas and lets a person zoom, pan, hover and search.
//
// The page does not lay out from scratch: the lanes, their labels, the colours, the kernel
// names, the utilisation and the annotation texts come from the same functions the SVG/PNG
// chart uses (lane_key, lane_label, exec_color, analysis::utilisation_timeline, annotate).
// What the page gets is data, packed so that a million events stay a few tens of MB:
// - per lane, the events sorted by start as one base64 run of LEB128 varints (start deltas,
//   duration, overlap row, name, the other stages as offsets from the start, the host call,
//   and where the page has NVTX ranges, the innermost range the launch was made in);
// - the NVTX ranges of the host threads, one varint run (lane, start, end, depth, parent);
// - the host calls on the host thread lanes: those that launched an event on the page the
//   viewer rebuilds from the events (call, launch time, duration), the others one varint run;
// - with several ranks, the collectives matched across them (collective_links, as the chart's
//   links): their kernels on the page and the last to arrive;
// - with --memory-strip, per device the memory in use as a step function (analysis::memory_report);
// - a string table of names (display names, colours, kinds) the events point into;
// - a level-of-detail pyramid per lane (exec coverage per time bucket, finest level first,
//   each coarser level half as many buckets) and per device (compute and copy share), so that
//   zoomed out the page draws aggregates and zoomed in only the events in view.
// Names are untrusted bytes: every string goes through append_script_string, so nothing in a
// kernel name can close the <script> element that holds the data.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/flame.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/render/render.h"

namespace gantt {

struct HtmlStats {
  uint64_t lanes = 0;
  uint64_t events = 0;           // GPU events packed on the lanes
  uint64_t events_untimed = 0;   // selected, but start or end unknown: not on a lane
  uint64_t syncs = 0;            // synchronisations: host waits, not lane work (as build_scene)
  uint64_t annotations = 0;
  uint64_t ranges = 0;           // NVTX ranges on the host thread lanes
  uint64_t ranges_left_out = 0;  // past the page's limit on ranges
  uint64_t collectives = 0;      // collectives matched across ranks with a kernel on the page
  uint64_t host_calls = 0;       // host calls written apart: those that launched no event on the page
  uint64_t calls_left_out = 0;   // past the page's limit on those
  uint64_t nccl_calls = 0;       // NCCL calls on the host thread lanes
  uint64_t data_bytes = 0;       // the data block's size
  uint64_t events_folded = 0;    // a scanned page: of `events`, those in the lanes' coverage only
};

// Writes the page; the template (viewer.html, .css, .js) is compiled into the library.
void write_html(const Model& model, const Selection& selection, const RenderOptions& options, std::ostream& out,
                HtmlStats* stats = nullptr);

// The page of a scanned capture (stream_render.h stream_chart_parts(), with coverage_columns):
// `model` holds only the events written one by one, the widest up to
// RenderOptions::max_individual_events over all lanes, `selection` those over the whole
// window, and `rest` every lane's other events folded into its coverage (at rest's columns,
// the page's finest buckets), the devices' busy unions and the streamed flags. The viewer draws
// the folded events as coverage wherever it draws the written ones one by one, and says how
// many are there; the footer says how many were folded. The page's size is then bounded by
// that cap, the lanes and the columns, not by the events.
void write_html(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                std::ostream& out, HtmlStats* stats = nullptr);

// One run on a page. A diff page holds two, base first: each run's lanes under its own
// sections (labelled with `label`), on one time axis where both runs' `selection.origin_ns`
// (capture start, or the range occurrence they are aligned on) fall at the same time.
struct HtmlRun {
  const Model* model = nullptr;
  Selection selection;
  std::string label;  // "" on a page of one run
};

// What only a diff page has: the differential flame graph's stacks (analysis::gpu_stacks of
// each run), the page's title, and how much of the page to show first (ns after the origin;
// 0 = all of it).
struct HtmlDiff {
  analysis::Stacks base, next;
  std::string title;
  uint64_t view_ns = 0;
};

// `gantt-cli diff A B -o x.html`: both runs and the differential flame graph on one page.
void write_diff_html(const std::vector<HtmlRun>& runs, const HtmlDiff& diff, const RenderOptions& options,
                     std::ostream& out, HtmlStats* stats = nullptr);

namespace html {

// A scanned page (write_html with a ChartRest) writes at most this many events one by one, the
// widest over all lanes; the rest are the lanes' coverage. A written event costs about 20
// bytes of the page (base64 of its varints: 203 MB for 10 M events when each was written) and,
// while the capture is read, some 500 bytes (its candidate, its record and launch call, its row
// in the model) and 5 us of a core. On the 10 M-kernel capture (2 cores, docs/render.md):
// 5,000 took 3.8 s of CPU and 131 MB, 100,000 4.7 s and 165 MB, 250,000 5.7 s and 268 MB.
// 100,000 keeps the page near 5 MB and the time near the scan's own.
// One lane may hold all of them: a lane of a million narrow kernels beside nine quiet ones
// shows as many as the page has room for, where a cap of a tenth each would waste nine tenths.
inline constexpr size_t kMaxPageEvents = 100000;
// The finest buckets of a scanned page's pyramids: columns of the scan's coverage (fewer with
// many lanes: stream_render.h kPageCoverageCells). 65,536 over a window of 10 s is 150 us a
// bucket; narrower, the page says how many events are folded in view.
inline constexpr int kPageColumns = 65536;

// The data block the page reads (a JSON object; see viewer.js for its fields).
std::string data_json(const Model& model, const Selection& selection, const RenderOptions& options,
                      HtmlStats* stats = nullptr);
// The same for a scanned page (write_html with a ChartRest).
std::string data_json(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                      HtmlStats* stats = nullptr);
// The same for several runs (a diff page: `diff` set, two runs).
std::string data_json(const std::vector<HtmlRun>& runs, const RenderOptions& options, const HtmlDiff* diff,
                      HtmlStats* stats = nullptr);

// The template with the style, the script and `data_json` in place of its markers.
std::string page(std::string_view data_json);

// Pieces, exposed for the tests.
void append_varint(std::string& out, uint64_t v);  // LEB128, 7 bits a byte, low first
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
std::string base64(std::string_view bytes);
// A JSON string (json::append_string) with '<', '>', '&' escaped too (\u003c ...), so it can
// stand inside <script> with no "</script>" or "<!--" in the bytes.
void append_script_string(std::string& out, std::string_view bytes);
// Busy shares (0..1) of the finest level -> every level, quantised to 0..255 (a share above 0
// is at least 1, so a lone narrow event never vanishes), finest first, halving down to
// `min_buckets`. `finest.size()` must be a power of two.
std::string lod_levels(const std::vector<double>& finest, size_t min_buckets);
// The finest level's bucket count for a lane of n events: about one bucket per two events,
// a power of two in [kMinBuckets, kMaxBuckets].
inline constexpr size_t kMinBuckets = 64, kMaxBuckets = 65536;
size_t lod_buckets(size_t events);

}  // namespace html

}  // namespace gantt
