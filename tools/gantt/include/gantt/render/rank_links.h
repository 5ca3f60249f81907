// What the chart needs to show many ranks: lane labels, the links between matching
// collectives, footer lines (rank_links.cpp). They draw in the scene's vocabulary over the
// ranks' analyses (ranks/), so they are render's, not ranks'.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gantt/model/model.h"
#include "gantt/ranks/alignment.h"
#include "gantt/render/scene.h"

namespace gantt {

// "rank 3 · node7 pid 4242": the label of a lane that holds one rank (--lanes rank).
std::string rank_lane_label(const Model& model, uint16_t capture);

// The chart footer's line for a job: the alignment summary (each capture's offset and method
// are `gantt-cli info`'s); empty when the model holds one capture.
std::vector<std::string> rank_footer_lines(const Model& model, const RankAlignment& alignment);

// One matched collective as the chart shows it: its ranks' NCCL kernel events in arrival
// order, the last arriver, and how far it trailed the first.
struct CollectiveLink {
  std::vector<uint32_t> events;  // rows in Model::events, by arrival
  uint32_t last_event = UINT32_MAX;
  int32_t last_rank = -1;
  uint64_t spread_ns = 0;
  uint64_t end_ns = 0;           // latest end over the ranks
};
std::vector<CollectiveLink> collective_links(const Model& model);

// Draws each link as a thin vertical line joining its ranks' kernels at the collective's end,
// with the last arriver's kernel outlined and, where there is room, "last: rank R +spread".
// `where(event, &x_start, &x_end, &y_top, &lane_height)` says where the chart drew an event
// (false when it was not drawn individually); `x_of(ns)` maps a time to x. The last arrival
// of each collective is outlined on its lane and named ("rank 2 +663 us") on the row at
// `label_y`, where the labels cannot cover the work.
void draw_collective_links(Scene& scene, const std::vector<CollectiveLink>& links,
                           const std::function<bool(uint32_t, float*, float*, float*, float*)>& where,
                           const std::function<float(uint64_t)>& x_of, float label_y);
// The same, each link drawn only where it passes through `lane_spans` (y from, y to; in order,
// apart): the chart's runs of lanes. Between two runs lie a rank's section title, idle-gap
// labels and busy strip, which a line straight down from rank to rank covered; a link is left
// in pieces there, one x from piece to piece.
void draw_collective_links(Scene& scene, const std::vector<CollectiveLink>& links,
                           const std::function<bool(uint32_t, float*, float*, float*, float*)>& where,
                           const std::function<float(uint64_t)>& x_of, float label_y,
                           const std::vector<std::pair<float, float>>& lane_spans);

}  // namespace gantt
