// The quantile sketch and the digests built on it: every sketched quantile within the stated
// relative error of the exact one, merges that do not depend on grouping or order, exact
// values below the size limit, and summaries that survive their file form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gpuhook/v1/summary.pb.h>

#include "gantt/analysis/sketch.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/summary.h"

namespace ga = gantt::analysis;

namespace {

std::vector<int64_t> draw(const char* shape, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(n);
  std::lognormal_distribution<double> lognormal(9.0, 1.5);  // ~8 us median, long tail
  std::uniform_int_distribution<int64_t> uniform(1, 5'000'000);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const std::string s = shape;
    if (s == "lognormal") v[i] = 1 + static_cast<int64_t>(lognormal(rng));
    else if (s == "uniform") v[i] = uniform(rng);
    else if (s == "pareto") v[i] = static_cast<int64_t>(1000.0 / std::pow(1.0 - u01(rng), 1.0 / 1.2));
    else if (s == "bimodal") v[i] = i % 3 ? 2'000 + uniform(rng) % 100 : 900'000 + uniform(rng) % 1000;
    else if (s == "signed") v[i] = uniform(rng) % 20'001 - 10'000;  // negative stages, and zeros
    else v[i] = 4242;
  }
  return v;
}

TEST(QuantileSketch, EveryRankIsWithinTheStatedRelativeError) {
  for (const char* shape : {"lognormal", "uniform", "pareto", "bimodal", "signed", "constant"}) {
    std::vector<int64_t> v = draw(shape, 200'000, 7);
    ga::QuantileSketch sk;
    for (int64_t x : v) sk.add(x);
    std::sort(v.begin(), v.end());
    ASSERT_EQ(sk.count(), v.size());
    double worst = 0;
    for (double q : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0}) {
      const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(v.size()))));
      const double exact = static_cast<double>(v[rank - 1]);
      const double got = sk.value_at_rank(rank);
      if (exact == 0) {
        EXPECT_EQ(got, 0) << shape << " q " << q;
        continue;
      }
      const double err = std::fabs(got - exact) / std::fabs(exact);
      worst = std::max(worst, err);
      EXPECT_LE(err, ga::kSketchRelativeError * (1 + 1e-9)) << shape << " q " << q << " exact " << exact << " got " << got;
    }
    // The bound is not loose: the buckets are as wide as it allows.
    if (std::string(shape) == "uniform") {
      EXPECT_GT(worst, ga::kSketchRelativeError / 20);
    }
  }
}

