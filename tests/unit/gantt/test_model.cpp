// The join of host API calls with GPU activities, names, ranges and derived stages, on
// fabricated records whose right answers are known by construction.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "fabricate.h"
#include "gantt/model/model.h"

using namespace gantt_test;
using gantt::EventKind;
using gantt::kNone;

namespace {

enum : uint32_t { kLaunch = 1, kGemm = 2, kMemcpyAsync = 3, kStep = 4, kFwd = 5, kRelu = 6, kAllReduce = 7, kNcclK = 8 };

gantt::Model fixture() {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("fixture.gpuh");
  b.add(header());
  b.add(a100());
  b.add(string_def(kLaunch, "cudaLaunchKernel"));
  b.add(string_def(kGemm, "_Z4gemmPfS_S_i"));
  b.add(string_def(kMemcpyAsync, "cudaMemcpyAsync"));
  b.add(string_def(kStep, "step"));
  b.add(string_def(kFwd, "forward"));
  b.add(string_def(kRelu, "relu_kernel"));
  b.add(string_def(kAllReduce, "ncclAllReduce"));
  b.add(string_def(kNcclK, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  b.add(range(v1::RANGE_PUSH, kStep, 100, 1000));
  b.add(range(v1::RANGE_PUSH, kFwd, 100, 1100));
  b.add(api(kLaunch, 100, 1200, 1300, 7));
  b.add(range(v1::RANGE_POP, 0, 100, 1400));
  b.add(api(kMemcpyAsync, 100, 1500, 1550, 8));
  b.add(range(v1::RANGE_POP, 0, 100, 9000));
  b.add(api(kLaunch, 100, 9500, 9600, 9));  // outside every range
  // GPU records arrive later and out of order, as activity buffers do.
  b.add(memcpy_rec(v1::COPY_HTOD, 4096, 14, 8, 3000, 3500));
  b.add(kernel(kGemm, 13, 7, 1250, 1280, 2000, 2600));
  b.add(kernel(kRelu, 13, 9, 0, 0, 9700, 9800));  // latency timestamps absent
  b.add(kernel(kRelu, 13, 99, 0, 0, 9900, 9950));  // correlation id with no API call
  // NCCL: the hook's host record and the kernel CUPTI saw launched inside it.
  v1::Record n;
  n.mutable_nccl()->set_op(v1::NCCL_ALL_REDUCE);
  n.mutable_nccl()->set_name_id(kAllReduce);
  n.mutable_nccl()->set_bytes(1 << 20);
  n.mutable_nccl()->set_thread_id(100);
  n.mutable_nccl()->set_start_ns(10000);
  n.mutable_nccl()->set_end_ns(10100);
  b.add(n);
  b.add(api(kLaunch, 100, 10010, 10050, 10));
  b.add(kernel(kNcclK, 15, 10, 10060, 10070, 10200, 12000));
  b.end_capture({});
  return m;
}

}  // namespace

TEST(ModelJoin, JoinsByCorrelationId) {
  const gantt::Model m = fixture();
  ASSERT_EQ(m.events.size(), 5u);
  ASSERT_EQ(m.captures.size(), 1u);
  // Event 0 is the memcpy (record order); its API call is the memcpy call at 1500.
  EXPECT_EQ(m.events.kind[0], EventKind::kMemcpy);
  EXPECT_EQ(m.launch_ns(0), 1500u);
  EXPECT_EQ(m.display_name(0), "cudaMemcpyAsync");
  EXPECT_EQ(m.events.bytes[0], 4096u);
  EXPECT_STREQ(gantt::copy_kind_name(m.events.copy_kind[0]), "HtoD");
  EXPECT_EQ(m.events.kind[1], EventKind::kKernel);
  EXPECT_EQ(m.launch_ns(1), 1200u);
  EXPECT_EQ(m.launch_thread_id(1), 100u);
  EXPECT_EQ(m.launch_ns(2), 9500u);
  EXPECT_EQ(m.events.api[3], kNone);
  EXPECT_EQ(m.captures[0].unmatched_activities, 1u);
}

TEST(ModelJoin, HostFunctionSitsOnItsStreamJoinedToTheCallThatQueuedIt) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("host.gpuh");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, "_Z4gemmPfS_S_i"));
  b.add(string_def(3, "cudaLaunchHostFunc"));
  b.add(string_def(4, "_ZN5train10checkpointEPv"));
  b.add(api(1, 100, 1000, 1100, 7));
  v1::Record k = kernel(2, 13, 7, 0, 0, 1200, 1500);
  k.mutable_kernel()->set_device(1);
  b.add(k);
  b.add(api(3, 100, 1150, 1160, 8));
  b.add(external(41, 8));
  b.add(host_function(4, 13, 555, 1600, 2600, 41));
  b.add(host_function(4, 13, 555, 2700, 2800, 0));  // no external id: on its lane, unjoined
  b.end_capture({});
  ASSERT_EQ(m.events.size(), 3u);
  EXPECT_EQ(m.events.kind[1], EventKind::kHostFunc);
  EXPECT_EQ(m.events.device[1], 1u);  // the stream's device
  EXPECT_EQ(m.events.stream[1], 13u);
  EXPECT_EQ(m.launch_ns(1), 1150u);
  EXPECT_EQ(m.display_name(1), "train::checkpoint(void*)");
  EXPECT_EQ(m.events.start_ns[1], 1600u);
  EXPECT_EQ(m.events.api[2], kNone);
  EXPECT_EQ(m.events.device[2], 1u);
}

