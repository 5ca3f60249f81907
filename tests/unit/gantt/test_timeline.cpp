// Utilisation over time (analysis/timeline.h) on events whose shares are computed by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "fabricate.h"
#include "gantt/analysis/memory.h"
#include "gantt/analysis/timeline.h"

using namespace gantt_test;

namespace {

constexpr uint64_t US = 1000, T = 10'000'000;

struct Fixture {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  uint32_t corr = 0;
  Fixture() {
    b.begin_capture("a");
    b.add(header());
    b.add(a100());
    b.add(string_def(1, "cudaLaunchKernel"));
    b.add(string_def(2, "k"));
  }
  void k(uint32_t stream, uint64_t s, uint64_t e) {
    b.add(api(1, 1, s - US / 2, s - US / 4, ++corr));
    b.add(kernel(2, stream, corr, 0, 0, s, e));
  }
  void copy(uint64_t s, uint64_t e) {
    b.add(api(1, 1, s - US / 2, s - US / 4, ++corr));
    b.add(memcpy_rec(v1::COPY_HTOD, 1 << 20, 13, corr, s, e));
  }
  gantt::analysis::Timeline run(uint64_t bucket) {
    b.end_capture({});
    gantt::Selection sel = gantt::select_events(m, {});
    sel.window_start_ns = T;  // the buckets start where the first kernel does
    return gantt::analysis::utilisation_timeline(m, sel, bucket);
  }
};

}  // namespace

TEST(Timeline, SharesPerBucket) {
  Fixture f;
  f.k(13, T, T + 10 * US);            // bucket 0 whole
  f.k(14, T + 5 * US, T + 15 * US);   // overlaps it; half of bucket 1
  f.copy(T + 20 * US, T + 30 * US);   // bucket 2 whole
  const auto t = f.run(10 * US);
  ASSERT_EQ(t.buckets, 3u);
  ASSERT_EQ(t.devices.size(), 1u);
  const auto& d = t.devices[0];
  EXPECT_DOUBLE_EQ(d.compute[0], 1.0);
  EXPECT_DOUBLE_EQ(d.compute[1], 0.5);
  EXPECT_DOUBLE_EQ(d.compute[2], 0.0);
  EXPECT_DOUBLE_EQ(d.copy[2], 1.0);
  EXPECT_DOUBLE_EQ(d.busy[0], 1.0);  // two kernels at once count once
  EXPECT_DOUBLE_EQ(d.busy[1], 0.5);
  EXPECT_DOUBLE_EQ(d.busy[2], 1.0);
  const std::string csv = gantt::analysis::format_timeline(f.m, t, "csv");
  EXPECT_NE(csv.find("10.000,gpu0,50.0,0.0,50.0,50.0,0"), std::string::npos) << csv;
}

TEST(Timeline, ADropIsALowRunTheDeviceRecoversFrom) {
  Fixture f;
  // 20 busy buckets, 2 at 10%, 5 busy, then 4 idle to the end (the end is not a drop).
  uint64_t t = T;
  for (int i = 0; i < 20; ++i, t += 10 * US) f.k(13, t, t + 10 * US);
  for (int i = 0; i < 2; ++i, t += 10 * US) f.k(13, t, t + 1 * US);
  for (int i = 0; i < 5; ++i, t += 10 * US) f.k(13, t, t + 10 * US);
  f.k(13, t + 39 * US, t + 40 * US);  // a last short kernel 4 buckets later: the window's end
  const auto tl = f.run(10 * US);
  ASSERT_EQ(tl.devices.size(), 1u);
  const auto& d = tl.devices[0];
  ASSERT_EQ(d.drops.size(), 1u);
  EXPECT_EQ(d.drops[0].first, 20u);
  EXPECT_EQ(d.drops[0].buckets, 2u);
  EXPECT_DOUBLE_EQ(d.drops[0].median, 1.0);
  EXPECT_DOUBLE_EQ(d.drops[0].lowest, 0.1);
  EXPECT_TRUE(d.in_drop(21));
  EXPECT_FALSE(d.in_drop(22));
}