// bucket() looks buckets up in tables; bucket_by_log() is their definition. They must agree
// on every magnitude: at each bucket's first value and its neighbours, across all 64 octaves
// (where a cell's first value and the next cell's meet), and at random.
TEST(QuantileSketch, BucketTableEqualsTheLogDefinition) {
  std::vector<uint64_t> probes = {1, 2, 3, 127, 128, 129, UINT64_MAX - 1, UINT64_MAX};
  for (int octave = 0; octave < 64; ++octave)
    for (uint64_t f = 0; f < 128; f += 7) {
      const uint64_t at = octave >= 7 ? (128 + f) << (octave - 7) : uint64_t{1} << octave;
      for (uint64_t d : {uint64_t{0}, uint64_t{1}}) probes.insert(probes.end(), {at - d, at + d});
    }
  // Every bucket's smallest magnitude, found by bisection on the definition.
  const int32_t last = ga::QuantileSketch::bucket_by_log(UINT64_MAX);
  for (int32_t i = 1; i <= last; ++i) {
    uint64_t lo = 1, hi = UINT64_MAX;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (ga::QuantileSketch::bucket_by_log(mid) >= i) hi = mid;
      else lo = mid + 1;
    }
    probes.insert(probes.end(), {lo - 1, lo, lo + 1});
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200'000; ++i) probes.push_back(rng() >> (rng() % 64));
  size_t differ = 0;
  for (uint64_t m : probes) {
    if (m == 0) continue;
    if (ga::QuantileSketch::bucket(m) != ga::QuantileSketch::bucket_by_log(m)) {
      if (++differ <= 5) ADD_FAILURE() << "magnitude " << m << ": table " << ga::QuantileSketch::bucket(m) << ", log "
                                       << ga::QuantileSketch::bucket_by_log(m);
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << probes.size() << " magnitudes";
}

TEST(QuantileSketch, MergeIsAssociativeAndOrderIndependent) {
  const std::vector<int64_t> v = draw("pareto", 50'000, 11);
  std::vector<ga::QuantileSketch> parts(5);
  for (size_t i = 0; i < v.size(); ++i) parts[(i * 7919) % 5].add(v[i]);
  ga::QuantileSketch left = parts[0];  // ((((0 1) 2) 3) 4)
  for (size_t i = 1; i < 5; ++i) left.merge(parts[i]);
  ga::QuantileSketch right = parts[4];  // (4 (3 (2 (1 0)))) built from the other end
  ga::QuantileSketch inner = parts[1];
  inner.merge(parts[0]);
  ga::QuantileSketch mid = parts[2];
  mid.merge(inner);
  ga::QuantileSketch outer = parts[3];
  outer.merge(mid);
  right.merge(outer);
  ga::QuantileSketch whole;
  for (int64_t x : v) whole.add(x);
  for (const ga::QuantileSketch* s : {&left, &right}) {
    EXPECT_EQ(s->positive(), whole.positive());
    EXPECT_EQ(s->negative(), whole.negative());
    EXPECT_EQ(s->zeros(), whole.zeros());
    EXPECT_EQ(s->count(), whole.count());
  }
}

TEST(DurationDigest, ExactBelowTheLimitAsSummarizeComputesIt) {
  std::vector<int64_t> v = draw("lognormal", ga::DurationDigest::kExactSamples, 3);
  ga::DurationDigest d;
  for (int64_t x : v) d.add(x);
  ASSERT_TRUE(d.exact());
  const ga::Distribution want = ga::summarize(v);
  EXPECT_EQ(d.count(), want.count);
  EXPECT_EQ(d.total_ns(), want.total_ns);
  EXPECT_EQ(d.min_ns(), want.min_ns);
  EXPECT_EQ(d.max_ns(), want.max_ns);
  EXPECT_EQ(d.p95_ns(), want.p95_ns);
  EXPECT_DOUBLE_EQ(d.median_ns(), want.median_ns);
  d.add(5);
  EXPECT_FALSE(d.exact()) << "one past the limit is sketched";
  EXPECT_EQ(d.min_ns(), std::min<int64_t>(want.min_ns, 5));
}

TEST(DurationDigest, MergesInAnyGroupingToTheSameDigest) {
  // Three parts whose pairwise sums cross the exact limit differently.
  const std::vector<int64_t> v = draw("bimodal", 12'000, 5);
  const size_t cut[] = {0, 6'000, 9'000, 12'000};
  std::vector<ga::DurationDigest> p(3);
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = cut[k]; i < cut[k + 1]; ++i) p[k].add(v[i]);
  ga::DurationDigest ab = p[0];
  ab.merge(p[1]);
  ab.merge(p[2]);  // (a b) c: a+b is exact, then sketched
  ga::DurationDigest bc = p[1];
  bc.merge(p[2]);  // b+c stays exact
  ga::DurationDigest a_bc = p[0];
  a_bc.merge(bc);
  ga::DurationDigest cba = p[2];
  cba.merge(p[1]);
  cba.merge(p[0]);
  for (const ga::DurationDigest* d : {&a_bc, &cba}) {
    EXPECT_FALSE(d->exact());
    EXPECT_EQ(d->sketch().positive(), ab.sketch().positive());
    EXPECT_EQ(d->count(), ab.count());
    EXPECT_EQ(d->total_ns(), ab.total_ns());
    EXPECT_EQ(d->min_ns(), ab.min_ns());
    EXPECT_EQ(d->max_ns(), ab.max_ns());
    EXPECT_EQ(d->p95_ns(), ab.p95_ns());
    EXPECT_EQ(d->median_ns(), ab.median_ns());
  }
  std::vector<int64_t> sorted = v;
  const ga::Distribution exact = ga::summarize(sorted);
  EXPECT_NEAR(ab.median_ns(), exact.median_ns, exact.median_ns * ga::kSketchRelativeError);
  EXPECT_NEAR(static_cast<double>(ab.p95_ns()), static_cast<double>(exact.p95_ns),
              static_cast<double>(exact.p95_ns) * ga::kSketchRelativeError + 1);
}

// A summary read back from its message gives the same report; a hostile message is refused
// with what was wrong, never trusted.
TEST(StatsSummary, SurvivesItsMessageAndRefusesHostileOnes) {
  ga::StatsSummary s;
  s.captures.push_back({"a.gpuh", "node0", 42, 3});
  s.grouped = {true, true, true, true};
  for (int g = 0; g < 4; ++g) {
    ga::SummaryGroup row;
    row.key = g == 0 || g == 3 ? "gemm" : "";
    for (int64_t x : draw(g == 1 ? "pareto" : "lognormal", g == 1 ? 20'000 : 100, 9)) row.exec.add(x);
    s.groups[static_cast<size_t>(g)].push_back(row);
    s.events += row.exec.count();
  }
  s.exec = s.groups[0][0].exec;
  gpuhook::v1::StatsSummary m;
  ga::to_proto(s, &m);
  ga::StatsOptions o;
  for (ga::GroupBy by : {ga::GroupBy::kKernel, ga::GroupBy::kStream}) {
    o.by = by;
    EXPECT_EQ(ga::format_stats(ga::report(ga::from_proto(m), o), ga::Format::kJson),
              ga::format_stats(ga::report(s, o), ga::Format::kJson));
  }
  EXPECT_EQ(ga::report(s, o).sketched_groups, 1u);

  gpuhook::v1::StatsSummary bad = m;
  bad.mutable_by_kernel(0)->mutable_exec()->set_count(7);
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
  bad = m;
  bad.mutable_by_stream(0)->mutable_exec()->set_positive_index(0, 100'000);
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
  bad = m;
  bad.mutable_by_stream(0)->mutable_exec()->add_positive_count(1);
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
  bad = m;
  bad.mutable_by_device(0)->set_capture(9);
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
  bad = m;
  bad.set_relative_error(0.05);
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
  bad = m;
  bad.clear_capture();
  EXPECT_THROW(ga::from_proto(bad), std::invalid_argument);
}

}  // namespace

namespace {

// The extremes a hostile capture can give (durations near the int64 limits) survive the
// summary's message: what is written can be read back.
TEST(StatsSummary, ExtremeDurationsReadBack) {
  ga::StatsSummary s;
  s.captures.push_back({"x.gpuh", "", 1, -1});
  s.grouped = {true, false, false, false};
  ga::SummaryGroup row;
  row.key = "k";
  for (int i = 0; i <= static_cast<int>(ga::DurationDigest::kExactSamples); ++i)
    row.exec.add(i % 2 ? INT64_MAX : INT64_MIN + i);
  ASSERT_FALSE(row.exec.exact());
  s.groups[0].push_back(row);
  gpuhook::v1::StatsSummary m;
  ga::to_proto(s, &m);
  const ga::StatsSummary back = ga::from_proto(m);
  EXPECT_EQ(back.groups[0][0].exec.count(), row.exec.count());
  EXPECT_EQ(back.groups[0][0].exec.p95_ns(), row.exec.p95_ns());
  EXPECT_EQ(back.groups[0][0].exec.median_ns(), row.exec.median_ns());
}

}  // namespace
