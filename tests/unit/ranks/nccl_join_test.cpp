// NCCL calls joined to the kernels they launched, from fabricated records: through the
// external correlation ids the hook pushes around each call (CUPTI ties them to the launch
// that ran inside), not by thread and time.
#include <gtest/gtest.h>

#include "capture_builder.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

constexpr uint32_t kCustom2 = 5;  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2: the hook's kind
constexpr uint32_t kCustom0 = 3;  // kineto's
constexpr uint64_t kHookTid = 4242;                  // gettid(), what the NCCL wrapper records
constexpr uint64_t kCuptiTid = 0x7f3a12345700ull;    // pthread_self(), CUPTI's default thread id

constexpr const char* kAllReduce = "ncclAllReduce";
constexpr const char* kSend = "ncclSend";
constexpr const char* kRecv = "ncclRecv";
constexpr const char* kGroupStart = "ncclGroupStart";
constexpr const char* kGroupEnd = "ncclGroupEnd";
constexpr const char* kAllReduceKernel =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kSendRecvKernel = "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kOtherKernel = "_Z6scale_Pf";

// Records made by the shared capture builder, kept in memory, handed to the model by its tap.
class Capture {
 public:
  explicit Capture(Model& model) : b_(model) {
    b_.begin_capture("rank0.gpuh");
    c_.tap([this](const v1::Record& r) { b_.add(r); });
    auto h = c_.add(&v1::Record::mutable_header);
    h->set_format_version(1);
    h->set_rank(0);
    h->set_start_monotonic_raw_ns(1'000'000);
    h->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK);
  }
  ~Capture() {
    c_.close();  // the last record reaches the model first
    b_.end_capture(gpuhook::Integrity{});
  }

  void nccl(v1::NcclOp op, const char* name, uint64_t start, uint64_t end, uint64_t external_id, uint32_t group_depth,
            uint64_t sequence = 0) {
    auto n = c_.nccl(op, name, kHookTid, start, end);
    n->set_count(256);
    n->set_datatype(7);
    n->set_bytes(1024);
    n->set_comm_id(99);
    n->set_rank(0);
    n->set_nranks(2);
    n->set_sequence(sequence);
    n->set_group_depth(group_depth);
    n->set_external_id(external_id);
  }
  // A launch through the driver on the calling thread as CUPTI names it, and its kernel.
  void launch(const char* kernel, uint64_t at, uint32_t correlation_id, uint64_t thread = kCuptiTid) {
    {
      auto a = c_.api("cuLaunchKernelEx", thread, at, at + 500, correlation_id);
      a->set_domain(v1::API_DOMAIN_DRIVER);
      a->set_cbid(652);
    }
    c_.kernel(kernel, 0, correlation_id, at + 10'000, at + 30'000);
  }
  void external(uint32_t kind, uint64_t external_id, uint32_t correlation_id) {
    c_.external(external_id, correlation_id)->set_kind(kind);
  }

 private:
  ModelBuilder b_;
  gpuhook::test::CaptureBuilder c_;  // after b_, which its tap feeds
};

uint32_t kernel_named(const Model& m, const std::string& name) {
  for (uint32_t i = 0; i < m.events.size(); ++i)
    if (m.strings[m.events.name[i]] == name) return i;
  return kNone;
}

TEST(NcclJoin, ACallIsTiedToItsKernelByExternalIdWhenCuptiNamesTheThreadDifferently) {
  // CUPTI's thread id is pthread_self() (cupti_activity.h, thread-id type) while the NCCL
  // wrapper records gettid(): the two never match, so thread and time cannot join them.
  Model m;
  {
    Capture c(m);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 2'000'000, 2'010'000, 11, 0);
    c.external(kCustom2, 11, 5);
    c.launch(kAllReduceKernel, 2'004'000, 5);
  }
  ASSERT_EQ(m.nccl.size(), 1u);
  const uint32_t k = kernel_named(m, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  ASSERT_NE(k, kNone);
  EXPECT_EQ(m.nccl.event[0], k);
  EXPECT_EQ(m.events.kind[k], EventKind::kNccl);
  EXPECT_EQ(m.events.bytes[k], 1024u);
}

TEST(NcclJoin, TheExternalIdWinsOverAnEarlierLaunchInsideTheCall) {
  // Another kernel launched on the same thread inside the call window (as NCCL may launch its
  // own helpers, or a callback of the app's may) comes first in time; only the external id
  // says which kernel the all-reduce ran.
  Model m;
  {
    Capture c(m);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 2'000'000, 2'010'000, 12, 0);
    c.launch(kOtherKernel, 2'001'000, 6, kHookTid);
    c.external(kCustom2, 12, 7);
    c.launch(kAllReduceKernel, 2'004'000, 7, kHookTid);
  }
  const uint32_t nccl_kernel =
      kernel_named(m, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  ASSERT_EQ(m.nccl.size(), 1u);
  EXPECT_EQ(m.nccl.event[0], nccl_kernel);
  EXPECT_EQ(m.events.kind[kernel_named(m, "_Z6scale_Pf")], EventKind::kKernel);
}

