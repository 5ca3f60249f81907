// BusyTracker: the busy/compute/copy unions of one device, streamed (busy_tracker.h).
#include "gantt/analysis/busy_tracker.h"

#include <algorithm>
#include <limits>

namespace gantt::analysis {
namespace {

// Staged activities are merged in batches at least this large, and at least as large as the
// lists they are merged into: each activity is then moved O(log n) times in all.
constexpr size_t kMinBatch = size_t{1} << 16;

// `add` (sorted, disjoint) merged into `into` (sorted, disjoint); both stay so.
void merge_sorted(std::vector<Interval>& into, const std::vector<Interval>& add) {
  if (add.empty()) return;
  std::vector<Interval> out;
  out.reserve(into.size() + add.size());
  size_t i = 0, j = 0;
  const auto put = [&out](const Interval& iv) {
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  };
  while (i < into.size() || j < add.size()) {
    if (j == add.size() || (i < into.size() && into[i].first <= add[j].first)) put(into[i++]);
    else put(add[j++]);
  }
  into.swap(out);
}

// The parts of `v` before `frontier`, removed from `v` (an interval across it is split).
std::vector<Interval> take_before(std::vector<Interval>& v, uint64_t frontier) {
  std::vector<Interval> before;
  size_t k = 0;
  while (k < v.size() && v[k].second <= frontier) before.push_back(v[k++]);
  if (k < v.size() && v[k].first < frontier) {
    before.emplace_back(v[k].first, frontier);
    v[k].first = frontier;
  }
  v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
  return before;
}

}  // namespace

BusyTracker::BusyTracker(size_t gaps, size_t pending_cap) : gaps_(gaps), cap_(std::max<size_t>(pending_cap, 2)) {}

void BusyTracker::add(uint64_t start_ns, uint64_t end_ns, Work work) {
  if (end_ns <= start_ns) return;
  first_ = first_ == 0 ? start_ns : std::min(first_, start_ns);
  last_ = std::max(last_, end_ns);
  if (frontier_ != 0 && start_ns < frontier_) {
    ++late_;
    if (end_ns <= frontier_) return;
    start_ns = frontier_;
  }
  staged_.push_back({start_ns, end_ns, work});
  if (staged_.size() >= std::max(kMinBatch, busy_.size())) flush();
}

void BusyTracker::flush() {
  if (staged_.empty()) return;
  const auto by_start = [](const Staged& a, const Staged& b) { return a.start < b.start; };
  // One stream's activities come in order: a check is cheaper than a sort.
  if (!std::is_sorted(staged_.begin(), staged_.end(), by_start)) std::sort(staged_.begin(), staged_.end(), by_start);
  std::vector<Interval> all, compute, copy;
  all.reserve(staged_.size());
  const auto put = [](std::vector<Interval>& v, const Staged& s) {
    if (!v.empty() && s.start <= v.back().second) v.back().second = std::max(v.back().second, s.end);
    else v.emplace_back(s.start, s.end);
  };
  for (const Staged& s : staged_) {
    put(all, s);
    if (s.work == Work::kCompute) put(compute, s);
    else if (s.work == Work::kCopy) put(copy, s);
  }
  staged_.clear();
  merge_sorted(busy_, all);
  merge_sorted(compute_, compute);
  merge_sorted(copy_, copy);
  if (busy_.size() > cap_) settle(busy_[busy_.size() / 2].first);
}

void BusyTracker::offer_gap(uint64_t from, uint64_t to) {
  if (gaps_ == 0 || to <= from) return;
  const auto better = [](const Interval& a, const Interval& b) {
    const uint64_t la = a.second - a.first, lb = b.second - b.first;
    return la != lb ? la > lb : a.first < b.first;
  };
  const Interval gap{from, to};
  if (top_gaps_.size() == gaps_ && !better(gap, top_gaps_.back())) return;
  top_gaps_.insert(std::upper_bound(top_gaps_.begin(), top_gaps_.end(), gap, better), gap);
  if (top_gaps_.size() > gaps_) top_gaps_.pop_back();
}

void BusyTracker::settle(uint64_t frontier) {
  size_t k = 0;
  for (; k < busy_.size() && busy_[k].second <= frontier; ++k) {
    if (settled_end_ != 0) offer_gap(settled_end_, busy_[k].first);
    busy_ns_ += busy_[k].second - busy_[k].first;
    settled_end_ = busy_[k].second;
  }
  busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(k));
  const std::vector<Interval> compute = take_before(compute_, frontier), copy = take_before(copy_, frontier);
  compute_ns_ += total_length(compute);
  copy_ns_ += total_length(copy);
  overlap_ns_ += intersection_length(compute, copy);
  frontier_ = std::max(frontier_, frontier);
}

void BusyTracker::absorb(BusyTracker&& later) {
  later.flush();
  if (later.frontier_ != 0) {
    // Both may have settled stretches of the same time: sum them as they are.
    flush();
    settle(std::numeric_limits<uint64_t>::max());
    busy_ns_ += later.busy_ns_;
    compute_ns_ += later.compute_ns_;
    copy_ns_ += later.copy_ns_;
    overlap_ns_ += later.overlap_ns_;
    for (const Interval& g : later.top_gaps_) offer_gap(g.first, g.second);
    settled_end_ = later.settled_end_;
    frontier_ = later.frontier_;
    approximate_ = true;
  }
  late_ += later.late_;
  const uint64_t first = later.first_, last = later.last_;
  for (const Interval& iv : later.compute_) add(iv.first, iv.second, Work::kCompute);
  for (const Interval& iv : later.copy_) add(iv.first, iv.second, Work::kCopy);
  for (const Interval& iv : later.busy_) add(iv.first, iv.second, Work::kOther);
  if (first != 0) first_ = first_ == 0 ? first : std::min(first_, first);
  last_ = std::max(last_, last);
  later = BusyTracker(later.gaps_, later.cap_);
}

BusyTracker::Totals BusyTracker::finish() {
  flush();
  settle(std::numeric_limits<uint64_t>::max());
  Totals t;
  t.first_ns = first_;
  t.last_ns = last_;
  t.busy_ns = busy_ns_;
  t.compute_ns = compute_ns_;
  t.copy_ns = copy_ns_;
  t.overlap_ns = overlap_ns_;
  t.gaps = top_gaps_;
  return t;
}

}  // namespace gantt::analysis
