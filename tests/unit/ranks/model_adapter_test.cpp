// The rank analyses over a Model built from fabricated records: alignment applied to every
// time column, collectives joined to their kernels, links drawn, footer lines.
#include <gtest/gtest.h>

#include "gantt/model/model.h"
#include "gantt/model/filter.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/rank_links.h"
#include "gantt/render/render.h"
#include "gantt/render/scene.h"
#include "rank_records.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

// Two ranks on two hosts; host B's clock reads 1 ms ahead. Rank 1 arrives 30 us late at
// every all-reduce; both kernels end together. With `host_records`, each rank also makes one
// allocation and takes one NVML sample, 50 us into the job on its own clock.
Model two_rank_job(int steps, bool host_records = false) {
  Model model;
  ModelBuilder b(model);
  for (int r = 0; r < 2; ++r) {
    const int64_t off = r == 1 ? 1'000'000 : 0;
    b.begin_capture("rank" + std::to_string(r) + ".gpuh");
    v1::Record rec = test::rank_header(r, r == 0 ? "a" : "b", static_cast<uint64_t>(1'000'000'000 + off));
    auto* h = rec.mutable_header();
    h->set_boot_id(r == 0 ? "A" : "B");
    h->set_start_realtime_ns(1'700'000'000'000'000'000ull + 200'000);  // NTP error: 200 us, both
    h->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK);
    b.add(rec);
    b.define_string(1, "ncclAllReduce");
    b.define_string(2, "cudaLaunchKernel");
    b.define_string(3, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
    if (host_records) {
      v1::Record m;
      auto* mem = m.mutable_memory();
      mem->set_op(v1::MEMORY_OP_ALLOC);
      mem->set_address(0x7000'0000);
      mem->set_bytes(1 << 20);
      mem->set_time_ns(1'000'050'000 + off);
      mem->set_memory_kind(v1::MEMORY_DEVICE);
      b.add(m);
      v1::Record x;
      auto* sample = x.mutable_metric_sample();
      sample->set_time_ns(1'000'050'000 + off);
      sample->set_metric(v1::GPU_METRIC_SM_CLOCK_MHZ);
      sample->set_value(1980);
      b.add(x);
    }
    for (int s = 0; s < steps; ++s) {
      const int64_t t = 1'000'100'000 + s * 1'000'000 + off + (r == 1 ? 30'000 : 0);
      const auto corr = static_cast<uint32_t>(s + 1);
      b.add(test::all_reduce_call(1, r, 2, static_cast<uint64_t>(s), t - 5'000, t - 1'000));
      b.add(test::launch_call(2, corr, t - 4'000, t - 2'000));
      b.add(test::launched_kernel(3, corr, 0, t, 1'000'100'000 + s * 1'000'000 + off + 80'000));  // same true end for both
    }
    b.end_capture(gpuhook::Integrity{});
  }
  return model;
}

TEST(RanksModel, AlignsAndJoinsCollectives) {
  Model model = two_rank_job(10);
  ASSERT_EQ(model.captures.size(), 2u);
  auto inputs = rank_clock_inputs(model);
  ASSERT_EQ(inputs[1].ends.size(), 10u) << "NCCL calls were not joined to their kernels";
  const uint64_t before = model.events.start_ns[model.nccl.event[10]];
  RankAlignment al = align_model_ranks(model);
  EXPECT_EQ(al.captures[1].offset_ns, -1'000'000);
  EXPECT_EQ(al.captures[1].method, RankAlignMethod::kCollectives);
  // Every time column of capture 1 moved; capture 0 did not.
  EXPECT_EQ(model.events.start_ns[model.nccl.event[10]], before - 1'000'000);
  EXPECT_EQ(model.nccl.start_ns[10], 1'000'100'000u + 30'000 - 5'000);
  auto instances = match_collectives(collective_calls(model));
  ASSERT_EQ(instances.size(), 10u);
  EXPECT_EQ(instances[0].last_rank, 1);
  EXPECT_EQ(instances[0].arrival_spread_ns, 30'000u);
  EXPECT_EQ(instances[0].transfer_ns, 50'000u);
  EXPECT_EQ(global_rank(model, 1), 1);
  auto busy = rank_busy_intervals(model);
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_TRUE(busy[0].intervals.empty());  // NCCL kernels are not compute
}

// Allocations and counter samples are on the host clock as the calls are: a rank on another
// host has them moved with its events, or its memory peak and its NVML samples would lie a
// clock offset away from its kernels.
TEST(RanksModel, AlignmentMovesAllocationsAndSamples) {
  Model model = two_rank_job(10, true);
  ASSERT_EQ(model.memory.size(), 2u);
  ASSERT_EQ(model.metrics.size(), 2u);
  align_model_ranks(model);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(model.memory.time_ns[i], 1'000'050'000u) << "capture " << model.memory.capture[i];
    EXPECT_EQ(model.metrics.time_ns[i], 1'000'050'000u) << "capture " << model.metrics.capture[i];
  }
}

TEST(RanksModel, LinksFooterAndLabels) {
  Model model = two_rank_job(3);
  RankAlignment al = align_model_ranks(model);
  auto links = collective_links(model);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].events.size(), 2u);
  EXPECT_EQ(links[0].last_rank, 1);
  Scene scene;
  draw_collective_links(
      scene, links,
      [&](uint32_t e, float* x0, float* x1, float* y, float* h) {
        *x0 = static_cast<float>(model.events.start_ns[e] % 100000) / 100.f;
        *x1 = *x0 + 50;
        *y = model.events.capture[e] == 0 ? 10.f : 40.f;
        *h = 14;
        return true;
      },
      [](uint64_t t) { return static_cast<float>(t % 100000) / 100.f; }, 80.f);
  int lines = 0, outlines = 0, labels = 0;
  for (const Item& item : scene.items) {
    if (std::holds_alternative<Line>(item)) {
      ++lines;
      EXPECT_FLOAT_EQ(std::get<Line>(item).y1, 17.f);
      EXPECT_FLOAT_EQ(std::get<Line>(item).y2, 47.f);
    }
    if (std::holds_alternative<Rect>(item)) ++outlines;
    if (std::holds_alternative<Text>(item)) {
      ++labels;
      EXPECT_FLOAT_EQ(std::get<Text>(item).y, 80.f);  // on the row of their own, not on a lane
    }
  }
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(outlines, 3);
  EXPECT_GE(labels, 1);
  // One footer line for the alignment; the per-capture offsets are info's.
  auto footer = rank_footer_lines(model, al);
  ASSERT_EQ(footer.size(), 1u);
  EXPECT_NE(footer[0].find("gantt-cli info"), std::string::npos) << footer[0];
  EXPECT_NE(rank_lane_label(model, 1).find("rank 1"), std::string::npos);
  EXPECT_NE(rank_lane_label(model, 1).find("b"), std::string::npos);
}

TEST(RanksModel, OneCaptureIsLeftAlone) {
  Model model = two_rank_job(2);
  model.captures.resize(1);
  RankAlignment al = align_model_ranks(model);
  ASSERT_EQ(al.captures.size(), 1u);
  EXPECT_EQ(al.captures[0].offset_ns, 0);
  EXPECT_TRUE(rank_footer_lines(model, al).empty());
}

}  // namespace
}  // namespace gantt

namespace gantt {
namespace {

// A job's chart reads as a job: titled by what names it, each rank's lane under its own device
// header, the last arrivals on a row of their own, and a footer of at most four lines.
TEST(RanksChart, TitleRankLanesAndAShortFooter) {
  Model model = two_rank_job(3);
  align_model_ranks(model);
  RenderOptions o;
  o.lanes = LaneMode::kRank;
  const Scene s = build_scene(model, select_events(model, {}), o);
  EXPECT_EQ(s.title, "gantt: rank*.gpuh (2 ranks)");
  std::vector<const Text*> texts;
  for (const Item& item : s.items)
    if (const auto* t = std::get_if<Text>(&item)) texts.push_back(t);
  const auto y_of = [&](const std::string& prefix) {
    for (const Text* t : texts)
      if (t->text.rfind(prefix, 0) == 0) return t->y;
    return -1.0f;
  };
  // Rank 0's lane is between its device header and rank 1's header.
  const float header0 = y_of("#0 GPU"), header1 = y_of("#1 GPU"), lane0 = y_of("rank 0");
  ASSERT_GT(header0, 0);
  ASSERT_GT(header1, 0);
  EXPECT_GT(lane0, header0);
  EXPECT_LT(lane0, header1);
  EXPECT_GT(y_of("last to arrive"), y_of("rank 1"));
  // The footer: the lines under the legend, at the left margin.
  const float legend = y_of("launch\xE2\x86\x92queued");
  size_t footer = 0;
  for (const Text* t : texts)
    if (t->y > legend + 10 && t->x == 12) ++footer;
  EXPECT_GE(footer, 3u);
  EXPECT_LE(footer, 4u);
}

}  // namespace
}  // namespace gantt
