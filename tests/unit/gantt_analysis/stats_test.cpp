#include "gantt/analysis/stats.h"

#include <gtest/gtest.h>

#include "../gantt/graph_fixture.h"
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

TEST(Stats, ByGraphHasOneRowPerGraphWithLaunchesSpanBusyAndLaunchCalls) {
  const gantt::Model m = gantt_test::graph_model(4);
  ga::StatsOptions o;
  o.by = ga::GroupBy::kGraph;
  const ga::StatsReport r = ga::compute_stats(m, o);
  EXPECT_TRUE(r.groups.empty());
  ASSERT_EQ(r.graphs.size(), 1u);
  const ga::GraphRow& g = r.graphs[0];
  EXPECT_EQ(g.key, "graph 3");
  EXPECT_EQ(g.graph_id, 3u);
  EXPECT_EQ(g.launches, 4u);
  EXPECT_DOUBLE_EQ(g.nodes_per_launch, 5);
  EXPECT_EQ(g.nodes_min, 5u);
  EXPECT_EQ(g.nodes_max, 5u);
  EXPECT_EQ(g.span.count, 4u);
  EXPECT_EQ(g.span.total_ns, 4u * 3500);
  EXPECT_DOUBLE_EQ(g.span.median_ns, 3500);
  // A 800 + (B | C) 1000 + A 800 + memset 500 per launch: the branches' overlap counts once.
  EXPECT_EQ(g.busy_ns, 4u * 3100);
  EXPECT_NEAR(g.busy_pct, 100.0 * 3100 / 3500, 1e-9);
  EXPECT_EQ(g.launch_call.count, 4u);
  EXPECT_DOUBLE_EQ(g.launch_call.median_ns, 2000);
  EXPECT_EQ(g.launch_call.total_ns, 8000u);
  EXPECT_EQ(r.groups_total, 1u);

  const std::string text = ga::format_stats(r, ga::Format::kText);
  EXPECT_NE(text.find("graph 3"), std::string::npos) << text;
  EXPECT_NE(text.find("nodes/launch"), std::string::npos) << text;
  const std::string csv = ga::format_stats(r, ga::Format::kCsv);
  EXPECT_EQ(csv.rfind("graph,launches,nodes/launch,total_span_us,median_span_us,busy_us,busy_%,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\ngraph 3,4,5.0,14.000,3.500,12.400,88.6,2.000,8.000"), std::string::npos) << csv;
  EXPECT_NE(ga::format_stats(r, ga::Format::kMarkdown).find("| graph 3 |"), std::string::npos);

  const std::string j = ga::format_stats(r, ga::Format::kJson);
  const gantt_analysis_test::TempFile file(".graphs.json");
  FILE* f = std::fopen(file.path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(j.c_str(), f);
  std::fclose(f);
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string cmd = "python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))[\"graphs\"][0]; "
                          "sys.exit(0 if g[\"launches\"]==4 and g[\"busy_ns\"]==12400 and g[\"span_total_ns\"]==14000 "
                          "and g[\"launch_call_median_ns\"]==2000 and g[\"key\"]==\"graph 3\" else 1)' " + file.path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << j;
}

TEST(Stats, ByGraphOnACaptureWithoutGraphsSaysSo) {
  ga::StatsOptions o;
  o.by = ga::GroupBy::kGraph;
  const ga::StatsReport r = ga::compute_stats(small_model(), o);
  EXPECT_TRUE(r.graphs.empty());
  EXPECT_NE(ga::format_stats(r, ga::Format::kText).find("no CUDA graph launches"), std::string::npos);
}
