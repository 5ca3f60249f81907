// CUDA graph launches: the model's graph columns, the launches grouped from them, and the
// chart's bracket around each launch on its stream lane.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "graph_fixture.h"
#include "gantt/render/colors.h"
#include "gantt/model/filter.h"
#include "gantt/model/graphs.h"
#include "gantt/render/render.h"

using namespace gantt_test;
using gantt::EventKind;
using gantt::kNone;

namespace {

std::string svg_of(const gantt::Model& m, gantt::RenderStats* st = nullptr, const gantt::EventFilter& filter = {}) {
  gantt::RenderOptions o;
  o.width_px = 1600;
  const gantt::Scene scene = gantt::build_scene(m, gantt::select_events(m, filter), o, st);
  std::ostringstream os;
  gantt::write_svg(scene, os);
  return os.str();
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Graphs, KernelsCopiesAndMemsetsKeepTheirGraphAndNodeIds) {
  const gantt::Model m = graph_model(1);
  ASSERT_EQ(m.events.size(), 6u);
  ASSERT_EQ(m.events.graph_id.size(), m.events.size());
  ASSERT_EQ(m.events.graph_node_id.size(), m.events.size());
  for (uint32_t e = 0; e < 5; ++e) {
    EXPECT_EQ(m.events.graph_id[e], kGraphId) << e;
    EXPECT_EQ(m.events.graph_node_id[e], 101u + e) << e;
    EXPECT_TRUE(gantt::is_graph_node(m, e));
  }
  EXPECT_EQ(m.events.kind[4], EventKind::kMemset);
  // The lone kernel was launched on its own.
  EXPECT_EQ(m.events.graph_id[5], 0u);
  EXPECT_EQ(m.events.graph_node_id[5], 0u);
  EXPECT_FALSE(gantt::is_graph_node(m, 5));

  // A copy node, through the same path as the capture file.
  gantt::Model c;
  gantt::ModelBuilder b(c);
  b.begin_capture("copy.gpuh");
  b.add(header());
  v1::Record r = memcpy_rec(v1::COPY_DTOD, 64, 13, 1, 100, 200);
  r.mutable_memcpy()->set_graph_id(9);
  r.mutable_memcpy()->set_graph_node_id(0x100000002ull);
  b.add(r);
  b.end_capture({});
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events.graph_id[0], 9u);
  EXPECT_EQ(c.events.graph_node_id[0], 0x100000002ull);
}

TEST(Graphs, EveryNodeOfALaunchJoinsTheOneCudaGraphLaunchCall) {
  const gantt::Model m = graph_model(2);
  for (uint32_t e = 0; e < 10; ++e) {
    ASSERT_NE(m.events.api[e], kNone) << e;
    EXPECT_EQ(m.string(m.api.name[m.events.api[e]]), "cudaGraphLaunch");
  }
  EXPECT_EQ(m.events.api[0], m.events.api[4]);
  EXPECT_NE(m.events.api[0], m.events.api[5]);
  // Copies and memsets are named after the call that issued them: here the graph launch.
  EXPECT_EQ(m.string(m.events.name[4]), "cudaGraphLaunch");
  EXPECT_EQ(m.captures[0].unmatched_activities, 0u);
}

TEST(Graphs, ALaunchIsTheNodesSharingGraphAndCorrelationIdInNodeOrder) {
  const gantt::Model m = graph_model(3);
  const auto launches = gantt::graph_launches(m);
  ASSERT_EQ(launches.size(), 3u);
  for (size_t i = 0; i < launches.size(); ++i) {
    const gantt::GraphLaunch& g = launches[i];
    const uint64_t t = 10'000 + 100'000 * i;
    EXPECT_EQ(g.graph_id, kGraphId);
    EXPECT_EQ(g.correlation_id, 10 + i);
    ASSERT_EQ(g.nodes.size(), 5u);
    EXPECT_EQ(g.start_ns, t + 3000);
    EXPECT_EQ(g.end_ns, t + 6500);
    ASSERT_NE(g.api, kNone);
    EXPECT_EQ(m.api.start_ns[g.api], t);
    // Node order: by start, so the two branches keep their order and the memset comes last.
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(m.events.graph_node_id[g.nodes[k]], 101 + k);
  }
  // A subset: only the launches with a node in it.
  const std::vector<uint32_t> some{5, 6};
  const auto part = gantt::graph_launches(m, &some);
  ASSERT_EQ(part.size(), 1u);
  EXPECT_EQ(part[0].correlation_id, 11u);
  EXPECT_EQ(part[0].nodes.size(), 2u);
}