TEST(NcclJoin, GroupedSendAndRecvAreTiedToTheKernelTheirGroupEndLaunched) {
  // Inside ncclGroupStart/End nothing launches; the outermost ncclGroupEnd (group depth 0
  // after it) launches the group's kernels under its own external id.
  Model m;
  {
    Capture c(m);
    c.nccl(v1::NCCL_GROUP_START, kGroupStart, 3'000'000, 3'000'100, 20, 1);
    c.nccl(v1::NCCL_SEND, kSend, 3'000'200, 3'000'300, 21, 1);
    c.nccl(v1::NCCL_RECV, kRecv, 3'000'400, 3'000'500, 22, 1);
    c.nccl(v1::NCCL_GROUP_END, kGroupEnd, 3'000'600, 3'010'000, 23, 0);
    c.external(kCustom2, 23, 8);
    c.launch(kSendRecvKernel, 3'001'000, 8);
  }
  const uint32_t k = kernel_named(m, "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE");
  ASSERT_NE(k, kNone);
  ASSERT_EQ(m.nccl.size(), 4u);
  EXPECT_EQ(m.nccl.event[1], k) << "ncclSend";
  EXPECT_EQ(m.nccl.event[2], k) << "ncclRecv";
  EXPECT_EQ(m.events.kind[k], EventKind::kNccl);
  EXPECT_EQ(m.events.bytes[k], 2048u) << "the kernel moved what the send and the recv moved";
}

// Two all-reduces in one group (rows 1 and 2, the group's end row 3), and their two kernels.
void group_of_two_all_reduces(Capture& c) {
    c.nccl(v1::NCCL_GROUP_START, kGroupStart, 4'000'000, 4'000'100, 30, 1);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 4'000'200, 4'000'300, 31, 1, 0);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 4'000'400, 4'000'500, 32, 1, 1);
    c.nccl(v1::NCCL_GROUP_END, kGroupEnd, 4'000'600, 4'010'000, 33, 0);
    c.external(kCustom2, 33, 9);
    c.launch(kAllReduceKernel, 4'001'000, 9);
    c.external(kCustom2, 33, 10);
    c.launch(kAllReduceKernel, 4'002'000, 10);
}

TEST(NcclJoin, EachCollectiveOfAGroupGetsItsOwnKernel) {
  // Two all-reduces in one group (e.g. one per communicator): two kernels, one each, in order.
  Model m;
  {
    Capture c(m);
    group_of_two_all_reduces(c);
  }
  ASSERT_EQ(m.nccl.size(), 4u);
  ASSERT_NE(m.nccl.event[1], kNone);
  ASSERT_NE(m.nccl.event[2], kNone);
  EXPECT_NE(m.nccl.event[1], m.nccl.event[2]);
  EXPECT_LT(m.events.start_ns[m.nccl.event[1]], m.events.start_ns[m.nccl.event[2]]);
}

TEST(NcclJoin, AKernelsCallIsTheCollectiveNotItsGroupsEnd) {
  // The group's end takes the first kernel it launched too; the call behind that kernel, as
  // every export and the scan's join name it, is the all-reduce that ran it. Where no call of
  // the group took a kernel, its end is the call behind it.
  Model m;
  {
    Capture c(m);
    group_of_two_all_reduces(c);
    c.nccl(v1::NCCL_GROUP_START, kGroupStart, 5'000'000, 5'000'100, 40, 1);
    c.nccl(v1::NCCL_GROUP_END, kGroupEnd, 5'000'600, 5'010'000, 41, 0);
    c.external(kCustom2, 41, 11);
    c.launch(kSendRecvKernel, 5'001'000, 11);
  }
  ASSERT_EQ(m.nccl.size(), 6u);
  ASSERT_EQ(m.nccl.event[3], m.nccl.event[1]) << "the group's end took its first kernel";
  const std::vector<uint32_t> call = m.nccl_call_of_events();
  ASSERT_EQ(call.size(), m.events.size());
  EXPECT_EQ(call[m.nccl.event[1]], 1u);
  EXPECT_EQ(call[m.nccl.event[2]], 2u);
  const uint32_t lone = kernel_named(m, "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE");
  ASSERT_NE(lone, kNone);
  EXPECT_EQ(call[lone], 5u) << "a kernel only a group's end launched";
}

TEST(NcclJoin, AnotherProfilersExternalIdsAreNotTheHooks) {
  // kineto pushes its own ids under CUSTOM0; the same number under that kind is not ours.
  Model m;
  {
    Capture c(m);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 2'000'000, 2'010'000, 11, 0);
    c.external(kCustom0, 11, 5);
    c.launch(kOtherKernel, 2'004'000, 5);
  }
  ASSERT_EQ(m.nccl.size(), 1u);
  EXPECT_EQ(m.nccl.event[0], kNone);
  EXPECT_EQ(m.events.kind[0], EventKind::kKernel);
}

TEST(NcclJoin, WithoutExternalIdsTheThreadAndTimeJoinStillWorks) {
  // Captures from before external ids: the first launch on the call's thread inside the call.
  Model m;
  {
    Capture c(m);
    c.nccl(v1::NCCL_ALL_REDUCE, kAllReduce, 2'000'000, 2'010'000, 0, 0);
    c.launch(kAllReduceKernel, 2'004'000, 5, kHookTid);
  }
  ASSERT_EQ(m.nccl.size(), 1u);
  EXPECT_NE(m.nccl.event[0], kNone);
}

}  // namespace
}  // namespace gantt
