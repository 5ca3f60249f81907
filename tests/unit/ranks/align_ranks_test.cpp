// Cross-capture alignment on synthetic captures whose true offsets are known.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "gantt/ranks/ranks.h"

namespace gantt {
namespace {

// A job: `offsets[h]` is what host h's monotonic clock reads minus the reference's at the
// same instant; `ntp_error[h]` is how wrong its REALTIME clock is.
struct Job {
  std::vector<RankClockInput> inputs;
};

constexpr uint64_t kRealtimeBase = 1'760'000'000'000'000'000ull;

RankClockInput capture(const std::string& host, const std::string& boot, int64_t clock_offset, int64_t ntp_error) {
  RankClockInput in;
  in.host = host;
  in.boot_id = boot;
  in.start_monotonic_raw_ns = static_cast<uint64_t>(1'000'000'000'000 + clock_offset);
  in.start_realtime_ns = static_cast<uint64_t>(static_cast<int64_t>(kRealtimeBase) + ntp_error);
  return in;
}

// Adds `n` collectives on comm 7 ending at true instants 1 ms apart, seen by every capture
// in its own clock with uniform jitter, and a fraction of wild outliers.
void add_collectives(std::vector<RankClockInput>& inputs, const std::vector<int64_t>& clock_offsets, int n,
                     int64_t jitter_ns, double outlier_fraction, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(-jitter_ns, jitter_ns);
  std::uniform_real_distribution<double> coin(0, 1);
  for (int k = 0; k < n; ++k) {
    uint64_t true_end = 1'000'050'000'000ull + static_cast<uint64_t>(k) * 1'000'000;
    for (size_t c = 0; c < inputs.size(); ++c) {
      int64_t t = static_cast<int64_t>(true_end) + clock_offsets[c] + jitter(rng);
      if (coin(rng) < outlier_fraction) t += 3'000'000;  // a rank stuck on the way out
      inputs[c].ends.push_back({7, static_cast<uint64_t>(k), static_cast<uint64_t>(t)});
    }
  }
}

TEST(AlignRanks, SameBootMeansNoShift) {
  std::vector<RankClockInput> in = {capture("a", "boot-1", 0, 0), capture("a", "boot-1", 0, 1234)};
  add_collectives(in, {0, 0}, 10, 50'000, 0, 1);
  RankAlignment al = align_ranks(in);
  ASSERT_EQ(al.captures.size(), 2u);
  EXPECT_EQ(al.captures[0].offset_ns, 0);
  EXPECT_EQ(al.captures[1].offset_ns, 0);
  EXPECT_EQ(al.captures[0].method, RankAlignMethod::kReference);
  EXPECT_EQ(al.captures[1].method, RankAlignMethod::kSameBoot);
  EXPECT_EQ(al.matched_collectives, 0u);  // one clock group: nothing to match across
  // ...and the summary says so, never "0 shared collectives" of ranks that shared them.
  EXPECT_EQ(summarize(al), "ranks aligned: 2 captures, 1 clock group: collectives not matched (one clock needs no alignment)");
}

TEST(AlignRanks, RecoversHostOffsetsDespiteNtpErrorAndOutliers) {
  // Four ranks on three hosts; hosts b and c are +5 ms and -5 ms off, and their REALTIME
  // clocks are off by 1.7 ms and -0.9 ms (NTP-grade).
  std::vector<int64_t> offsets = {0, 0, 5'000'000, -5'000'000};
  std::vector<RankClockInput> in = {capture("a", "A", offsets[0], 0), capture("a", "A", offsets[1], 0),
                                    capture("b", "B", offsets[2], 1'700'000), capture("c", "C", offsets[3], -900'000)};
  add_collectives(in, offsets, 200, 3'000, 0.05, 42);
  RankAlignment al = align_ranks(in);
  for (size_t c = 0; c < in.size(); ++c) {
    SCOPED_TRACE(c);
    // offset maps the capture's clock onto the reference: -clock_offset.
    EXPECT_LE(std::llabs(al.captures[c].offset_ns + offsets[c]), 1'000) << al.captures[c].offset_ns;
  }
  EXPECT_EQ(al.captures[2].method, RankAlignMethod::kCollectives);
  EXPECT_EQ(al.captures[3].method, RankAlignMethod::kCollectives);
  // The anchors alone were off by the NTP error (host b's REALTIME runs 1.7 ms ahead).
  EXPECT_EQ(al.captures[2].anchor_offset_ns, -5'000'000 + 1'700'000);
  EXPECT_GT(al.captures[2].outliers, 0u);
  EXPECT_EQ(al.matched_collectives, 200u);
  EXPECT_LT(al.residual_median_ns, 10'000);
  auto lines = describe(al, in);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[2].find("refined by collectives"), std::string::npos) << lines[2];
  EXPECT_NE(summarize(al).find("3 clock groups"), std::string::npos) << summarize(al);
}

TEST(AlignRanks, ManyHostsDoNotDriftTogether) {
  // Eight hosts whose REALTIME anchors are all off: a consensus over anchor-placed hosts
  // could settle every non-reference host on a common wrong shift; placing them outward
  // from the reference must not.
  std::vector<int64_t> offsets;
  std::vector<RankClockInput> in;
  for (int h = 0; h < 8; ++h) {
    int64_t off = h == 0 ? 0 : (h % 2 ? 1 : -1) * 700'000 * h;
    int64_t ntp = h == 0 ? 0 : 300'000 + 50'000 * h;  // all wrong the same way
    for (int r = 0; r < 8; ++r) {
      offsets.push_back(off);
      in.push_back(capture("h" + std::to_string(h), "boot" + std::to_string(h), off, ntp));
    }
  }
  add_collectives(in, offsets, 40, 0, 0, 9);
  RankAlignment al = align_ranks(in);
  for (size_t c = 0; c < in.size(); ++c) EXPECT_EQ(al.captures[c].offset_ns, -offsets[c]) << c;
  EXPECT_EQ(al.residual_max_ns, 0);
}

TEST(AlignRanks, TooFewCollectivesKeepsTheAnchor) {
  std::vector<int64_t> offsets = {0, 2'000'000};
  std::vector<RankClockInput> in = {capture("a", "A", 0, 0), capture("b", "B", offsets[1], 300'000)};
  add_collectives(in, offsets, 2, 0, 0, 3);
  RankAlignment al = align_ranks(in);
  EXPECT_EQ(al.captures[1].method, RankAlignMethod::kRealtimeAnchor);
  EXPECT_EQ(al.captures[1].offset_ns, -2'000'000 + 300'000);
}

TEST(AlignRanks, NoAnchorButCollectivesAndChains) {
  // Host c shares collectives only with host b (another communicator), b with a.
  std::vector<RankClockInput> in = {capture("a", "A", 0, 0), capture("b", "B", 700'000, 0), capture("c", "C", -300'000, 0)};
  for (auto& i : in) i.start_realtime_ns = 0;  // no anchors at all
  for (int k = 0; k < 20; ++k) {
    uint64_t t = 2'000'000'000'000ull + static_cast<uint64_t>(k) * 10'000;
    in[0].ends.push_back({1, static_cast<uint64_t>(k), t});
    in[1].ends.push_back({1, static_cast<uint64_t>(k), t + 700'000});
    uint64_t u = t + 5'000;
    in[1].ends.push_back({2, static_cast<uint64_t>(k), u + 700'000});
    in[2].ends.push_back({2, static_cast<uint64_t>(k), u - 300'000});
  }
  RankAlignment al = align_ranks(in);
  EXPECT_EQ(al.captures[1].offset_ns, -700'000);
  EXPECT_EQ(al.captures[2].offset_ns, 300'000);
  EXPECT_EQ(al.captures[2].method, RankAlignMethod::kCollectives);
}

TEST(AlignRanks, NothingToGoOnLeavesCaptureUnaligned) {
  std::vector<RankClockInput> in = {capture("a", "A", 0, 0), capture("b", "", 123, 0)};
  in[1].start_realtime_ns = 0;
  RankAlignment al = align_ranks(in);
  EXPECT_EQ(al.captures[1].method, RankAlignMethod::kUnaligned);
  EXPECT_EQ(al.captures[1].offset_ns, 0);
  EXPECT_TRUE(align_ranks({}).captures.empty());
}

TEST(AlignRanks, UnknownBootIdsAreNeverShared) {
  std::vector<int64_t> offsets = {0, 40'000};
  std::vector<RankClockInput> in = {capture("a", "", 0, 0), capture("b", "", offsets[1], 0)};
  add_collectives(in, offsets, 30, 0, 0, 5);
  RankAlignment al = align_ranks(in);
  EXPECT_NE(al.captures[0].group, al.captures[1].group);
  EXPECT_EQ(al.captures[1].offset_ns, -40'000);
}

}  // namespace
}  // namespace gantt
