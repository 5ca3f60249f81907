// Collective matching, straggler naming, busy imbalance and collective bandwidth on
// synthetic ranks where the answer is known.
#include <gtest/gtest.h>

#include <random>

#include "gantt/ranks/ranks.h"

namespace gantt {
namespace {

constexpr uint8_t kAllReduce = 1, kAllGather = 4, kSend = 6;
constexpr int32_t kFloat32 = 7;

// `steps` all-reduces over `n` ranks; rank `slow` (or none when -1) arrives `late_ns` late
// in a fraction `late_fraction` of them; the others arrive with small jitter.
std::vector<RankCollectiveCall> job(int n, int steps, int slow, uint64_t late_ns, double late_fraction, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> jitter(0, 3'000);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<RankCollectiveCall> calls;
  for (int s = 0; s < steps; ++s) {
    uint64_t base = 1'000'000'000 + static_cast<uint64_t>(s) * 1'000'000;
    std::vector<uint64_t> arrive(static_cast<size_t>(n));
    uint64_t last = 0;
    for (int r = 0; r < n; ++r) {
      arrive[static_cast<size_t>(r)] = base + static_cast<uint64_t>(jitter(rng));
      if (r == slow && coin(rng) < late_fraction) arrive[static_cast<size_t>(r)] += late_ns;
      last = std::max(last, arrive[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < n; ++r) {
      RankCollectiveCall c;
      c.capture = static_cast<uint16_t>(r);
      c.rank = r;
      c.global_rank = r;
      c.op = kAllReduce;
      c.comm_id = 99;
      c.sequence = static_cast<uint64_t>(s);
      c.count = 262'144;  // 1 MiB of f32
      c.datatype = kFloat32;
      c.nranks = n;
      c.kernel_start_ns = arrive[static_cast<size_t>(r)];
      c.kernel_end_ns = last + 100'000;  // 100 us of transfer after the last arrival
      calls.push_back(c);
    }
  }
  return calls;
}

TEST(Collectives, MatchesByCommAndSequence) {
  auto calls = job(4, 10, 2, 200'000, 1.0, 1);
  // A send (point-to-point) and a call without a kernel are not collectives to match.
  RankCollectiveCall p2p = calls[0];
  p2p.op = kSend;
  p2p.sequence = 500;
  calls.push_back(p2p);
  RankCollectiveCall nokernel = calls[0];
  nokernel.sequence = 501;
  nokernel.kernel_start_ns = 0;
  calls.push_back(nokernel);
  auto inst = match_collectives(calls);
  ASSERT_EQ(inst.size(), 10u);
  for (const auto& c : inst) {
    EXPECT_TRUE(c.complete);
    EXPECT_EQ(c.arrivals.size(), 4u);
    EXPECT_EQ(c.last_rank, 2);
    EXPECT_GE(c.arrival_spread_ns, 197'000u);
    EXPECT_EQ(c.transfer_ns, 100'000u);
    EXPECT_EQ(c.size_bytes, 1u << 20);
    EXPECT_LE(c.arrivals.front().start_ns, c.arrivals.back().start_ns);
  }
}

TEST(Collectives, NamesTheSlowRank) {
  auto inst = match_collectives(job(4, 50, 3, 400'000, 0.9, 2));
  StragglerReport r = find_straggler(inst);
  EXPECT_EQ(r.straggler, 3) << r.reason;
  EXPECT_GE(r.straggler_last_fraction, 0.8);
  EXPECT_GT(r.straggler_wait_caused_ns, 40u * 3u * 390'000u);
  ASSERT_EQ(r.ranks.size(), 4u);
  EXPECT_GT(r.ranks[3].lateness_median_ns, 390'000);
  EXPECT_LT(r.ranks[0].lateness_median_ns, 5'000);
  EXPECT_NE(r.reason.find("rank 3"), std::string::npos);
}

TEST(Collectives, BalancedTwinHasNoStraggler) {
  auto inst = match_collectives(job(4, 50, -1, 0, 0, 3));
  StragglerReport r = find_straggler(inst);
  EXPECT_EQ(r.straggler, -1) << r.reason;
  EXPECT_NE(r.reason.find("no straggler"), std::string::npos);
  // Too few collectives: nobody is named.
  StragglerReport few = find_straggler(match_collectives(job(4, 2, 1, 900'000, 1.0, 4)));
  EXPECT_EQ(few.straggler, -1);
}

// Issue 22 item 13: the balanced twin on a loaded machine. Every rank's host thread is
// descheduled now and then (exponential delays), one rank more than the others: it comes
// last at about 2/3 of 30 collectives, a median ~55 us late, but its lateness varies as much
// as it amounts to. That is jitter, not a straggler (the old rule named it).
std::vector<RankCollectiveCall> loaded_twin(uint32_t seed, uint64_t transfer_ns, int slow = -1, uint64_t slow_ns = 0) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> others(1.0 / 12'000), unlucky(1.0 / 80'000);
  auto calls = job(4, 30, -1, 0, 0, seed);
  std::vector<uint64_t> extra(calls.size());
  for (size_t i = 0; i < calls.size(); ++i)
    extra[i] = static_cast<uint64_t>(calls[i].global_rank == 3 ? unlucky(rng) : others(rng)) +
               (calls[i].global_rank == slow ? slow_ns : 0);
  for (size_t s = 0; s < calls.size(); s += 4) {
    uint64_t last = 0;
    for (size_t i = s; i < s + 4; ++i) last = std::max(last, calls[i].kernel_start_ns += extra[i]);
    for (size_t i = s; i < s + 4; ++i) calls[i].kernel_end_ns = last + transfer_ns;
  }
  return calls;
}

TEST(Collectives, ArrivalJitterOnALoadedMachineIsNoStraggler) {
  int named_by_the_old_rule = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    StragglerReport r = find_straggler(match_collectives(loaded_twin(seed, 100'000)));
    EXPECT_EQ(r.straggler, -1) << "seed " << seed << ": " << r.reason;
    const RankStraggling& three = r.ranks[3];
    named_by_the_old_rule += three.times_last * 2 >= three.collectives && three.lateness_median_ns >= 20'000;
  }
  EXPECT_GE(named_by_the_old_rule, 5);  // the case is the one that failed: last most often, > 20 us late
  // The real straggler under the same jitter is still named.
  StragglerReport r = find_straggler(match_collectives(loaded_twin(7, 100'000, 2, 400'000)));
  EXPECT_EQ(r.straggler, 2) << r.reason;
}

TEST(Collectives, LatenessSmallAgainstTheCollectiveItselfIsNoStraggler) {
  // Rank 1 is always 30 us late, with no jitter at all, to a collective that takes 5 ms:
  // nobody would fix that.
  auto calls = job(4, 30, 1, 30'000, 1.0, 9);
  for (auto& c : calls) c.kernel_end_ns += 4'900'000;
  StragglerReport r = find_straggler(match_collectives(calls));
  EXPECT_EQ(r.straggler, -1) << r.reason;
  // The same lateness to a 100 us collective is a straggler.
  EXPECT_EQ(find_straggler(match_collectives(job(4, 30, 1, 30'000, 1.0, 9))).straggler, 1);
}

TEST(Collectives, IncompleteCollectivesAreNotJudged) {
  auto calls = job(4, 20, 1, 500'000, 1.0, 5);
  std::vector<RankCollectiveCall> missing;
  for (const auto& c : calls)
    if (c.global_rank != 0) missing.push_back(c);  // rank 0's capture is missing
  auto inst = match_collectives(missing);
  for (const auto& c : inst) EXPECT_FALSE(c.complete);
  EXPECT_EQ(find_straggler(inst).collectives, 0u);
}

TEST(Collectives, BusFactorsAndSizes) {
  EXPECT_DOUBLE_EQ(bus_factor(kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(5, 8), 7.0 / 8.0);   // reduce-scatter
  EXPECT_DOUBLE_EQ(bus_factor(8, 2), 0.5);         // all-to-all
  EXPECT_DOUBLE_EQ(bus_factor(2, 8), 1.0);         // broadcast
  EXPECT_DOUBLE_EQ(bus_factor(3, 8), 1.0);         // reduce
  EXPECT_EQ(collective_size_bytes(kAllReduce, 1000, kFloat32, 4), 4000u);
  EXPECT_EQ(collective_size_bytes(kAllGather, 1000, kFloat32, 4), 16000u);
  EXPECT_EQ(collective_size_bytes(kAllReduce, 10, 9 /*bf16*/, 4), 20u);
  EXPECT_STREQ(nccl_op_name(5), "ReduceScatter");
}

TEST(Collectives, StatsByCollective) {
  auto inst = match_collectives(job(4, 10, 2, 200'000, 1.0, 6));
  auto rows = collective_stats(inst);
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  EXPECT_EQ(row.op, "AllReduce");
  EXPECT_EQ(row.size_class_bytes, 1u << 20);
  EXPECT_EQ(row.count, 10u);
  EXPECT_EQ(row.transfer_ns, 10u * 100'000u);
  // 1 MiB in 100 us: 10.48576 GB/s algorithm bandwidth, x1.5 on the bus for 4 ranks.
  EXPECT_NEAR(row.algbw_gbps, 10.48576, 1e-9);
  EXPECT_NEAR(row.busbw_gbps, 15.72864, 1e-9);
  EXPECT_GE(row.wait_ns, 10u * 3u * 197'000u);
  std::string table = format_collective_stats(rows);
  EXPECT_NE(table.find("AllReduce"), std::string::npos);
  EXPECT_NE(table.find("1 MiB"), std::string::npos);
  EXPECT_NE(format_collective_stats({}).find("no NCCL collectives"), std::string::npos);
}

TEST(Collectives, BusyImbalance) {
  std::vector<RankIntervals> ranks = {
      {0, {{0, 100}, {50, 150}, {200, 300}}},  // union 250
      {1, {{0, 250}}},                          // 250
      {2, {{0, 500}, {100, 200}}},              // 500
      {3, {{10, 10}}},                          // empty interval: 0
  };
  ImbalanceReport r = busy_imbalance(ranks);
  ASSERT_EQ(r.ranks.size(), 4u);
  EXPECT_EQ(r.ranks[0].busy_ns, 250u);
  EXPECT_EQ(r.ranks[0].span_ns, 300u);
  EXPECT_EQ(r.ranks[2].busy_ns, 500u);
  EXPECT_EQ(r.ranks[3].busy_ns, 0u);
  EXPECT_EQ(r.busiest_rank, 2);
  EXPECT_DOUBLE_EQ(r.mean_busy_ns, 250.0);
  EXPECT_DOUBLE_EQ(r.imbalance, 1.0);
}

}  // namespace
}  // namespace gantt