TEST(Timeline, BucketsAreBoundedAndChosenRound) {
  EXPECT_EQ(gantt::analysis::auto_bucket_ns(163'000'000), 1'000'000u);  // 815 us -> 1 ms
  EXPECT_EQ(gantt::analysis::auto_bucket_ns(1'000'000'000), 5'000'000u);
  EXPECT_EQ(gantt::analysis::auto_bucket_ns(0), 1u);
  Fixture f;
  f.k(13, T, T + 10'000'000'000);  // 10 s at 1 ns: 1e10 buckets
  EXPECT_THROW(f.run(1), std::invalid_argument);
}

// ---- memory over time (analysis/memory.h) -----------------------------------------------

namespace {

v1::Record mem(v1::MemoryOp op, uint64_t address, uint64_t bytes, uint64_t t, v1::MemoryKind kind, uint32_t corr,
               bool async = false) {
  v1::Record r;
  auto* x = r.mutable_memory();
  x->set_op(op);
  x->set_address(address);
  x->set_bytes(bytes);
  x->set_time_ns(static_cast<int64_t>(t));
  x->set_memory_kind(kind);
  x->set_correlation_id(corr);
  x->set_async(async);
  return r;
}

// A capture of one A100 whose string table names the allocation calls (1 cudaMalloc,
// 3 cudaFree) and, when given, an NVTX range (2).
void begin_memory_capture(gantt::ModelBuilder& b, const char* range_name = nullptr) {
  b.begin_capture("a");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaMalloc"));
  if (range_name != nullptr) b.add(string_def(2, range_name));
  b.add(string_def(3, "cudaFree"));
}

}  // namespace

TEST(Memory, PeakByClassAndWhatWasLiveAtIt) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  begin_memory_capture(b, "forward");
  // params 100 B outside any range; in "forward": 300 B device, 50 B from a pool, 20 B pinned;
  // the 300 B freed after the peak; a free of memory allocated before the capture (ignored).
  b.add(api(1, 7, T, T + 10, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000, 100, T + 5, v1::MEMORY_DEVICE, 1));
  b.add(range(v1::RANGE_PUSH, 2, 7, T + 100));
  b.add(api(1, 7, T + 200, T + 210, 2));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x2000, 300, T + 205, v1::MEMORY_DEVICE, 2));
  b.add(api(1, 7, T + 300, T + 310, 3));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x3000, 50, T + 305, v1::MEMORY_DEVICE, 3, true));
  b.add(api(1, 7, T + 400, T + 410, 4));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x4000, 20, T + 405, v1::MEMORY_PINNED, 4));
  b.add(range(v1::RANGE_POP, 0, 7, T + 500));
  b.add(api(3, 7, T + 600, T + 610, 5));
  b.add(mem(v1::MEMORY_OP_FREE, 0x2000, 0, T + 605, v1::MEMORY_DEVICE, 5));
  b.add(api(3, 7, T + 700, T + 710, 6));
  b.add(mem(v1::MEMORY_OP_FREE, 0x9000, 0, T + 705, v1::MEMORY_DEVICE, 6));
  b.end_capture({});
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 1u);
  const auto& d = report[0];
  EXPECT_EQ(d.peak_bytes, 470u);
  EXPECT_EQ(d.peak_ns, T + 405);
  EXPECT_EQ(d.peak_by_class[static_cast<size_t>(gantt::analysis::MemoryClass::kDevice)], 400u);
  EXPECT_EQ(d.peak_by_class[static_cast<size_t>(gantt::analysis::MemoryClass::kPool)], 50u);
  EXPECT_EQ(d.peak_by_class[static_cast<size_t>(gantt::analysis::MemoryClass::kPinnedHost)], 20u);
  EXPECT_EQ(d.allocations, 4u);
  EXPECT_EQ(d.frees, 1u);
  EXPECT_EQ(d.live_at_end_bytes, 170u);
  ASSERT_EQ(d.at_peak.size(), 4u);
  EXPECT_EQ(d.at_peak[0].bytes, 300u);
  EXPECT_EQ(d.at_peak[0].where, "forward");
  EXPECT_EQ(d.at_peak[1].where, "");  // the params, outside any range
  ASSERT_FALSE(d.peak_by_range.empty());
  EXPECT_EQ(d.peak_by_range[0].first, "forward");
  EXPECT_EQ(d.peak_by_range[0].second, 370u);
}

