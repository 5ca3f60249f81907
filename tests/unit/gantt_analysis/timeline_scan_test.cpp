// stats --timeline and render --view utilisation from a scan (analysis/job_scan.h
// scan_timeline()): the devices' unions of their events, kept as read, give the loaded
// timeline and window.
#include <gtest/gtest.h>

#include "diagnose_builder.h"
#include "gantt/analysis/job_scan.h"
#include "gantt/analysis/timeline.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

// The scanned timeline of the builder's capture against the loaded one, bucket by bucket.
void expect_loaded_timeline(Builder& b, uint64_t bucket_ns, const gantt::EventFilter* filter = nullptr) {
  gantt::Model m = b.done();
  std::string why;
  const std::optional<ga::ScannedTimeline> scanned = ga::scan_timeline({b.file.path}, {}, filter, false, &why);
  ASSERT_TRUE(scanned) << why;
  if (filter) m = gantt::restricted(m, gantt::select_events(m, *filter));
  const gantt::Selection sel = gantt::select_events(m, {});
  EXPECT_EQ(scanned->window.window_start_ns, sel.window_start_ns);
  EXPECT_EQ(scanned->window.window_end_ns, sel.window_end_ns);
  EXPECT_EQ(scanned->records.first_ns(), m.first_ns());
  EXPECT_EQ(scanned->records.last_ns(), m.last_ns());
  const ga::Timeline loaded = ga::utilisation_timeline(m, sel, bucket_ns);
  const ga::Timeline t = scanned->timeline(bucket_ns, scanned->window);
  EXPECT_EQ(t.events, loaded.events);
  ASSERT_EQ(t.buckets, loaded.buckets);
  ASSERT_EQ(t.devices.size(), loaded.devices.size());
  for (size_t d = 0; d < t.devices.size(); ++d) {
    EXPECT_EQ(t.devices[d].device, loaded.devices[d].device);
    EXPECT_EQ(t.devices[d].compute, loaded.devices[d].compute) << "device " << t.devices[d].device;
    EXPECT_EQ(t.devices[d].copy, loaded.devices[d].copy);
    EXPECT_EQ(t.devices[d].busy, loaded.devices[d].busy);
  }
  EXPECT_EQ(ga::format_timeline(scanned->records, t, "csv"), ga::format_timeline(m, loaded, "csv"));
}

}  // namespace

