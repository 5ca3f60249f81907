#include "gantt/analysis/sketch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gantt::analysis {
namespace {

const double kGamma = (1 + kSketchRelativeError) / (1 - kSketchRelativeError);
const double kLogGamma = std::log(kGamma);

using detail::add_sat;

}  // namespace

int32_t QuantileSketch::bucket_by_log(uint64_t m) {
  // ceil(log_gamma(m)): bucket i holds (gamma^(i-1), gamma^i]. m = 1 is bucket 0.
  return static_cast<int32_t>(std::ceil(std::log(static_cast<double>(m)) / kLogGamma - 1e-12));
}

namespace {

// bucket_by_log() without the log, which was a tenth of a streamed `stats`: a magnitude's
// octave and the 7 bits after its leading one pick a cell at most 1/128 wide, narrower than
// any bucket (gamma - 1 = 2%), so a cell holds at most one bucket boundary. The cell gives its
// first value's bucket; one comparison with the next bucket's smallest magnitude settles it.
// Both tables are made by bucket_by_log() itself, so the two agree wherever it is monotonic
// (the tests compare them across every boundary).
class BucketTable {
 public:
  BucketTable() {
    last_ = QuantileSketch::bucket_by_log(UINT64_MAX);
    const int32_t last = last_;
    first_.assign(static_cast<size_t>(last) + 1, UINT64_MAX);
    first_[0] = 1;
    for (int32_t i = 1; i <= last; ++i) {  // the smallest m with bucket_by_log(m) >= i
      uint64_t lo = first_[static_cast<size_t>(i) - 1], hi = UINT64_MAX;
      while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (QuantileSketch::bucket_by_log(mid) >= i) hi = mid;
        else lo = mid + 1;
      }
      first_[static_cast<size_t>(i)] = lo;
    }
    for (uint64_t m = 1; m < kSmall; ++m) small_[m] = static_cast<int16_t>(QuantileSketch::bucket_by_log(m));
    for (int octave = kCellBits; octave < 64; ++octave)
      for (uint64_t f = 0; f < kCells; ++f)
        cell_[octave][f] = static_cast<int16_t>(QuantileSketch::bucket_by_log((kCells + f) << (octave - kCellBits)));
  }

  int32_t bucket(uint64_t m) const {
    if (m < kSmall) return small_[m];
    const int octave = 63 - __builtin_clzll(m);
    int32_t b = cell_[octave][(m >> (octave - kCellBits)) & (kCells - 1)];
    if (b < last_ && m >= first_[static_cast<size_t>(b) + 1]) ++b;
    return b;
  }

 private:
  static constexpr int kCellBits = 7;
  static constexpr uint64_t kCells = uint64_t{1} << kCellBits, kSmall = kCells;
  std::vector<uint64_t> first_;  // the smallest magnitude of each bucket
  int32_t last_ = 0;             // the bucket of UINT64_MAX
  int16_t small_[kSmall] = {};
  int16_t cell_[64][kCells] = {};
};

}  // namespace

int32_t QuantileSketch::bucket(uint64_t m) {
  static const BucketTable table;
  return table.bucket(m);
}

double QuantileSketch::bucket_value(int32_t index) {
  // The point whose relative distance to both bucket ends is the relative error.
  return 2 * std::pow(kGamma, index) / (kGamma + 1);
}

bool QuantileSketch::add_bucket(int32_t index, bool negative, uint64_t n) {
  static const int32_t kLast = bucket(UINT64_MAX);
  if (index < 0 || index > kLast) return false;
  if (n == 0) return true;
  count_ = add_sat(count_, n);
  add_to(negative ? negative_ : positive_, index, n);
  return true;
}

void QuantileSketch::merge(const QuantileSketch& o) {
  for (size_t i = 0; i < o.positive_.size(); ++i)
    if (o.positive_[i]) add_to(positive_, static_cast<int32_t>(i), o.positive_[i]);
  for (size_t i = 0; i < o.negative_.size(); ++i)
    if (o.negative_[i]) add_to(negative_, static_cast<int32_t>(i), o.negative_[i]);
  zeros_ = add_sat(zeros_, o.zeros_);
  count_ = add_sat(count_, o.count_);
}

