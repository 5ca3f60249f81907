// Durations whose distribution must be kept without keeping every value: exact while a group
// is small, a mergeable quantile sketch once it is not. The sketch is DDSketch's
// logarithmic bucketing (Masson, Rim, Lee, "DDSketch: a fast and fully-mergeable quantile
// sketch with relative-error guarantees", VLDB 2019): a value v > 0 falls in bucket
// ceil(log_gamma(v)) with gamma = (1 + a) / (1 - a), and every quantile it returns is within a
// relative error a of the value of that rank. Buckets hold integer counts, so merging is
// addition: associative and independent of order, byte for byte.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gantt::analysis {

// The relative error of every sketched quantile.
inline constexpr double kSketchRelativeError = 0.01;

class QuantileSketch {
 public:
  void add(int64_t v, uint64_t n = 1);
  // n values in bucket `index` (read back from a summary): false, and nothing added, for an
  // index no int64 value falls in.
  bool add_bucket(int32_t index, bool negative, uint64_t n);
  void merge(const QuantileSketch& other);
  uint64_t count() const { return count_; }
  // The value of rank k (1 = the smallest), within kSketchRelativeError of the exact one.
  double value_at_rank(uint64_t k) const;

  // (bucket index, count) of the non-empty buckets, ascending, for values above and below zero
  // (below: by magnitude), and the zeros.
  std::vector<std::pair<int32_t, uint64_t>> positive() const { return nonempty(positive_); }
  std::vector<std::pair<int32_t, uint64_t>> negative() const { return nonempty(negative_); }
  uint64_t zeros() const { return zeros_; }
  // The bucket of |v| (v != 0): a few thousand buckets span 1 ns to centuries.
  static int32_t bucket(uint64_t magnitude);
  // The value a bucket stands for: within the relative error of everything in it.
  static double bucket_value(int32_t index);

 private:
  static std::vector<std::pair<int32_t, uint64_t>> nonempty(const std::vector<uint64_t>& counts);
  void add_to(std::vector<uint64_t>& counts, int32_t index, uint64_t n);

  // Dense by bucket index (0 ... bucket(UINT64_MAX), about 2,200): an add is an index, not a
  // tree walk, and the stats of a 10 M-event capture add every duration three times.
  std::vector<uint64_t> positive_, negative_;
  uint64_t zeros_ = 0;
  uint64_t count_ = 0;
  // Durations repeat (the same kernel, the same time): the last magnitude's bucket is kept.
  uint64_t last_magnitude_ = 0;
  int32_t last_bucket_ = 0;
};

// A group's durations: count, total, min and max always exact; the values themselves while
// there are at most kExactSamples of them, a sketch after.
class DurationDigest {
 public:
  static constexpr uint64_t kExactSamples = 10'000;

  void add(int64_t v);
  void merge(const DurationDigest& other);

  uint64_t count() const { return count_; }
  uint64_t total_ns() const { return total_; }
  int64_t min_ns() const { return min_; }
  int64_t max_ns() const { return max_; }
  bool exact() const { return !sketched_; }
  const std::vector<int64_t>& samples() const { return samples_; }  // while exact()
  const QuantileSketch& sketch() const { return sketch_; }          // once !exact()

  // Nearest-rank 95th percentile and the median (mean of the middle two for an even count),
  // as summarize() computes them from every value; from the sketch once !exact().
  int64_t p95_ns() const;
  double median_ns() const;

  // For reading a digest back (summary files): the exact fields, then either the samples or
  // the sketch. Values a hostile file gives are taken as they are; quantiles stay in [min, max].
  static DurationDigest from_parts(uint64_t count, uint64_t total_ns, int64_t min_ns, int64_t max_ns,
                                   std::vector<int64_t> samples, const QuantileSketch* sketch);

 private:
  void to_sketch();
  double at_rank(uint64_t k) const;  // 1-based

  uint64_t count_ = 0;
  uint64_t total_ = 0;
  int64_t min_ = 0, max_ = 0;
  bool sketched_ = false;
  mutable std::vector<int64_t> samples_;  // sorted lazily by the quantile getters
  mutable bool sorted_ = true;
  QuantileSketch sketch_;
};

}  // namespace gantt::analysis
