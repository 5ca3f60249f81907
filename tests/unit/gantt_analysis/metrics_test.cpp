// The GPU's own counters (MetricSample records) in the model, stats --metrics, clock drops,
// the throttled rule and the Chrome counter tracks, on fabricated samples with known means.
#include "gantt/analysis/metrics.h"

#include <sstream>

#include <gtest/gtest.h>

#include "fixture.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/export/export.h"
#include "gantt/analysis/timeline.h"
#include "gantt/model/filter.h"
#include "gantt/render/render.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

enum : uint32_t { kBusy = 40, kOther = 41 };
constexpr uint64_t kMs = 1'000'000;

v1::Record sample(uint32_t device, uint64_t t, v1::GpuMetric metric, uint64_t value) {
  v1::Record r;
  auto* s = r.mutable_metric_sample();
  s->set_device(device);
  s->set_time_ns(static_cast<int64_t>(t));
  s->set_metric(metric);
  s->set_value(value);
  return r;
}

struct Capture {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  uint32_t corr = 1;
  Capture() {
    b.begin_capture("metrics.gpuh");
    b.add(header());
    b.add(a100());
    b.add(string_def(kLaunch, "cudaLaunchKernel"));
    b.add(string_def(kBusy, "busyKernel"));
    b.add(string_def(kOther, "otherKernel"));
  }
  void k(uint32_t name, uint64_t start, uint64_t end) {
    b.add(api(kLaunch, 100, start - 1000, start - 500, corr));
    b.add(kernel(name, 13, corr, start - 400, start - 300, start, end));
    ++corr;
  }
  // One NVML read: utilisation, SM clock and the reasons at time t.
  void read(uint64_t t, uint64_t util, uint64_t sm_mhz, uint64_t reasons) {
    b.add(sample(0, t, v1::GPU_METRIC_GPU_UTIL_PERCENT, util));
    b.add(sample(0, t, v1::GPU_METRIC_SM_CLOCK_MHZ, sm_mhz));
    b.add(sample(0, t, v1::GPU_METRIC_CLOCKS_EVENT_REASONS, reasons));
  }
  gantt::Model done() {
    b.end_capture({});
    return std::move(m);
  }
};

const ga::MetricStatsRow* find(const std::vector<ga::MetricStatsRow>& rows, const std::string& group) {
  for (const auto& r : rows)
    if (r.group == group) return &r;
  return nullptr;
}

}  // namespace

