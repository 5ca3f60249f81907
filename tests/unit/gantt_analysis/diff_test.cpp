#include "gantt/analysis/diff.h"
#include "gantt/analysis/summary.h"

#include <cmath>
#include <utility>
#include <random>

#include <gtest/gtest.h>

#include "../gantt/graph_fixture.h"
#include "fixture.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

enum : uint32_t { kA = 10, kB = 11, kC = 12, kStep = 13 };

// `iterations` steps (an NVTX range each) of kernels A and B back to back on one stream;
// exec times have 3% multiplicative noise from `seed`; A is scaled by `a_scale`.
gantt::Model run(uint32_t seed, double a_scale, int iterations = 30, bool with_c = false) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.03);
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("run" + std::to_string(seed) + ".gpuh");
  b.add(header());
  b.add(a100());
  b.add(string_def(kLaunch, "cudaLaunchKernel"));
  b.add(string_def(kA, "_Z7kernelAPf"));
  b.add(string_def(kB, "kernelB"));
  b.add(string_def(kC, "kernelC"));
  b.add(string_def(kStep, "step"));
  uint64_t t = 10'000;
  uint32_t corr = 1;
  for (int i = 0; i < iterations; ++i) {
    b.add(range(v1::RANGE_PUSH, kStep, 100, t));
    for (uint32_t name : {kA, kB, kC}) {
      if (name == kC && !with_c) continue;
      const double base_ns = name == kA ? 10'000 * a_scale : 5'000;
      const auto dur = static_cast<uint64_t>(base_ns * std::exp(noise(rng)));
      b.add(api(kLaunch, 100, t, t + 100, corr));
      b.add(kernel(name, 7, corr, t + 150, t + 160, t + 200, t + 200 + dur));
      ++corr;
      t += 200 + dur;
    }
    t += 1000;
    b.add(range(v1::RANGE_POP, 0, 100, t));
  }
  b.end_capture({});
  return m;
}