namespace {

v1::Record tag(uint64_t address, uint32_t category, uint64_t t) {
  v1::Record r;
  auto* g = r.mutable_memory_tag();
  g->set_address(address);
  g->set_category_id(category);
  g->set_time_ns(static_cast<int64_t>(t));
  g->set_thread_id(7);
  return r;
}

}  // namespace

// gpuhook_mem_tag(): a tag names the allocation holding its address at its time; an address
// reused after a free belongs to the new allocation; a tag that matches nothing is ignored.
// Untagged memory is grouped by the top-level range it was allocated in.
TEST(Memory, CategoriesFromTagsElseTheRange) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  begin_memory_capture(b, "forward");
  b.add(string_def(4, "params"));
  b.add(string_def(5, "activations"));
  b.add(string_def(6, "nothing"));
  b.add(api(1, 7, T, T + 10, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000, 0x100, T + 5, v1::MEMORY_DEVICE, 1));  // A
  b.add(tag(0x1080, 4, T + 20));  // inside A: params
  b.add(api(3, 7, T + 30, T + 40, 2));
  b.add(mem(v1::MEMORY_OP_FREE, 0x1000, 0, T + 35, v1::MEMORY_DEVICE, 2));
  b.add(api(1, 7, T + 50, T + 60, 3));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000, 0x200, T + 55, v1::MEMORY_DEVICE, 3));  // B, A's address again
  b.add(tag(0x1000, 5, T + 70));  // B: activations
  b.add(tag(0x1300, 6, T + 70));  // past B's end: nothing
  b.add(range(v1::RANGE_PUSH, 2, 7, T + 100));
  b.add(api(1, 7, T + 200, T + 210, 4));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x8000, 0x40, T + 205, v1::MEMORY_DEVICE, 4));  // C: untagged, in forward
  b.add(range(v1::RANGE_POP, 0, 7, T + 300));
  b.end_capture({});
  const gantt::MemoryTable& mt = m.memory;
  ASSERT_EQ(mt.size(), 4u);
  EXPECT_EQ(m.string(mt.category[0]), "params");
  EXPECT_EQ(mt.category[1], 0u);  // the free
  EXPECT_EQ(m.string(mt.category[2]), "activations");
  EXPECT_EQ(mt.category[3], 0u);
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 1u);
  const auto& d = report[0];
  EXPECT_TRUE(d.tagged);
  // Layers in first-met order: params (A), activations (B), then "range forward" (C).
  ASSERT_EQ(d.categories.size(), 3u);
  EXPECT_EQ(d.categories[0], "params");
  EXPECT_EQ(d.categories[1], "activations");
  EXPECT_EQ(d.categories[2], "range forward");
  // The peak is B + C (0x240 B) after A was freed.
  EXPECT_EQ(d.peak_bytes, 0x240u);
  EXPECT_EQ(d.peak_by_category[0], 0u);
  EXPECT_EQ(d.peak_by_category[1], 0x200u);
  EXPECT_EQ(d.peak_by_category[2], 0x40u);
  // Per step, the layers add up to the classes.
  for (size_t i = 0; i < d.t.size(); ++i) {
    uint64_t by_category = 0;
    for (uint64_t v : d.in_use_by_category[i]) by_category += v;
    EXPECT_EQ(by_category, d.total(i)) << "step " << i;
  }
}

