// jobs --metrics: the two Prometheus CSV forms, bad lines, caps and hostile values, the
// buckets and drops per node, and the chart's strips, against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "gantt/jobs/jobs.h"
#include "gantt/jobs/jobs_metrics.h"
#include "gantt/render/render.h"

namespace gantt::jobs {
namespace {

// 2024-03-01T00:00:00Z
constexpr int64_t kT0 = 1709251200;

JobSet two_nodes() {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T06:00:00,COMPLETED,n1,2\n"
      "2,b,u,p,2024-03-01T00:00:00,2024-03-01T01:00:00,2024-03-01T06:00:00,COMPLETED,n2,2\n",
      "jobs.csv");
  finish_jobs(set);
  return set;
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(GPUHOOK_SOURCE_DIR) + "/tests/fixtures/jobs/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

TEST(JobsMetricsParse, LongFormRowsBecomeSharesOfTheirNodes) {
  const JobSet set = two_nodes();
  const NodeMetrics m = parse_dcgm_metrics(
      "timestamp,Hostname,gpu,__name__,value\n"
      "1709251200,n2,1,DCGM_FI_DEV_GPU_UTIL,40\n"
      "1709251260.5,n1.cluster,0,DCGM_FI_DEV_GPU_UTIL,100\n"
      "1709251200,n1,0,DCGM_FI_DEV_GPU_TEMP,61\n",
      "m.csv", set);
  ASSERT_TRUE(m.problems.empty()) << m.problems[0].what;
  ASSERT_EQ(m.samples.size(), 2u);
  EXPECT_EQ(m.samples[0].node, 1u);  // n2, the record's second node
  EXPECT_EQ(m.samples[0].gpu, 1u);
  EXPECT_EQ(m.samples[0].t_ms, kT0 * 1000);
  EXPECT_FLOAT_EQ(m.samples[0].share, 0.4f);
  EXPECT_EQ(m.samples[1].node, 0u);  // n1.cluster: by its first label
  EXPECT_EQ(m.samples[1].t_ms, kT0 * 1000 + 60500);
  EXPECT_FLOAT_EQ(m.samples[1].share, 1.0f);
  EXPECT_EQ(m.other_series_ignored, 1u);
  EXPECT_EQ(m.kind, MetricKind::kGpuUtil);
}

TEST(JobsMetricsParse, WideFormTakesEachSeriesColumnAndTheBestSeriesIsDrawn) {
  const JobSet set = two_nodes();
  const NodeMetrics m = parse_dcgm_metrics(
      "time,instance,gpu,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_PROF_SM_ACTIVE,DCGM_FI_DEV_POWER_USAGE\n"
      "2024-03-01T00:00:00Z,n1:9400,0,90,0.25,300\n"
      "2024-03-01T00:01:00Z,n1:9400,0,,0.5,\n",  // an empty cell: no sample of that series then
      "m.csv", set);
  ASSERT_TRUE(m.problems.empty()) << m.problems[0].what;
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_EQ(m.samples[0].kind, uint8_t(MetricKind::kGpuUtil));
  EXPECT_FLOAT_EQ(m.samples[0].share, 0.9f);
  EXPECT_EQ(m.samples[1].kind, uint8_t(MetricKind::kSmActive));
  EXPECT_FLOAT_EQ(m.samples[1].share, 0.25f);
  EXPECT_EQ(m.samples[2].t_ms, (kT0 + 60) * 1000);
  EXPECT_EQ(m.other_series_ignored, 1u);   // the power cell of the first line
  EXPECT_EQ(m.kind, MetricKind::kSmActive);  // SM active is present: it is the one drawn
}

TEST(JobsMetricsParse, BadLinesAreNumberedOnceEachAndTheRestIsRead) {
  const JobSet set = two_nodes();
  const NodeMetrics m = parse_dcgm_metrics(
      "timestamp,Hostname,gpu,metric,value\n"
      "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,NaN\n"           // 2
      "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,-5\n"            // 3
      "1709251200,n1,0,DCGM_FI_PROF_SM_ACTIVE,1.5\n"         // 4
      "1e300,n1,0,DCGM_FI_DEV_GPU_UTIL,50\n"                 // 5
      "1709251200,n1,99999,DCGM_FI_DEV_GPU_UTIL,50\n"        // 6
      "1709251200,n1,0\n"                                    // 7
      "1709251200,,0,DCGM_FI_DEV_GPU_UTIL,50\n"              // 8
      "\"1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,50\n"          // 9
      "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,inf\n"           // 10
      "1709251200,n7,0,DCGM_FI_DEV_GPU_UTIL,50\n"            // a host not in the record
      "1709251260,n7,1,DCGM_FI_DEV_GPU_UTIL,50\n"
      "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,50\n",
      "m.csv", set);
  ASSERT_EQ(m.problems.size(), 9u);
  const size_t lines[] = {2, 3, 4, 5, 6, 7, 8, 9, 10};
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(m.problems[i].line, lines[i]) << m.problems[i].what;
  EXPECT_NE(m.problems[0].what.find("not a finite number"), std::string::npos) << m.problems[0].what;
  EXPECT_NE(m.problems[1].what.find("-5 is outside 0..100"), std::string::npos) << m.problems[1].what;
  EXPECT_NE(m.problems[2].what.find("outside 0..1"), std::string::npos) << m.problems[2].what;
  EXPECT_NE(m.problems[3].what.find("timestamp '1e300'"), std::string::npos) << m.problems[3].what;
  EXPECT_NE(m.problems[4].what.find("gpu '99999'"), std::string::npos) << m.problems[4].what;
  EXPECT_NE(m.problems[5].what.find("3 fields"), std::string::npos) << m.problems[5].what;
  ASSERT_EQ(m.samples.size(), 1u);
  EXPECT_EQ(m.unknown_node_samples, 2u);
  EXPECT_EQ(m.unknown_node_count, 1u);
  EXPECT_EQ(m.unknown_nodes, std::vector<std::string>{"n7"});
}

TEST(JobsMetricsParse, SamplesPastTheCapAreLeftOutAndSaidOnce) {
  const JobSet set = two_nodes();
  std::string text = "timestamp,Hostname,gpu,metric,value\n";
  for (int i = 0; i < 10; ++i) text += std::to_string(kT0 + 60 * i) + ",n1,0,DCGM_FI_DEV_GPU_UTIL,50\n";
  const NodeMetrics m = parse_dcgm_metrics(text, "m.csv", set, 4);
  EXPECT_EQ(m.samples.size(), 4u);
  EXPECT_TRUE(m.truncated);
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_EQ(m.problems[0].line, 6u);
  EXPECT_NE(m.problems[0].what.find("more than 4 samples"), std::string::npos);
}

TEST(JobsMetricsParse, DmonOutputAndUnknownHeadersAreRefusedWithAReason) {
  const JobSet set = two_nodes();
  const NodeMetrics dmon = parse_dcgm_metrics("#Entity   GPUTL\nID\nGPU 0     87\n", "dmon.txt", set);
  ASSERT_EQ(dmon.problems.size(), 1u);
  EXPECT_EQ(dmon.problems[0].line, 1u);
  EXPECT_NE(dmon.problems[0].what.find("dcgmi dmon output: it has no timestamps and no host names"), std::string::npos);
  EXPECT_TRUE(dmon.samples.empty());
  const NodeMetrics other = parse_dcgm_metrics("a,b,c\n1,2,3\n", "x.csv", set);
  ASSERT_EQ(other.problems.size(), 1u);
  EXPECT_NE(other.problems[0].what.find("header lacks a timestamp column"), std::string::npos) << other.problems[0].what;
  const NodeMetrics empty = parse_dcgm_metrics("", "e.csv", set);
  ASSERT_EQ(empty.problems.size(), 1u);
  EXPECT_EQ(empty.problems[0].line, 0u);
}

TEST(JobsMetricsParse, RandomBytesNeverCrash) {
  const JobSet set = two_nodes();
  uint32_t x = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string text = "timestamp,Hostname,gpu,metric,value\n";
    for (int i = 0; i < 200; ++i) {
      x = x * 1103515245 + 12345;
      const char alphabet[] = "0123456789.,-eE\nn1DCGM_FI_DEV_GPU_UTILNaN\"";
      text += alphabet[(x >> 16) % (sizeof alphabet - 1)];
    }
    const NodeMetrics m = parse_dcgm_metrics(text, "r.csv", set);
    for (const MetricSample& s : m.samples) EXPECT_TRUE(s.share >= 0 && s.share <= 1);
    const NodeUtilisation u = node_utilisation(set, m, kT0, kT0 + 6 * 3600);
    metrics_stats(set, m, u);
  }
}

// The fixtures of make_dcgm.py: 2 GPUs per node every 120 s from 00:00 to 06:00; n1 at 90% but
// 5% from 03:00 to 03:10, n2 at 80% (its job from 01:00).
TEST(JobsMetricsUtilisation, TheDropFixtureHasOneDropOnN1AndItsMeansByHand) {
  const JobSet set = parse_jobs(read_fixture("dcgm_jobs.csv"), "dcgm_jobs.csv");
  JobSet s = set;
  finish_jobs(s);
  const NodeMetrics m = parse_dcgm_metrics(read_fixture("dcgm_drop.csv"), "dcgm_drop.csv", s);
  ASSERT_TRUE(m.problems.empty());
  EXPECT_EQ(m.unknown_node_samples, 360u);  // n9: 2 GPUs x 180 samples
  EXPECT_EQ(m.other_series_ignored, 180u);  // the temperature rows
  const NodeUtilisation u = node_utilisation(s, m, kT0, kT0 + 6 * 3600);
  // 21,600 s / 300 buckets = 72 s, less than the 120 s step: 120 s buckets, 180 of them.
  EXPECT_EQ(u.bucket_s, 120);
  ASSERT_EQ(u.buckets, 180u);
  ASSERT_EQ(u.nodes[0].drops.size(), 1u);
  EXPECT_EQ(u.nodes[0].drops[0].first, 90u);   // 03:00 / 120 s
  EXPECT_EQ(u.nodes[0].drops[0].buckets, 5u);  // 10 min
  EXPECT_NEAR(u.nodes[0].drops[0].median, 0.9, 1e-6);  // shares are kept as float
  EXPECT_NEAR(u.nodes[0].drops[0].lowest, 0.05, 1e-6);
  EXPECT_TRUE(u.nodes[1].drops.empty());
  const MetricsStats st = metrics_stats(s, m, u);
  ASSERT_EQ(st.nodes.size(), 2u);
  // n1: per GPU 175 samples at 90% and 5 at 5%: 157.75 / 180.
  EXPECT_EQ(st.nodes[0].samples_while_jobs, 360u);
  EXPECT_NEAR(st.nodes[0].mean_while_jobs, 157.75 / 180, 1e-6);
  // n2: only from its job's start at 01:00: 150 samples per GPU.
  EXPECT_EQ(st.nodes[1].samples_while_jobs, 300u);
  EXPECT_NEAR(st.nodes[1].mean_while_jobs, 0.8, 1e-6);
  ASSERT_EQ(st.drops.size(), 1u);
  EXPECT_EQ(st.drops[0].from_s, kT0 + 3 * 3600);
  EXPECT_EQ(st.drops[0].to_s, kT0 + 3 * 3600 + 600);
}

TEST(JobsMetricsUtilisation, ADipBetweenTwoJobsIsNotADrop) {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T03:00:00,COMPLETED,n1,1\n"
      "2,b,u,p,2024-03-01T00:00:00,2024-03-01T03:10:00,2024-03-01T06:00:00,COMPLETED,n1,1\n",
      "jobs.csv");
  finish_jobs(set);
  std::string text = "timestamp,Hostname,gpu,metric,value\n";
  for (int64_t t = kT0; t < kT0 + 6 * 3600; t += 120) {
    const bool between = t >= kT0 + 3 * 3600 && t < kT0 + 3 * 3600 + 600;
    text += std::to_string(t) + ",n1,0,DCGM_FI_DEV_GPU_UTIL," + (between ? "0" : "90") + "\n";
  }
  const NodeMetrics m = parse_dcgm_metrics(text, "m.csv", set);
  const NodeUtilisation u = node_utilisation(set, m, kT0, kT0 + 6 * 3600);
  EXPECT_TRUE(u.nodes[0].drops.empty());
  // The same dip inside one job is a drop: the test above can fail.
  JobSet one = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T06:00:00,COMPLETED,n1,1\n",
      "jobs.csv");
  finish_jobs(one);
  EXPECT_EQ(node_utilisation(one, parse_dcgm_metrics(text, "m.csv", one), kT0, kT0 + 6 * 3600).nodes[0].drops.size(), 1u);
}