TEST(Graphs, EachLaunchIsBracketedOnItsStreamLaneWithItsGraphAndNodeCount) {
  const gantt::Model m = graph_model(3);
  gantt::RenderStats st;
  const std::string svg = svg_of(m, &st);
  // Over the whole capture each 3.5 us launch is an outline of 15 px: too narrow for its
  // label, which its tooltip carries.
  EXPECT_EQ(st.graph_brackets, 3u);
  EXPECT_EQ(count(svg, "stroke=\"#178082\""), 3u);
  EXPECT_EQ(count(svg, "<title>graph 3 \xC2\xB7 5 nodes, launch 3.50 us"), 3u) << svg;
  EXPECT_EQ(count(svg, "correlation id 11</title>"), 1u);

  // Zoomed on the second launch: the bracket spans it and carries the label; the node names,
  // drawn inside, are escaped.
  gantt::EventFilter zoom;
  const uint64_t t0 = m.first_ns();
  zoom.from_ns = static_cast<int64_t>(110'000 + 2500 - t0);
  zoom.to_ns = static_cast<int64_t>(110'000 + 7000 - t0);
  gantt::RenderStats zst;
  const std::string z = svg_of(m, &zst, zoom);
  EXPECT_EQ(zst.graph_brackets, 1u);
  EXPECT_EQ(count(z, ">graph 3 \xC2\xB7 5 nodes</text>"), 1u) << z;
  EXPECT_NE(z.find("nodeC&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(z.find("nodeC<&>"), std::string::npos);
  // The outline runs from the first node's start to the last node's end: 3.5 of the 4.5 us shown.
  const size_t at = z.find("stroke=\"#178082\"");
  ASSERT_NE(at, std::string::npos);
  const size_t rect = z.rfind("<rect", at);
  const std::string tag = z.substr(rect, at - rect);
  const double width = std::stod(tag.substr(tag.find("width=\"") + 7));
  const double plot = 1600 - 250 - 24;
  EXPECT_NEAR(width, plot * 3.5 / 4.5, 2.0) << tag;
}

// At the default size a launch of 6.5 us in a 104 us chart is a bracket wide enough for its
// label. The label was 7 px, over the nodes' bars: unreadable (issue 44, item 10). It must be
// at least 9 px, the size of the kernel names inside the bars, inside its bracket, inside the
// chart, and clear of every bar and wait strip.
TEST(Graphs, TheBracketLabelReadsAtTheDefaultSizeInsideItsBracketClearOfTheBars) {
  constexpr float kMinReadablePx = 9;
  const gantt::Model m = graph_model(1);
  gantt::RenderStats st;
  const gantt::Scene scene = gantt::build_scene(m, gantt::select_events(m, {}), gantt::RenderOptions{}, &st);
  ASSERT_EQ(st.graph_brackets, 1u);
  const gantt::Text* label = nullptr;
  const gantt::Rect* bracket = nullptr;
  for (const auto& item : scene.items) {
    if (const auto* t = std::get_if<gantt::Text>(&item); t && t->text.rfind("graph 3", 0) == 0) label = t;
    if (const auto* r = std::get_if<gantt::Rect>(&item); r && r->stroke == gantt::palette::kGraph) bracket = r;
  }
  ASSERT_NE(bracket, nullptr);
  ASSERT_NE(label, nullptr) << "the bracket carries no label at the default size";
  EXPECT_GE(label->size, kMinReadablePx);
  // Where the glyphs can reach: 2/3 em a character (DejaVu Sans's digits at 9 px, hinted, are
  // 6 px, the widest glyphs of these labels), 0.8 em above the baseline, 0.25 below.
  size_t chars = 0;
  for (char c : label->text) chars += (c & 0xC0) != 0x80;
  ASSERT_EQ(label->anchor, gantt::Anchor::kStart);
  const float x0 = label->x, x1 = x0 + static_cast<float>(chars) * label->size * 2 / 3;
  const float top = label->y - 0.8f * label->size, bottom = label->y + 0.25f * label->size;
  EXPECT_GE(x0, 0);
  EXPECT_LE(x1, static_cast<float>(scene.width));
  EXPECT_GE(top, 0);
  EXPECT_LE(bottom, static_cast<float>(scene.height));
  EXPECT_GE(x0, bracket->x);
  EXPECT_LE(x1, bracket->x + bracket->w) << label->text;
  EXPECT_GE(top, bracket->y);
  EXPECT_LE(bottom, bracket->y + bracket->h);
  for (const auto& item : scene.items) {
    const auto* r = std::get_if<gantt::Rect>(&item);
    if (!r || !r->fill.visible() || r->fill == gantt::palette::kLaneBand) continue;
    const bool overlaps = r->x < x1 && x0 < r->x + r->w && r->y < bottom && top < r->y + r->h;
    EXPECT_FALSE(overlaps) << "the label [" << x0 << ", " << x1 << "] x [" << top << ", " << bottom
                           << "] overlaps a rect at " << r->x << ", " << r->y << " (" << r->w << " x " << r->h << ") "
                           << r->tooltip.substr(0, r->tooltip.find('\n'));
  }
}

TEST(Graphs, BranchesSideBySideOnOneLaneGetARowEachAndStayVisible) {
  const gantt::Model m = graph_model(1);
  gantt::RenderStats st;
  const gantt::Scene scene =
      gantt::build_scene(m, gantt::select_events(m, {}), gantt::RenderOptions{}, &st);
  EXPECT_EQ(st.overlap_rows, 1u);
  // B and C overlap in time: their bars must not share a row.
  float yb = -1, yc = -1;
  for (const auto& item : scene.items) {
    const auto* r = std::get_if<gantt::Rect>(&item);
    if (!r || r->tooltip.empty()) continue;
    if (r->tooltip.rfind("nodeB", 0) == 0) yb = r->y;
    if (r->tooltip.rfind("nodeC", 0) == 0) yc = r->y;
  }
  ASSERT_GE(yb, 0);
  ASSERT_GE(yc, 0);
  EXPECT_NE(yb, yc);
  // Events in a row's sequence (no overlap) add no row.
  gantt::Model lone;
  gantt::ModelBuilder b(lone);
  b.begin_capture("lone.gpuh");
  b.add(header());
  b.add(string_def(1, "k"));
  b.add(kernel(1, 7, 1, 0, 0, 1000, 2000));
  b.add(kernel(1, 7, 2, 0, 0, 2000, 3000));
  b.end_capture({});
  gantt::RenderStats st2;
  gantt::build_scene(lone, gantt::select_events(lone, {}), gantt::RenderOptions{}, &st2);
  EXPECT_EQ(st2.overlap_rows, 0u);
  EXPECT_EQ(st2.graph_brackets, 0u);
}

// Peer copies: drawn where they ran, with the devices the bytes left and reached, and a dashed
// line to the other device's section.
TEST(PeerCopies, KeepTheirDevicesAndLinkTheTwoDeviceSections) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("peer.gpuh");
  b.add(header());
  b.add(a100(0));
  b.add(a100(1));
  b.add(string_def(1, "cudaMemcpyPeerAsync"));
  b.add(string_def(2, "cudaLaunchKernel"));
  b.add(string_def(3, "_Z4stepPf"));
  b.add(api(1, 100, 1'000, 1'100, 1));
  v1::Record c = memcpy_rec(v1::COPY_PTOP, 1 << 20, 13, 1, 2'000, 50'000);
  c.mutable_memcpy()->set_src_device(0);
  c.mutable_memcpy()->set_dst_device(1);
  b.add(c);
  b.add(api(2, 100, 1'200, 1'300, 2));
  v1::Record k = kernel(3, 14, 2, 0, 0, 60'000, 90'000);
  k.mutable_kernel()->set_device(1);
  b.add(k);
  b.add(memcpy_rec(v1::COPY_HTOD, 1 << 20, 13, 3, 91'000, 95'000));  // not a peer copy
  b.end_capture({});
  ASSERT_EQ(m.events.size(), 3u);
  EXPECT_EQ(m.events.src_device[0], 0u);
  EXPECT_EQ(m.events.dst_device[0], 1u);
  EXPECT_EQ(m.events.src_device[2], kNone);

  gantt::RenderOptions o;
  o.width_px = 1600;
  const gantt::Scene scene = gantt::build_scene(m, gantt::select_events(m, {}), o, nullptr);
  size_t dashed_down = 0;
  bool tooltip = false;
  for (const auto& item : scene.items) {
    if (const auto* l = std::get_if<gantt::Line>(&item); l != nullptr && l->dashed && l->x1 == l->x2 && l->y2 > l->y1)
      ++dashed_down;
    if (const auto* r = std::get_if<gantt::Rect>(&item); r != nullptr && r->tooltip.find("PtoP GPU0 \xE2\x86\x92 GPU1") != std::string::npos)
      tooltip = true;
  }
  EXPECT_EQ(dashed_down, 1u);
  EXPECT_TRUE(tooltip);
}