TEST(Memory, EveryDeviceStacksACategoryOnTheSameLayer) {
  // The memory view has one legend: layer k is colour k on every device. Rank 0 tags params
  // then activations, rank 1 the other way round; and a program's own "other" is one layer
  // with the overflow, not a second "other".
  gantt::Model m;
  gantt::ModelBuilder b{m};
  auto rank = [&](const std::string& name, const std::vector<std::string>& categories) {
    b.begin_capture(name);
    b.add(header());
    b.add(a100());
    uint64_t t = T;
    uint32_t id = 1;
    for (const std::string& c : categories) {
      b.add(string_def(id, c));
      b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000 * id, 0x100, t, v1::MEMORY_DEVICE, 0));
      b.add(tag(0x1000 * id, id, t + 1));
      t += 10, ++id;
    }
    b.end_capture({});
  };
  rank("r0", {"params", "activations"});
  rank("r1", {"activations", "params", "c3", "c4", "c5", "other", "c7", "c8", "c9"});
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 2u);
  const std::vector<std::string> layers = {"params", "activations", "c3", "c4", "c5", "other", "c7"};
  EXPECT_EQ(report[0].categories, layers);
  EXPECT_EQ(report[1].categories, layers);
  EXPECT_EQ(report[0].peak_by_category[0], 0x100u);  // params
  EXPECT_EQ(report[1].peak_by_category[0], 0x100u);
  EXPECT_EQ(report[1].peak_by_category[1], 0x100u);  // activations
  EXPECT_EQ(report[1].peak_by_category[5], 0x300u);  // its own "other", c8 and c9
}

TEST(Memory, EachStepsTagGoesToThatStepsAllocationWhenTheAddressIsReused) {
  // A training loop: each step allocates its activations at the address the previous step
  // freed (cudaMalloc hands the same block back; so does a pool) and tags them. 200 steps:
  // far more reuses of the address than the loader ever looked back over.
  gantt::Model m;
  gantt::ModelBuilder b{m};
  b.begin_capture("a");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "activations"));
  b.add(string_def(2, "workspace"));
  constexpr int kSteps = 200;
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t t = T + 100 * static_cast<uint64_t>(s);
    b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000, 0x100, t, v1::MEMORY_DEVICE, 0));
    b.add(tag(0x1000, s % 2 ? 2 : 1, t + 10));  // odd steps call it something else
    b.add(mem(v1::MEMORY_OP_FREE, 0x1000, 0, t + 50, v1::MEMORY_DEVICE, 0));
  }
  b.add(tag(0x1000, 2, T + 100 * kSteps));  // after the last free: nothing is live there
  b.end_capture({});
  const gantt::MemoryTable& mt = m.memory;
  ASSERT_EQ(mt.size(), 2u * kSteps);
  for (int s = 0; s < kSteps; ++s) {
    const uint32_t alloc = 2 * static_cast<uint32_t>(s);
    ASSERT_NE(mt.category[alloc], 0u) << "step " << s << "'s allocation lost its tag";
    EXPECT_EQ(m.string(mt.category[alloc]), s % 2 ? "workspace" : "activations") << "step " << s;
  }
}

// Two live allocations of 2^63 bytes each (a hostile file): the peak stops at UINT64_MAX
// instead of wrapping to 0.
TEST(Memory, SizesNearTheLimitSaturate) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  b.begin_capture("a");
  b.add(header());
  b.add(a100());
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x1000, uint64_t{1} << 63, T + 5, v1::MEMORY_DEVICE, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x2000, uint64_t{1} << 63, T + 6, v1::MEMORY_DEVICE, 2));
  b.end_capture({});
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].peak_bytes, UINT64_MAX);
  EXPECT_EQ(report[0].peak_ns, T + 6);
}