const ga::KernelDiff* find(const ga::DiffReport& r, const std::string& name) {
  for (const auto& k : r.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace

TEST(Diff, SameProgramDifferentNoiseIsNotARegressionIn19Of20) {
  int flagged = 0;
  for (uint32_t s = 0; s < 20; ++s) flagged += ga::diff_models(run(1000 + s, 1.0), run(2000 + s, 1.0)).regressions > 0;
  EXPECT_LE(flagged, 1);
}

TEST(Diff, OneKernelTenPercentSlowerIsARegressionIn19Of20) {
  int flagged = 0;
  for (uint32_t s = 0; s < 20; ++s) {
    const ga::DiffReport r = ga::diff_models(run(3000 + s, 1.0), run(4000 + s, 1.10));
    const ga::KernelDiff* a = find(r, "kernelA(float*)");
    ASSERT_NE(a, nullptr);
    flagged += r.regressions > 0 && a->regression && !find(r, "kernelB")->regression;
  }
  EXPECT_GE(flagged, 19);
}

TEST(Diff, MatchesByNameAndRangeAndReportsAddedRemoved) {
  const ga::DiffReport r = ga::diff_models(run(1, 1.0, 10, true), run(2, 1.0, 10, false));
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(r.added, 0u);
  const ga::KernelDiff* c = find(r, "kernelC");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->removed);
  EXPECT_EQ(c->range, "step");
  EXPECT_EQ(c->base.count, 10u);
  EXPECT_EQ(c->next.count, 0u);
  EXPECT_EQ(r.regressions, 0u);  // a removed kernel is not a regression
}

TEST(Diff, MakespanGatesThroughIterationsOnlyWhenAsked) {
  const gantt::Model a = run(5, 1.0), b = run(6, 1.3);
  ga::DiffOptions exec_only;
  exec_only.metrics = ga::parse_metrics("makespan");
  const ga::DiffReport r = ga::diff_models(a, b, exec_only);
  ASSERT_FALSE(r.summary.empty());
  EXPECT_EQ(r.summary[0].metric, "makespan");
  EXPECT_TRUE(r.summary[0].regression);
  EXPECT_NE(r.makespan_note.find("'step'"), std::string::npos) << r.makespan_note;
  // Without repeated ranges there is no noise estimate: reported, never a regression.
  const gantt::Model one_a = run(5, 1.0, 1), one_b = run(6, 1.3, 1);
  const ga::DiffReport r1 = ga::diff_models(one_a, one_b, exec_only);
  EXPECT_FALSE(r1.summary[0].regression);
  EXPECT_EQ(r1.summary[0].verdict, "reported");
}

TEST(Diff, ParseMetrics) {
  EXPECT_EQ(ga::parse_metrics("exec"), 1u);
  EXPECT_EQ(ga::parse_metrics("exec,queue,makespan"), 7u);
  EXPECT_EQ(ga::parse_metrics("all"), 7u);
  EXPECT_THROW(ga::parse_metrics("exec,bogus"), std::invalid_argument);
  EXPECT_THROW(ga::parse_metrics(""), std::invalid_argument);
}

TEST(Diff, EveryFormatIsDeterministic) {
  const ga::DiffReport r = ga::diff_models(run(7, 1.0), run(8, 1.2));
  for (ga::Format f : {ga::Format::kText, ga::Format::kMarkdown, ga::Format::kJson, ga::Format::kCsv}) {
    const std::string once = ga::format_diff(r, f);
    EXPECT_EQ(once, ga::format_diff(ga::diff_models(run(7, 1.0), run(8, 1.2)), f));
    EXPECT_FALSE(once.empty());
  }
  EXPECT_NE(ga::format_diff(r, ga::Format::kText).find("REGRESSION"), std::string::npos);
}

TEST(Diff, AChangedNodeOfAGraphIsReportedAsThatNode) {
  // Node 4 (the second nodeA of each launch) takes 2 us longer in NEW; node 1, the same
  // kernel earlier in the graph, is unchanged.
  const gantt::Model base = gantt_test::graph_model(12, 0, "base.gpuh");
  const gantt::Model next = gantt_test::graph_model(12, 2000, "next.gpuh");
  const ga::DiffReport r = ga::diff_models(base, next);
  const ga::KernelDiff* changed = nullptr;
  const ga::KernelDiff* same = nullptr;
  size_t graph_rows = 0;
  for (const auto& k : r.kernels) {
    if (k.graph_node) ++graph_rows;
    if (k.name == "nodeA(float*)" && k.graph_node == 4) changed = &k;
    if (k.name == "nodeA(float*)" && k.graph_node == 1) same = &k;
  }
  EXPECT_EQ(graph_rows, 5u);  // one row per node of the launch
  ASSERT_NE(changed, nullptr);
  ASSERT_NE(same, nullptr);
  EXPECT_TRUE(changed->regression);
  EXPECT_EQ(changed->base.count, 12u);
  EXPECT_DOUBLE_EQ(changed->next.median_ns, 2800);
  EXPECT_FALSE(same->regression);
  EXPECT_EQ(r.regressions, 1u);
  EXPECT_FALSE(r.kernels.empty());
  EXPECT_EQ(&r.kernels[0], changed);  // regressions first
  // The kernel launched on its own keeps its plain name match.
  bool lone = false;
  for (const auto& k : r.kernels) lone |= k.name == "loneD" && k.graph_node == 0;
  EXPECT_TRUE(lone);
  const std::string text = ga::format_diff(r, ga::Format::kText);
  EXPECT_NE(text.find("nodeA(float*) [graph node 4]"), std::string::npos) << text;
  EXPECT_NE(ga::format_diff(r, ga::Format::kJson).find("\"graph_node\": 4"), std::string::npos);
}

// Kernels of more than DurationDigest::kExactSamples instances are compared through their
// summaries' sketches, as stand-in values: a 6% slower kernel of 300,000 instances is a
// regression, the same kernel with new noise and a 1% slower one are not.
TEST(Diff, SketchedKernelsGateAsTheirInstancesWould) {
  const auto summary = [](uint32_t seed, double a_scale, double b_scale) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.05);
    ga::StatsSummary s;
    s.has_matches = true;
    s.grouped[static_cast<size_t>(ga::GroupBy::kKernel)] = true;  // what diff_input() reports from
    for (const auto& [name, scale] : {std::pair{"kernelA", a_scale}, std::pair{"kernelB", b_scale}}) {
      ga::SummaryMatch& m = s.matches[ga::match_key("", name, 0)];
      m.name = name;
      for (int i = 0; i < 300'000; ++i) {
        m.exec.add(static_cast<int64_t>(10'000 * scale * std::exp(noise(rng))));
        m.queue.add(static_cast<int64_t>(2'000 * std::exp(noise(rng))));
      }
      EXPECT_FALSE(m.exec.exact());
    }
    return ga::diff_input(s, true);
  };
  const ga::DiffInput base = summary(1, 1.0, 1.0);
  const ga::DiffReport same = ga::diff_inputs(base, summary(2, 1.0, 1.0));
  EXPECT_EQ(same.regressions, 0u);
  EXPECT_EQ(same.sketched_matches, 4u);  // both kernels on both sides
  const ga::DiffReport slower = ga::diff_inputs(base, summary(3, 1.06, 1.01));
  EXPECT_EQ(slower.regressions, 1u);
  ASSERT_TRUE(find(slower, "kernelA"));
  EXPECT_TRUE(find(slower, "kernelA")->regression);
  EXPECT_FALSE(find(slower, "kernelB")->regression);
}
