#include "gantt/analysis/stats.h"

#include <gtest/gtest.h>

#include "fixture.h"
#include "gantt/analysis/intervals.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

TEST(Intervals, MergeAndIntersect) {
  std::vector<ga::Interval> a{{5, 10}, {0, 3}, {2, 4}, {9, 12}, {20, 20}};
  ga::merge_intervals(a);
  ASSERT_EQ(a, (std::vector<ga::Interval>{{0, 4}, {5, 12}}));
  EXPECT_EQ(ga::total_length(a), 11u);
  std::vector<ga::Interval> b{{3, 6}, {11, 30}};
  EXPECT_EQ(ga::intersection_length(a, b), 1u + 1u + 1u);
}

TEST(Stats, ByKernelHasTheConstructedNumbers) {
  const gantt::Model m = small_model();
  const ga::StatsReport r = ga::compute_stats(m);
  EXPECT_EQ(r.events, 4u);
  EXPECT_EQ(r.gpu_time_ns, 1000u);
  EXPECT_EQ(r.makespan_ns, 2900u);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "gemm(float*, float*, float*, int)");
  EXPECT_EQ(r.groups[0].exec.count, 3u);
  EXPECT_EQ(r.groups[0].exec.total_ns, 600u);
  EXPECT_DOUBLE_EQ(r.groups[0].exec.median_ns, 200);
  EXPECT_EQ(r.groups[0].exec.p95_ns, 300);
  EXPECT_DOUBLE_EQ(r.groups[0].share, 0.6);
  EXPECT_EQ(r.groups[1].key, "[memcpy HtoD]");
  EXPECT_EQ(r.groups[1].bytes, 4096u);
}

TEST(Stats, StagesDeviceBusyOverlapAndGaps) {
  const gantt::Model m = small_model();
  const ga::StatsReport r = ga::compute_stats(m);
  ASSERT_EQ(r.stages.size(), 3u);
  EXPECT_EQ(r.stages[0].stage, "launch->queued");
  EXPECT_EQ(r.stages[0].known, 3u);
  EXPECT_DOUBLE_EQ(r.stages[0].median_ns, 25);  // 960-900, 985-960, 3530-3510
  EXPECT_EQ(r.stages[1].known, 3u);
  EXPECT_DOUBLE_EQ(r.stages[1].median_ns, 70);  // 40, 115, 70
  ASSERT_EQ(r.devices.size(), 1u);
  const ga::DeviceRow& d = r.devices[0];
  EXPECT_EQ(d.span_ns, 2900u);
  EXPECT_EQ(d.busy_ns, 900u);
  EXPECT_EQ(d.compute_ns, 600u);
  EXPECT_EQ(d.copy_ns, 400u);
  EXPECT_EQ(d.overlap_ns, 100u);
  EXPECT_DOUBLE_EQ(d.overlap_pct, 25.0);
  EXPECT_EQ(d.idle_ns, 2000u);
  ASSERT_EQ(d.gaps.size(), 1u);
  EXPECT_EQ(d.gaps[0].start_ns, 1600u);
  EXPECT_EQ(d.gaps[0].end_ns, 3600u);
  EXPECT_EQ(d.gaps[0].host, "cudaStreamSynchronize (tid 100) 95% of the gap");
}

TEST(Stats, AGapTouchedOnlyAtItsEdgeSaysUnderOnePercent) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("edge.gpuh");
  b.add(header());
  b.add(a100());
  b.add(string_def(kGemm, "_Z4gemmPfS_S_i"));
  b.add(string_def(kSync, "cudaStreamSynchronize_v3020"));
  b.add(api(kSync, 100, 1595, 1605, 0));  // 5 ns of the 2000 ns gap: rounds to 0%
  b.add(kernel(kGemm, 13, 1, 960, 970, 1000, 1600));
  b.add(kernel(kGemm, 13, 2, 3530, 3540, 3600, 3900));
  b.end_capture({});
  const ga::StatsReport r = ga::compute_stats(m);
  ASSERT_EQ(r.devices.size(), 1u);
  ASSERT_EQ(r.devices[0].gaps.size(), 1u);
  EXPECT_EQ(r.devices[0].gaps[0].host, "cudaStreamSynchronize (tid 100) <1% of the gap");
}

TEST(Stats, GroupByStreamDeviceAndTop) {
  const gantt::Model m = small_model();
  ga::StatsOptions o;
  o.by = ga::GroupBy::kStream;
  ga::StatsReport r = ga::compute_stats(m, o);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "gpu0 stream 13");
  EXPECT_EQ(r.groups[1].key, "gpu0 stream 14");
  o.by = ga::GroupBy::kDevice;
  r = ga::compute_stats(m, o);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].exec.count, 4u);
  o.by = ga::GroupBy::kRange;
  r = ga::compute_stats(m, o);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].key, "(no range)");
  o.by = ga::GroupBy::kKernel;
  o.top = 1;
  r = ga::compute_stats(m, o);
  EXPECT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups_total, 2u);
}

TEST(Stats, EmptyModelGivesAnEmptyReportInEveryFormat) {
  gantt::Model m;
  const ga::StatsReport r = ga::compute_stats(m);
  EXPECT_EQ(r.events, 0u);
  for (ga::Format f : {ga::Format::kText, ga::Format::kMarkdown, ga::Format::kJson, ga::Format::kCsv})
    EXPECT_FALSE(ga::format_stats(r, f).empty());
}

TEST(Stats, JsonParsesWithPython) {
  const gantt::Model m = small_model();
  const std::string j = ga::format_stats(ga::compute_stats(m), ga::Format::kJson);
  const gantt_analysis_test::TempFile file(".stats.json");
  const std::string& path = file.path;
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(j.c_str(), f);
  std::fclose(f);
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string cmd = "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                          "sys.exit(0 if d[\"devices\"][0][\"overlap_ns\"]==100 and d[\"groups\"][0][\"count\"]==3 else 1)' " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << j;
}
