// stream_render() against build_scene() of the loaded capture: the same SVG bytes for any
// number of decoding threads, on captures made to exercise the window, the threshold, the
// launch join across shares, the wait split of drawn kernels and the busy unions.
#include "gantt/render/stream_render.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include <gpuhook/capture.h>

#include "gantt/analysis/stream_shares.h"
#include "render/stream_read.h"
#include "capture_builder.h"
#include "fake_device.h"
#include "gantt/render/lod.h"
#include "gantt/render/render.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

struct Spec {
  uint64_t activities = 30000;
  uint32_t devices = 2;
  bool late_launches = true;   // some launch calls written after their kernels, far after
  bool ranges = true;          // NVTX ranges pushed and popped around the launches of one thread
  bool event_waits = false;    // a stream wait on a CUDA event (not streamed)
  size_t chunk_bytes = 32 << 10;  // many chunks, so that several threads get shares
  uint32_t host_threads = 2;      // launching threads (more than a chart has host lanes for: some left out)
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/stream_render_" + std::to_string(::getpid()) + "_" + name + ".gpuh";
}

// Kernels on the legacy stream and on blocking, non-blocking and prioritised streams of two
// devices, copies between them, memsets, synchronisations (the host blocked in them), NCCL
// calls joined through external ids, a few very long kernels (drawn one by one), kernels
// without launch calls or queued stamps, zero-length and unknown-time ones, and launch calls
// written long after their kernels.
std::string write_capture(const std::string& name, const Spec& spec) {
  const std::string path = temp_path(name);
  std::remove(path.c_str());
  gpuhook::WriterOptions wo;
  wo.chunk_bytes = spec.chunk_bytes;
  gpuhook::test::CaptureBuilder b(path, wo);
  EXPECT_TRUE(b.ok()) << b.error();
  std::mt19937_64 rng(11);
  b.header("render-host", 78, 0, v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
  for (uint32_t d = 0; d < spec.devices; ++d) gpuhook::test::set_sm_limits(&*b.device(d, "Fabricated GPU"), 9);
  for (uint32_t s : {9u, 11u, 13u}) {  // 9 non-blocking, 11 high priority, 13 low priority
    auto st = b.add(&v1::Record::mutable_stream);
    st->set_stream(s);
    st->set_flags(s == 9 ? 2 : 1);
    st->set_priority(s == 11 ? -2 : 0);
  }
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back("_Z6kernelILi" + std::to_string(i) + "EEvPf");
  const std::string launch = "cudaLaunchKernel", copy = "cudaMemcpyAsync", all_reduce = "ncclAllReduce",
                    nccl_kernel = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  for (const std::string& s : names) b.intern(s);  // defined up front; cudaStreamSynchronize at its first call
  for (const std::string& s : {launch, copy, all_reduce, nccl_kernel}) b.intern(s);
  uint64_t t = 7'000'000'000ull, external = 1;
  uint32_t corr = 1;
  std::vector<v1::Record> late;
  for (uint64_t i = 0; i < spec.activities; ++i) {
    const uint32_t dev = static_cast<uint32_t>(rng() % spec.devices);
    const uint32_t stream = 7 + 2 * static_cast<uint32_t>(rng() % 4);
    const bool long_one = rng() % 4000 == 0;
    const uint64_t len = long_one ? 30'000'000 : 500 + rng() % 20000, start = t + rng() % 700;
    t += len / (long_one ? 40 : 3) + (rng() % 7 == 0 ? 200'000 : 0);
    const uint64_t thread = 5150 + rng() % spec.host_threads;
    const uint64_t call_start = start - 4000 - rng() % 3000;
    uint64_t call_end = call_start + 2500;
    std::string call = copy;
    const uint64_t kind = rng() % 20;
    v1::Record r;  // the activity, taken to be written after its launch call
    if (kind == 0) {
      call = launch;
      {
        auto n = b.nccl(v1::NCCL_ALL_REDUCE, all_reduce, 5150, start - 3500, start - 100);
        n->set_bytes(4096 * (1 + rng() % 64));
        n->set_device(static_cast<int32_t>(dev));
        n->set_external_id(external);
      }
      b.external(external++, corr);  // CUPTI's record of the hook's id
      auto k = b.kernel(nccl_kernel, stream, corr, start, start + len);
      k->set_device(dev);
      k->set_queued_ns(static_cast<int64_t>(start - 800));
      r = k.take();
    } else if (kind < 14) {
      call = launch;
      auto k = b.kernel(names[rng() % names.size()], stream, corr, 0, 0);
      k->set_device(dev);
      if (stream == 13 && rng() % 2) k->set_stream_priority(3);
      k->set_grid_x(1 + rng() % 512);  // grid_y and grid_z left unset, as they always were here
      k->set_block_x(64 << (rng() % 4));
      k->set_block_y(1);
      k->set_block_z(1);
      k->set_registers_per_thread(16 + rng() % 64);
      if (rng() % 8 != 0) k->set_queued_ns(static_cast<int64_t>(start - 1000 - rng() % 40000));
      if (rng() % 300 != 0) k->set_start_ns(static_cast<int64_t>(start));
      k->set_end_ns(static_cast<int64_t>(rng() % 400 == 0 ? start : start + len));
      r = k.take();
    } else if (kind < 17) {
      const bool peer = spec.devices > 1 && rng() % 5 == 0;
      const auto copy_kind = peer ? v1::COPY_PTOP : static_cast<v1::CopyKind>(1 + rng() % 3);
      auto c = b.copy(copy_kind, 1 + rng() % (1 << 24), stream, corr, start, start + len / 2);
      c->set_device(dev);
      if (peer) {
        c->set_src_device(dev);
        c->set_dst_device((dev + 1) % spec.devices);
      }
      r = c.take();
    } else if (kind < 19) {
      auto m = b.memset(4096, stream, corr, start, start + 700);
      m->set_device(dev);
      r = m.take();
    } else {
      call = "cudaStreamSynchronize";
      call_end = start + 300 + rng() % 2'000'000;  // blocked: a bar on its host lane
      auto y = b.sync(v1::SYNC_STREAM_SYNCHRONIZE, stream, corr, start, start + 300);
      y->set_device(dev);
      r = y.take();
    }
    auto a = b.api(call, thread, call_start, call_end, corr);
    ++corr;
    if (rng() % 50 == 0) {
      a.take();  // no launch call recorded
    } else if (spec.late_launches && rng() % 30 == 0) {
      late.push_back(a.take());
    }
    b.write(r);  // after the launch call, when that is still open
    if (late.size() > 40) {  // written long after: in a later chunk, often another share's
      for (const v1::Record& l : late) b.write(l);
      late.clear();
    }
    if (spec.ranges && i % 500 == 0)
      b.range(i % 1000 == 0 ? v1::RANGE_PUSH : v1::RANGE_POP, names[i % 7], 5150, start);
    if (spec.event_waits && i == spec.activities / 2) b.sync(v1::SYNC_STREAM_WAIT_EVENT, 9, 0, start, start);
  }
  for (const v1::Record& l : late) b.write(l);
  EXPECT_TRUE(b.close()) << b.error();
  return path;
}

RenderOptions chart_options(LaneMode lanes, int width) {
  RenderOptions o;
  o.lanes = lanes;
  o.width_px = width;
  o.annotate.enabled = false;
  o.host_lanes = false;
  return o;
}

std::string svg_of(const Scene& s) {
  std::ostringstream out;
  write_svg(s, out);
  return out.str();
}

std::string loaded_svg(const std::string& path, const RenderOptions& o, RenderStats* stats) {
  const Model m = load(std::vector<std::string>{path});
  const Selection sel = select_events(m, {});
  return svg_of(build_scene(m, sel, o, stats));
}

std::optional<StreamedChart> streamed(const std::string& path, const RenderOptions& o, unsigned threads, std::string* why) {
  StreamRenderOptions so;
  so.render = o;
  so.threads = threads;
  return stream_render(path, so, why);
}

TEST(StreamRender, ChartEqualsTheLoadedOneForAnyNumberOfThreads) {
  const std::string path = write_capture("threads", Spec{});
  for (LaneMode lanes : {LaneMode::kStream, LaneMode::kDevice}) {
    for (int width : {1920, 640}) {
      RenderOptions o = chart_options(lanes, width);
      o.host_lanes = width == 1920;
      RenderStats whole;
      const std::string expected = loaded_svg(path, o, &whole);
      ASSERT_GT(whole.events_individual, 0u);  // some drawn one by one...
      ASSERT_GT(whole.events_aggregated, 0u);  // ...and many folded
      for (unsigned threads : {1u, 2u, 3u, 7u}) {
        std::string why;
        const auto chart = streamed(path, o, threads, &why);
        ASSERT_TRUE(chart) << why;
        EXPECT_EQ(chart->threads, threads);
        EXPECT_EQ(chart->stats.events_selected, whole.events_selected);
        EXPECT_EQ(chart->stats.events_individual, whole.events_individual);
        EXPECT_EQ(chart->stats.events_aggregated, whole.events_aggregated);
        EXPECT_TRUE(svg_of(chart->scene) == expected) << "lanes " << static_cast<int>(lanes) << ", width " << width
                                                      << ", " << threads << " threads";
      }
    }
  }
  std::remove(path.c_str());
}

TEST(StreamRender, AllEventsDrawnOneByOneWhenFewAndTheSameChart) {
  Spec spec;
  spec.activities = 800;
  spec.chunk_bytes = 4 << 10;
  const std::string path = write_capture("few", spec);
  const RenderOptions o = chart_options(LaneMode::kStream, 1920);
  RenderStats whole;
  const std::string expected = loaded_svg(path, o, &whole);
  EXPECT_EQ(whole.events_aggregated, 0u);
  StreamRenderOptions so;
  so.render = o;
  so.threads = 4;
  std::string why;
  const auto chart = stream_render(path, so, &why);
  ASSERT_TRUE(chart) << why;
  EXPECT_TRUE(svg_of(chart->scene) == expected);
  std::remove(path.c_str());
}

// Host lanes past what a chart draws: more threads than lanes (the smallest ids get them,
// each share keeping its own smallest), more blocking calls than bars (the rest as coverage).
TEST(StreamRender, HostLanesKeepTheLoadedChartsCaps) {
  Spec spec;
  spec.activities = 90000;
  spec.host_threads = 40;
  spec.ranges = false;
  const std::string path = write_capture("host", spec);
  RenderOptions o = chart_options(LaneMode::kStream, 1920);
  o.host_lanes = true;
  RenderStats whole;
  const std::string expected = loaded_svg(path, o, &whole);
  EXPECT_EQ(whole.lanes_left_out, 40u - 32u);
  const auto count = [](const std::string& svg, const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  // The bar budget spent (on the first thread's NCCL calls): the other threads' blocking calls
  // fell to coverage.
  EXPECT_EQ(count(expected, "(host blocked)") + count(expected, "<title>ncclAllReduce "), 3000u);
  EXPECT_GT(count(expected, "(host blocked)"), 0u);
  for (unsigned threads : {1u, 4u}) {
    std::string why;
    const auto chart = streamed(path, o, threads, &why);
    ASSERT_TRUE(chart) << why;
    EXPECT_EQ(chart->stats.lanes_left_out, whole.lanes_left_out);
    EXPECT_TRUE(svg_of(chart->scene) == expected) << threads << " threads";
  }
  std::remove(path.c_str());
}

// The chart without what a streamed one does not flag: the marks of copies that could have
// overlapped, and the footer's flags line (whose counts are compared on their own).
std::string without_missed_overlaps(const std::string& svg) {
  static const std::regex overlap(R"(<rect[^>]*><title>copy not overlapped[^<]*</title></rect>\n?)");
  static const std::regex flags(R"(<text[^>]*>flags[^<]*</text>)");
  return std::regex_replace(std::regex_replace(svg, overlap, ""), flags, "");
}

std::string flag_counts(const std::string& svg) {
  static const std::regex count(R"((occupancy &lt; [0-9]+%|copies overlapped|idle gaps &gt; [^:]*): ([0-9]+))");
  std::string out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), count); it != std::sregex_iterator(); ++it)
    out += it->str() + "; ";
  return out;
}