TEST(ModelJoin, DemanglesKernelNames) {
  const gantt::Model m = fixture();
  EXPECT_EQ(m.display_name(1), "gemm(float*, float*, float*, int)");
  EXPECT_EQ(m.string(m.events.name[1]), "_Z4gemmPfS_S_i");
  EXPECT_EQ(m.display_name(2), "relu_kernel");
  EXPECT_EQ(gantt::demangle("_Znot a name"), "_Znot a name");
}

TEST(ModelJoin, AttachesInnermostRangeOfLaunchingThread) {
  const gantt::Model m = fixture();
  EXPECT_EQ(m.range_path(1), "step/forward");
  EXPECT_EQ(m.range_path(0), "step");  // the memcpy was issued after forward popped
  EXPECT_EQ(m.range_path(2), "");
  ASSERT_EQ(m.ranges.size(), 2u);
  EXPECT_EQ(m.ranges.end_ns[0], 9000u);
  EXPECT_EQ(m.ranges.depth[1], 1u);
}

TEST(ModelJoin, PushesAndPopsPairWithinTheirOwnDomain) {
  // NVTX keeps one stack per thread per domain (nvToolsExt.h:64-65): a pop in domain "lib"
  // ends lib's range even while a core range pushed after it is still open.
  enum : uint32_t { kOuter = 1, kLibRange = 2, kInner = 3, kLib = 4 };
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("domains.gpuh");
  b.add(header());
  b.add(string_def(kOuter, "outer"));
  b.add(string_def(kLibRange, "lib-range"));
  b.add(string_def(kInner, "inner"));
  b.add(string_def(kLib, "lib"));
  auto in_lib = [](v1::Record r) {
    r.mutable_range()->set_domain_id(kLib);
    return r;
  };
  b.add(range(v1::RANGE_PUSH, kOuter, 100, 1000));
  b.add(in_lib(range(v1::RANGE_PUSH, kLibRange, 100, 1100)));
  b.add(range(v1::RANGE_PUSH, kInner, 100, 1200));
  b.add(in_lib(range(v1::RANGE_POP, 0, 100, 1300)));  // ends lib-range, not inner
  b.add(range(v1::RANGE_POP, 0, 100, 1400));            // ends inner
  b.add(range(v1::RANGE_POP, 0, 100, 1500));            // ends outer
  b.add(in_lib(range(v1::RANGE_POP, 0, 100, 1600)));  // lib's stack is empty
  b.end_capture({});
  ASSERT_EQ(m.ranges.size(), 3u);
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < m.ranges.size(); ++i) row[std::string(m.string(m.ranges.name[i]))] = i;
  EXPECT_EQ(m.ranges.end_ns[row["outer"]], 1500u);
  EXPECT_EQ(m.ranges.end_ns[row["lib-range"]], 1300u);
  EXPECT_EQ(m.ranges.end_ns[row["inner"]], 1400u);
  EXPECT_EQ(m.ranges.depth[row["inner"]], 1u);
  EXPECT_EQ(m.ranges.depth[row["lib-range"]], 0u);  // the first range of its domain
  EXPECT_EQ(m.ranges.parent[row["inner"]], row["outer"]);
  EXPECT_EQ(m.captures[0].unbalanced_range_pops, 1u);
}

