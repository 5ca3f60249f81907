// Point-to-point transfers matched across ranks (analysis/p2p.h), pipeline bubbles
// (analysis/pipeline.h) and the two diagnose rules on them, on hand-built models whose
// numbers are worked out in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gantt/analysis/comm.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/p2p.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/model/model.h"

namespace {

namespace v1 = gpuhook::v1;
namespace ga = gantt::analysis;
using gantt::kNone;

// A model of `captures` ranks (one device each) built row by row.
class Job {
 public:
  explicit Job(int captures) { m.captures.resize(static_cast<size_t>(captures)); }

  // A top-level NVTX range "name" on capture c: returns its row.
  uint32_t range(uint16_t c, const std::string& name, uint64_t start, uint64_t end) {
    gantt::RangeTable& r = m.ranges;
    r.capture.push_back(c), r.kind.push_back(gantt::RangeKind{}), r.thread.push_back(0), r.name.push_back(string(name));
    r.domain.push_back(0), r.start_ns.push_back(start), r.end_ns.push_back(end), r.parent.push_back(kNone);
    r.depth.push_back(0), r.color.push_back(0), r.category.push_back(0);
    return static_cast<uint32_t>(r.capture.size() - 1);
  }
  uint32_t kernel(uint16_t c, uint64_t start, uint64_t end, uint32_t in_range, gantt::EventKind kind = gantt::EventKind::kKernel) {
    m.events.for_each_column([](auto& column, auto init) { column.push_back(init); });
    const uint32_t e = static_cast<uint32_t>(m.events.size() - 1);
    m.events.kind[e] = kind;
    m.events.capture[e] = c;
    m.events.device[e] = 0;
    m.events.start_ns[e] = start;
    m.events.end_ns[e] = end;
    m.events.range[e] = in_range;
    m.events.correlation_id[e] = e + 1;
    return e;
  }
  // An ncclSend/ncclRecv of `bytes` between `rank` and `peer`, called at `call_ns`, whose
  // kernel ran [start, end).
  uint32_t p2p(bool send, uint16_t c, uint64_t comm, int32_t nranks, int32_t rank, int32_t peer, uint64_t bytes,
               uint64_t call_ns, uint64_t start, uint64_t end, uint32_t in_range = kNone) {
    const uint32_t e = kernel(c, start, end, in_range, gantt::EventKind::kNccl);
    gantt::NcclTable& n = m.nccl;
    n.capture.push_back(c), n.op.push_back(send ? v1::NCCL_SEND : v1::NCCL_RECV), n.name.push_back(0), n.thread.push_back(0);
    n.count.push_back(bytes), n.datatype.push_back(7), n.bytes.push_back(bytes), n.reduce_op.push_back(-1);
    n.root_or_peer.push_back(peer), n.comm_id.push_back(comm), n.rank.push_back(rank), n.nranks.push_back(nranks);
    n.sequence.push_back(0), n.device.push_back(0), n.cuda_stream_id.push_back(0), n.start_ns.push_back(call_ns);
    n.end_ns.push_back(call_ns + 1), n.return_value.push_back(0), n.event.push_back(e), n.external_id.push_back(0);
    n.group_depth.push_back(0);
    return static_cast<uint32_t>(n.capture.size() - 1);
  }
  gantt::Model m;

 private:
  uint32_t string(const std::string& s) {
    for (uint32_t i = 0; i < m.strings.size(); ++i)
      if (m.strings[i] == s) return i;
    m.strings.push_back(s);
    return static_cast<uint32_t>(m.strings.size() - 1);
  }
};

// Two stages, one step each:
//   stage 0: forward [1000,2000), send to 1 [2000,2100), receive the gradient [2100,4100),
//            backward [4100,5000): step 4000, busy 1900, in flight 2100 with no own work -> bubble 2100
//   stage 1: receive the activations [500,2100), forward+backward [2100,4000), send back
//            [4000,4100): step 3600, busy 1900, bubble 1600 + 100 = 1700
// Over both: 3800 of 7600 = 50%; 1 micro-batch over 2 stages: ideal (2-1)/(1+2-1) = 50%.
Job two_stages(uint64_t comm = 0x77) {
  Job j(2);
  const uint32_t s0 = j.range(0, "step", 900, 5100), s1 = j.range(1, "step", 400, 4200);
  j.kernel(0, 1000, 2000, s0);
  j.p2p(true, 0, comm, 2, 0, 1, 1 << 20, 950, 2000, 2100, s0);
  j.p2p(false, 0, comm, 2, 0, 1, 1 << 20, 960, 2100, 4100, s0);
  j.kernel(0, 4100, 5000, s0);
  j.kernel(0, 9000, 9500, kNone);  // after the step: not counted
  j.p2p(false, 1, comm, 2, 1, 0, 1 << 20, 450, 500, 2100, s1);
  j.kernel(1, 2100, 4000, s1);
  j.p2p(true, 1, comm, 2, 1, 0, 1 << 20, 460, 4000, 4100, s1);
  return j;
}

}  // namespace

