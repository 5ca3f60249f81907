// Level of detail: coverage per pixel column, the individual-drawing threshold, and the
// bound on scene size whatever the event count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "fabricate.h"
#include "gantt/render/colors.h"
#include "gantt/render/lod.h"
#include "gantt/render/render.h"

TEST(Lod, CoverageSplitsAcrossColumns) {
  gantt::Coverage c(4);
  c.add(0.5, 2.5);
  EXPECT_DOUBLE_EQ(c.busy(0), 0.5);
  EXPECT_DOUBLE_EQ(c.busy(1), 1.0);
  EXPECT_DOUBLE_EQ(c.busy(2), 0.5);
  EXPECT_DOUBLE_EQ(c.busy(3), 0.0);
  EXPECT_EQ(c.count(1), 1u);
  c.add(1.0, 1.75);  // overlapping spans add up, busy clamps at 1
  EXPECT_DOUBLE_EQ(c.busy(1), 1.0);
  EXPECT_EQ(c.count(1), 2u);
  c.add(-10, -5);  // outside: ignored
  c.add(3.2, 3.2);  // zero length still touches its column
  EXPECT_EQ(c.count(3), 1u);
}

// The fixed-point units are llround(ldexp(x, 20)), also where the fraction is a hair from a
// half and where rounding x + 0.5 would carry.
TEST(Lod, CoverageUnitsRoundAsTheLibraryDoes) {
  std::vector<double> xs = {0.0, 1.0, 1919.0, 0.5 / (1 << 20), std::nextafter(0.5 / (1 << 20), 0.0),
                            std::nextafter(0.5 / (1 << 20), 1.0), std::nextafter(1.0, 0.0), 0.49999999999999994,
                            1.5 / (1 << 20), std::nextafter(1.5 / (1 << 20), 0.0)};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) xs.push_back(std::uniform_real_distribution<double>(0, 4096)(rng));
  for (int i = 0; i < 1000; ++i) {  // exact halves of a unit, and their neighbours
    const double half = (static_cast<double>(rng() % (uint64_t{1} << 32)) + 0.5) / (1 << 20);
    xs.insert(xs.end(), {half, std::nextafter(half, 0.0), std::nextafter(half, 1e9)});
  }
  for (double x : xs) ASSERT_EQ(gantt::Coverage::units(x), static_cast<uint64_t>(std::llround(std::ldexp(x, 20)))) << x;
}

TEST(Lod, RunsMergeEqualLevels) {
  gantt::Coverage c(10);
  c.add(0, 4);   // 4 full columns
  c.add(6, 6.2); // one column at 20%
  const auto runs = c.runs(4);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].x0, 0);
  EXPECT_EQ(runs[0].x1, 4);
  EXPECT_EQ(runs[0].level, 4);
  EXPECT_EQ(runs[1].x0, 6);
  EXPECT_EQ(runs[1].level, 1);
}

// Busy fractions that straddle a level boundary column by column (80%, 95%, ...) cost one
// rectangle per column at 8 levels; fewer levels merge them into one run.
TEST(Lod, FlickeringCoverageDropsLevelsToStayWithinBudget) {
  gantt::Coverage flicker(40);
  for (int c = 0; c < 40; ++c) flicker.add(c, c + (c % 2 ? 0.95 : 0.8));
  EXPECT_EQ(flicker.runs(8).size(), 40u);
  EXPECT_EQ(flicker.levels_within(8, 10), 4);
  EXPECT_EQ(flicker.runs(4).size(), 1u);
  gantt::Coverage calm(40);
  calm.add(0, 10);
  calm.add(20, 20.5);
  EXPECT_EQ(calm.levels_within(8, 10), 8);  // within budget: full detail kept
}

TEST(Lod, ThresholdKeepsIndividualEventsWithinBudget) {
  std::vector<float> widths(100, 1.5f);
  widths.insert(widths.end(), 10, 10.f);
  EXPECT_DOUBLE_EQ(gantt::individual_threshold_px(widths, 1000), 0.0);  // all fit: all drawn
  EXPECT_DOUBLE_EQ(gantt::individual_threshold_px(widths, 50), 2.0);    // only the 10 wide ones
  EXPECT_DOUBLE_EQ(gantt::individual_threshold_px(widths, 5), 13.0);    // none
}