TEST(Metrics, SamplesAreKeptSortedBySeriesAndHostileOnesAreLeftOutAndCounted) {
  Capture c;
  // Out of order in the file: the loader sorts each series by time.
  c.b.add(sample(1, 30 * kMs, v1::GPU_METRIC_POWER_MW, 300'000));
  c.b.add(sample(1, 10 * kMs, v1::GPU_METRIC_POWER_MW, 100'000));
  c.b.add(sample(0, 20 * kMs, v1::GPU_METRIC_POWER_MW, 200'000));
  // A metric no reader knows, a device past any host, an unknown time: not placeable.
  c.b.add(sample(0, 40 * kMs, static_cast<v1::GpuMetric>(200), 1));
  c.b.add(sample(1u << 30, 40 * kMs, v1::GPU_METRIC_POWER_MW, 1));
  v1::Record no_time = sample(0, 0, v1::GPU_METRIC_POWER_MW, 1);
  no_time.mutable_metric_sample()->clear_time_ns();
  c.b.add(no_time);
  const gantt::Model m = c.done();
  ASSERT_EQ(m.metrics.size(), 3u);
  EXPECT_EQ(m.captures[0].metric_samples_left_out, 3u);
  const auto series = ga::metric_series(m);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].device, 0u);
  EXPECT_EQ(series[1].device, 1u);
  EXPECT_EQ(m.metrics.time_ns[series[1].begin], 10 * kMs);
  EXPECT_EQ(m.metrics.value[series[1].begin + 1], 300'000u);
}

TEST(Metrics, MeansAreTakenOverTheSamplesReadWhileEachKernelNameRan) {
  Capture c;
  c.k(kBusy, 10 * kMs, 20 * kMs);
  c.k(kOther, 15 * kMs, 30 * kMs);  // overlaps busyKernel from 15 to 20 ms
  c.read(5 * kMs, 10, 345, 0x1);    // no kernel
  c.read(12 * kMs, 80, 1980, 0);    // busy only
  c.read(18 * kMs, 100, 1980, 0);   // both
  c.read(25 * kMs, 60, 1980, 0);    // other only
  c.read(35 * kMs, 0, 345, 0x1);    // no kernel
  const auto rows = ga::metric_stats(c.done());
  const auto* all = find(rows, "(all)");
  const auto* any = find(rows, "(any kernel)");
  const auto* none = find(rows, "(no kernel)");
  const auto* busy = find(rows, "busyKernel");
  const auto* other = find(rows, "otherKernel");
  ASSERT_TRUE(all && any && none && busy && other);
  const int util = v1::GPU_METRIC_GPU_UTIL_PERCENT;
  EXPECT_DOUBLE_EQ(all->mean(util), (10 + 80 + 100 + 60 + 0) / 5.0);
  EXPECT_DOUBLE_EQ(any->mean(util), (80 + 100 + 60) / 3.0);
  EXPECT_DOUBLE_EQ(none->mean(util), 5.0);
  EXPECT_DOUBLE_EQ(busy->mean(util), 90.0);   // 12 and 18 ms
  EXPECT_DOUBLE_EQ(other->mean(util), 80.0);  // 18 and 25 ms
  EXPECT_EQ(busy->samples[util], 2u);
  EXPECT_DOUBLE_EQ(any->mean(v1::GPU_METRIC_SM_CLOCK_MHZ), 1980.0);
  EXPECT_EQ(none->throttled, 0u) << "the idle reason is not throttling";
}

TEST(Metrics, AKernelMarksTheSamplesFromItsStartUpToButNotAtItsEnd) {
  // The samples a scan marks kernel by kernel (KernelsAtSamples::add), as the load's sweep
  // counted them: a kernel runs at t when start <= t < end; two kernels of one name name a
  // sample once; another device's samples are not this one's.
  Capture c;
  c.read(10 * kMs, 1, 1980, 0);
  c.read(20 * kMs, 2, 1980, 0);
  c.read(30 * kMs, 3, 1980, 0);
  c.b.add(sample(1, 20 * kMs, v1::GPU_METRIC_GPU_UTIL_PERCENT, 9));
  const gantt::Model m = c.done();
  ga::KernelsAtSamples at(m);
  EXPECT_FALSE(at.covers_sample(0, 0, 11 * kMs, 20 * kMs)) << "a kernel ending at a read did not run at it";
  EXPECT_TRUE(at.covers_sample(0, 0, 20 * kMs, 20 * kMs + 1)) << "one starting at a read did";
  EXPECT_FALSE(at.covers_sample(0, 2, 0, 40 * kMs)) << "a device without samples";
  at.add(0, 0, 10 * kMs, 20 * kMs, "busyKernel");       // 10 only
  at.add(0, 0, 5 * kMs, 25 * kMs, "busyKernel");        // 10 and 20: named once at 10
  at.add(0, 0, 20 * kMs, 30 * kMs + 1, "otherKernel");  // 20 and 30
  at.add(0, 0, 31 * kMs, 32 * kMs, "betweenReads");     // none
  using Names = std::vector<std::string_view>;
  EXPECT_EQ(at.at(0, 0, 10 * kMs), (Names{"busyKernel"}));
  EXPECT_EQ(at.at(0, 0, 20 * kMs), (Names{"busyKernel", "otherKernel"}));
  EXPECT_EQ(at.at(0, 0, 30 * kMs), (Names{"otherKernel"}));
  EXPECT_TRUE(at.at(0, 1, 20 * kMs).empty()) << "device 1's read saw none of device 0's kernels";
  EXPECT_TRUE(at.at(0, 0, 15 * kMs).empty()) << "no read at 15 ms";
  const auto rows = ga::metric_stats(m, at);
  const auto* busy = find(rows, "busyKernel");
  ASSERT_TRUE(busy != nullptr);
  EXPECT_EQ(busy->samples[v1::GPU_METRIC_GPU_UTIL_PERCENT], 2u);
  EXPECT_EQ(find(rows, "betweenReads"), nullptr);
}

TEST(Metrics, APowerCapBecomesAClockDropWithItsReasonClocksAndDuration) {
  Capture c;
  c.read(1 * kMs, 0, 345, 0x1);  // idle: its low clock is not the clock before the drop
  for (uint64_t t = 2; t < 10; ++t) c.read(t * kMs, 100, 1980, 0);
  for (uint64_t t = 10; t < 130; ++t) c.read(t * kMs, 100, 1410, 0x4);
  c.read(130 * kMs, 100, 1980, 0);
  const gantt::Model m = c.done();
  const auto drops = ga::clock_drops(m);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].start_ns, 10 * kMs);
  EXPECT_EQ(drops[0].end_ns, 130 * kMs);
  EXPECT_EQ(drops[0].from_mhz, 1980u);
  EXPECT_EQ(drops[0].to_mhz, 1410u);
  EXPECT_EQ(drops[0].samples, 120u);
  EXPECT_EQ(ga::clock_drop_text(drops[0]), "power cap: SM clock 1.98 -> 1.41 GHz during 120 ms");
}

TEST(Metrics, AnIdleGpuDroppingItsClockIsNoClockDrop) {
  Capture c;
  for (uint64_t t = 1; t < 10; ++t) c.read(t * kMs, 100, 1980, 0);
  for (uint64_t t = 10; t < 50; ++t) c.read(t * kMs, 0, 345, 0x1);
  EXPECT_TRUE(ga::clock_drops(c.done()).empty());
}

namespace {

bool throttled_fired(const gantt::Model& m, std::string* title) {
  for (const auto& f : ga::diagnose(m).findings) {
    if (f.rule != "throttled") continue;
    EXPECT_FALSE(f.condition.empty());
    EXPECT_FALSE(f.evidence.empty());
    EXPECT_FALSE(f.fix.empty());
    *title = f.title;
    return true;
  }
  return false;
}

}  // namespace

TEST(Metrics, ThrottledFiresOnAPowerCapWhileAKernelRanAndNotOnItsTwin) {
  for (const bool capped : {true, false}) {
    Capture c;
    c.k(kBusy, 5 * kMs, 60 * kMs);
    for (uint64_t t = 1; t < 10; ++t) c.read(t * kMs, 100, 1980, 0);
    for (uint64_t t = 10; t < 50; ++t) c.read(t * kMs, 100, capped ? 1410 : 1980, capped ? 0x4 : 0);
    c.read(50 * kMs, 100, 1980, 0);
    std::string title;
    EXPECT_EQ(throttled_fired(c.done(), &title), capped);
    if (capped) {
      EXPECT_EQ(title, "gpu0: power cap: SM clock 1.98 -> 1.41 GHz during 40 ms");
    }
  }
}

TEST(Metrics, ThrottledMeasuresWhatTheCapCostTheKernelsThatRanUnderIt) {
  Capture c;
  c.k(kBusy, 2 * kMs, 22 * kMs);    // outside: 20 ms
  c.k(kBusy, 30 * kMs, 58 * kMs);   // starts inside: 28 ms
  c.k(kBusy, 80 * kMs, 100 * kMs);  // outside: 20 ms
  for (uint64_t t = 1; t < 25; ++t) c.read(t * kMs, 100, 1980, 0);
  for (uint64_t t = 25; t < 70; ++t) c.read(t * kMs, 100, 1410, 0x4);
  c.read(70 * kMs, 100, 1980, 0);
  const ga::DiagnoseReport r = ga::diagnose(c.done());
  std::string evidence;
  for (const auto& f : r.findings)
    if (f.rule == "throttled")
      for (const auto& e : f.evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("busyKernel ran 28000.000 us inside it; its 1 runs that started inside took 28000.000 us on "
                          "average, its 2 others 20000.000 us (1.40x)"),
            std::string::npos)
      << evidence;
}

TEST(Metrics, ThrottledSaysWhyItCouldNotLookWithoutMetrics) {
  Capture c;
  c.k(kBusy, 5 * kMs, 60 * kMs);
  const ga::DiagnoseReport r = ga::diagnose(c.done());
  bool seen = false;
  for (const auto& rule : r.rules)
    if (rule.rule == "throttled") seen = !rule.fired && rule.note.find("no GPU metrics") != std::string::npos;
  EXPECT_TRUE(seen);
}

TEST(Metrics, ChromeExportHasACounterTrackPerCounter) {
  Capture c;
  c.k(kBusy, 5 * kMs, 60 * kMs);
  c.read(10 * kMs, 97, 1410, 0x4);
  c.b.add(sample(0, 10 * kMs, v1::GPU_METRIC_POWER_MW, 612'500));
  const gantt::Model m = c.done();
  std::ostringstream os;
  gantt::find_exporter("chrome")->write(m, gantt::select_events(m, gantt::EventFilter{}), gantt::ExportOptions{}, os);
  const std::string json = os.str();
  EXPECT_NE(json.find("{\"ph\":\"C\",\"name\":\"GPU util %\",\"pid\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"power W\",\"pid\":1,\"ts\":"), std::string::npos);
  EXPECT_NE(json.find("\"args\":{\"value\":612.5}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"throttled\",\"pid\":1,\"ts\":"), std::string::npos);
}

TEST(Metrics, StatsTableNamesTheGroupsAndListsTheClockDrops) {
  Capture c;
  c.k(kBusy, 5 * kMs, 200 * kMs);
  for (uint64_t t = 10; t < 20; ++t) c.read(t * kMs, 100, 1980, 0);
  for (uint64_t t = 20; t < 140; ++t) c.read(t * kMs, 100, 1410, 0x4);
  c.read(140 * kMs, 100, 1980, 0);
  const gantt::Model m = c.done();
  const std::string text = ga::format_metric_stats(m, ga::metric_stats(m), ga::Format::kText);
  EXPECT_NE(text.find("busyKernel"), std::string::npos) << text;
  EXPECT_NE(text.find("power cap: SM clock 1.98 -> 1.41 GHz during 120 ms"), std::string::npos) << text;
  const std::string csv = ga::format_metric_stats(m, ga::metric_stats(m), ga::Format::kCsv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "device,while,samples,GPU util %,mem util %,SM MHz,mem MHz,power W,temp C,mem used GiB,PCIe TX MB/s,"
            "PCIe RX MB/s,throttled %");
}

TEST(Metrics, AHostileCaptureOfSamplesLoadsBoundedAndEveryReportStillRuns) {
  const TempFile file(".gpuh");
  std::string err;
  auto w = gpuhook::CaptureWriter::create(file.path, {}, &err);
  ASSERT_TRUE(w) << err;
  w->write(header());
  // Values at the edges of their types, a device and a metric no GPU has, a reversed clock.
  w->write(sample(0xFFFFFFFFu, 5 * kMs, v1::GPU_METRIC_POWER_MW, 1));
  w->write(sample(0, 5 * kMs, static_cast<v1::GpuMetric>(0x7FFFFFFF), 1));
  w->write(sample(0, 6 * kMs, v1::GPU_METRIC_POWER_MW, UINT64_MAX));
  w->write(sample(0, 4 * kMs, v1::GPU_METRIC_CLOCKS_EVENT_REASONS, UINT64_MAX));
  w->write(sample(0, 7 * kMs, v1::GPU_METRIC_SM_CLOCK_MHZ, 0));
  w->write(sample(0, 8 * kMs, v1::GPU_METRIC_CLOCKS_EVENT_REASONS, 0));
  ASSERT_TRUE(w->close());
  const gantt::Model m = gantt::load({file.path});
  EXPECT_EQ(m.metrics.size(), 4u);
  EXPECT_EQ(m.captures[0].metric_samples_left_out, 2u);
  // A drop whose clocks are unknown or zero is no drop to report; the reports run regardless.
  EXPECT_TRUE(ga::clock_drops(m).empty());
  const auto rows = ga::metric_stats(m);
  ASSERT_FALSE(rows.empty());
  EXPECT_FALSE(ga::format_metric_stats(m, rows, ga::Format::kJson).empty());
  EXPECT_FALSE(ga::format_metric_stats(m, rows, ga::Format::kText).empty());
  EXPECT_NO_THROW(ga::diagnose(m));
  EXPECT_NE(ga::format_metric_stats(m, rows, ga::Format::kText).find(": 2 samples left out ("), std::string::npos);
}

TEST(Metrics, MetricsCsvHasOneRowPerSampleInTheShownUnit) {
  Capture c;
  c.read(10 * kMs, 97, 1410, 0x5);
  c.b.add(sample(0, 10 * kMs, v1::GPU_METRIC_POWER_MW, 612'500));
  const gantt::Model m = c.done();
  std::ostringstream os;
  gantt::find_exporter("metrics-csv")->write(m, gantt::select_events(m, gantt::EventFilter{}), gantt::ExportOptions{}, os);
  const uint64_t rel = 10 * kMs - m.first_ns();
  const std::string t = std::to_string(10 * kMs) + "," + std::to_string(rel) + ",";
  EXPECT_EQ(os.str(), "capture,device,counter,time_ns,time_rel_ns,value\n"
                      "0,0,gpu_util_pct," + t + "97\n"
                      "0,0,sm_clock_mhz," + t + "1410\n"
                      "0,0,power_w," + t + "612.5\n"
                      "0,0,clocks_event_reasons," + t + "5\n");
}

TEST(Metrics, TheChartsDrawTheMeasuredUtilisationAndTheDropOnlyWhenThereAreSamples) {
  for (const bool sampled : {true, false}) {
    Capture c;
    c.k(kBusy, 5 * kMs, 200 * kMs);
    if (sampled) {
      for (uint64_t t = 10; t < 20; ++t) c.read(t * kMs, 100, 1980, 0);
      for (uint64_t t = 20; t < 140; ++t) c.read(t * kMs, 100, 1410, 0x4);
      c.read(140 * kMs, 100, 1980, 0);
    }
    const gantt::Model m = c.done();
    const gantt::Selection sel = gantt::select_events(m, gantt::EventFilter{});
    std::ostringstream gantt_svg, util_svg;
    gantt::write_svg(gantt::build_scene(m, sel, gantt::RenderOptions{}), gantt_svg);
    gantt::write_svg(gantt::utilisation_scene(m, sel, ga::utilisation_timeline(m, sel, 0), gantt::RenderOptions{}), util_svg);
    const std::string drop = "power cap: SM clock 1.98 -&gt; 1.41 GHz during 120 ms";
    EXPECT_EQ(gantt_svg.str().find("GPU util (NVML)") != std::string::npos, sampled);
    EXPECT_EQ(gantt_svg.str().find(drop) != std::string::npos, sampled) << "the chart's drop label";
    EXPECT_EQ(util_svg.str().find("GPU utilisation NVML measured") != std::string::npos, sampled);
    EXPECT_EQ(util_svg.str().find(drop) != std::string::npos, sampled) << "the view's drop label";
  }
}

// CUPTI PM sampling's counters: 1 kHz samples (the window's middle) of SM active and DRAM over a
// kernel that ran 50 ms with its SMs `sm_pct` active and DRAM `dram_pct` of peak.
namespace {
gantt::Model pm_capture(uint64_t sm_pct, int64_t dram_pct) {
  Capture c;
  c.k(kBusy, 10 * kMs, 60 * kMs);
  c.k(kOther, 60 * kMs, 62 * kMs);  // too little of the kernel time to matter
  for (uint64_t t = 0; t < 80; ++t) {
    const uint64_t at = t * kMs + kMs / 2;
    const bool busy = at > 10 * kMs && at < 60 * kMs;
    const bool other = at > 60 * kMs && at < 62 * kMs;
    c.b.add(sample(0, at, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, busy ? sm_pct * 100 : other ? 500 : 0));
    if (dram_pct >= 0) {
      c.b.add(sample(0, at, v1::GPU_METRIC_DRAM_READ_CENTIPCT, busy ? static_cast<uint64_t>(dram_pct) * 80 : 0));
      c.b.add(sample(0, at, v1::GPU_METRIC_DRAM_WRITE_CENTIPCT, busy ? static_cast<uint64_t>(dram_pct) * 20 : 0));
    }
  }
  return c.done();
}

const ga::Finding* stalled(const ga::DiagnoseReport& r) {
  for (const auto& f : r.findings)
    if (f.rule == "stalled") return &f;
  return nullptr;
}
}  // namespace

TEST(Metrics, StalledNamesAKernelRunningWithItsSmsIdleAndWhetherDramWasTheLimit) {
  const ga::DiagnoseReport mem = ga::diagnose(pm_capture(12, 70));
  const ga::Finding* f = stalled(mem);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("busyKernel"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("SM active 12.0%, memory-bound"), std::string::npos) << f->title;
  ASSERT_GE(f->evidence.size(), 3u);
  EXPECT_NE(f->evidence[0].find("over 50 samples"), std::string::npos) << f->evidence[0];
  EXPECT_NE(f->evidence[2].find("DRAM read + write 70.0% of peak"), std::string::npos) << f->evidence[2];
  // otherKernel's samples read 5% too, but it is 4% of the kernel time: not named.
  int findings = 0;
  for (const auto& x : mem.findings) findings += x.rule == "stalled";
  EXPECT_EQ(findings, 1);

  // Each report named: a finding points into its report.
  const ga::DiagnoseReport latency = ga::diagnose(pm_capture(12, 10));
  const ga::Finding* lat = stalled(latency);
  ASSERT_NE(lat, nullptr);
  EXPECT_NE(lat->title.find("latency-bound"), std::string::npos) << lat->title;
  EXPECT_NE(lat->fix.find("more independent work"), std::string::npos);

  const ga::DiagnoseReport no_dram = ga::diagnose(pm_capture(12, -1));
  const ga::Finding* unknown = stalled(no_dram);
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->title.find("-bound"), std::string::npos) << unknown->title;
  EXPECT_NE(unknown->evidence[2].find("add dram_read,dram_write to GPUHOOK_METRICS"), std::string::npos);
}

TEST(Metrics, StalledStaysQuietOnABusyKernelAndSaysHowToGetTheCountersWithoutThem) {
  const ga::DiagnoseReport busy = ga::diagnose(pm_capture(85, 70));
  EXPECT_EQ(stalled(busy), nullptr);
  Capture c;
  c.k(kBusy, 5 * kMs, 60 * kMs);
  for (uint64_t t = 10; t < 50; ++t) c.read(t * kMs, 100, 1980, 0);  // NVML only
  const ga::DiagnoseReport nvml = ga::diagnose(c.done());
  bool said = false;
  for (const auto& rule : nvml.rules)
    if (rule.rule == "stalled") said = !rule.fired && rule.note.find("GPUHOOK_METRICS=sm_active") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Metrics, PmCountersGetColumnsStripsAndLinesOnlyWhenRecorded) {
  const gantt::Model m = pm_capture(12, 70);
  const std::string table = ga::format_metric_stats(m, ga::metric_stats(m), ga::Format::kText);
  EXPECT_NE(table.find("SM active %"), std::string::npos);
  EXPECT_NE(table.find("DRAM rd %"), std::string::npos);
  EXPECT_EQ(table.find("tensor %"), std::string::npos) << "a counter not recorded has no column";
  const auto rows = ga::metric_stats(m);  // the row points into them
  const ga::MetricStatsRow* row = find(rows, "busyKernel");
  ASSERT_NE(row, nullptr);
  EXPECT_DOUBLE_EQ(row->mean(v1::GPU_METRIC_SM_ACTIVE_CENTIPCT) * ga::metric_info(v1::GPU_METRIC_SM_ACTIVE_CENTIPCT)->scale,
                   12.0);
  const gantt::Selection sel = gantt::select_events(m, gantt::EventFilter{});
  std::ostringstream gantt_svg, util_svg;
  gantt::write_svg(gantt::build_scene(m, sel, gantt::RenderOptions{}), gantt_svg);
  gantt::write_svg(gantt::utilisation_scene(m, sel, ga::utilisation_timeline(m, sel, 0), gantt::RenderOptions{}), util_svg);
  EXPECT_NE(gantt_svg.str().find("SM active (PM)"), std::string::npos);
  EXPECT_NE(gantt_svg.str().find("DRAM r+w (PM)"), std::string::npos);
  EXPECT_EQ(gantt_svg.str().find("GPU util (NVML)"), std::string::npos);
  EXPECT_NE(util_svg.str().find("SM active, PM sampling"), std::string::npos);
  EXPECT_EQ(util_svg.str().find("GPU utilisation NVML measured"), std::string::npos);
}
