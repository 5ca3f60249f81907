// Flame graphs of GPU time drawn from analysis/flame.h's stacks: a frame's width is the exec
// time under it. One graph for a capture (`render --view flame`), or a differential one for
// two (`diff -o`): widths from the larger of the two runs, red where the new run is slower,
// blue where faster.
#pragma once

#include <string>

#include "gantt/analysis/flame.h"
#include "gantt/render/scene.h"

namespace gantt {

struct FlameOptions {
  int width_px = 1200;
  int row_px = 18;
  std::string title;
};

Scene flame_scene(const analysis::Stacks& stacks, const FlameOptions& options);
Scene diff_flame_scene(const analysis::Stacks& base, const analysis::Stacks& next, const FlameOptions& options);

// `lower` drawn under `upper`, both keeping their own coordinates.
Scene stack_scenes(const Scene& upper, const Scene& lower);

}  // namespace gantt