TEST(P2p, MatchesTheKthSendWithTheKthReceiveAndTimesTheTransfer) {
  Job j(2);
  // Rank 0 sends twice to rank 1; rank 1 receives twice, and once more from a rank 0 whose
  // third send is not in the capture.
  j.p2p(true, 0, 0x5, 2, 0, 1, 1000, 10, 100, 200);   // the receiver was already waiting: from 100
  j.p2p(true, 0, 0x5, 2, 0, 1, 3000, 20, 300, 310);   // eager: ended before the receiver started
  j.p2p(false, 1, 0x5, 2, 1, 0, 1000, 5, 50, 230);
  j.p2p(false, 1, 0x5, 2, 1, 0, 3000, 6, 400, 450);
  j.p2p(false, 1, 0x5, 2, 1, 0, 9, 7, 500, 600);
  j.p2p(true, 0, 0x5, 2, 0, 0, 1, 8, 1, 2);          // to itself: not a transfer
  const ga::P2pMatch match = ga::match_p2p(j.m);
  ASSERT_EQ(match.transfers.size(), 2u);
  EXPECT_EQ(match.unmatched_recvs, 1u);
  EXPECT_EQ(match.unmatched_sends, 0u);
  const ga::P2pTransfer& a = match.transfers[0];
  EXPECT_EQ(a.from, 0);
  EXPECT_EQ(a.to, 1);
  EXPECT_EQ(a.bytes, 1000u);
  EXPECT_EQ(a.start_ns, 100u);
  EXPECT_EQ(a.end_ns, 230u);
  EXPECT_EQ(a.transfer_ns(), 130u);
  const ga::P2pTransfer& b = match.transfers[1];
  EXPECT_EQ(b.bytes, 3000u);
  EXPECT_EQ(b.start_ns, 400u);  // the later of the two starts
  EXPECT_EQ(b.transfer_ns(), 50u);

  // The matrix times rank 0 -> 1 by the transfers: 4000 B in 180 ns, not the sends' 110 ns.
  const auto ms = ga::comm_matrices(j.m);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].p2p_bytes[ms[0].at(0, 1)], 4000u);
  EXPECT_EQ(ms[0].p2p_ns[ms[0].at(0, 1)], 180u);
}

TEST(Pipeline, BubblePerStageFromIdleTimeWithATransferInFlight) {
  Job j = two_stages();
  // A communicator whose traffic skips a rank is not a pipeline, nor one of 2^31 - 1 ranks.
  j.p2p(true, 0, 0x99, 3, 0, 2, 64, 1, 10, 20);
  j.p2p(true, 0, 0x98, INT32_MAX, 0, 1, 64, 1, 10, 20);
  j.p2p(false, 1, 0x98, INT32_MAX, 1, 0, 64, 1, 10, 20);
  const auto reports = ga::pipeline_reports(j.m);
  ASSERT_EQ(reports.size(), 1u);
  const ga::PipelineReport& r = reports[0];
  EXPECT_EQ(r.comm_id, 0x77u);
  EXPECT_EQ(r.step, "step");
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].steps, 1u);
  EXPECT_EQ(r.stages[0].step_ns, 4000u);
  EXPECT_EQ(r.stages[0].busy_ns, 1900u);
  EXPECT_EQ(r.stages[0].bubble_ns, 2100u);
  EXPECT_EQ(r.stages[1].step_ns, 3600u);
  EXPECT_EQ(r.stages[1].bubble_ns, 1700u);
  EXPECT_DOUBLE_EQ(r.bubble_share(), 3800.0 / 7600.0);
  EXPECT_DOUBLE_EQ(r.micro_batches, 1.0);
  EXPECT_DOUBLE_EQ(r.ideal_share(), 0.5);
  const std::string text = ga::format_pipeline_stats(j.m, reports, "text");
  EXPECT_NE(text.find("bubble: 50.0% of the stages' step time"), std::string::npos) << text;

  // A step range the captures do not have: no steps, no bubble, no crash.
  const auto none = ga::pipeline_reports(j.m, "no_such_range");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].stages[0].steps, 0u);
  EXPECT_DOUBLE_EQ(none[0].bubble_share(), 0.0);
}