TEST(ModelJoin, DerivedStagesKeepUnknownUnknown) {
  const gantt::Model m = fixture();
  const gantt::Stages s = m.stages(1);
  EXPECT_EQ(*s.launch_to_queued_ns, 50);
  EXPECT_EQ(*s.queued_to_submitted_ns, 30);
  EXPECT_EQ(*s.submitted_to_start_ns, 720);
  EXPECT_EQ(*s.queued_to_start_ns, 750);
  EXPECT_EQ(*s.exec_ns, 600);
  EXPECT_EQ(*s.total_ns, 1400);
  const gantt::Stages r = m.stages(2);
  EXPECT_FALSE(r.launch_to_queued_ns.has_value());
  EXPECT_FALSE(r.queued_to_start_ns.has_value());
  EXPECT_EQ(*r.exec_ns, 100);
  EXPECT_EQ(*r.total_ns, 300);
  const gantt::Stages u = m.stages(3);  // no API call: no launch time
  EXPECT_FALSE(u.total_ns.has_value());
}

TEST(ModelJoin, NcclCallClaimsTheKernelItLaunched) {
  const gantt::Model m = fixture();
  ASSERT_EQ(m.nccl.size(), 1u);
  const uint32_t e = m.nccl.event[0];
  ASSERT_NE(e, kNone);
  EXPECT_EQ(m.events.kind[e], EventKind::kNccl);
  EXPECT_EQ(m.events.bytes[e], 1u << 20);
  EXPECT_EQ(m.events.stream[e], 15u);
}

TEST(ModelJoin, OccupancyComputedFromDeviceInfo) {
  const gantt::Model m = fixture();
  // 256 threads, 32 regs, no smem on sm_80: 8 blocks by warps = 64 warps = 100%.
  EXPECT_FLOAT_EQ(m.events.occupancy[1], 1.0f);
  EXPECT_EQ(m.events.occupancy_limit[1], gantt::OccupancyLimit::kWarps);
  EXPECT_TRUE(std::isnan(m.events.occupancy[0]));  // a memcpy has none
}

TEST(ModelJoin, MissingStringIsMarkedNotGuessed) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("x");
  b.add(header());
  b.add(kernel(77, 1, 1, 0, 0, 10, 20));
  b.end_capture({});
  EXPECT_EQ(m.display_name(0), "<string 77 missing>");
}

TEST(ModelJoin, TwoCapturesKeepTheirOwnStringIds) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("a");
  b.add(header());
  b.add(string_def(1, "alpha"));
  b.add(kernel(1, 1, 1, 0, 0, 10, 20));
  b.end_capture({});
  b.begin_capture("b");
  b.add(header());
  b.add(string_def(1, "beta"));
  b.add(kernel(1, 1, 1, 0, 0, 10, 20));
  b.end_capture({});
  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_EQ(m.display_name(0), "alpha");
  EXPECT_EQ(m.display_name(1), "beta");
  EXPECT_EQ(m.events.capture[1], 1u);
}

