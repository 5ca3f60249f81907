// BusyTracker against the whole-timeline arithmetic summarize() uses (intervals.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "gantt/analysis/busy_tracker.h"

namespace gantt::analysis {
namespace {

struct Activity {
  uint64_t start, end;
  BusyTracker::Work work;
};

// summarize()'s way: every interval at once, merged, holes sorted by length (stable).
BusyTracker::Totals exact(const std::vector<Activity>& acts, size_t gaps) {
  std::vector<Interval> all, compute, copy;
  BusyTracker::Totals t;
  for (const Activity& a : acts) {
    all.emplace_back(a.start, a.end);
    if (a.work == BusyTracker::Work::kCompute) compute.emplace_back(a.start, a.end);
    if (a.work == BusyTracker::Work::kCopy) copy.emplace_back(a.start, a.end);
  }
  merge_intervals(all);
  merge_intervals(compute);
  merge_intervals(copy);
  t.first_ns = all.front().first;
  t.last_ns = all.back().second;
  t.busy_ns = total_length(all);
  t.compute_ns = total_length(compute);
  t.copy_ns = total_length(copy);
  t.overlap_ns = intersection_length(compute, copy);
  std::vector<Interval> holes;
  for (size_t i = 1; i < all.size(); ++i) holes.emplace_back(all[i - 1].second, all[i].first);
  std::stable_sort(holes.begin(), holes.end(),
                   [](const Interval& a, const Interval& b) { return a.second - a.first > b.second - b.first; });
  if (holes.size() > gaps) holes.resize(gaps);
  t.gaps = holes;
  return t;
}

// Sparse work (many gaps, equal gap lengths for ties), with copies overlapping kernels.
std::vector<Activity> timeline(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Activity> out;
  uint64_t t = 1'000'000;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t len = 1 + rng() % 5000;
    const auto work = static_cast<BusyTracker::Work>(rng() % 3);
    out.push_back({t, t + len, work});
    if (rng() % 4 == 0) out.push_back({t + len / 2, t + len + rng() % 3000, BusyTracker::Work::kCopy});
    t += len + (rng() % 3 == 0 ? 0 : 100 * (1 + rng() % 20));
  }
  return out;
}

void expect_equal(const BusyTracker::Totals& got, const BusyTracker::Totals& want) {
  EXPECT_EQ(got.first_ns, want.first_ns);
  EXPECT_EQ(got.last_ns, want.last_ns);
  EXPECT_EQ(got.busy_ns, want.busy_ns);
  EXPECT_EQ(got.compute_ns, want.compute_ns);
  EXPECT_EQ(got.copy_ns, want.copy_ns);
  EXPECT_EQ(got.overlap_ns, want.overlap_ns);
  EXPECT_EQ(got.gaps, want.gaps);
}

TEST(BusyTracker, InAnyOrderWithoutSettlingItIsTheWholeTimeline) {
  std::vector<Activity> acts = timeline(20000, 1);
  std::shuffle(acts.begin(), acts.end(), std::mt19937(2));
  BusyTracker tracker(16);
  for (const Activity& a : acts) tracker.add(a.start, a.end, a.work);
  expect_equal(tracker.finish(), exact(acts, 16));
  EXPECT_TRUE(tracker.exact());
}

TEST(BusyTracker, SettlingInTimeOrderKeepsItExactAndBounded) {
  // Batches arrive about in time order, each shuffled inside: what CUPTI's buffers give.
  std::vector<Activity> acts = timeline(1'000'000, 3);
  std::mt19937 rng(4);
  for (size_t i = 0; i < acts.size(); i += 1000)
    std::shuffle(acts.begin() + i, acts.begin() + std::min(acts.size(), i + 1000), rng);
  BusyTracker tracker(16, 4096);
  size_t most = 0;
  for (const Activity& a : acts) {
    tracker.add(a.start, a.end, a.work);
    most = std::max(most, tracker.held());
  }
  expect_equal(tracker.finish(), exact(acts, 16));
  EXPECT_TRUE(tracker.exact());
  EXPECT_EQ(tracker.late(), 0u);
  // The staging batch (65,536) and the three lists, each at most about the cap plus a batch:
  // a bound set by the cap, not by the 1.25 M activities.
  EXPECT_LT(most, size_t{65536 + 3 * (4096 + 65536)}) << "held " << most << " intervals";
}

TEST(BusyTracker, LateActivitiesAreClippedAndCounted) {
  BusyTracker tracker(4, 2);
  for (uint64_t i = 0; i < 70000; ++i) tracker.add(1000 + i * 100, 1000 + i * 100 + 50, BusyTracker::Work::kCompute);
  tracker.add(1000, 1000 + 7'000'000, BusyTracker::Work::kOther);  // covers everything, arrives last
  const BusyTracker::Totals t = tracker.finish();
  EXPECT_GT(tracker.late(), 0u);
  EXPECT_FALSE(tracker.exact());
  EXPECT_EQ(t.first_ns, 1000u);
  EXPECT_LE(t.busy_ns, 7'000'000u);
}

TEST(BusyTracker, AbsorbingLaterPartsGivesTheSameAsOneTracker) {
  const std::vector<Activity> acts = timeline(50000, 5);
  for (size_t parts : {2, 3, 7}) {
    BusyTracker whole(8);
    std::vector<BusyTracker> split(parts, BusyTracker(8));
    for (size_t i = 0; i < acts.size(); ++i) split[i * parts / acts.size()].add(acts[i].start, acts[i].end, acts[i].work);
    for (size_t p = 1; p < parts; ++p) split[0].absorb(std::move(split[p]));
    expect_equal(split[0].finish(), exact(acts, 8));
  }
}

TEST(BusyTracker, NoGapsAskedNoneKept) {
  BusyTracker tracker(0);
  tracker.add(10, 20, BusyTracker::Work::kCompute);
  tracker.add(30, 40, BusyTracker::Work::kCompute);
  tracker.add(5, 5, BusyTracker::Work::kCompute);  // empty: ignored
  const BusyTracker::Totals t = tracker.finish();
  EXPECT_TRUE(t.gaps.empty());
  EXPECT_EQ(t.busy_ns, 20u);
  EXPECT_EQ(t.first_ns, 10u);
  EXPECT_EQ(t.last_ns, 40u);
}

}  // namespace
}  // namespace gantt::analysis