// sendrecv_perf between two ranks: each sends to the other and receives from it in one group
// (one SendRecv kernel per rank). No direction, so no pipeline, whatever the idle time.
TEST(Pipeline, AnExchangeOfPairedSendsAndReceivesIsNoPipeline) {
  Job j(2);
  for (uint64_t step = 0; step < 4; ++step) {
    const uint64_t t = 1000 + step * 10'000;
    for (uint16_t r = 0; r < 2; ++r) {
      const uint32_t send = j.p2p(true, r, 0x55, 2, r, 1 - r, 1 << 20, t, t + 100, t + 5000);
      const uint32_t recv = j.p2p(false, r, 0x55, 2, r, 1 - r, 1 << 20, t + 1, t + 100, t + 5000);
      j.m.nccl.event[recv] = j.m.nccl.event[send];  // the group's one kernel
    }
  }
  std::vector<std::string> notes;
  EXPECT_TRUE(ga::pipeline_reports(j.m, "", &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("an exchange"), std::string::npos) << notes[0];
  // One send of its own (a warm-up micro-batch) gives the communicator its direction back.
  j.p2p(true, 0, 0x55, 2, 0, 1, 1 << 20, 90'000, 90'100, 91'000);
  EXPECT_EQ(ga::pipeline_reports(j.m).size(), 1u);
}

TEST(Pipeline, OwnWorkDuringATransferIsNoBubble) {
  Job j = two_stages();
  // Stage 0 also computes [2100,3100) on another stream while it waits for the gradient:
  // 1000 ns of the wait are covered, the bubble falls from 2100 to 1100.
  j.kernel(0, 2100, 3100, 0);
  const auto r = ga::pipeline_reports(j.m);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].stages[0].bubble_ns, 1100u);
  EXPECT_EQ(r[0].stages[0].busy_ns, 2900u);
}

TEST(Pipeline, AnUnnamedTopLevelRangeIsNotTheStep) {
  // The same two stages with their work in unnamed ranges (a push whose message the hook could
  // not read is recorded without a name): no step range is found, so the step is the whole
  // capture, as the report says, including stage 0's kernel at [9000, 9500).
  Job j(2);
  const uint32_t s0 = j.range(0, "", 900, 5100), s1 = j.range(1, "", 400, 4200);
  j.kernel(0, 1000, 2000, s0);
  j.p2p(true, 0, 0x77, 2, 0, 1, 1 << 20, 950, 2000, 2100, s0);
  j.p2p(false, 0, 0x77, 2, 0, 1, 1 << 20, 960, 2100, 4100, s0);
  j.kernel(0, 4100, 5000, s0);
  j.kernel(0, 9000, 9500, kNone);
  j.p2p(false, 1, 0x77, 2, 1, 0, 1 << 20, 450, 500, 2100, s1);
  j.kernel(1, 2100, 4000, s1);
  j.p2p(true, 1, 0x77, 2, 1, 0, 1 << 20, 460, 4000, 4100, s1);
  const auto r = ga::pipeline_reports(j.m);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, "");
  ASSERT_EQ(r[0].stages.size(), 2u);
  EXPECT_EQ(r[0].stages[0].steps, 1u);
  EXPECT_EQ(r[0].stages[0].step_ns, 8500u);  // 1000 to 9500
}

TEST(Pipeline, ATieBetweenStepRangesGoesToTheNameFirstInByteOrder) {
  // Each stage's send and receive in a top-level range of its own name, "zeta" made first (the
  // lower string id), "alpha" after: two votes each. The step is "alpha" whichever was interned
  // first, as a scan of the captures (which numbers strings its own way) picks it too.
  Job j(2);
  const uint32_t z0 = j.range(0, "zeta", 900, 2050), a0 = j.range(0, "alpha", 2050, 5100);
  const uint32_t z1 = j.range(1, "zeta", 400, 2000), a1 = j.range(1, "alpha", 3900, 4200);
  j.p2p(true, 0, 0x77, 2, 0, 1, 1 << 20, 950, 2000, 2100, z0);
  j.p2p(false, 0, 0x77, 2, 0, 1, 1 << 20, 2060, 2100, 4100, a0);
  j.p2p(false, 1, 0x77, 2, 1, 0, 1 << 20, 450, 500, 2100, z1);
  j.p2p(true, 1, 0x77, 2, 1, 0, 1 << 20, 3950, 4000, 4100, a1);
  const auto r = ga::pipeline_reports(j.m);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, "alpha");
}

