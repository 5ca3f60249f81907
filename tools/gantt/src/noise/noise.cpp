#include "gantt/noise/noise.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gantt {
namespace {

// splitmix64: a fixed, portable generator, so the bootstrap interval is the same on every
// platform and standard library (std:: distributions are not specified bit-for-bit).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Lemire's multiply-shift on the top 32 bits: an index in [0, n) without a division.
  // Bootstrap samples are thinned to far fewer than 2^32 values.
  size_t below(size_t n) { return static_cast<size_t>(((next() >> 32) * static_cast<uint32_t>(n)) >> 32); }
};

double median_in_place(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  const double upper = static_cast<double>(v[mid]);
  if (v.size() % 2 == 1) return upper;
  const int64_t lower = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return (static_cast<double>(lower) + upper) / 2.0;
}

std::vector<int64_t> thin(std::span<const int64_t> s, size_t max_sample) {
  if (s.size() <= max_sample) return {s.begin(), s.end()};
  std::vector<int64_t> out;
  out.reserve(max_sample);
  // Evenly strided: keeps the shape of the sample when it is in time order.
  for (size_t i = 0; i < max_sample; ++i) out.push_back(s[i * s.size() / max_sample]);
  return out;
}

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

double median(std::span<const int64_t> sample) {
  std::vector<int64_t> v(sample.begin(), sample.end());
  return median_in_place(v);
}

int64_t percentile(std::span<const int64_t> sample, double q) {
  if (sample.empty()) return 0;
  std::vector<int64_t> v(sample.begin(), sample.end());
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest value with at least q of the sample at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  if (rank == 0) rank = 1;
  const size_t idx = rank - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(idx), v.end());
  return v[idx];
}

RankTest mann_whitney(std::span<const int64_t> base, std::span<const int64_t> next) {
  RankTest r;
  r.n_base = base.size();
  r.n_new = next.size();
  if (base.empty() || next.empty()) return r;
  std::vector<int64_t> a(base.begin(), base.end());
  std::vector<int64_t> b(next.begin(), next.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());

  // Walk both sorted samples as one, a tie group at a time: each group gets the average
  // rank, and sum(t^3 - t) feeds the tie correction of the variance.
  const double n1 = static_cast<double>(a.size());
  const double n2 = static_cast<double>(b.size());
  const double n = n1 + n2;
  double rank_sum_new = 0;
  double tie_term = 0;
  double next_rank = 1;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int64_t v;
    if (j >= b.size() || (i < a.size() && a[i] <= b[j])) v = a[i];
    else v = b[j];
    size_t ca = 0, cb = 0;
    while (i < a.size() && a[i] == v) { ++i; ++ca; }
    while (j < b.size() && b[j] == v) { ++j; ++cb; }
    const double t = static_cast<double>(ca + cb);
    const double avg_rank = next_rank + (t - 1) / 2.0;
    rank_sum_new += avg_rank * static_cast<double>(cb);
    tie_term += t * t * t - t;
    next_rank += t;
  }
  r.u_new = rank_sum_new - n2 * (n2 + 1) / 2.0;
  const double mean = n1 * n2 / 2.0;
  const double var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(var > 0)) return r;  // every value identical: no evidence either way
  const double sd = std::sqrt(var);
  r.valid = true;
  r.z = (r.u_new - mean) / sd;
  // Continuity correction of 1/2 towards the mean for each one-sided test.
  r.p_greater = normal_upper_tail((r.u_new - mean - 0.5) / sd);
  r.p_less = normal_upper_tail((mean - r.u_new - 0.5) / sd);
  return r;
}

RatioInterval bootstrap_median_ratio(std::span<const int64_t> base, std::span<const int64_t> next,
                                     double confidence, uint32_t resamples, uint64_t seed,
                                     size_t max_sample) {
  RatioInterval out;
  if (base.empty() || next.empty() || resamples == 0) return out;
  const double mb = median(base);
  if (mb == 0) return out;
  out.ratio = median(next) / mb;

  const std::vector<int64_t> a = thin(base, std::max<size_t>(max_sample, 1));
  const std::vector<int64_t> b = thin(next, std::max<size_t>(max_sample, 1));
  SplitMix64 rng{seed};
  std::vector<double> ratios;
  ratios.reserve(resamples);
  std::vector<int64_t> ra(a.size()), rb(b.size());
  for (uint32_t k = 0; k < resamples; ++k) {
    for (auto& x : ra) x = a[rng.below(a.size())];
    for (auto& x : rb) x = b[rng.below(b.size())];
    const double ma = median_in_place(ra);
    if (ma == 0) continue;
    ratios.push_back(median_in_place(rb) / ma);
  }
  // Most resamples must give a defined ratio, or the interval means nothing.
  if (ratios.size() < resamples / 2 || ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1.0 - std::clamp(confidence, 0.0, 1.0)) / 2.0;
  const auto at = [&](double q) {
    const size_t idx = std::min(ratios.size() - 1,
                                static_cast<size_t>(std::floor(q * static_cast<double>(ratios.size() - 1) + 0.5)));
    return ratios[idx];
  };
  out.lo = at(tail);
  out.hi = at(1.0 - tail);
  out.valid = true;
  return out;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kUnchanged: return "unchanged";
    case Verdict::kWithinNoise: return "within-noise";
    case Verdict::kRegression: return "regression";
    case Verdict::kImprovement: return "improvement";
    case Verdict::kTooFewSamples: return "too-few-samples";
  }
  return "unknown";
}

Comparison compare_samples(std::span<const int64_t> base, std::span<const int64_t> next,
                           const NoiseOptions& options) {
  Comparison c;
  c.median_base = median(base);
  c.median_new = median(next);
  c.change = c.median_base != 0 ? c.median_new / c.median_base - 1.0 : 0.0;
  if (base.size() < kMinSamples || next.size() < kMinSamples) {
    c.verdict = Verdict::kTooFewSamples;
    return c;
  }
  if (std::fabs(c.change) <= options.threshold || c.median_base == 0) {
    c.verdict = Verdict::kUnchanged;
    return c;
  }
  c.rank = mann_whitney(base, next);
  const bool slower = c.change > 0;
  const double p = slower ? c.rank.p_greater : c.rank.p_less;
  if (!c.rank.valid || p >= options.alpha) {
    c.verdict = Verdict::kWithinNoise;
    return c;
  }
  // The bootstrap is the expensive check, so it runs only when the cheap ones passed.
  c.interval = bootstrap_median_ratio(base, next, options.confidence, options.resamples, options.seed);
  const bool beyond = c.interval.valid && (slower ? c.interval.lo > 1.0 : c.interval.hi < 1.0);
  if (!beyond) {
    c.verdict = Verdict::kWithinNoise;
    return c;
  }
  c.verdict = slower ? Verdict::kRegression : Verdict::kImprovement;
  return c;
}

}  // namespace gantt
