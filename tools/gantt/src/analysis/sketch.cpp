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

void QuantileSketch::add_to(std::vector<uint64_t>& counts, int32_t index, uint64_t n) {
  const auto i = static_cast<size_t>(index);
  if (i >= counts.size()) counts.resize(i + 1, 0);
  counts[i] = add_sat(counts[i], n);
}

void QuantileSketch::add(int64_t v, uint64_t n) {
  if (n == 0) return;
  count_ = add_sat(count_, n);
  if (v == 0) {
    zeros_ = add_sat(zeros_, n);
    return;
  }
  const uint64_t m = magnitude(v);
  if (m != last_magnitude_) {
    last_magnitude_ = m;
    last_bucket_ = bucket(m);
  }
  add_to(v > 0 ? positive_ : negative_, last_bucket_, n);
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
