// Durations whose distribution must be kept without keeping every value: exact while a group
// is small, a mergeable quantile sketch once it is not. The sketch is DDSketch's
// logarithmic bucketing (Masson, Rim, Lee, "DDSketch: a fast and fully-mergeable quantile
// sketch with relative-error guarantees", VLDB 2019): a value v > 0 falls in bucket
// ceil(log_gamma(v)) with gamma = (1 + a) / (1 - a), and every quantile it returns is within a
// relative error a of the value of that rank. Buckets hold integer counts, so merging is
// addition: associative and independent of order, byte for byte.
#pragma once

#include <algorithm>
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
  // The definition bucket() follows: ceil(log_gamma(magnitude)), with the log computed.
  static int32_t bucket_by_log(uint64_t magnitude);
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

// The adds, once per duration of every event: inline.
namespace detail {
// a + b, stopping at the largest count instead of wrapping (a hostile summary's counts).
inline uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
}  // namespace detail

inline void QuantileSketch::add_to(std::vector<uint64_t>& counts, int32_t index, uint64_t n) {
  const auto i = static_cast<size_t>(index);
  if (i >= counts.size()) counts.resize(i + 1, 0);
  counts[i] = detail::add_sat(counts[i], n);
}

inline void QuantileSketch::add(int64_t v, uint64_t n) {
  if (n == 0) return;
  count_ = detail::add_sat(count_, n);
  if (v == 0) {
    zeros_ = detail::add_sat(zeros_, n);
    return;
  }
  const uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (m != last_magnitude_) {
    last_magnitude_ = m;
    last_bucket_ = bucket(m);
  }
  add_to(v > 0 ? positive_ : negative_, last_bucket_, n);
}

inline void DurationDigest::add(int64_t v) {
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  ++count_;
  total_ += static_cast<uint64_t>(v);
  if (sketched_) {
    sketch_.add(v);
    return;
  }
  samples_.push_back(v);
  sorted_ = false;
  if (samples_.size() > kExactSamples) to_sketch();
}

}  // namespace gantt::analysis