// Kernels with idle gaps between them (a span each), copies under some of them, two devices,
// records written out of time order: the loaded series.
TEST(TimelineScan, GapsCopiesAndLateRecordsGiveTheLoadedSeries) {
  Builder b;
  constexpr uint64_t kT = 10'000'000;
  for (uint64_t i = 0; i < 3000; ++i) {
    const uint64_t s = kT + (i % 2 == 0 ? i : 2999 - i) * 7'000;  // every other one late in the file
    b.k("k", 13 + static_cast<uint32_t>(i % 3), s - 2'000, s, s + 4'000, 256, static_cast<uint32_t>(i % 2));
    if (i % 5 == 0) b.copy("cudaMemcpyAsync", 20, s - 1'000, s + 3'000, s + 9'000);
  }
  b.sync(kT + 3000 * 7'000, kT + 3000 * 7'000 + 50'000);  // the capture's last time: a call's end
  expect_loaded_timeline(b, 0);
}

TEST(TimelineScan, AFilterSelectsAsTheRestrictedLoad) {
  for (const char* device : {"0", "1"}) {
    Builder b;
    for (uint64_t i = 0; i < 200; ++i) {
      const uint64_t s = 10'000'000 + i * 20'000;
      b.k(i % 4 == 0 ? "gemm" : "k", 13, s - 2'000, s, s + 5'000, 256, static_cast<uint32_t>(i % 2));
    }
    gantt::EventFilter f;
    f.devices = {static_cast<uint32_t>(std::stoul(device))};
    f.kernel_regex = "gemm";
    expect_loaded_timeline(b, 100'000, &f);
  }
}

// A counter sample 50 ms after the last event: the chunk index ends there, a load's capture at
// the last call. A window counts on the load's times, settled after the scan: inside, the
// window select_events() asks of the load; past the load's end, its error, though the index
// goes on.
TEST(TimelineScan, AWindowIsSettledOnTheLoadsTimesNotTheIndexs) {
  Builder b;
  for (uint64_t i = 0; i < 100; ++i) b.k("k", 13, 10'000'000 + i * 20'000, 10'001'000 + i * 20'000, 10'006'000 + i * 20'000);
  b.capture().metric(0, 62'000'000, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, 5000);
  const gantt::Model m = b.done();
  const auto error_of = [&](const gantt::EventFilter& f) -> std::string {
    try {
      gantt::select_events(m, f);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  gantt::EventFilter inside;
  inside.from_ns = 500'000;
  inside.to_ns = 1'500'000;
  gantt::EventFilter past;
  past.from_ns = 20'000'000;  // past the last call (about 12 ms), before the sample (61 ms)
  ASSERT_EQ(error_of(inside), "");
  ASSERT_NE(error_of(past), "");
  std::string why;
  const std::optional<ga::ScannedTimeline> in = ga::scan_timeline({b.file.path}, {}, &inside, true, &why);
  ASSERT_TRUE(in) << why;
  const gantt::Selection sel = gantt::select_events(m, inside);
  ASSERT_TRUE(in->asked);
  EXPECT_EQ(in->chart_window().window_start_ns, sel.window_start_ns);
  EXPECT_EQ(in->chart_window().window_end_ns, sel.window_end_ns);
  EXPECT_EQ(in->job.selected_events, sel.events.size());
  EXPECT_EQ(in->job.empty_window, "");
  const std::optional<ga::ScannedTimeline> out = ga::scan_timeline({b.file.path}, {}, &past, true, &why);
  ASSERT_TRUE(out) << why;
  EXPECT_EQ(out->job.empty_window, error_of(past));
  EXPECT_EQ(out->job.selected_events, 0u);
}

// A --range's window is the scan's, as select_events() of the load gives it; a range without
// an end ends where the capture does, which only a load knows (the counter sample 50 ms on is
// the index's end): settled after the scan on the load's last time, and a --from past it is
// the load's error.
TEST(TimelineScan, ARangesWindowIsTheLoadsWithOrWithoutAnEnd) {
  Builder b;
  for (uint64_t i = 0; i < 100; ++i) b.k("k", 13, 10'000'000 + i * 20'000, 10'001'000 + i * 20'000, 10'006'000 + i * 20'000);
  b.capture().range(v1::RANGE_PUSH, "step", 100, 10'500'000);
  b.capture().range(v1::RANGE_POP, "", 100, 11'500'000);
  b.capture().range(v1::RANGE_PUSH, "tail", 100, 11'800'000);  // never popped
  b.capture().metric(0, 62'000'000, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, 5000);
  const gantt::Model m = b.done();
  std::string why;
  const auto same_window = [&](const gantt::EventFilter& f) {
    const std::optional<ga::ScannedTimeline> t = ga::scan_timeline({b.file.path}, {}, &f, false, &why);
    ASSERT_TRUE(t) << why;
    ASSERT_TRUE(t->asked);
    const gantt::Selection loaded = gantt::select_events(m, f);
    EXPECT_EQ(t->chart_window().origin_ns, loaded.origin_ns);
    EXPECT_EQ(t->chart_window().window_start_ns, loaded.window_start_ns);
    EXPECT_EQ(t->chart_window().window_end_ns, loaded.window_end_ns);
    EXPECT_EQ(t->job.selected_events, loaded.events.size());
  };
  gantt::EventFilter step;
  step.range = "step@1";
  same_window(step);
  gantt::EventFilter tail;
  tail.range = "tail@1";
  same_window(tail);
  tail.to_ns = 30'000'000;  // past the load's end, short of the index's
  same_window(tail);
  tail.to_ns = -1;
  tail.from_ns = 20'000'000;  // past the load's end, short of the index's: the load's error
  const std::optional<ga::ScannedTimeline> past = ga::scan_timeline({b.file.path}, {}, &tail, false, &why);
  ASSERT_TRUE(past) << why;
  EXPECT_FALSE(past->asked);
  std::string loaded_error;
  try {
    gantt::select_events(m, tail);
  } catch (const std::invalid_argument& e) {
    loaded_error = e.what();
  }
  EXPECT_FALSE(loaded_error.empty());
  EXPECT_EQ(past->job.empty_window, loaded_error);
}