TEST(Lod, SceneSizeFollowsThePictureNotTheEventCount) {
  using namespace gantt_test;
  size_t svg_bytes[2] = {};
  int i = 0;
  for (uint32_t n : {20'000u, 200'000u}) {
    gantt::Model m;
    gantt::ModelBuilder b(m);
    b.begin_capture("lod");
    b.add(header());
    b.add(a100());
    b.add(string_def(1, "cudaLaunchKernel"));
    b.add(string_def(2, "k"));
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t t = 1'000'000 + uint64_t(k) * 1000;
      b.add(api(1, 5, t, t + 100, k + 1));
      b.add(kernel(2, 10 + k % 4, k + 1, t + 200, t + 300, t + 400, t + 900));
    }
    b.end_capture({});
    const auto sel = gantt::select_events(m, {});
    gantt::RenderOptions o;
    o.max_individual_events = 1000;
    gantt::RenderStats st;
    const gantt::Scene scene = gantt::build_scene(m, sel, o, &st);
    EXPECT_EQ(st.events_selected, n);
    EXPECT_LE(st.events_individual, 1000u);
    EXPECT_EQ(st.events_individual + st.events_aggregated, n);
    std::ostringstream os;
    gantt::write_svg(scene, os);
    svg_bytes[i++] = os.str().size();
  }
  EXPECT_LT(svg_bytes[1], 5'000'000u);
  // Ten times the events, about the same picture: the SVG must not grow with the count
  // (it may differ by how the coverage levels fall, not by a factor of ten).
  EXPECT_LT(svg_bytes[1], svg_bytes[0] * 3);
  EXPECT_LT(svg_bytes[0], svg_bytes[1] * 3);
}

// NVTX ranges are drawn in the colour the program gave them (event attributes), with a label
// that stays readable on it, and their category in the tooltip; uncoloured ones in the range green.
TEST(RenderRanges, ProgramColoursAndCategories) {
  using namespace gantt_test;
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("colours");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, "k"));
  b.add(string_def(3, "dark_blue_step"));
  b.add(string_def(4, "plain_step"));
  v1::Record push = range(v1::RANGE_PUSH, 3, 5, 1'000'000);
  push.mutable_range()->set_color(0xFF102080);  // ARGB: a dark blue
  push.mutable_range()->set_category(7);
  b.add(push);
  b.add(api(1, 5, 1'001'000, 1'001'100, 1));
  b.add(kernel(2, 10, 1, 1'001'200, 1'001'300, 1'001'400, 1'400'000));
  b.add(range(v1::RANGE_POP, 0, 5, 1'500'000));
  b.add(range(v1::RANGE_PUSH, 4, 6, 1'100'000));  // another thread, inside the window
  b.add(range(v1::RANGE_POP, 0, 6, 1'300'000));
  b.end_capture({});
  ASSERT_EQ(m.ranges.color[0], 0xFF102080u);
  const gantt::Scene s = gantt::build_scene(m, gantt::select_events(m, {}), gantt::RenderOptions{});
  const gantt::Rect* dark = nullptr;
  const gantt::Rect* plain = nullptr;
  const gantt::Text* dark_label = nullptr;
  for (const auto& item : s.items) {
    if (const auto* r = std::get_if<gantt::Rect>(&item)) {
      if (r->tooltip.rfind("dark_blue_step\n", 0) == 0) dark = r;
      if (r->tooltip.rfind("plain_step\n", 0) == 0) plain = r;
    }
    if (const auto* t = std::get_if<gantt::Text>(&item); t && t->text.rfind("dark_blue", 0) == 0) dark_label = t;
  }
  ASSERT_NE(dark, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(dark->fill, (gantt::Color{0x10, 0x20, 0x80, 200}));
  EXPECT_NE(dark->tooltip.find("category 7"), std::string::npos) << dark->tooltip;
  EXPECT_EQ(plain->fill, gantt::range_color(0));
  ASSERT_NE(dark_label, nullptr);
  EXPECT_EQ(dark_label->color, (gantt::Color{255, 255, 255, 255}));  // white on dark blue
}

// A burst of launches queued behind the same work: their queue-delay boxes overlap and are
// drawn as one box with a count; a delay alone on its row keeps its own box.
TEST(RenderAnnotations, OverlappingQueueDelaysAreOneBoxWithACount) {
  using namespace gantt_test;
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("burst");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, "k"));
  // Queued together at 1.0 ms on five streams, run one after another from 1.5 ms: each waited
  // for the device (not for its own stream), so each is a queue delay.
  for (uint32_t k = 0; k < 5; ++k) {
    const uint64_t t = 1'000'000 + k * 1000;
    b.add(api(1, 5, t, t + 100, k + 1));
    b.add(kernel(2, 10 + k, k + 1, t + 200, t + 300, 1'500'000 + k * 200'000, 1'690'000 + k * 200'000));
  }
  b.add(api(1, 5, 3'000'000, 3'000'100, 9));  // alone on another stream
  b.add(kernel(2, 20, 9, 3'000'200, 3'000'300, 3'400'000, 3'500'000));
  b.end_capture({});
  gantt::RenderOptions options;
  options.lanes = gantt::LaneMode::kDevice;  // the five streams in one lane: their flags overlap there
  const gantt::Scene s = gantt::build_scene(m, gantt::select_events(m, {}), options);
  size_t boxes = 0, merged = 0;
  for (const auto& item : s.items)
    if (const auto* r = std::get_if<gantt::Rect>(&item); r && r->dashed && r->stroke == gantt::palette::kQueueDelay && r->h == 7) {
      ++boxes;
      if (r->tooltip.rfind("5 launches queued", 0) == 0) ++merged;
    }
  EXPECT_EQ(boxes, 2u);
  EXPECT_EQ(merged, 1u);
}