TEST(ModelJoin, ReserveHintIsBoundedAndHarmless) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("x");
  b.reserve_hint(1ull << 40);  // a hostile index: ignored, nothing allocated for it
  EXPECT_LT(m.events.start_ns.capacity(), 1u << 20);
  b.reserve_hint(1000);
  EXPECT_GE(m.events.start_ns.capacity(), 1000u);
  EXPECT_GE(m.api.start_ns.capacity(), 1000u);
  b.add(header());
  b.add(kernel(0, 1, 1, 0, 0, 10, 20));
  b.end_capture({});
  EXPECT_EQ(m.events.size(), 1u);
}

// Issue 22 item 9: the device record is validated once at load; an unusable one leaves
// occupancy unknown and says so, it does not fail the load.
TEST(ModelJoin, UnusableDeviceRecordIsReportedAndLeavesOccupancyUnknown) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("hostile.gpuh");
  b.add(header());
  v1::Record d = a100();
  d.mutable_device()->set_warp_size(1u << 24);
  b.add(d);
  b.add(string_def(1, "k"));
  b.add(kernel(1, 13, 7, 0, 0, 2000, 2600));
  b.end_capture({});
  ASSERT_EQ(m.events.size(), 1u);
  EXPECT_EQ(m.events.occupancy_limit[0], gantt::OccupancyLimit::kUnknown);
  bool corrupt = true;
  const auto lines = gantt::integrity_warnings(m, &corrupt);
  EXPECT_FALSE(corrupt);
  bool said = false;
  for (const auto& l : lines) said |= l.find("hostile.gpuh: device 0: warp size 16777216 is outside 1..1024") == 0;
  EXPECT_TRUE(said);
}

// Issue 22 item 9: block and grid dimensions are untrusted int32 values; their product
// overflowed int in diagnose (UBSan: 65537 * 65535).
TEST(ModelJoin, Dim3CountNeverOverflows) {
  EXPECT_EQ(gantt::dim3_count({65537, 65535, 1}), 4'294'967'295u);
  EXPECT_EQ(gantt::dim3_count({INT32_MAX, INT32_MAX, INT32_MAX}), UINT64_MAX);
  EXPECT_EQ(gantt::dim3_count({256, 0, 1}), 0u);
  EXPECT_EQ(gantt::dim3_count({-1, 1, 1}), 0u);
}

// The tables' for_each_column is the one list of their columns: reserving and appending go
// through it, so a column missing from it would stay empty while the others grow.
template <class Table>
size_t listed_columns(Table& t) {
  size_t n = 0;
  t.for_each_column([&n](auto&, auto) { ++n; });
  return n;
}

TEST(ModelColumns, EveryColumnIsListedOnce) {
  gantt::EventTable e;
  gantt::ApiTable a;
  // Every member is a std::vector, and every std::vector has the same size.
  EXPECT_EQ(listed_columns(e) * sizeof(std::vector<int>), sizeof(gantt::EventTable));
  EXPECT_EQ(listed_columns(a) * sizeof(std::vector<int>), sizeof(gantt::ApiTable));
  gantt::NcclTable n;
  EXPECT_EQ(listed_columns(n) * sizeof(std::vector<int>), sizeof(gantt::NcclTable));
}

TEST(ModelColumns, EveryColumnHasARowPerEvent) {
  using namespace gantt_test;
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("x");
  b.reserve_hint(100);
  b.add(header());
  b.add(api(1, 7, 1'100'000, 1'100'100, 1));
  b.add(kernel(2, 1, 1, 1'200'000, 1'200'100, 1'300'000, 1'400'000));
  b.add(kernel(2, 1, 2, 1'200'000, 1'200'100, 1'400'000, 1'500'000));
  b.end_capture({});
  ASSERT_EQ(m.events.size(), 2u);
  m.events.for_each_column([&](auto& column, auto) { EXPECT_EQ(column.size(), 2u); });
  m.api.for_each_column([&](auto& column, auto) { EXPECT_EQ(column.size(), 1u); });
  EXPECT_TRUE(std::isnan(m.events.occupancy[0]) || m.events.occupancy[0] >= 0);
  EXPECT_EQ(m.events.src_device[0], gantt::kNone);
}