std::string chart(const std::string& metrics_file, ChartStats* cs) {
  JobSet set = parse_jobs(read_fixture("dcgm_jobs.csv"), "dcgm_jobs.csv");
  finish_jobs(set);
  const NodeMetrics m = parse_dcgm_metrics(read_fixture(metrics_file), metrics_file, set);
  ChartOptions o;
  o.metrics = &m;
  std::ostringstream svg;
  write_svg(jobs_scene(set, o, cs), svg);
  return svg.str();
}

TEST(JobsMetricsScene, StripsUnderEachNodeAndTheDropMarkedOnlyWhereThereIsOne) {
  ChartStats drop, steady;
  const std::string with = chart("dcgm_drop.csv", &drop), without = chart("dcgm_steady.csv", &steady);
  EXPECT_EQ(drop.utilisation_strips, 2u);
  EXPECT_EQ(steady.utilisation_strips, 2u);
  EXPECT_EQ(drop.utilisation_drops, 1u);
  EXPECT_EQ(steady.utilisation_drops, 0u);
  EXPECT_NE(with.find("n1 2024-03-01T03:00:00: drop: DCGM_FI_DEV_GPU_UTIL 5% for 10m"), std::string::npos);
  EXPECT_EQ(without.find(": drop: "), std::string::npos);
  EXPECT_NE(without.find("n1: DCGM_FI_DEV_GPU_UTIL, mean of its GPUs per 2m"), std::string::npos);
  // Each bar links to its interval: a view of the job's span.
  EXPECT_NE(with.find("<a href=\"#svgView(viewBox("), std::string::npos);
}

TEST(JobsMetricsScene, StripsOfTenThousandNodesStayUnderTheRasterLimit) {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T06:00:00,COMPLETED,\"n[1-10000]\",10000\n",
      "jobs.csv");
  finish_jobs(set);
  ASSERT_EQ(set.nodes.size(), 10000u);
  NodeMetrics m;
  m.has_kind = true;
  for (uint32_t n = 0; n < 10000; ++n) m.samples.push_back({kT0 * 1000, n, 0, uint8_t(MetricKind::kGpuUtil), 0.5f});
  ChartOptions o;
  o.metrics = &m;
  ChartStats cs;
  const Scene s = jobs_scene(set, o, &cs);
  EXPECT_EQ(cs.utilisation_strips, 10000u);
  EXPECT_LT(s.height, 32767);
}

}  // namespace
}  // namespace gantt::jobs
