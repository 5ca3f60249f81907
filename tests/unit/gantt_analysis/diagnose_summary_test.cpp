// diagnose from summaries: the rules that run on a summary find what they find on the capture
// (through the file message too, and over merges in any grouping), the others are listed as
// not run, and a version 1 summary runs none of them.
#include <gtest/gtest.h>

#include <gpuhook/v1/summary.pb.h>

#include "diagnose_builder.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/summary.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

// One rule's findings, each as its lines; `evidence` lines of evidence at most.
std::vector<std::string> findings(const ga::DiagnoseReport& r, const std::string& rule, size_t evidence = 99) {
  std::vector<std::string> out;
  for (const ga::Finding& f : r.findings) {
    if (f.rule != rule) continue;
    std::string text = std::string(ga::to_string(f.severity)) + "|" + f.title + "|" + f.condition + "|" + f.fix;
    for (size_t i = 0; i < f.evidence.size() && i < evidence; ++i) text += "|" + f.evidence[i];
    out.push_back(text);
  }
  return out;
}

const ga::RuleResult& result(const ga::DiagnoseReport& r, const std::string& rule) {
  for (const ga::RuleResult& x : r.rules)
    if (x.rule == rule) return x;
  throw std::out_of_range(rule);
}

ga::StatsSummary through_file(const ga::StatsSummary& s) {
  gpuhook::v1::StatsSummary message;
  ga::to_proto(s, &message);
  return ga::from_proto(message);
}