// ---- which allocations calls used (GPUHOOK_MEM_USE) ---------------------------------------

namespace {

v1::Record use(uint64_t address, uint64_t t, uint32_t corr) {
  v1::Record r;
  auto* u = r.mutable_memory_use();
  u->set_address(address);
  u->set_time_ns(static_cast<int64_t>(t));
  u->set_correlation_id(corr);
  u->set_thread_id(7);
  return r;
}

}  // namespace

// Each use goes to the allocation holding its address at its time (an interior pointer too;
// an address reused after a free belongs to the new allocation); a value inside no allocation
// is ignored. The report then knows, for each allocation live at the peak, its last use and
// how long it was held unused after it.
TEST(Memory, UsesGoToTheAllocationLiveAtTheirAddressAndTime) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  begin_memory_capture(b);
  b.add(api(1, 7, T, T + 10, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x10000, 0x1000, T + 5, v1::MEMORY_DEVICE, 1));   // A: the table
  b.add(api(1, 7, T + 20, T + 30, 2));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x20000, 0x1000, T + 25, v1::MEMORY_DEVICE, 2));  // B: the weights
  b.add(use(0x10800, T + 40, 11));  // A, inside
  b.add(use(0x10000, T + 50, 12));  // A, its last use
  b.add(use(0x20000, T + 60, 13));  // B
  b.add(use(0x90000, T + 60, 14));  // nothing there: an integer argument
  b.add(api(1, 7, T + 100, T + 110, 3));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x30000, 0x2000, T + 105, v1::MEMORY_DEVICE, 3));  // C: the peak
  b.add(use(0x30000, T + 120, 15));
  b.add(api(3, 7, T + 200, T + 210, 4));
  b.add(mem(v1::MEMORY_OP_FREE, 0x30000, 0, T + 205, v1::MEMORY_DEVICE, 4));
  b.add(use(0x20010, T + 900, 16));  // B again, long after the peak
  b.add(api(1, 7, T + 950, T + 960, 5));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x30000, 0x100, T + 955, v1::MEMORY_DEVICE, 5));   // D at C's address
  b.add(use(0x30000, T + 970, 17));  // D, not C
  b.add(api(1, 7, T + 1000, T + 1010, 6));  // the capture ends here
  b.end_capture({});
  const gantt::MemoryTable& mt = m.memory;
  ASSERT_EQ(mt.size(), 5u);
  EXPECT_EQ(m.captures[0].memory_uses, 7u);
  EXPECT_EQ(mt.uses[0], 2u);
  EXPECT_EQ(mt.first_use_ns[0], T + 40);
  EXPECT_EQ(mt.last_use_ns[0], T + 50);
  EXPECT_EQ(mt.last_use_correlation[0], 12u);
  EXPECT_EQ(mt.uses[1], 2u);
  EXPECT_EQ(mt.last_use_ns[1], T + 900);
  EXPECT_EQ(mt.uses[2], 1u);
  EXPECT_EQ(mt.last_use_ns[2], T + 120);  // C's use before its free; D's is D's
  EXPECT_EQ(mt.uses[4], 1u);
  EXPECT_EQ(mt.last_use_ns[4], T + 970);
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 1u);
  const auto& d = report[0];
  ASSERT_TRUE(d.uses_recorded);
  EXPECT_EQ(d.peak_ns, T + 105);
  // At the peak A, B and C are live; A was last used before it and never again: held unused
  // from T+50 to the capture's end (T+1010).
  ASSERT_EQ(d.unused_after_peak.size(), 1u);
  EXPECT_EQ(d.unused_after_peak[0].bytes, 0x1000u);
  EXPECT_EQ(d.unused_after_peak[0].last_use_ns, T + 50);
  EXPECT_EQ(d.unused_after_peak[0].idle_ns, 960u);
  EXPECT_EQ(d.unused_after_peak_bytes, 0x1000u);
  // C: freed at T+205, 85 ns after its last use.
  for (const auto& a : d.at_peak) {
    if (a.bytes == 0x2000) {
      EXPECT_EQ(a.idle_ns, 85u);
    }
  }
}

