#include "gantt/noise/noise.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

// U counted the slow way, pair by pair: an independent check of the rank-sum shortcut.
double brute_u(const std::vector<int64_t>& base, const std::vector<int64_t>& next) {
  double u = 0;
  for (int64_t y : next)
    for (int64_t x : base) u += y > x ? 1.0 : (y == x ? 0.5 : 0.0);
  return u;
}

// Kernel durations with multiplicative noise, as a GPU (or the simulator) produces them.
std::vector<int64_t> noisy(uint32_t seed, size_t n, double median_ns, double rel_sd) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, rel_sd);
  std::vector<int64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<int64_t>(median_ns * std::exp(noise(rng))));
  return v;
}

}  // namespace

TEST(MannWhitney, SeparatedSamplesHaveTheKnownStatistic) {
  const std::vector<int64_t> base{1, 2, 3}, next{4, 5, 6};
  const gantt::RankTest r = gantt::mann_whitney(base, next);
  ASSERT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(r.u_new, 9.0);
  // No ties: var = n1 n2 (n+1) / 12 = 5.25; continuity-corrected z = 4 / sqrt(5.25).
  EXPECT_NEAR(r.p_greater, 0.5 * std::erfc(4.0 / std::sqrt(5.25) / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(r.p_greater, 0.0404, 1e-3);  // the textbook asymptotic value for 3 vs 3
  EXPECT_GT(r.p_less, 0.98);
}

TEST(MannWhitney, TiesGetAverageRanksAndReduceTheVariance) {
  const std::vector<int64_t> base{1, 1, 2}, next{2, 3, 3};
  const gantt::RankTest r = gantt::mann_whitney(base, next);
  ASSERT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(r.u_new, 8.5);
  EXPECT_DOUBLE_EQ(r.u_new, brute_u(base, next));
  // Three tie groups of two: var = 9/12 * (7 - 18/30) = 4.8.
  EXPECT_NEAR(r.z, (8.5 - 4.5) / std::sqrt(4.8), 1e-12);
}

TEST(MannWhitney, MatchesPairCountingOnRandomSamplesWithTies) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(0, 9);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int64_t> a, b;
    for (int i = 0; i < 5 + trial; ++i) a.push_back(d(rng));
    for (int i = 0; i < 3 + 2 * trial; ++i) b.push_back(d(rng) + trial % 3);
    EXPECT_DOUBLE_EQ(gantt::mann_whitney(a, b).u_new, brute_u(a, b)) << "trial " << trial;
  }
}

TEST(MannWhitney, SwappingSamplesSwapsTheTails) {
  const auto a = noisy(1, 40, 1000, 0.1), b = noisy(2, 30, 1100, 0.1);
  const gantt::RankTest ab = gantt::mann_whitney(a, b), ba = gantt::mann_whitney(b, a);
  EXPECT_NEAR(ab.p_greater, ba.p_less, 1e-12);
  EXPECT_NEAR(ab.z, -ba.z, 1e-12);
}

TEST(MannWhitney, IdenticalOrEmptySamplesAreNoEvidence) {
  const std::vector<int64_t> same{5, 5, 5}, empty;
  EXPECT_FALSE(gantt::mann_whitney(same, same).valid);
  EXPECT_FALSE(gantt::mann_whitney(same, empty).valid);
}