// Over the memory budget, the streamed chart flags low occupancy, copies overlapped and idle
// gaps (their host labels too) as the loaded chart does, on any number of threads; queue
// delays on the kernels it draws one by one; not the copies that could have overlapped.
TEST(StreamRender, FlagsWhatAStreamCanTellAsTheLoadedChart) {
  Spec spec;
  spec.activities = 20000;
  spec.ranges = false;
  spec.late_launches = true;
  const std::string path = write_capture("flags", spec);
  for (int64_t idle_gap : {int64_t{-1}, int64_t{150'000}, int64_t{2'000}}) {
    RenderOptions o = chart_options(LaneMode::kStream, 1920);
    o.host_lanes = true;
    o.annotate.enabled = true;
    o.annotate.idle_gap_ns = idle_gap;
    o.annotate.low_occupancy = 0.6;
    RenderStats whole;
    const std::string expected = loaded_svg(path, o, &whole);
    EXPECT_NE(flag_counts(expected).find("idle gaps"), std::string::npos);
    if (idle_gap == 150'000) {
      EXPECT_NE(expected.find("host in cudaStreamSynchronize"), std::string::npos);  // the labels are exercised
      EXPECT_EQ(flag_counts(expected).find("occupancy &lt; 60%: 0;"), std::string::npos) << flag_counts(expected);
      EXPECT_NE(expected.find("<title>overlap "), std::string::npos);  // drawn copies overlapped
    }
    o.annotate.streamed = true;
    for (unsigned threads : {1u, 3u}) {
      std::string why;
      const auto chart = streamed(path, o, threads, &why);
      ASSERT_TRUE(chart) << why;
      const std::string got = svg_of(chart->scene);
      EXPECT_EQ(flag_counts(got), flag_counts(expected)) << threads << " threads, idle gap " << idle_gap;
      EXPECT_TRUE(without_missed_overlaps(got) == without_missed_overlaps(expected)) << threads << " threads, idle gap " << idle_gap;
      EXPECT_NE(got.find("flags (read as a stream; --in-memory flags all)"), std::string::npos);
      EXPECT_NE(got.find("not overlapped: not flagged"), std::string::npos);
    }
  }
  std::remove(path.c_str());
}