// Without MemoryUse records nothing is said about use: not "never used".
TEST(Memory, NoUseRecordsMeansUnknownNotUnused) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  begin_memory_capture(b);
  b.add(api(1, 7, T, T + 10, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x10000, 0x1000, T + 5, v1::MEMORY_DEVICE, 1));
  b.end_capture({});
  const auto report = gantt::analysis::memory_report(m);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_FALSE(report[0].uses_recorded);
  EXPECT_TRUE(report[0].unused_after_peak.empty());
  EXPECT_EQ(report[0].at_peak[0].idle_ns, 0u);
}

// The loader reads at most 2^20 tags a capture: the rest are counted, and stats says so.
TEST(Memory, TagsPastTheBoundAreCountedAndSaid) {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  begin_memory_capture(b);
  b.add(string_def(4, "params"));
  b.add(api(1, 7, T, T + 10, 1));
  b.add(mem(v1::MEMORY_OP_ALLOC, 0x10000, 0x1000, T + 5, v1::MEMORY_DEVICE, 1));
  for (uint64_t i = 0; i < (uint64_t{1} << 20) + 3; ++i) b.add(tag(0x10000, 4, T + 20));
  b.end_capture({});
  EXPECT_EQ(m.captures[0].memory_tags_ignored, 3u);
  EXPECT_EQ(m.string(m.memory.category[0]), "params");  // the ones read still count
  const std::string text = gantt::analysis::format_memory_stats(m, gantt::analysis::memory_report(m), "text");
  EXPECT_NE(text.find("3 gpuhook_mem_tag() tags past the first 1048576 were not read"), std::string::npos) << text;
}

// A scan gives a device's intervals in file order, not time order: the union it keeps, given
// them in any order, is the merged list a load sorts, and the timeline of those unions is the
// loaded timeline.
TEST(Timeline, UnionsGivenInAnyOrderAreTheLoadedTimeline) {
  Fixture f;
  std::vector<gantt::analysis::Interval> spans;
  uint64_t seed = 7;
  const auto next = [&seed] { return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int i = 0; i < 20000; ++i) {  // more than one batch of out-of-order spans (4096)
    const uint64_t s = T + (next() >> 40) % (50'000 * US), e = s + 1 + (next() >> 40) % (3 * US);
    spans.emplace_back(s, e);
    f.k(13 + static_cast<uint32_t>(i % 3), s, e);
  }
  const auto loaded = f.run(100 * US);
  gantt::analysis::IntervalUnion busy;
  for (const auto& [s, e] : spans) busy.add(s, e);
  std::vector<gantt::analysis::Interval> merged = spans;
  gantt::analysis::merge_intervals(merged);
  EXPECT_EQ(busy.spans(), merged);
  EXPECT_GT(merged.size(), 1000u);  // gaps between the spans: not one interval

  gantt::analysis::UnionsByDevice unions;
  unions[{0, 0}].busy = busy.spans();
  unions[{0, 0}].compute = busy.spans();
  const gantt::Selection sel = [&] {
    gantt::Selection s = gantt::select_events(f.m, {});
    s.window_start_ns = T;
    return s;
  }();
  const auto scanned = gantt::analysis::timeline_of(unions, sel.window_start_ns, sel.window_end_ns, 100 * US);
  ASSERT_EQ(scanned.buckets, loaded.buckets);
  ASSERT_EQ(scanned.devices.size(), 1u);
  EXPECT_EQ(scanned.devices[0].busy, loaded.devices[0].busy);
  EXPECT_EQ(scanned.devices[0].compute, loaded.devices[0].compute);
  EXPECT_EQ(loaded.events, 20000u);
}