std::vector<std::pair<int32_t, uint64_t>> QuantileSketch::nonempty(const std::vector<uint64_t>& counts) {
  std::vector<std::pair<int32_t, uint64_t>> out;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i]) out.emplace_back(static_cast<int32_t>(i), counts[i]);
  return out;
}

double QuantileSketch::value_at_rank(uint64_t k) const {
  if (count_ == 0) return 0;
  k = std::clamp<uint64_t>(k, 1, count_);
  uint64_t seen = 0;
  // Smallest first: the most negative values are the largest magnitudes below zero.
  for (size_t i = negative_.size(); i-- > 0;) {
    seen = add_sat(seen, negative_[i]);
    if (negative_[i] && seen >= k) return -bucket_value(static_cast<int32_t>(i));
  }
  seen = add_sat(seen, zeros_);
  if (seen >= k) return 0;
  for (size_t i = 0; i < positive_.size(); ++i) {
    seen = add_sat(seen, positive_[i]);
    if (positive_[i] && seen >= k) return bucket_value(static_cast<int32_t>(i));
  }
  return positive_.empty() ? 0 : bucket_value(static_cast<int32_t>(positive_.size() - 1));
}

void DurationDigest::to_sketch() {
  for (int64_t v : samples_) sketch_.add(v);
  std::vector<int64_t>().swap(samples_);
  sorted_ = true;
  sketched_ = true;
}

void DurationDigest::merge(const DurationDigest& o) {
  if (o.count_ == 0) return;
  if (count_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  count_ = add_sat(count_, o.count_);
  total_ += o.total_;
  if (!sketched_ && !o.sketched_ && samples_.size() + o.samples_.size() <= kExactSamples) {
    samples_.insert(samples_.end(), o.samples_.begin(), o.samples_.end());
    sorted_ = false;
    return;
  }
  // Past the exact size (or one side already sketched): both as sketches. A value's bucket
  // does not depend on when it was sketched, so the result is the same in any merge order.
  if (!sketched_) to_sketch();
  if (o.sketched_) {
    sketch_.merge(o.sketch_);
  } else {
    for (int64_t v : o.samples_) sketch_.add(v);
  }
}

double DurationDigest::at_rank(uint64_t k) const {
  if (count_ == 0) return 0;
  if (!sketched_) {
    if (samples_.empty()) return 0;
    if (!sorted_) {
      std::sort(samples_.begin(), samples_.end());
      sorted_ = true;
    }
    return static_cast<double>(samples_[std::clamp<uint64_t>(k, 1, samples_.size()) - 1]);
  }
  return std::clamp(sketch_.value_at_rank(k), static_cast<double>(min_), static_cast<double>(max_));
}

int64_t DurationDigest::p95_ns() const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(0.95 * static_cast<double>(count_))));
  return static_cast<int64_t>(std::llround(at_rank(rank)));
}

double DurationDigest::median_ns() const {
  if (count_ == 0) return 0;
  const uint64_t mid = count_ / 2;
  if (count_ % 2) return at_rank(mid + 1);
  return (at_rank(mid) + at_rank(mid + 1)) / 2;
}

DurationDigest DurationDigest::from_parts(uint64_t count, uint64_t total_ns, int64_t min_ns, int64_t max_ns,
                                          std::vector<int64_t> samples, const QuantileSketch* sketch) {
  DurationDigest d;
  d.count_ = count;
  d.total_ = total_ns;
  d.min_ = min_ns;
  d.max_ = std::max(min_ns, max_ns);
  if (sketch != nullptr) {
    d.sketched_ = true;
    d.sketch_ = *sketch;
  } else {
    d.samples_ = std::move(samples);
    d.sorted_ = false;
  }
  return d;
}

}  // namespace gantt::analysis