// Copies that do not overlap compute on device 0 (some by cudaMemcpy), and device 0 three times
// as busy as device 1.
gantt::Model copies_and_devices() {
  Builder b;
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t t = i * 30'000;
    b.copy(i % 2 ? "cudaMemcpy" : "cudaMemcpyAsync", 13, t, t + 1000, t + 11'000);
    b.k(kK, 13, t + 11'200, t + 12'000, t + 22'000);
  }
  b.k(kK2, 13, 100, 1000, 31'000, 256, 1);
  return b.done();
}

// Ranks 0..n-1 in one model, rank `slow` with three times the others' work.
gantt::Model ranks(int n, int slow) {
  Builder b(0);
  for (int r = 0; r < n; ++r) {
    if (r) b.next_capture(r);
    const uint64_t len = r == slow ? 30'000 : 10'000;
    for (uint64_t i = 0; i < 5; ++i) b.k(kK, 13, i * 50'000, i * 50'000 + 1000, i * 50'000 + 1000 + len);
  }
  return b.done();
}

gantt::Model one_rank(int rank, bool slow) {
  Builder b(rank);
  const uint64_t len = slow ? 30'000 : 10'000;
  for (uint64_t i = 0; i < 5; ++i) b.k(kK, 13, i * 50'000, i * 50'000 + 1000, i * 50'000 + 1000 + len);
  return b.done();
}

}  // namespace

TEST(DiagnoseSummary, CopyOverlapAndDeviceImbalanceFindWhatTheCaptureFinds) {
  const gantt::Model m = copies_and_devices();
  const ga::DiagnoseReport want = ga::diagnose(m);
  ASSERT_EQ(findings(want, "copy-overlap").size(), 1u);
  ASSERT_EQ(findings(want, "imbalance").size(), 1u);
  const ga::StatsSummary streams = ga::summarize(m, {ga::GroupBy::kStream}, 0);
  for (const ga::StatsSummary& s : {streams, through_file(streams)}) {
    const ga::DiagnoseReport got = ga::diagnose(s);
    EXPECT_EQ(findings(got, "copy-overlap"), findings(want, "copy-overlap"));
    EXPECT_EQ(findings(got, "imbalance"), findings(want, "imbalance"));
    EXPECT_EQ(got.rules.size(), ga::rule_names().size());
    for (const ga::RuleResult& x : got.rules) {
      const bool runs = x.rule == "stream-serialisation" || x.rule == "copy-overlap" || x.rule == "imbalance";
      EXPECT_EQ(x.ran, runs) << x.rule;
      if (!runs) {
        EXPECT_NE(x.note.find("run diagnose on the capture"), std::string::npos) << x.rule << ": " << x.note;
      }
    }
  }
  // The synchronous copies are counted from their launching calls' names.
  const ga::StatsSummary s = ga::summarize(m, {}, 0);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].copies, 4u);
  EXPECT_EQ(s.devices[0].sync_copies, 2u);
  EXPECT_EQ(s.devices[0].copy_bytes, 4u << 20);
}

TEST(DiagnoseSummary, StreamSerialisationFromTheStreamGroups) {
  // All on the legacy stream; one stream of several doing nearly all; spread out (no finding).
  Builder legacy, dominant, spread;
  for (uint64_t i = 0; i < 10; ++i) legacy.k(kK, 7, i * 1000, 10'000 + i * 10'000, 20'000 + i * 10'000);
  for (uint64_t i = 0; i < 20; ++i) dominant.k(kK, 13, i * 1000, 10'000 + i * 10'000, 20'000 + i * 10'000);
  dominant.k(kK2, 14, 500, 10'000, 10'500);
  for (uint64_t i = 0; i < 12; ++i) spread.k(kK, 13 + i % 4, i * 1000, 10'000 + (i / 4) * 10'000, 20'000 + (i / 4) * 10'000);
  size_t fired = 0;
  for (Builder* b : {&legacy, &dominant, &spread}) {
    const gantt::Model m = b->done();
    const std::vector<std::string> want = findings(ga::diagnose(m), "stream-serialisation");
    fired += want.size();
    EXPECT_EQ(findings(ga::diagnose(through_file(ga::summarize(m, {ga::GroupBy::kStream}, 0))), "stream-serialisation"), want);
    // Without stream groups the rule says what it needs.
    const ga::DiagnoseReport bare = ga::diagnose(ga::summarize(m, {}, 0));
    EXPECT_FALSE(result(bare, "stream-serialisation").ran);
    EXPECT_NE(result(bare, "stream-serialisation").note.find("stream groups"), std::string::npos);
  }
  EXPECT_EQ(fired, 2u);
}

// Set-up kernels on one stream, then the main phase on another (diagnose_test.cpp's two
// phases): the summary keeps each stream's kernel span, so it too leaves the set-up stream
// out, and names a stream that ran beside the main one, through the file and over a merge.
TEST(DiagnoseSummary, StreamSerialisationCountsOnlyTheStreamsThatRanBesideTheBusiestOne) {
  for (const bool beside : {false, true}) {
    Builder b;
    for (uint64_t i = 0; i < 4; ++i) b.k(kK2, 13, i * 1000, i * 1000 + 500, i * 1000 + 1000);
    for (uint64_t i = 0; i < 20; ++i) b.k(kK, 14, 100'000 + i * 1000, 100'000 + i * 10'000, 110'000 + i * 10'000);
    if (beside) b.k(kK2, 13, 150'000, 150'500, 151'000);
    const gantt::Model m = b.done();
    const std::vector<std::string> want = findings(ga::diagnose(m), "stream-serialisation");
    EXPECT_EQ(want.size(), beside ? 1u : 0u);
    const ga::StatsSummary s = through_file(ga::summarize(m, {ga::GroupBy::kStream}, 0));
    EXPECT_EQ(findings(ga::diagnose(s), "stream-serialisation"), want) << "beside " << beside;
    ga::StatsSummary twice = s;
    ga::merge(twice, s);  // two captures of the same run: a finding on each, or none
    EXPECT_EQ(findings(ga::diagnose(twice), "stream-serialisation").size(), 2 * want.size()) << "beside " << beside;
  }
  // A span that ends before it starts is a damaged summary.
  gpuhook::v1::StatsSummary message;
  Builder b;
  b.k(kK, 13, 0, 1000, 2000);
  ga::to_proto(ga::summarize(b.done(), {ga::GroupBy::kStream}, 0), &message);
  bool edited = false;
  for (auto& g : *message.mutable_by_stream()) {
    if (g.kernel_last_end_ns() == 0) continue;
    g.set_kernel_first_start_ns(g.kernel_last_end_ns() + 1);
    edited = true;
  }
  ASSERT_TRUE(edited);
  EXPECT_THROW(ga::from_proto(message), std::invalid_argument);
}

TEST(DiagnoseSummary, RankImbalanceFromEachRanksSummaryIsTheJobsFinding) {
  const gantt::Model job = ranks(3, 1);
  const ga::DiagnoseReport want = ga::diagnose(job);
  ASSERT_EQ(findings(want, "imbalance", 1).size(), 1u);
  EXPECT_NE(findings(want, "imbalance", 1).front().find("rank 1 is busier"), std::string::npos);
  // Each rank summarised where it ran, the summaries merged: the same finding (without the
  // straggler line, which needs each collective's arrivals).
  ga::StatsSummary merged = ga::summarize(one_rank(0, false), {}, 0);
  ga::merge(merged, through_file(ga::summarize(one_rank(1, true), {}, 0)));
  ga::merge(merged, ga::summarize(one_rank(2, false), {}, 0));
  EXPECT_EQ(findings(ga::diagnose(merged), "imbalance"), findings(want, "imbalance", 1));
  EXPECT_EQ(findings(ga::diagnose(ga::summarize(job, {}, 0)), "imbalance"), findings(want, "imbalance", 1));
  // A balanced job: nothing, from either.
  const gantt::Model even = ranks(3, -1);
  EXPECT_TRUE(findings(ga::diagnose(even), "imbalance").empty());
  EXPECT_TRUE(findings(ga::diagnose(ga::summarize(even, {}, 0)), "imbalance").empty());
}

TEST(DiagnoseSummary, MergeIsAssociativeForTheDiagnoseAggregates) {
  const ga::StatsSummary a = ga::summarize(one_rank(0, false), {}, 0), b = ga::summarize(copies_and_devices(), {}, 0),
                         c = ga::summarize(one_rank(2, true), {}, 0);
  ga::StatsSummary left = a;
  ga::merge(left, b);
  ga::merge(left, c);
  ga::StatsSummary bc = b;
  ga::merge(bc, c);
  ga::StatsSummary right = a;
  ga::merge(right, bc);
  gpuhook::v1::StatsSummary l, r;
  ga::to_proto(left, &l);
  ga::to_proto(right, &r);
  EXPECT_EQ(l.SerializeAsString(), r.SerializeAsString());
  EXPECT_EQ(ga::format_diagnose(ga::diagnose(left), ga::Format::kJson),
            ga::format_diagnose(ga::diagnose(right), ga::Format::kJson));
  ASSERT_EQ(left.captures.size(), 3u);
  EXPECT_EQ(left.captures[2].busy_ns_without_nccl, 5u * 30'000);
  EXPECT_FALSE(findings(ga::diagnose(left), "imbalance").empty());
}

TEST(DiagnoseSummary, AVersion1SummaryRunsNoRuleAndSaysWhy) {
  gpuhook::v1::StatsSummary message;
  ga::to_proto(ga::summarize(copies_and_devices(), {}, 0), &message);
  EXPECT_EQ(message.version(), 2u);
  message.set_version(1);
  const ga::StatsSummary old = ga::from_proto(message);
  EXPECT_FALSE(old.has_diagnose);
  const ga::DiagnoseReport r = ga::diagnose(old);
  EXPECT_TRUE(r.findings.empty());
  for (const char* rule : {"stream-serialisation", "copy-overlap", "imbalance"}) {
    EXPECT_FALSE(result(r, rule).ran) << rule;
    EXPECT_NE(result(r, rule).note.find("version 2"), std::string::npos) << result(r, rule).note;
  }
  // A merge with it lacks the aggregates too, and its file says version 1.
  ga::StatsSummary merged = ga::summarize(one_rank(0, false), {}, 0);
  ga::merge(merged, old);
  EXPECT_FALSE(merged.has_diagnose);
  ga::to_proto(merged, &message);
  EXPECT_EQ(message.version(), 1u);
}

TEST(DiagnoseSummary, HostileCopyAndKernelCountsAreRefused) {
  gpuhook::v1::StatsSummary message;
  ga::to_proto(ga::summarize(copies_and_devices(), {}, 0), &message);
  message.mutable_device(0)->set_sync_copies(message.device(0).copies() + 1);
  EXPECT_THROW(ga::from_proto(message), std::invalid_argument);
  ga::to_proto(ga::summarize(copies_and_devices(), {ga::GroupBy::kStream}, 0), &message);
  message.mutable_by_stream(0)->set_kernels(message.by_stream(0).exec().count() + 1);
  EXPECT_THROW(ga::from_proto(message), std::invalid_argument);
}
