// Is a change between two runs larger than the run-to-run noise?
//
// The evidence is the per-instance durations of one thing (a kernel, a stage, an
// iteration) in the base run and in the new run. Two independent checks, both
// deterministic:
// - the Mann-Whitney U rank test (tie-corrected normal approximation with continuity
//   correction): does one run's distribution sit to the right of the other's?
// - a percentile bootstrap confidence interval of the ratio of medians (new / base), with
//   a fixed seed, so the same inputs always give the same interval.
// A change is called a regression only when the median moved by more than the threshold,
// the rank test rejects "no shift" at `alpha`, and the bootstrap interval excludes 1.
//
// Plain statistics over samples, knowing nothing of a capture: diff and diagnose (analysis)
// and the straggler test of ranks both use them, so they sit below both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gantt {

struct RankTest {
  double u_new = 0;          // U statistic of the new sample (pairs where new > base, ties 1/2)
  double z = 0;              // standardised U; > 0 means the new sample tends to be larger
  double p_greater = 1;      // one-sided p-value for "new is larger"
  double p_less = 1;         // one-sided p-value for "new is smaller"
  size_t n_base = 0;
  size_t n_new = 0;
  bool valid = false;        // both samples non-empty and not all values identical
};

RankTest mann_whitney(std::span<const int64_t> base, std::span<const int64_t> next);

struct RatioInterval {
  double ratio = 0;  // median(new) / median(base)
  double lo = 0;
  double hi = 0;
  bool valid = false;  // false when a sample is empty or the base median is 0
};

// Bootstrap percentile interval. Samples longer than `max_sample` are thinned to an evenly
// strided subsample first (deterministic), which keeps a million-instance kernel to
// milliseconds; the point estimate `ratio` always uses the full samples.
RatioInterval bootstrap_median_ratio(std::span<const int64_t> base, std::span<const int64_t> next,
                                     double confidence = 0.99, uint32_t resamples = 1000,
                                     uint64_t seed = 0x6770756877696b65ull, size_t max_sample = 4096);

// Median of a sample (mean of the two middle values for even sizes); 0 for an empty one.
double median(std::span<const int64_t> sample);
// Nearest-rank percentile, q in [0,1]; 0 for an empty sample.
int64_t percentile(std::span<const int64_t> sample, double q);

enum class Verdict {
  kUnchanged,      // within the threshold
  kWithinNoise,    // over the threshold but not beyond the run-to-run noise
  kRegression,     // slower: over the threshold and beyond noise
  kImprovement,    // faster: over the threshold and beyond noise
  kTooFewSamples,  // fewer than kMinSamples on a side: reported, never a regression
};

const char* to_string(Verdict v);

inline constexpr size_t kMinSamples = 3;

struct NoiseOptions {
  double threshold = 0.05;  // relative change of the median that matters (0.05 = 5%)
  double alpha = 0.01;      // rank-test significance
  double confidence = 0.99; // bootstrap interval
  uint32_t resamples = 1000;
  uint64_t seed = 0x6770756877696b65ull;
};

struct Comparison {
  double median_base = 0;
  double median_new = 0;
  double change = 0;  // median_new / median_base - 1 (0 when the base median is 0)
  RankTest rank;
  RatioInterval interval;
  Verdict verdict = Verdict::kTooFewSamples;
};

Comparison compare_samples(std::span<const int64_t> base, std::span<const int64_t> next,
                           const NoiseOptions& options = {});

}  // namespace gantt
