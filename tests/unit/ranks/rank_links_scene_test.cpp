// The links of a multi-rank chart join each collective's kernels across the ranks' sections;
// between two ranks' lanes lies the next rank's section header: its title, its idle-gap labels
// and its busy strip. A link drawn straight through them covered the words and the strip
// (issue 44, item 10). These tests build a small job, build its scene and measure it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gantt/render/colors.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/render.h"
#include "gantt/render/scene.h"
#include "rank_records.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

constexpr int kRanks = 3;
constexpr int64_t kT0 = 1'000'100'000;

// Three ranks, each on an A100 with a long name (its section title reaches into the plot),
// four all-reduces that end together on every rank. The first is 5 us long, so its link sits
// at the plot's left edge, under the titles; the others run 440 us in a 500 us period, so the
// 60 us gaps between them are flagged and their labels are wider than the gaps: each label
// reaches back over the collective's end, where the link is.
Model three_rank_job() {
  Model model;
  ModelBuilder b(model);
  for (int r = 0; r < kRanks; ++r) {
    b.begin_capture("rank" + std::to_string(r) + ".gpuh");
    v1::Record rec = test::rank_header(r, "node", 1'000'000'000);
    rec.mutable_header()->set_boot_id("B");
    rec.mutable_header()->set_pid(100 + r);
    rec.mutable_header()->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK);
    b.add(rec);
    rec.Clear();
    auto* d = rec.mutable_device();
    d->set_ordinal(0);
    d->set_name("NVIDIA A100-SXM4-80GB with a long board name");
    d->set_cc_major(8);
    d->set_cc_minor(0);
    d->set_sm_count(108);
    b.add(rec);
    b.define_string(1, "ncclAllReduce");
    b.define_string(2, "cudaLaunchKernel");
    b.define_string(3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    for (int s = 0; s < 4; ++s) {
      const int64_t end = s == 0 ? kT0 + 5'000 : kT0 + s * 500'000 + 440'000;
      const int64_t start = (s == 0 ? kT0 : kT0 + s * 500'000) + r * 1'000;  // rank 2 arrives last
      const auto corr = static_cast<uint32_t>(s + 1);
      b.add(test::all_reduce_call(1, r, kRanks, static_cast<uint64_t>(s), start - 5'000, start - 1'000));
      b.add(test::launch_call(2, corr, start - 4'000, start - 2'000));
      b.add(test::launched_kernel(3, corr, 7, start, end));
    }
    b.end_capture(gpuhook::Integrity{});
  }
  align_model_ranks(model);
  return model;
}

struct Box {
  float x0, y0, x1, y1;
  std::string what;
};

size_t code_points(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Where a text item's glyphs can reach: DejaVu Sans's digits, among its widest glyphs, are
// 0.64 em (0.7 bold); it ascends 0.8 em above the baseline at most and descends 0.25 em.
Box text_box(const Text& t) {
  const float w = static_cast<float>(code_points(t.text)) * t.size * (t.bold ? 0.7f : 0.64f);
  const float x0 = t.anchor == Anchor::kStart ? t.x : t.anchor == Anchor::kMiddle ? t.x - w / 2 : t.x - w;
  return {x0, t.y - 0.8f * t.size, x0 + w, t.y + 0.25f * t.size, "text '" + t.text + "'"};
}

// Whether the segment meets the box (Liang-Barsky clipping).
bool crosses(const Line& l, const Box& b) {
  float t0 = 0, t1 = 1;
  const float dx = l.x2 - l.x1, dy = l.y2 - l.y1;
  const float p[4] = {-dx, dx, -dy, dy};
  const float q[4] = {l.x1 - b.x0, b.x1 - l.x1, l.y1 - b.y0, b.y1 - l.y1};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const float t = q[i] / p[i];
    if (p[i] < 0) t0 = std::max(t0, t);
    else t1 = std::min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}

struct Chart {
  std::vector<Line> links;
  std::vector<Box> titles, idle_labels, busy_strips;
};

Chart measure(const Scene& s) {
  Chart c;
  std::vector<const Text*> busy_labels;
  for (const Item& item : s.items) {
    if (const auto* l = std::get_if<Line>(&item); l && l->color == palette::kRankLink) c.links.push_back(*l);
    const auto* t = std::get_if<Text>(&item);
    if (!t) continue;
    if (t->bold && t->text.rfind("#", 0) == 0) c.titles.push_back(text_box(*t));
    if (t->color == palette::kIdle && t->text.rfind("idle ", 0) == 0) c.idle_labels.push_back(text_box(*t));
    if (t->text.rfind("busy: ", 0) == 0) busy_labels.push_back(t);
  }
  // A busy strip is the band behind its "busy: ..." label's row, across the plot.
  for (const Text* label : busy_labels)
    for (const Item& item : s.items)
      if (const auto* r = std::get_if<Rect>(&item);
          r && r->fill == palette::kLaneBand && r->y <= label->y && label->y <= r->y + r->h)
        c.busy_strips.push_back({r->x, r->y, r->x + r->w, r->y + r->h, "busy strip at y " + std::to_string(r->y)});
  return c;
}

size_t crossings(const Chart& c, const std::vector<Box>& boxes, std::string* first) {
  size_t n = 0;
  for (const Line& l : c.links)
    for (const Box& b : boxes)
      if (crosses(l, b)) {
        if (n++ == 0)
          *first = "link x " + std::to_string(l.x1) + " y " + std::to_string(l.y1) + ".." + std::to_string(l.y2) +
                   " crosses " + b.what;
      }
  return n;
}

void expect_links_clear_of_section_headers(LaneMode lanes) {
  const Model model = three_rank_job();
  RenderOptions o;
  o.lanes = lanes;
  const Scene s = build_scene(model, select_events(model, {}), o);
  const Chart c = measure(s);
  // What the test looks at is there: a section per rank, labelled gaps, links.
  ASSERT_EQ(c.titles.size(), static_cast<size_t>(kRanks));
  ASSERT_EQ(c.busy_strips.size(), static_cast<size_t>(kRanks));
  ASSERT_GE(c.idle_labels.size(), 3u);
  ASSERT_FALSE(c.links.empty());
  std::string first;
  EXPECT_EQ(crossings(c, c.titles, &first), 0u) << first;
  EXPECT_EQ(crossings(c, c.idle_labels, &first), 0u) << first;
  EXPECT_EQ(crossings(c, c.busy_strips, &first), 0u) << first;
}

TEST(RankLinks, CrossNoSectionTitleIdleLabelOrBusyStripWithALaneAStream) {
  expect_links_clear_of_section_headers(LaneMode::kStream);
}

TEST(RankLinks, CrossNoSectionTitleIdleLabelOrBusyStripWithALaneARank) {
  expect_links_clear_of_section_headers(LaneMode::kRank);
}

// Left in pieces, a link must still join its ranks: at every collective's end there are
// pieces from the first rank's kernel down to the last rank's, and each rank's kernel is
// reached by one of them.
TEST(RankLinks, StillReachEveryRanksKernelAtTheCollectivesEnd) {
  const Model model = three_rank_job();
  const Scene s = build_scene(model, select_events(model, {}), RenderOptions{});
  const Chart c = measure(s);
  std::vector<const Rect*> nccl_bars;
  for (const Item& item : s.items)
    if (const auto* r = std::get_if<Rect>(&item); r && r->tooltip.rfind("ncclDevKernel", 0) == 0) nccl_bars.push_back(r);
  ASSERT_EQ(nccl_bars.size(), static_cast<size_t>(4 * kRanks));
  for (const Rect* bar : nccl_bars) {
    const float end_x = bar->x + bar->w, mid_y = bar->y + bar->h / 2;
    const bool reached = std::any_of(c.links.begin(), c.links.end(), [&](const Line& l) {
      return std::abs(l.x1 - end_x) < 1.5f && std::min(l.y1, l.y2) <= mid_y + 0.01f && mid_y - 0.01f <= std::max(l.y1, l.y2);
    });
    EXPECT_TRUE(reached) << "no link reaches the kernel at x " << end_x << ", y " << mid_y;
  }
}

}  // namespace
}  // namespace gantt
