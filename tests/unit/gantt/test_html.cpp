// The HTML page's data: the packing the viewer decodes, the escaping that keeps kernel names
// inside their <script> element, and the level-of-detail pyramid.
#include <gtest/gtest.h>

#include <string>

#include "fabricate.h"
#include "gantt/render/html.h"
#include "gantt/render/render.h"

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Two streams of kernels, one of them named to break out of a <script> element.
gantt::Model two_streams(const std::string& hostile_name, uint32_t n) {
  using namespace gantt_test;
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("html");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, "gemm"));
  b.add(string_def(3, hostile_name));
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t t = 1'000'000 + uint64_t(k) * 1000;
    b.add(api(1, 5, t, t + 100, k + 1));
    b.add(kernel(k % 2 ? 3 : 2, 10 + k % 2, k + 1, t + 200, t + 300, t + 400, t + 900));
  }
  b.end_capture({});
  return m;
}

}  // namespace

TEST(Html, VarintsAreLeb128LowBitsFirst) {
  std::string out;
  gantt::html::append_varint(out, 0);
  gantt::html::append_varint(out, 127);
  gantt::html::append_varint(out, 300);
  gantt::html::append_varint(out, 1ull << 40);
  EXPECT_EQ(out, std::string("\x00\x7f\xac\x02\x80\x80\x80\x80\x80\x20", 10));
  EXPECT_EQ(gantt::html::zigzag(0), 0u);
  EXPECT_EQ(gantt::html::zigzag(-1), 1u);
  EXPECT_EQ(gantt::html::zigzag(1), 2u);
  EXPECT_EQ(gantt::html::zigzag(-5'000'000'000), 9'999'999'999u);
}

TEST(Html, Base64MatchesRfc4648Vectors) {
  EXPECT_EQ(gantt::html::base64(""), "");
  EXPECT_EQ(gantt::html::base64("f"), "Zg==");
  EXPECT_EQ(gantt::html::base64("fo"), "Zm8=");
  EXPECT_EQ(gantt::html::base64("foo"), "Zm9v");
  EXPECT_EQ(gantt::html::base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(gantt::html::base64(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Html, ScriptStringsHaveNoAngleBracketAmpersandOrLineSeparator) {
  std::string out;
  gantt::html::append_script_string(out, "</script><script>alert(\"1\")</script>&amp;<!--\xE2\x80\xA8\xE2\x80\xA9\xFF");
  EXPECT_EQ(out.find('<'), std::string::npos);
  EXPECT_EQ(out.find('>'), std::string::npos);
  EXPECT_EQ(out.find('&'), std::string::npos);
  EXPECT_EQ(out.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_NE(out.find("\\u003c/script\\u003e"), std::string::npos);
  EXPECT_NE(out.find("\\\"1\\\""), std::string::npos);
  EXPECT_NE(out.find("\\u2028"), std::string::npos);
}

TEST(Html, PyramidHalvesDownToTheCoarsestLevelAndKeepsLoneEvents) {
  const std::string levels = gantt::html::lod_levels({1.0, 0.0, 0.5, 0.25, 0.0001, 0.0, 0.0, 0.0}, 2);
  ASSERT_EQ(levels.size(), 8u + 4u + 2u);
  const auto at = [&](size_t i) { return static_cast<unsigned>(static_cast<uint8_t>(levels[i])); };
  EXPECT_EQ(at(0), 255u);
  EXPECT_EQ(at(1), 0u);
  EXPECT_EQ(at(2), 128u);
  EXPECT_EQ(at(4), 1u);  // a sliver stays visible
  EXPECT_EQ(at(8), 128u);   // (1 + 0) / 2
  EXPECT_EQ(at(9), 96u);    // (0.5 + 0.25) / 2
  EXPECT_EQ(at(12), 112u);  // (0.5 + 0.375) / 2
  EXPECT_EQ(gantt::html::lod_buckets(10), gantt::html::kMinBuckets);
  EXPECT_EQ(gantt::html::lod_buckets(1'000'000), gantt::html::kMaxBuckets);
  EXPECT_EQ(gantt::html::lod_buckets(3000), 2048u);
}

TEST(Html, PageHoldsExactlyItsOwnScriptsWhateverTheKernelNames) {
  const gantt::Model m = two_streams("</script><script>alert(1)</script>\"'<!--", 40);
  const auto sel = gantt::select_events(m, {});
  gantt::HtmlStats st;
  const std::string data = gantt::html::data_json(m, sel, gantt::RenderOptions{}, &st);
  EXPECT_EQ(st.lanes, 2u);
  EXPECT_EQ(st.events, 40u);
  EXPECT_EQ(data.find('<'), std::string::npos);
  const std::string page = gantt::html::page(data);
  // The data block and the viewer: two script elements, however the names read.
  EXPECT_EQ(count(page, "<script"), 2u);
  EXPECT_EQ(count(page, "</script"), 2u);
  EXPECT_EQ(count(page, "<!--"), 1u);  // the template's own comment
  EXPECT_EQ(page.find("/*@VIEWER_"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);   // nothing to fetch
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST(Html, EventsArePackedNotOneObjectEach) {
  const gantt::Model small = two_streams("k", 2'000), big = two_streams("k", 20'000);
  gantt::RenderOptions no_flags;  // flag labels are text per flagged event: counted apart
  no_flags.annotate.enabled = false;
  const auto bytes = [&](const gantt::Model& m) {
    return gantt::html::data_json(m, gantt::select_events(m, {}), no_flags).size();
  };
  const size_t a = bytes(small), b = bytes(big);
  // 18,000 more events: each costs its nine varints in base64 (about 19 bytes here) and its
  // share of the finer pyramids, lane and device (about 7 bytes at this size; they stop
  // growing at kMaxBuckets); one JSON object per event would be over 100.
  EXPECT_LT((b - a) / 18'000.0, 30.0);
  const auto objects = [](const gantt::Model& m) {
    return count(gantt::html::data_json(m, gantt::select_events(m, {}), gantt::RenderOptions{}), "{");
  };
  EXPECT_EQ(objects(small), objects(big));
}

namespace {

// Kernels launched inside "step" > a range named to break out of the page, on thread 5.
gantt::Model nested_ranges() {
  using namespace gantt_test;
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("html");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, "gemm"));
  b.add(string_def(3, "step"));
  b.add(string_def(4, "</script><b>"));
  b.add(range(v1::RANGE_PUSH, 3, 5, 900'000));
  b.add(range(v1::RANGE_PUSH, 4, 5, 950'000));
  for (uint32_t k = 0; k < 4; ++k) {
    const uint64_t t = 1'000'000 + uint64_t(k) * 1000;
    b.add(api(1, 5, t, t + 100, k + 1));
    b.add(kernel(2, 10, k + 1, t + 200, t + 300, t + 400, t + 900));
  }
  b.add(range(v1::RANGE_POP, 0, 5, 1'100'000));
  b.add(range(v1::RANGE_POP, 0, 5, 1'200'000));
  b.end_capture({});
  return m;
}

}  // namespace

TEST(Html, RangesGoOnTheirThreadsLaneWithTheirNamesEscaped) {
  const gantt::Model m = nested_ranges();
  gantt::HtmlStats st;
  const std::string data = gantt::html::data_json(m, gantt::select_events(m, {}), gantt::RenderOptions{}, &st);
  EXPECT_EQ(st.ranges, 2u);
  EXPECT_NE(data.find("\"host_lanes\":[\"tid 5\"]"), std::string::npos);
  EXPECT_NE(data.find("\"ranges\":{\"n\":2,"), std::string::npos);
  EXPECT_NE(data.find("\"names\":[\"step\",\"\\u003c/script\\u003e\\u003cb\\u003e\"]"), std::string::npos);
  EXPECT_EQ(data.find('<'), std::string::npos);
}

TEST(Html, EventsCarryTheirRangeOnlyWhereThePageHasRanges) {
  const gantt::Model m = nested_ranges();
  gantt::RenderOptions no_host;
  no_host.host_lanes = false;
  gantt::HtmlStats with, without;
  const std::string a = gantt::html::data_json(m, gantt::select_events(m, {}), gantt::RenderOptions{}, &with);
  const std::string b = gantt::html::data_json(m, gantt::select_events(m, {}), no_host, &without);
  EXPECT_EQ(without.ranges, 0u);
  EXPECT_NE(b.find("\"ranges\":{\"n\":0,"), std::string::npos);
  // The events' run: one more varint each with ranges (the first event's range delta is
  // zigzag(+2) = 4: the inner range, page index 1, + 1; the others' 0). Four events, 4 bytes
  // more before base64.
  const auto events_b64 = [](const std::string& d) {
    const size_t at = d.find("\"events\":\"") + 10;
    return d.substr(at, d.find('"', at) - at);
  };
  const size_t ea = events_b64(a).size(), eb = events_b64(b).size();
  EXPECT_GE(ea, eb + 4);
  EXPECT_LE(ea, eb + 8);
}

// A diff page: the second run's origin (here its first kernel) lands at the first's page time,
// whatever its clock; each run under its own sections; the flame stacks of both, escaped.
TEST(Html, TwoRunsShareOneAxisAtTheirOrigins) {
  const gantt::Model base = two_streams("</script>", 4), next = nested_ranges();
  gantt::Selection bs = gantt::select_events(base, {}), ns = gantt::select_events(next, {});
  bs.origin_ns = 1'000'400;  // base's first kernel start
  ns.origin_ns = 1'000'400;  // next's first kernel start
  gantt::HtmlDiff diff;
  diff.title = "diff </script>";
  diff.base = gantt::analysis::gpu_stacks(base);
  diff.next = gantt::analysis::gpu_stacks(next);
  gantt::HtmlStats st;
  const std::string data = gantt::html::data_json({{&base, bs, "base"}, {&next, ns, "new"}}, gantt::RenderOptions{}, &diff, &st);
  EXPECT_EQ(st.lanes, 3u);
  EXPECT_EQ(st.events, 8u);
  EXPECT_EQ(data.find('<'), std::string::npos);
  EXPECT_NE(data.find("\"title\":\"diff \\u003c/script\\u003e\""), std::string::npos);
  EXPECT_NE(data.find("\"label\":\"base \xC2\xB7 "), std::string::npos);
  EXPECT_NE(data.find("\"label\":\"new \xC2\xB7 "), std::string::npos);
  // Host lanes: the threads with calls (base, new) or ranges (new).
  EXPECT_NE(data.find("\"host_lanes\":[\"base tid 5\",\"new tid 5\"]"), std::string::npos);
  // Stacks: [frames..., base ns, new ns]; gemm ran in base outside any range, in new inside two.
  EXPECT_NE(data.find("[\"gemm\",1000,0]"), std::string::npos);
  EXPECT_NE(data.find("[\"step\",\"\\u003c/script\\u003e\\u003cb\\u003e\",\"gemm\",0,2000]"), std::string::npos);
  // Both origins at one page time, the axis' origin: as far in as the run with the longer
  // lead-in before its origin needs.
  const size_t at = data.find("\"origin_ns\":");
  ASSERT_NE(at, std::string::npos);
  const uint64_t lead_in = std::max(bs.origin_ns - bs.window_start_ns, ns.origin_ns - ns.window_start_ns);
  EXPECT_GT(lead_in, 0u);
  EXPECT_EQ(std::stoull(data.substr(at + 12)), lead_in);
}

// A scanned page (html.h write_html with a ChartRest): the model holds the events written one
// by one, the rest folds the others per lane; a lane with none written is still on the page,
// its folded events are in its pyramid and counted, and the page does not grow with them.
TEST(Html, AScannedPageWritesTheHeldEventsAndNamesTheFoldedOnes) {
  const gantt::Model m = two_streams("k", 20);
  gantt::Selection held = gantt::select_events(m, {});
  std::erase_if(held.events, [&](uint32_t e) { return m.events.stream[e] != 10; });
  ASSERT_EQ(held.events.size(), 10u);
  const auto page_of = [&](uint64_t folded, int columns) -> std::string {
    gantt::ChartRest rest;
    for (uint32_t e : gantt::select_events(m, {}).events) {
      gantt::ChartRest::Lane& lane = rest.lanes[gantt::lane_key(m, e, gantt::LaneMode::kStream)];
      if (lane.exec.columns() == 0) lane.exec = lane.wait = gantt::Coverage(columns);
      ++lane.events;
    }
    gantt::ChartRest::Lane& other = rest.lanes[gantt::lane_key(m, 1, gantt::LaneMode::kStream)];
    EXPECT_EQ(m.events.stream[1], 11u);
    for (int k = 0; k < 10; ++k) other.exec.add(100.0 * k, 100.0 * k + 20);
    other.aggregated = folded;
    other.events = folded;
    rest.events = 10 + folded;
    rest.in_capture = rest.events;
    gantt::RenderOptions o;
    o.annotate.enabled = false;
    gantt::HtmlStats st;
    std::string data = gantt::html::data_json(m, held, o, rest, &st);
    EXPECT_EQ(st.lanes, 2u);
    EXPECT_EQ(st.events, 10 + folded);
    EXPECT_EQ(st.events_folded, folded);
    return data;
  };
  const std::string data = page_of(10, 1024);
  EXPECT_EQ(count(data, "\"folded\":10,"), 1u);
  EXPECT_EQ(count(data, "\"fold_n\":"), 1u);
  EXPECT_EQ(count(data, "\"lod_buckets\":1024"), 2u);
  EXPECT_EQ(count(data, ",\"n\":0,"), 1u);  // the lane with no event written, folded ones only
  EXPECT_NE(data.find("the 10 widest written one by one, 10 folded into the lanes' coverage"), std::string::npos);
  // A billion folded events cost the page their count's digits (in the lane, the footer and
  // the capture's count), nothing else.
  EXPECT_LT(page_of(1'000'000'000, 1024).size() - data.size(), 64u);
  // The viewer halves the pyramids down from the finest level: a power of two or nothing.
  EXPECT_THROW(page_of(10, 1000), std::invalid_argument);
}

// A scanned page per rank: the capture's one lane goes under its last device with work, as a
// loaded page puts it, also when that device's events were all folded (none held: only the
// scan's busy unions name it).
TEST(Html, AScannedRankLaneGoesUnderTheLastDeviceWithWork) {
  const gantt::Model m = two_streams("k", 4);
  const gantt::Selection held = gantt::select_events(m, {});
  for (uint32_t e : held.events) ASSERT_EQ(m.events.device[e], 0u);
  gantt::ChartRest rest;
  gantt::ChartRest::Lane& lane = rest.lanes[gantt::LaneKey{0, gantt::kNone, 0}];
  lane.exec = lane.wait = gantt::Coverage(1024);
  lane.events = 4 + 6;
  lane.aggregated = 6;
  for (uint32_t device : {0u, 3u}) {
    gantt::ChartRest::Device& d = rest.devices[{0, device}];
    d.compute = d.copy = gantt::Coverage(1024);
  }
  rest.events = rest.in_capture = 10;
  gantt::RenderOptions o;
  o.annotate.enabled = false;
  o.lanes = gantt::LaneMode::kRank;
  gantt::HtmlStats st;
  const std::string data = gantt::html::data_json(m, held, o, rest, &st);
  EXPECT_EQ(st.lanes, 1u);
  EXPECT_EQ(count(data, "{\"label\":\"GPU"), 1u);  // one section
  EXPECT_NE(data.find("{\"label\":\"GPU3"), std::string::npos) << data.substr(data.find("\"sections\""), 200);
}