TEST(Summary, MedianAndPercentile) {
  const std::vector<int64_t> odd{9, 1, 5}, even{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(gantt::median(odd), 5.0);
  EXPECT_DOUBLE_EQ(gantt::median(even), 2.5);
  std::vector<int64_t> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(gantt::percentile(hundred, 0.95), 95);
  EXPECT_EQ(gantt::percentile(hundred, 0.0), 1);
  EXPECT_EQ(gantt::percentile(hundred, 1.0), 100);
  EXPECT_EQ(gantt::percentile(std::vector<int64_t>{}, 0.5), 0);
}

TEST(Bootstrap, IsDeterministicAndCoversTheTrueRatio) {
  const auto a = noisy(11, 200, 1000, 0.05), b = noisy(12, 200, 1200, 0.05);
  const gantt::RatioInterval r1 = gantt::bootstrap_median_ratio(a, b);
  const gantt::RatioInterval r2 = gantt::bootstrap_median_ratio(a, b);
  ASSERT_TRUE(r1.valid);
  EXPECT_EQ(r1.lo, r2.lo);
  EXPECT_EQ(r1.hi, r2.hi);
  EXPECT_LT(r1.lo, 1.2);
  EXPECT_GT(r1.hi, 1.2);
  EXPECT_GT(r1.lo, 1.0);
  EXPECT_LE(r1.lo, r1.ratio);
  EXPECT_GE(r1.hi, r1.ratio);
  // A different seed gives a (slightly) different interval: the seed is really used.
  const gantt::RatioInterval r3 = gantt::bootstrap_median_ratio(a, b, 0.99, 1000, 42);
  EXPECT_TRUE(r3.lo != r1.lo || r3.hi != r1.hi);
}

TEST(Bootstrap, ZeroBaseMedianIsInvalid) {
  const std::vector<int64_t> zeros{0, 0, 0}, some{1, 2, 3};
  EXPECT_FALSE(gantt::bootstrap_median_ratio(zeros, some).valid);
}

TEST(Compare, SameDistributionIsNotARegressionIn19Of20Seeds) {
  int regressions = 0;
  for (uint32_t s = 0; s < 20; ++s) {
    const auto a = noisy(100 + s, 50, 10'000, 0.03), b = noisy(200 + s, 50, 10'000, 0.03);
    regressions += gantt::compare_samples(a, b).verdict == gantt::Verdict::kRegression;
  }
  EXPECT_LE(regressions, 1);
}

TEST(Compare, TenPercentSlowerIsARegressionIn19Of20Seeds) {
  int regressions = 0;
  for (uint32_t s = 0; s < 20; ++s) {
    const auto a = noisy(300 + s, 50, 10'000, 0.03), b = noisy(400 + s, 50, 11'000, 0.03);
    regressions += gantt::compare_samples(a, b).verdict == gantt::Verdict::kRegression;
  }
  EXPECT_GE(regressions, 19);
}

TEST(Compare, FasterIsAnImprovement) {
  const auto a = noisy(5, 50, 10'000, 0.02), b = noisy(6, 50, 8'000, 0.02);
  EXPECT_EQ(gantt::compare_samples(a, b).verdict, gantt::Verdict::kImprovement);
}

TEST(Compare, ChangeBelowThresholdIsUnchanged) {
  const auto a = noisy(7, 200, 10'000, 0.001), b = noisy(8, 200, 10'300, 0.001);
  const gantt::Comparison c = gantt::compare_samples(a, b);
  EXPECT_NEAR(c.change, 0.03, 0.005);
  EXPECT_EQ(c.verdict, gantt::Verdict::kUnchanged);
  gantt::NoiseOptions tight;
  tight.threshold = 0.01;
  EXPECT_EQ(gantt::compare_samples(a, b, tight).verdict, gantt::Verdict::kRegression);
}

TEST(Compare, LargeChangeInHugeNoiseIsWithinNoise) {
  // 10% slower median, but instances vary by a factor of two: five of each cannot tell.
  const std::vector<int64_t> a{5000, 20000, 9000, 14000, 10000};
  const std::vector<int64_t> b{6000, 19000, 11000, 15500, 8000};
  const gantt::Comparison c = gantt::compare_samples(a, b);
  EXPECT_GT(c.change, 0.05);
  EXPECT_EQ(c.verdict, gantt::Verdict::kWithinNoise);
}

TEST(Compare, TooFewSamplesIsNeverARegression) {
  const std::vector<int64_t> a{1000, 1000}, b{2000, 2000};
  EXPECT_EQ(gantt::compare_samples(a, b).verdict, gantt::Verdict::kTooFewSamples);
}