TEST(Pipeline, ThousandsOfCommunicatorsOnTheSameGpusAreBoundedAndCounted) {
  // Every pipeline reads the work on its stages' GPUs: a file that gives thousands of
  // communicators the same two GPUs made that thousands of passes over every kernel (20,000
  // communicators in a 110 KiB capture kept stats --by pipeline busy for six minutes). The
  // busiest kMaxPipelines are analysed, the rest counted in a note.
  Job j = two_stages(0x77);  // two sends and two receives: among the busiest, kept
  const uint64_t pipelines = 3 * ga::kMaxPipelines;
  for (uint64_t k = 0; k < pipelines; ++k) {
    j.p2p(true, 0, 0x1000 + k, 2, 0, 1, 64, 6000 + k, 6000 + k, 6010 + k);
    j.p2p(false, 1, 0x1000 + k, 2, 1, 0, 64, 6000 + k, 6000 + k, 6020 + k);
  }
  std::vector<std::string> notes;
  const auto reports = ga::pipeline_reports(j.m, "", &notes);
  ASSERT_EQ(reports.size(), ga::kMaxPipelines);
  EXPECT_EQ(reports[0].comm_id, 0x77u);  // by communicator id, as without the bound
  EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end(),
                             [](const ga::PipelineReport& a, const ga::PipelineReport& b) { return a.comm_id < b.comm_id; }));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find(std::to_string(pipelines + 1) + " communicators look like pipelines"), std::string::npos)
      << notes[0];
  EXPECT_NE(ga::format_pipeline_stats(j.m, reports, "text", notes).find(notes[0]), std::string::npos);
  // The kept pipeline reads as it does alone.
  const auto alone = ga::pipeline_reports(two_stages(0x77).m);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(reports[0].stages[0].bubble_ns, alone[0].stages[0].bubble_ns);
  EXPECT_EQ(reports[0].stages[1].bubble_ns, alone[0].stages[1].bubble_ns);
}

TEST(Diagnose, PipelineBubbleFiresOverAQuarterOfTheStep) {
  Job j = two_stages();
  const ga::DiagnoseReport r = ga::diagnose(j.m);
  const auto it = std::find_if(r.findings.begin(), r.findings.end(), [](const ga::Finding& f) { return f.rule == "pipeline-bubble"; });
  ASSERT_NE(it, r.findings.end());
  EXPECT_NE(it->title.find("50.0%"), std::string::npos) << it->title;

  // The same pipeline with its stages busy through the waits: no bubble, no finding.
  Job busy = two_stages();
  busy.kernel(0, 2000, 4100, 0);
  busy.kernel(1, 500, 2100, 1);
  busy.kernel(1, 4000, 4100, 1);
  const ga::DiagnoseReport quiet = ga::diagnose(busy.m);
  EXPECT_TRUE(std::none_of(quiet.findings.begin(), quiet.findings.end(),
                           [](const ga::Finding& f) { return f.rule == "pipeline-bubble"; }));
}

namespace {

// A 4-rank chain with three 1 MiB transfers on each of 0->1, 1->2, 2->3; each takes 100 us
// (10.5 GB/s), those of 1->2 `slow_factor` times longer.
Job chain(uint64_t slow_factor) {
  Job j(4);
  uint64_t t = 1'000'000;
  for (int k = 0; k < 3; ++k)
    for (int32_t from = 0; from < 3; ++from) {
      const uint64_t ns = 100'000 * (from == 1 ? slow_factor : 1);
      j.p2p(true, static_cast<uint16_t>(from), 0x31, 4, from, from + 1, 1 << 20, t, t, t + 10);
      j.p2p(false, static_cast<uint16_t>(from + 1), 0x31, 4, from + 1, from, 1 << 20, t, t, t + ns);
      t += 1'000'000;
    }
  return j;
}

const ga::Finding* finding(const ga::DiagnoseReport& r, const std::string& rule) {
  for (const ga::Finding& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

}  // namespace

TEST(Diagnose, SlowLinkNamesThePairUnderHalfTheMedian) {
  const Job slow = chain(4);  // 2.6 GB/s against a median of 10.5
  const ga::DiagnoseReport r = ga::diagnose(slow.m);
  const ga::Finding* f = finding(r, "slow-link");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("ranks 1 -> 2"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("2.6 GB/s"), std::string::npos) << f->title;

  EXPECT_NE(f->condition.find("under 50.0% of the median"), std::string::npos) << f->condition;

  EXPECT_EQ(finding(ga::diagnose(chain(1).m), "slow-link"), nullptr);  // all alike
}
