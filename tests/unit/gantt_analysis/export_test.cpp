// The Chrome trace and folded-stack exporters on fabricated models.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fixture.h"
#include "gantt/render/colors.h"
#include "gantt/export/export.h"
#include "gantt/analysis/flame.h"
#include "gantt/render/flame_scene.h"
#include "gantt/model/filter.h"

using namespace gantt_analysis_test;

namespace {

enum : uint32_t { kK = 30, kOuter = 31, kInner = 32, kHostile = 33, kSemi = 34 };

gantt::Model model_with_overlaps() {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("export.gpuh");
  add_small_capture(b);
  b.add(string_def(kK, "_Z6kernelv"));
  b.add(string_def(kOuter, "outer;step"));
  b.add(string_def(kInner, "inner \"quoted\""));
  b.add(string_def(kHostile, std::string("bad\xFF\x01<name>\\", 12)));
  // Ranges around two launches; the second kernel overlaps the first on the same stream
  // (a timing glitch viewers would drop) and must go to a second track.
  b.add(range(v1::RANGE_PUSH, kOuter, 100, 10'000));
  b.add(range(v1::RANGE_PUSH, kInner, 100, 10'100));
  b.add(api(kLaunch, 100, 10'200, 10'300, 50));
  b.add(api(kLaunch, 100, 10'400, 10'500, 51));
  b.add(range(v1::RANGE_POP, 0, 100, 10'600));
  b.add(range(v1::RANGE_POP, 0, 100, 10'700));
  b.add(api(kLaunch, 100, 10'650, 10'800, 52));  // partially overlaps the outer range's end
  b.add(kernel(kK, 21, 50, 10'310, 10'320, 11'000, 13'000));
  b.add(kernel(kK, 21, 51, 10'510, 10'520, 12'000, 14'000));
  b.add(kernel(kHostile, 21, 52, 10'810, 10'820, 14'000, 14'500));
  b.end_capture({});
  return m;
}

gantt::Selection all(const gantt::Model& m) { return gantt::select_events(m, gantt::EventFilter{}); }

std::string run(const char* format, const gantt::Model& m) {
  const gantt::Exporter* e = gantt::find_exporter(format);
  EXPECT_NE(e, nullptr) << format;
  if (!e) return {};
  std::ostringstream os;
  e->write(m, all(m), gantt::ExportOptions{}, os);
  return os.str();
}

int check(const std::string& tool_cmd, const std::string& json) {
  const gantt_analysis_test::TempFile file(".trace.json");
  const std::string& path = file.path;
  std::ofstream(path, std::ios::binary) << json;
  return std::system((tool_cmd + " " + path).c_str());
}

}  // namespace

TEST(ChromeExport, ViewersCanReadItNoOverlapsFlowsAndExactTimes) {
  const gantt::Model m = model_with_overlaps();
  const std::string json = run("chrome", m);
  EXPECT_EQ(json, run("chrome", m)) << "not deterministic";
  EXPECT_NE(json.find("\"stream 21 #2\""), std::string::npos) << "overlapping kernels share a track";
  EXPECT_NE(json.find("\"ph\":\"f\",\"bp\":\"e\""), std::string::npos);
  EXPECT_NE(json.find("\"cat\":\"nvtx\""), std::string::npos);
  EXPECT_NE(json.find("bad\\ufffd\\u0001<name>\\\\"), std::string::npos);
  // Stages as async slices (queued 10.310 us -> submitted 10.320 -> start 11.000 from the first
  // time, 100 ns), and the device's counters: both kernels queued at once before the first starts.
  EXPECT_NE(json.find("{\"ph\":\"b\",\"cat\":\"stage\",\"name\":\"queued\""), std::string::npos) << json;
  EXPECT_NE(json.find("{\"ph\":\"b\",\"cat\":\"stage\",\"name\":\"submitted\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"kernels queued\":2}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"kernels running\":2,"), std::string::npos) << json;
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  EXPECT_EQ(check("python3 " GANTT_ANALYSIS_TEST_DIR "/check_chrome_trace.py", json), 0) << json;
  if (std::system("command -v node >/dev/null 2>&1") == 0) {
    EXPECT_EQ(check("node -e 'JSON.parse(require(\"fs\").readFileSync(process.argv[1], \"utf8\"))'", json), 0);
  }
}

TEST(ChromeExport, EmptyModelIsStillValidJson) {
  gantt::Model m;
  const std::string json = run("chrome", m);
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP();
  EXPECT_EQ(check("python3 -c 'import json,sys; json.load(open(sys.argv[1]))'", json), 0) << json;
}

TEST(FoldedExport, StacksAreRangePathsThenKernelWithExecWeights) {
  const gantt::Model m = model_with_overlaps();
  const std::string folded = run("folded", m);
  // outer;step has a ';' in its name: it must not split into two frames.
  EXPECT_NE(folded.find("outer:step;inner \"quoted\";kernel() 4000\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("gemm(float*, float*, float*, int) 600\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("[memcpy HtoD] 400\n"), std::string::npos) << folded;
  // Every line: frames, one space, an integer weight.
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    EXPECT_EQ(line.find_first_not_of("0123456789", sp + 1), std::string::npos) << line;
  }
}

TEST(FoldedExport, RootFramePerRankOrDevice) {
  const gantt::Model m = model_with_overlaps();
  const auto stacks = [&](gantt::analysis::StackRoot root) {
    std::ostringstream os;
    gantt::ExportOptions eo;
    eo.folded_root = root;
    gantt::find_exporter("folded")->write(m, all(m), eo, os);
    return os.str();
  };
  const std::string none = stacks(gantt::analysis::StackRoot::kNone);
  const std::string rank = stacks(gantt::analysis::StackRoot::kRank);
  const std::string device = stacks(gantt::analysis::StackRoot::kDevice);
  // The header records no rank: the frame names the capture. One capture: the device frame alone.
  EXPECT_NE(rank.find("capture 0;outer:step;inner \"quoted\";kernel() 4000\n"), std::string::npos) << rank;
  EXPECT_NE(device.find("gpu0;outer:step;inner \"quoted\";kernel() 4000\n"), std::string::npos) << device;
  // Same lines, each under one root frame: the weights are unchanged.
  const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(rank), lines(none));
  EXPECT_EQ(lines(device), lines(none));
}

namespace {
const gantt::Rect* frame_rect(const gantt::Scene& s, const std::string& name) {
  for (const auto& item : s.items)
    if (const auto* r = std::get_if<gantt::Rect>(&item); r && r->tooltip.rfind(name + ":", 0) == 0) return r;
  return nullptr;
}
}  // namespace

TEST(Flame, LabelsContrastWithTheirFrames) {
  EXPECT_EQ(gantt::text_color_on(gantt::Color{20, 20, 60, 255}), (gantt::Color{255, 255, 255, 255}));
  EXPECT_EQ(gantt::text_color_on(gantt::Color{250, 240, 200, 255}), (gantt::Color{0, 0, 0, 255}));
  // Every label of a flame graph: the text colour is the one that contrasts with its frame.
  gantt::analysis::Stacks stacks;
  for (int i = 0; i < 40; ++i) stacks["step\x1fkernel_" + std::to_string(i * 7919)] = 1000 + static_cast<uint64_t>(i);
  const gantt::Scene s = gantt::flame_scene(stacks, gantt::FlameOptions{});
  const gantt::Rect* last = nullptr;
  size_t labels = 0;
  for (const auto& item : s.items) {
    if (const auto* r = std::get_if<gantt::Rect>(&item)) last = r;
    if (const auto* t = std::get_if<gantt::Text>(&item); t && last && t->x > last->x && t->x < last->x + last->w &&
                                                          t->y > last->y && t->y < last->y + last->h + 1) {
      EXPECT_EQ(t->color, gantt::text_color_on(last->fill)) << t->text;
      ++labels;
    }
  }
  EXPECT_GT(labels, 10u);
}

TEST(Flame, WidthsFollowWeightsAndTheDiffColoursSlowerRed) {
  namespace ga = gantt::analysis;
  const ga::Stacks base{{"step\x1f" "a", 100}, {"step\x1f" "b", 300}};
  gantt::FlameOptions o;
  o.width_px = 420;  // 400 px of frames
  const gantt::Scene s = gantt::flame_scene(base, o);
  const gantt::Rect *a = frame_rect(s, "a"), *b = frame_rect(s, "b"), *step = frame_rect(s, "step");
  ASSERT_TRUE(a && b && step);
  EXPECT_FLOAT_EQ(a->w, 100);
  EXPECT_FLOAT_EQ(b->w, 300);
  EXPECT_FLOAT_EQ(step->w, 400);
  EXPECT_LT(step->y, 1e9f);
  EXPECT_GT(a->y + 0.0f, 0.0f);
  EXPECT_LT(a->y, step->y);  // children above their parent
  const ga::Stacks next{{"step\x1f" "a", 150}, {"step\x1f" "b", 150}};
  const gantt::Scene d = gantt::diff_flame_scene(base, next, o);
  const gantt::Rect *da = frame_rect(d, "a"), *db = frame_rect(d, "b");
  ASSERT_TRUE(da && db);
  EXPECT_GT(da->fill.r, da->fill.b);  // slower: red
  EXPECT_GT(db->fill.b, db->fill.r);  // faster: blue
  EXPECT_NE(da->tooltip.find("+50.0%"), std::string::npos) << da->tooltip;
  // Empty input: an explicit message, not a blank chart.
  const gantt::Scene e = gantt::flame_scene({}, o);
  bool says = false;
  for (const auto& item : e.items)
    if (const auto* t = std::get_if<gantt::Text>(&item); t && t->text.find("no GPU work") != std::string::npos) says = true;
  EXPECT_TRUE(says);
}

// The memory counter track: allocations and frees per device, in MiB by kind; a free that
// leaves its size out is matched to its allocation by address.
TEST(ChromeExport, MemoryCounterFollowsAllocationsAndFrees) {
  gantt::Model m = model_with_overlaps();
  gantt::ModelBuilder b(m);
  b.begin_capture("memory.gpuh");
  add_small_capture(b);
  const auto mem = [&](v1::MemoryOp op, v1::MemoryKind kind, uint64_t address, uint64_t bytes, uint64_t t) {
    v1::Record r;
    auto* x = r.mutable_memory();
    x->set_op(op);
    x->set_memory_kind(kind);
    x->set_address(address);
    x->set_bytes(bytes);
    x->set_time_ns(static_cast<int64_t>(t));
    b.add(r);
  };
  mem(v1::MEMORY_OP_ALLOC, v1::MEMORY_DEVICE, 0x1000, 2u << 20, 10'100);
  mem(v1::MEMORY_OP_ALLOC, v1::MEMORY_PINNED, 0x9000, 1u << 20, 10'200);
  mem(v1::MEMORY_OP_FREE, v1::MEMORY_DEVICE, 0x1000, 0, 10'300);  // size left out: found by address
  b.end_capture({});
  const std::string json = run("chrome", m);
  const size_t a = json.find("\"memory in use (MiB)\"");
  ASSERT_NE(a, std::string::npos) << json;
  const std::string rest = json.substr(a);
  const size_t one = rest.find("\"args\":{\"device\":2}");
  const size_t two = rest.find("\"args\":{\"pinned host\":1,\"device\":2}");
  const size_t three = rest.find("\"args\":{\"pinned host\":1,\"device\":0}");
  EXPECT_NE(one, std::string::npos) << rest.substr(0, 600);
  EXPECT_NE(two, std::string::npos) << rest.substr(0, 600);
  EXPECT_NE(three, std::string::npos) << rest.substr(0, 600);
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
}
