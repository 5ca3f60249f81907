// From a model and a selection to a chart: lanes -> scene (display list) -> back end.
//
//   Selection sel = select_events(model, filter);
//   RenderStats stats;
//   Scene scene = build_scene(model, sel, options, &stats);
//   write_svg(scene, out);  /  write_raster(scene, "chart.png", RasterFormat::kPng, &err);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gantt/render/annotate.h"
#include "gantt/analysis/comm.h"
#include "gantt/analysis/memory.h"
#include "gantt/analysis/steps.h"
#include "gantt/analysis/timeline.h"
#include "gantt/analysis/topology.h"
#include "gantt/model/filter.h"
#include "gantt/render/lod.h"
#include "gantt/model/model.h"
#include "gantt/render/scene.h"

namespace gantt {

// How GPU events are grouped into lanes. New groupings (e.g. one lane per rank) are added
// as a value here plus a case in lane_key()/lane_label() (layout_lanes.cpp).
enum class LaneMode : uint8_t { kStream, kDevice, kThread, kRank };
bool parse_lane_mode(std::string_view text, LaneMode* mode);

// A GPU lane's identity; lanes sort by it, so the order is stable across runs.
struct LaneKey {
  uint16_t capture = 0;
  uint32_t device = 0;      // kNone when the lane is not per device
  int64_t group = 0;        // stream id (stream mode), launching thread row (thread mode)
  friend auto operator<=>(const LaneKey&, const LaneKey&) = default;
};

LaneKey lane_key(const Model& model, uint32_t event, LaneMode mode);
// `priority`: the stream priority recorded on the lane's events (0 = none recorded).
std::string lane_label(const Model& model, const LaneKey& key, LaneMode mode, int32_t priority = 0);
// Rows for work that overlaps on one lane (independent branches of a CUDA graph, concurrent
// kernels in --lanes device), so the later event does not hide the earlier: first fit in the
// given order (start order), at most `max_rows` (past the cap the last row stacks).
// Synchronisations are waits drawn over the work they wait for: row 0, taking no row.
std::vector<int> overlap_rows(const Model& model, const std::vector<uint32_t>& events, int max_rows);
// "GPU0 A100-SXM4-80GB (sm_80, 108 SMs)"
std::string device_section_label(const Model& model, uint16_t capture, uint32_t device);

struct RenderOptions {
  int width_px = 1920;
  LaneMode lanes = LaneMode::kStream;
  bool host_lanes = true;             // host thread lanes under the GPU lanes
  AnnotateOptions annotate;
  size_t max_individual_events = 5000;  // beyond this, narrow events are drawn as coverage
  std::string filter_description;     // for the footer
  std::vector<std::string> footer_lines;  // extra footer lines, e.g. the rank alignment (ranks.h)
  bool collective_links = true;       // several captures: join matching collectives across ranks
  bool memory_strip = false;          // a strip of memory in use under each device's utilisation strip
  std::string memory_by = "auto";     // memory stacked by "kind", "category", or "auto" (category when tagged)
  bool deps = false;                  // arrows for cross-stream event dependencies (cudaStreamWaitEvent)
};

struct RenderStats {
  uint64_t events_selected = 0;       // GPU work drawn on the GPU lanes (synchronisations are host waits)
  uint64_t syncs_on_host_lanes = 0;   // selected synchronisations: the host lanes show them as blocked calls
  uint64_t events_individual = 0;     // drawn as their own rectangles
  uint64_t events_aggregated = 0;     // drawn as coverage
  uint64_t annotations_drawn = 0;
  uint64_t labels_dropped = 0;        // annotation labels left out to avoid overlaps
  double individual_threshold_px = 0;
  uint64_t lanes_left_out = 0;       // past the lane cap (filter with --device/--stream)
  uint64_t events_left_out = 0;      // in those lanes
  uint64_t graph_brackets = 0;       // CUDA graph launches bracketed on their lane
  uint64_t overlap_rows = 0;         // extra rows lanes grew so overlapping events stay visible
};

// The GPU work of a chart that its model does not hold (a streamed render, stream_render.h):
// what the chart draws of it, folded as the capture was read. The model then holds only the
// events wide enough to be drawn one by one (and what they need), and build_scene() draws
// these folds where it would have folded the events itself.
struct ChartRest {
  // A host thread's CUDA calls in the window, as its lane draws them (render_host_lanes.cpp):
  // launches as ticks, blocking calls at least a pixel wide as bars while the chart's bar
  // budget lasts, every other call as coverage.
  struct HostCalls {
    Coverage other{0}, ticks{0};
    std::vector<uint32_t> blocking;  // the bar candidates as rows of the model's API calls, in call order
  };
  struct Lane {
    Coverage exec{0}, wait{0};  // the narrow events' exec and queued->start spans
    uint64_t events = 0;        // all of the lane's events, the held ones too
    uint64_t aggregated = 0;    // those folded into exec
    int32_t priority = 0;       // the first priority recorded on the lane's events, in start order
  };
  struct Device {
    Coverage compute{0}, copy{0};  // the busy union per class (device_busy)
    uint64_t compute_ns = 0, copy_ns = 0;
  };
  std::map<LaneKey, Lane> lanes;
  std::map<std::pair<uint16_t, uint32_t>, Device> devices;
  uint64_t events = 0;  // selected GPU work, synchronisations not counted
  uint64_t syncs = 0;   // selected synchronisations
  uint64_t in_capture = 0;  // every GPU event and synchronisation, in the window or not
  double threshold_px = 0;
  std::vector<analysis::WaitSplit> waits;  // analysis::wait_causes() of the held kernels, by event
  std::optional<Annotations> annotations;  // AnnotateOptions::streamed: the flags, worked out as read
  // Host lanes: the thread ids with calls in the window, and the calls of the first
  // kMaxHostLanes of them (the lanes a chart draws at most).
  std::set<uint64_t> host_threads;
  std::map<uint64_t, HostCalls> host;
};

// `render --view comm`: rank x rank heatmaps per communicator (analysis/comm.h).
// With `topology` (nvidia-smi topo -m or NCCL's topology XML), the GPUs and their links drawn
// under each matrix.
Scene comm_scene(const Model& model, const std::vector<analysis::CommMatrix>& matrices,
                 const std::vector<std::string>& notes, const RenderOptions& options,
                 const analysis::Topology* topology = nullptr);

// `render --view memory`: memory in use per device over time by class, the peak and what was
// live at it (analysis/memory.h).
Scene memory_scene(const Model& model, const Selection& selection, const std::vector<analysis::DeviceMemory>& report,
                   const RenderOptions& options);

// `render --view utilisation`: the timeline (analysis/timeline.h) drawn per device, drops
// marked; the same back ends as the Gantt chart.
Scene utilisation_scene(const Model& model, const Selection& selection, const analysis::Timeline& timeline,
                        const RenderOptions& options);

// `render --view steps`: each step's duration over the run, the flight recorder's dumps marked
// (analysis/steps.h).
Scene steps_scene(const Model& model, const Selection& selection, const analysis::Steps& steps,
                  const RenderOptions& options);

Scene build_scene(const Model& model, const Selection& selection, const RenderOptions& options,
                  RenderStats* stats = nullptr);
// The same chart when the model holds only part of the selected work and `rest` folds the
// remainder (stream_render.h); `selection` is then the held events, its window the whole one.
Scene build_scene(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                  RenderStats* stats = nullptr);

// Back ends.
void write_svg(const Scene& scene, std::ostream& out);
enum class RasterFormat : uint8_t { kPng, kPdf };
bool write_raster(const Scene& scene, const std::string& path, RasterFormat format, std::string* error);

}  // namespace gantt
