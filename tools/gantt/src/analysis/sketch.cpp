#include "gantt/analysis/sketch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gantt::analysis {
namespace {

const double kGamma = (1 + kSketchRelativeError) / (1 - kSketchRelativeError);
const double kLogGamma = std::log(kGamma);

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

// a + b, stopping at the largest count instead of wrapping (a hostile summary's counts).
uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

int32_t QuantileSketch::bucket(uint64_t m) {
  // ceil(log_gamma(m)): bucket i holds (gamma^(i-1), gamma^i]. m = 1 is bucket 0.
  return static_cast<int32_t>(std::ceil(std::log(static_cast<double>(m)) / kLogGamma - 1e-12));
}

double QuantileSketch::bucket_value(int32_t index) {
  // The point whose relative distance to both bucket ends is the relative error.
  return 2 * std::pow(kGamma, index) / (kGamma + 1);
}

void QuantileSketch::add(int64_t v, uint64_t n) {
  if (n == 0) return;
  count_ = add_sat(count_, n);
  if (v == 0) {
    zeros_ = add_sat(zeros_, n);
    return;
  }
  uint64_t& slot = (v > 0 ? positive_ : negative_)[bucket(magnitude(v))];
  slot = add_sat(slot, n);
}

bool QuantileSketch::add_bucket(int32_t index, bool negative, uint64_t n) {
  static const int32_t kLast = bucket(UINT64_MAX);
  if (index < 0 || index > kLast) return false;
  if (n == 0) return true;
  count_ = add_sat(count_, n);
  uint64_t& slot = (negative ? negative_ : positive_)[index];
  slot = add_sat(slot, n);
  return true;
}

void QuantileSketch::merge(const QuantileSketch& o) {
  for (const auto& [i, n] : o.positive_) positive_[i] = add_sat(positive_[i], n);
  for (const auto& [i, n] : o.negative_) negative_[i] = add_sat(negative_[i], n);
  zeros_ = add_sat(zeros_, o.zeros_);
  count_ = add_sat(count_, o.count_);
}

double QuantileSketch::value_at_rank(uint64_t k) const {
  if (count_ == 0) return 0;
  k = std::clamp<uint64_t>(k, 1, count_);
  uint64_t seen = 0;
  // Smallest first: the most negative values are the largest magnitudes below zero.
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it) {
    seen = add_sat(seen, it->second);
    if (seen >= k) return -bucket_value(it->first);
  }
  seen = add_sat(seen, zeros_);
  if (seen >= k) return 0;
  for (const auto& [i, n] : positive_) {
    seen = add_sat(seen, n);
    if (seen >= k) return bucket_value(i);
  }
  return positive_.empty() ? 0 : bucket_value(positive_.rbegin()->first);
}

void DurationDigest::add(int64_t v) {
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