// A window (--from, --to), devices and streams read as a stream: the events they keep,
// counted, laned and folded and flagged as the loaded chart's selection has them; the waits of
// the drawn kernels still see every operation. The fabricated header has no start, so the
// capture's first time is found by a second read 1.
TEST(StreamRender, FiltersAreTheLoadedChartsSelection) {
  Spec spec;
  spec.activities = 20400;  // the last range pushed is never popped
  const std::string path = write_capture("window", spec);
  const Model m = load(std::vector<std::string>{path});
  constexpr int64_t kMs = 1'000'000;
  const auto filter = [](int64_t from, int64_t to, std::vector<uint32_t> devices = {}, std::vector<uint32_t> streams = {},
                         std::string range = "", std::string kernel = "") {
    EventFilter f;
    f.from_ns = from;
    f.to_ns = to;
    f.devices = std::move(devices);
    f.streams = std::move(streams);
    f.range = std::move(range);
    f.kernel_regex = std::move(kernel);
    return f;
  };
  // The ranges are named after the kernels, each pushed about three times (write_capture),
  // the last at activity 20000.
  const EventFilter filters[] = {filter(100 * kMs, 250 * kMs), filter(400 * kMs, -1), filter(-1, 60 * kMs),
                                 filter(300 * kMs, 300 * kMs + 500'000), filter(-1, -1, {1}),
                                 filter(-1, -1, {}, {7, 11}), filter(50 * kMs, 200 * kMs, {0}, {9}),
                                 filter(-1, -1, {}, {}, "_Z6kernelILi0EEvPf@2"),
                                 filter(2 * kMs, 9 * kMs, {}, {}, "_Z6kernelILi3EEvPf@1"),
                                 filter(-1, -1, {1}, {}, "_Z6kernelILi5EEvPf@2"),
                                 filter(-1, -1, {}, {}, "_Z6kernelILi1EEvPf@3"),  // unclosed
                                 filter(-1, -1, {}, {}, "", "kernel<3>"),           // by the demangled name
                                 filter(-1, -1, {}, {}, "", "^void kernel<[0-4]>"),
                                 filter(100 * kMs, 250 * kMs, {0}, {}, "", "kernel<[5-9]>"),
                                 filter(-1, -1, {}, {}, "_Z6kernelILi0EEvPf@2", "AllReduce|kernel<2>")};
  ASSERT_EQ(m.ranges.end_ns[range_occurrence(m, "_Z6kernelILi1EEvPf@3")], 0u);  // open: the window ends with the capture
  for (const EventFilter& f : filters) {
    const auto [from, to] = std::pair{f.from_ns, f.to_ns};
    const Selection sel = select_events(m, f);
    ASSERT_GT(sel.events.size(), 0u) << sel.description << " " << from << ".." << to;
    ASSERT_LT(sel.events.size(), m.events.size()) << sel.description << " " << from << ".." << to;
    for (bool flags : {false, true}) {
      RenderOptions o = chart_options(flags ? LaneMode::kStream : LaneMode::kDevice, 1920);
      o.host_lanes = true;
      o.annotate.enabled = flags;
      o.annotate.low_occupancy = 0.6;
      RenderOptions loaded = o;
      loaded.filter_description = sel.description;
      RenderStats whole;
      const std::string expected = svg_of(build_scene(m, sel, loaded, &whole));
      o.annotate.streamed = flags;
      for (unsigned threads : {1u, 3u}) {
        StreamRenderOptions so;
        so.render = o;
        so.threads = threads;
        so.filter = f;
        std::string why;
        const auto chart = stream_render(path, so, &why);
        ASSERT_TRUE(chart) << why;
        const std::string got = svg_of(chart->scene);
        const std::string what =
            sel.description + " " + std::to_string(from) + ".." + std::to_string(to) + ", " + std::to_string(threads) + " threads";
        EXPECT_EQ(chart->stats.events_selected, whole.events_selected) << what;
        EXPECT_EQ(chart->stats.events_individual, whole.events_individual) << what;
        if (flags) {
          EXPECT_EQ(flag_counts(got), flag_counts(expected)) << what;
          EXPECT_TRUE(without_missed_overlaps(got) == without_missed_overlaps(expected)) << what;
        } else {
          EXPECT_TRUE(got == expected) << what;
        }
      }
    }
  }
  // Patterns that may match what is named after its call (copies, memsets, synchronisations)
  // are left to the loaded chart.
  for (const std::string pattern : {"Memcpy", "memcpy", "Synchronize", "memset", "cuda"}) {
    StreamRenderOptions so;
    so.render = chart_options(LaneMode::kStream, 1920);
    so.filter.kernel_regex = pattern;
    std::string why;
    EXPECT_FALSE(stream_render(path, so, &why)) << pattern;
    EXPECT_NE(why.find("--kernel matching"), std::string::npos) << pattern << ": " << why;
  }
  // A bad pattern, and a --range the capture does not have: select_events()' error, before
  // the events are read.
  {
    EventFilter f;
    f.kernel_regex = "kernel<(";
    std::string want;
    try {
      select_events(m, f);
    } catch (const std::invalid_argument& e) {
      want = e.what();
    }
    ASSERT_FALSE(want.empty());
    StreamRenderOptions so;
    so.render = chart_options(LaneMode::kStream, 1920);
    so.filter = f;
    EXPECT_THROW(stream_render(path, so, nullptr), std::invalid_argument);
  }
  for (const std::string spec : {"nope@1", "_Z6kernelILi0EEvPf@9", "_Z6kernelILi0EEvPf@0"}) {
    EventFilter f;
    f.range = spec;
    std::string want;
    try {
      select_events(m, f);
    } catch (const std::invalid_argument& e) {
      want = e.what();
    }
    ASSERT_FALSE(want.empty()) << spec;
    StreamRenderOptions so;
    so.render = chart_options(LaneMode::kStream, 1920);
    so.filter = f;
    try {
      stream_render(path, so, nullptr);
      ADD_FAILURE() << spec << ": no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(e.what(), want);
    }
  }
  std::remove(path.c_str());
}

// The busy unions: spans that overlap or touch are one, however they come (in start order,
// shuffled, or both, as a share reads its streams' records) and however shares are absorbed.
TEST(StreamRender, SpanUnionIsThePlainUnion) {
  std::mt19937_64 rng(11);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  uint64_t t = 1000;
  for (int i = 0; i < 60000; ++i) {
    t += rng() % 3 == 0 ? rng() % 5'000 : 0;  // touching, overlapping and apart
    spans.emplace_back(t, t + rng() % 4'000);
  }
  auto sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<uint64_t, uint64_t>> want;
  for (const auto& [b, e] : sorted) {
    if (!want.empty() && b <= want.back().second) want.back().second = std::max(want.back().second, e);
    else want.emplace_back(b, e);
  }
  ASSERT_GT(want.size(), 1000u);
  // In order with every 50th span late, fully shuffled, and split into three absorbed unions.
  auto late = spans;
  for (size_t i = 0; i + 50 < late.size(); i += 50) std::swap(late[i], late[i + 50]);
  auto shuffled = spans;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (const auto* order : {&spans, &late, &shuffled}) {
    streamed::SpanUnion one, parts[3];
    for (size_t i = 0; i < order->size(); ++i) {
      one.add((*order)[i].first, (*order)[i].second);
      parts[i % 3].add((*order)[i].first, (*order)[i].second);
    }
    EXPECT_EQ(one.spans(), want);
    streamed::SpanUnion all;
    for (const auto& p : parts) all.absorb(p);
    EXPECT_EQ(all.spans(), want);
    EXPECT_EQ(all.size(), want.size());
  }
}

// The idle gaps' union: spans closer than its tolerance are one, in any order of adding and
// merging, and a growing tolerance keeps them few without losing a gap past an fiftieth of
// their extent.
TEST(StreamRender, GapUnionFindsTheGapsOfThePlainUnion) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  uint64_t t = 1'000'000;
  for (int i = 0; i < 20000; ++i) {
    t += rng() % 500 == 0 ? 200'000'000 + rng() % 200'000'000 : rng() % 3 == 0 ? rng() % 400'000 : rng() % 2'000;
    spans.emplace_back(t, t + rng() % 5'000);
  }
  // The plain union's gaps over `threshold`, as annotate() finds them.
  auto plain_gaps = [&](uint64_t threshold) {
    auto sorted = spans;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<uint64_t, uint64_t>> u, gaps;
    for (const auto& [b, e] : sorted) {
      if (!u.empty() && b <= u.back().second) u.back().second = std::max(u.back().second, e);
      else u.emplace_back(b, e);
    }
    for (size_t i = 1; i < u.size(); ++i)
      if (u[i].first - u[i - 1].second > threshold) gaps.emplace_back(u[i - 1].second, u[i].first);
    return gaps;
  };
  auto gaps_of = [](const streamed::GapUnion& g, uint64_t threshold) {
    std::vector<std::pair<uint64_t, uint64_t>> gaps;
    uint64_t prev = 0;
    bool first = true;
    for (const auto& [b, s] : g.spans()) {
      if (!first && b - prev > threshold) gaps.emplace_back(prev, b);
      prev = s.end;
      first = false;
    }
    return gaps;
  };
  for (bool grow : {false, true}) {
    std::vector<size_t> order(spans.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    streamed::GapUnion parts[3] = {streamed::GapUnion(50'000, grow), streamed::GapUnion(50'000, grow),
                                   streamed::GapUnion(50'000, grow)};
    uint64_t first_start = UINT64_MAX;
    uint64_t first_seq = 0;
    for (size_t i : order) {
      parts[i % 3].add(spans[i].first, spans[i].second, {spans[i].first, i, static_cast<uint32_t>(i)});
      if (spans[i].first < first_start || (spans[i].first == first_start && i < first_seq)) {
        first_start = spans[i].first;
        first_seq = i;
      }
    }
    streamed::GapUnion all;
    for (const auto& p : parts) all.absorb(p);
    const uint64_t extent = spans.back().second - spans.front().first;
    const uint64_t threshold = std::max<uint64_t>(50'000, extent / 50);
    EXPECT_LE(all.tolerance(), threshold);
    if (grow) {
      EXPECT_LE(all.size(), streamed::GapUnion::kFewSpans) << "a growing tolerance keeps the spans few";
      EXPECT_GT(all.tolerance(), 50'000u);
    } else {
      EXPECT_EQ(all.tolerance(), 50'000u);
    }
    EXPECT_EQ(gaps_of(all, threshold), plain_gaps(threshold)) << (grow ? "growing" : "fixed");
    EXPECT_FALSE(plain_gaps(threshold).empty());
    if (!grow) {
      EXPECT_EQ(gaps_of(all, 50'000), plain_gaps(50'000)) << "at the tolerance itself";
    }
    // Each span's first event is its earliest: the one that ended the gap before it.
    EXPECT_EQ(all.spans().begin()->second.first.seq, first_seq);
    for (const auto& [b, s] : all.spans()) EXPECT_EQ(s.first.start, b);
  }
}

TEST(StreamRender, SaysWhyWhatNeedsTheWholeTimelineIsNotStreamed) {
  Spec spec;
  spec.activities = 2000;
  spec.event_waits = true;
  const std::string path = write_capture("waits", spec);
  StreamRenderOptions so;
  so.render = chart_options(LaneMode::kStream, 1920);
  std::string why;
  EXPECT_FALSE(stream_render(path, so, &why));
  EXPECT_NE(why.find("stream waits on CUDA events"), std::string::npos) << why;
  so.render.annotate.enabled = true;
  EXPECT_FALSE(stream_render(path, so, &why));
  EXPECT_NE(why.find("annotations"), std::string::npos) << why;
  EXPECT_EQ(stream_render_refusal(so.render), why);
  so.render = chart_options(LaneMode::kThread, 1920);
  EXPECT_NE(stream_render_refusal(so.render), "");
  std::remove(path.c_str());
}

// Coverage sums fixed-point units: the same busy and counts whatever the order of the spans.
TEST(StreamRender, CoverageIsTheSameInAnyOrder) {
  std::mt19937_64 rng(3);
  std::vector<std::pair<double, double>> spans;
  for (int i = 0; i < 5000; ++i) {
    const double x = std::uniform_real_distribution<double>(-5, 105)(rng);
    spans.emplace_back(x, x + std::uniform_real_distribution<double>(0, 3)(rng));
  }
  Coverage forward(100), backward(100), halves(100), other(100);
  for (const auto& [a, b] : spans) forward.add(a, b);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) backward.add(it->first, it->second);
  for (size_t i = 0; i < spans.size(); ++i) (i % 2 ? halves : other).add(spans[i].first, spans[i].second);
  halves.merge(other);
  for (int c = 0; c < 100; ++c) {
    EXPECT_EQ(forward.busy(c), backward.busy(c)) << c;  // exactly, not nearly
    EXPECT_EQ(forward.busy(c), halves.busy(c)) << c;
    EXPECT_EQ(forward.count(c), halves.count(c)) << c;
  }
}

// A launch the join's window let go is told apart from one that never existed: only the
// first may be in the file after all (the streamed chart then loads the capture).
TEST(StreamRender, CorrelationWindowKnowsWhichIdsItLetGo) {
  using analysis::CorrWindow;
  CorrWindow sliding(true), fixed(false);
  const uint32_t last = 3 * CorrWindow::kIds;
  for (uint32_t corr = 1; corr <= last; ++corr) {
    sliding.set(corr, 1000 + corr);
    fixed.set(corr, 1000 + corr);
  }
  EXPECT_EQ(sliding.get(last), 1000u + last);
  EXPECT_EQ(sliding.get(1), 0u);
  EXPECT_TRUE(sliding.maybe_lost(1));
  EXPECT_FALSE(sliding.maybe_lost(last + 10));  // never seen: no launch with that id
  EXPECT_EQ(fixed.get(1), 1001u);
  EXPECT_TRUE(fixed.maybe_lost(last));
  EXPECT_FALSE(fixed.maybe_lost(0));
  analysis::CorrSet ids;
  EXPECT_TRUE(ids.empty());
  for (uint32_t corr : {5u, 64u, 4'000'000'000u}) ids.insert(corr);
  EXPECT_TRUE(ids.contains(5) && ids.contains(64) && ids.contains(4'000'000'000u));
  EXPECT_FALSE(ids.contains(6) || ids.contains(63) || ids.contains(1u << 27) || ids.contains(4'000'000'001u));
}

// The NCCL join as a scan reads: a simple collective settles at its kernel, everything the
// loader's join would see differently (groups, kernels before their calls or ids) is held.
TEST(StreamRender, NcclSettlerSettlesASimpleCollectiveAtOnceAndHoldsTheRest) {
  using analysis::NcclSettler;
  const auto call = [](uint64_t external, int depth, v1::NcclOp op) {
    v1::Record r;
    auto* n = r.mutable_nccl();
    n->set_op(op);
    n->set_external_id(external);
    n->set_group_depth(depth);
    n->set_bytes(4096 * external);
    return r;
  };
  NcclSettler s;
  v1::Record got;
  uint64_t id = 99;
  // Call, its id, its kernel: settled with the call; a second kernel under the id is NCCL's.
  EXPECT_TRUE(s.call(call(1, 0, v1::NCCL_ALL_REDUCE)));
  s.external(10, 1);
  EXPECT_EQ(s.kernel(10, true, &got, &id), NcclSettler::Verdict::kCall);
  EXPECT_EQ(got.nccl().bytes(), 4096u);
  EXPECT_EQ(id, 1u);
  s.external(11, 1);
  EXPECT_EQ(s.kernel(11, true, &got, &id), NcclSettler::Verdict::kNccl);
  EXPECT_FALSE(s.call(call(1, 0, v1::NCCL_ALL_REDUCE)));  // a second call under a taken id
  // Grouped calls and the group's end are the final join's; so is the kernel the end launched.
  EXPECT_FALSE(s.call(call(2, 1, v1::NCCL_ALL_REDUCE)));
  EXPECT_FALSE(s.call(call(3, 0, v1::NCCL_GROUP_END)));
  s.external(20, 3);
  EXPECT_EQ(s.kernel(20, true, &got, &id), NcclSettler::Verdict::kHeld);
  EXPECT_EQ(id, 3u);
  // A kernel read before its call: held, and so its call.
  s.external(30, 4);
  EXPECT_EQ(s.kernel(30, true, &got, &id), NcclSettler::Verdict::kHeld);
  EXPECT_FALSE(s.call(call(4, 0, v1::NCCL_ALL_REDUCE)));
  // A kernel read before its id: held without one; its call then too.
  EXPECT_EQ(s.kernel(40, true, &got, &id), NcclSettler::Verdict::kHeld);
  EXPECT_EQ(id, 0u);
  s.external(40, 5);
  EXPECT_EQ(s.external_of(40), 5u);
  EXPECT_FALSE(s.call(call(5, 0, v1::NCCL_ALL_REDUCE)));
  // A kernel its share cannot fold yet: held, its call left to the final join.
  EXPECT_TRUE(s.call(call(6, 0, v1::NCCL_BROADCAST)));
  s.external(60, 6);
  EXPECT_EQ(s.kernel(60, false, &got, &id), NcclSettler::Verdict::kHeld);
  std::vector<uint64_t> left;
  s.for_each_call([&left](const v1::Record& r) { left.push_back(r.nccl().external_id()); });
  EXPECT_EQ(left, std::vector<uint64_t>{6});
  EXPECT_TRUE(s.any_external());
  EXPECT_EQ(NcclSettler().held(), 0u);
}

}  // namespace
}  // namespace gantt
