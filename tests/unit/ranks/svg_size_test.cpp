// The SVG of a many-rank job stays under 5 MB however many events it holds: its size must
// follow the picture, not the event count. The 64-capture benchmark once wrote 8.4 MiB
// because each rank's utilisation strip and host-call coverage flickered between two levels
// column by column, one rectangle per pixel column per rank; 64 ranks of 5,000 events
// showed the same growth.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/render/render.h"
#include "rank_records.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

constexpr size_t kSvgBudgetBytes = 5'000'000;

// Ranks of back-to-back kernels with random gaps, each launched by a runtime call, so the
// busy fraction of every pixel column lands on a different level.
Model many_rank_job(int ranks, int events) {
  Model model;
  ModelBuilder b(model);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> gap(0, 12'000), len(4'000, 14'000);
  for (int r = 0; r < ranks; ++r) {
    b.begin_capture("rank" + std::to_string(r) + ".gpuh");
    b.add(test::rank_header(r, "host" + std::to_string(r / 8), 1'000'000'000));
    b.define_string(1, "cudaLaunchKernel");
    b.define_string(2, "gemm_kernel");
    int64_t t = 1'000'100'000;
    for (int i = 0; i < events; ++i) {
      const int64_t start = t + gap(rng), end = start + len(rng);
      const auto corr = static_cast<uint32_t>(i + 1);
      b.add(test::launch_call(1, corr, start - 3'000, start - 1'000));
      b.add(test::launched_kernel(2, corr, 7, start, end));
      t = end;
    }
    b.end_capture(gpuhook::Integrity{});
  }
  return model;
}

size_t svg_bytes(const Model& model, LaneMode lanes) {
  RenderOptions o;
  o.lanes = lanes;
  Scene scene = build_scene(model, select_events(model, EventFilter{}), o);
  std::ostringstream out;
  write_svg(scene, out);
  return out.str().size();
}

TEST(RanksSvgSize, SixtyFourRanksStayUnderBudget) {
  const Model model = many_rank_job(64, 5000);
  EXPECT_LT(svg_bytes(model, LaneMode::kStream), kSvgBudgetBytes);
  EXPECT_LT(svg_bytes(model, LaneMode::kRank), kSvgBudgetBytes);
}

}  // namespace
}  // namespace gantt
