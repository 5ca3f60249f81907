// Each annotation rule on synthetic events whose right answer is known.
#include <gtest/gtest.h>

#include "fabricate.h"
#include "gantt/analysis/waits.h"
#include "gantt/render/annotate.h"

using namespace gantt_test;
using gantt::AnnotationKind;

namespace {

enum : uint32_t { kLaunch = 1, kK = 2, kCopy = 3, kSync = 4, kSyncCopy = 5 };
constexpr uint64_t US = 1000, T = 10'000'000;

struct Fixture {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  uint32_t corr = 0;
  Fixture() {
    b.begin_capture("a");
    b.add(header());
    b.add(a100());
    b.add(string_def(kLaunch, "cudaLaunchKernel"));
    b.add(string_def(kK, "k"));
    b.add(string_def(kCopy, "cudaMemcpyAsync"));
    b.add(string_def(kSync, "cudaStreamSynchronize"));
    b.add(string_def(kSyncCopy, "cudaMemcpy"));
  }
  void k(uint32_t stream, uint64_t launch, uint64_t q, uint64_t s, uint64_t e, uint32_t regs = 32, int32_t grid_x = 80) {
    b.add(api(kLaunch, 1, launch, launch + US, ++corr));
    v1::Record r = kernel(kK, stream, corr, q, q ? q + US : 0, s, e, 256, regs);
    r.mutable_kernel()->set_grid_x(grid_x);
    b.add(r);
  }
  void copy(uint32_t stream, uint64_t s, uint64_t e, uint32_t call = kCopy) {
    b.add(api(call, 1, s - 5 * US, call == kSyncCopy ? e + US : s - 4 * US, ++corr));
    b.add(memcpy_rec(v1::COPY_HTOD, 1 << 20, stream, corr, s, e));
  }
  gantt::Annotations run(const gantt::AnnotateOptions& o = {}) {
    b.end_capture({});
    return gantt::annotate(m, gantt::select_events(m, {}), o);
  }
  static size_t count(const gantt::Annotations& a, AnnotationKind k) { return a.count[static_cast<int>(k)]; }
};

}  // namespace

TEST(Annotate, QueueDelayOverThreshold) {
  Fixture f;
  f.k(13, T, T + 10 * US, T + 160 * US, T + 200 * US);   // queued 150 us
  f.k(13, T, T + 210 * US, T + 260 * US, T + 300 * US);  // queued 50 us
  const auto a = f.run();
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kQueueDelay), 1u);
  EXPECT_EQ(a.items[0].label, "queued 150 us: 150 us launch");  // nothing else ran: the launch path
  gantt::AnnotateOptions strict;
  strict.queue_delay_ns = 10 * US;
  EXPECT_EQ(Fixture::count(gantt::annotate(f.m, gantt::select_events(f.m, {}), strict), AnnotationKind::kQueueDelay), 2u);
}

// Why each launch waited (analysis/waits.h): the queue-delay flag counts only the part that is
// not the program's own ordering.
TEST(Annotate, AKernelBehindItsOwnStreamIsNotAQueueDelay) {
  Fixture f;
  f.k(13, T, T + 1 * US, T + 2 * US, T + 400 * US);
  f.k(13, T + 5 * US, T + 6 * US, T + 401 * US, T + 500 * US);  // queued 395 us, all behind the first
  const auto a = f.run();
  EXPECT_EQ(Fixture::count(a, AnnotationKind::kQueueDelay), 0u);
  const auto w = gantt::analysis::wait_causes(f.m, gantt::select_events(f.m, {}).events);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].ns[static_cast<size_t>(gantt::analysis::WaitCause::kOwnStream)], 394 * US);
  EXPECT_EQ(w[1].ns[static_cast<size_t>(gantt::analysis::WaitCause::kLaunch)], 1 * US);
}

TEST(Annotate, AKernelWaitingForRoomIsDeviceFullOrPriority) {
  Fixture f;
  f.k(13, T, T + 1 * US, T + 2 * US, T + 400 * US);
  f.k(14, T + 5 * US, T + 6 * US, T + 400 * US, T + 500 * US);  // another stream: waited for the device
  const auto a = f.run();
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kQueueDelay), 1u);
  EXPECT_EQ(a.items[0].label, "queued 394 us: 394 us device full");

  Fixture g;
  g.k(13, T, T + 1 * US, T + 2 * US, T + 400 * US);
  g.k(14, T + 5 * US, T + 6 * US, T + 400 * US, T + 500 * US);
  g.m.events.priority.back() = 0;
  const auto b = g.run();
  g.m.events.priority[0] = -5;  // the running kernel's stream has the greater priority
  const auto w = gantt::analysis::wait_causes(g.m, gantt::select_events(g.m, {}).events);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].largest(), gantt::analysis::WaitCause::kPriority);
}

TEST(Annotate, AWaitOnAnEventIsTheProgramsOwnOrdering) {
  Fixture f;
  // Stream 13 runs a long kernel; the event recorded after it is waited for by stream 14,
  // whose kernel is then queued 390 us: a dependency, not a queue delay.
  f.k(13, T, T + 1 * US, T + 2 * US, T + 400 * US);
  // The record and the wait carry their calls' correlation ids (call order), as CUPTI gives
  // them even when the hook records no API call for them (not in the default GPUHOOK_API).
  v1::Record ev;
  ev.mutable_cuda_event()->set_event_id(77);
  ev.mutable_cuda_event()->set_stream(13);
  ev.mutable_cuda_event()->set_correlation_id(++f.corr);
  f.b.add(ev);
  v1::Record w;
  w.mutable_sync()->set_type(v1::SYNC_STREAM_WAIT_EVENT);
  w.mutable_sync()->set_stream(14);
  w.mutable_sync()->set_event_id(77);
  w.mutable_sync()->set_correlation_id(++f.corr);
  w.mutable_sync()->set_start_ns(static_cast<int64_t>(T + 5 * US));
  w.mutable_sync()->set_end_ns(static_cast<int64_t>(T + 6 * US));
  f.b.add(w);
  f.k(14, T + 7 * US, T + 8 * US, T + 400 * US, T + 500 * US);
  const auto a = f.run();
  EXPECT_EQ(Fixture::count(a, AnnotationKind::kQueueDelay), 0u);
  const auto splits = gantt::analysis::wait_causes(f.m, gantt::select_events(f.m, {}).events);
  ASSERT_FALSE(splits.empty());
  EXPECT_EQ(splits.back().largest(), gantt::analysis::WaitCause::kDependency);
  EXPECT_EQ(splits.back().ns[static_cast<size_t>(gantt::analysis::WaitCause::kDependency)], 392 * US);
}

// 128 registers a thread at 256 threads a block: 16 warps of 64 = 25%, 2 blocks an SM, so the
// A100's 108 SMs hold 216 blocks at once.
TEST(Annotate, LowOccupancyNamesTheLimit) {
  Fixture f;
  f.k(13, T, 0, T + 10 * US, T + 20 * US, 128, 1000);  // 25%, 5 waves
  f.k(13, T, 0, T + 30 * US, T + 40 * US, 32, 1000);   // 100%
  const auto a = f.run();
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kLowOccupancy), 1u);
  EXPECT_EQ(a.items[0].label, "occupancy 25% (registers)");
}

// A grid the device holds at once runs every block from the start: more occupancy would not
// shorten it, so the chart does not flag it (as diagnose does not).
TEST(Annotate, LowOccupancyIgnoresAGridThatFitsTheDeviceAtOnce) {
  Fixture f;
  f.k(13, T, 0, T + 10 * US, T + 20 * US, 128, 1);    // a <<<1, 256>>> kernel at 25%
  f.k(13, T, 0, T + 30 * US, T + 40 * US, 128, 216);  // exactly one wave
  f.k(13, T, 0, T + 50 * US, T + 60 * US, 128, 217);  // one block into a second wave
  const auto a = f.run();
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kLowOccupancy), 1u);
  EXPECT_EQ(a.items[0].start_ns, T + 50 * US);
}

TEST(Annotate, CopyOverlapAndSerialisedCopy) {
  Fixture f;
  f.k(13, T, 0, T + 100 * US, T + 300 * US);
  f.copy(14, T + 150 * US, T + 250 * US);               // inside the kernel on another stream: overlapped
  f.copy(13, T + 305 * US, T + 400 * US, kSyncCopy);    // synchronous, right after compute: serialised
  f.copy(14, T + 2000 * US, T + 2100 * US);             // nothing near: neither
  f.copy(13, T + 3000 * US, T + 3200 * US);             // async, a kernel on stream 15 ready and waiting: serialised
  f.k(15, T + 2990 * US, 0, T + 3210 * US, T + 3300 * US);
  f.copy(13, T + 3305 * US, T + 3400 * US);             // async right after its stream's work, nothing waits: a pipeline's end
  const auto a = f.run();
  EXPECT_EQ(Fixture::count(a, AnnotationKind::kOverlap), 1u);
  EXPECT_EQ(Fixture::count(a, AnnotationKind::kMissedOverlap), 2u);
  std::vector<uint64_t> missed;
  for (const auto& i : a.items) {
    if (i.kind == AnnotationKind::kOverlap) { EXPECT_EQ(i.label, "overlap 100%"); }
    if (i.kind == AnnotationKind::kMissedOverlap) missed.push_back(i.start_ns);
  }
  EXPECT_EQ(missed, (std::vector<uint64_t>{T + 305 * US, T + 3000 * US}));
}

TEST(Annotate, IdleGapNamesTheBlockingHostCall) {
  Fixture f;
  f.k(13, T, 0, T + 10 * US, T + 100 * US);
  f.b.add(api(kSync, 1, T + 110 * US, T + 2400 * US, ++f.corr));  // host waits
  f.k(13, T + 2410 * US, 0, T + 2420 * US, T + 2500 * US);
  gantt::AnnotateOptions o;
  o.idle_gap_ns = 1000 * US;
  const auto a = f.run(o);
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kIdleGap), 1u);
  const auto& g = a.items.back();
  EXPECT_EQ(g.start_ns, T + 100 * US);
  EXPECT_EQ(g.end_ns, T + 2420 * US);
  EXPECT_EQ(g.label, "idle 2.32 ms \xE2\x80\x94 host in cudaStreamSynchronize");
  o.idle_gap_ns = 3000 * US;
  EXPECT_EQ(Fixture::count(gantt::annotate(f.m, gantt::select_events(f.m, {}), o), AnnotationKind::kIdleGap), 0u);
}

TEST(Annotate, IdleGapNamesTheHostFunctionThatHeldTheStream) {
  Fixture f;
  f.b.add(string_def(9, "cudaLaunchHostFunc"));
  f.b.add(string_def(10, "write_checkpoint"));
  f.k(13, T, 0, T + 10 * US, T + 100 * US);
  f.b.add(api(9, 1, T + 20 * US, T + 25 * US, ++f.corr));
  f.b.add(external(77, f.corr));
  f.b.add(host_function(10, 13, 2, T + 110 * US, T + 2300 * US, 77));  // the stream waits for it
  f.k(13, T + 30 * US, 0, T + 2310 * US, T + 2400 * US);
  gantt::AnnotateOptions o;
  o.idle_gap_ns = 1000 * US;
  const auto a = f.run(o);
  // The host function is not device activity: the device idles while it runs.
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kIdleGap), 1u);
  EXPECT_EQ(a.items.back().label, "idle 2.21 ms \xE2\x80\x94 host function write_checkpoint running");
}

TEST(Annotate, IdleGapWhenTheHostLaunchedLate) {
  Fixture f;
  f.k(13, T, 0, T + 10 * US, T + 100 * US);
  f.k(13, T + 3000 * US, 0, T + 3010 * US, T + 3100 * US);  // no CUDA call in between
  gantt::AnnotateOptions o;
  o.idle_gap_ns = 1000 * US;
  const auto a = f.run(o);
  ASSERT_EQ(Fixture::count(a, AnnotationKind::kIdleGap), 1u);
  EXPECT_NE(a.items.back().label.find("host launched late"), std::string::npos) << a.items.back().label;
}

TEST(Annotate, DisabledFindsNothing) {
  Fixture f;
  f.k(13, T, T + 10 * US, T + 500 * US, T + 600 * US, 128);
  gantt::AnnotateOptions off;
  off.enabled = false;
  const auto a = f.run(off);
  EXPECT_TRUE(a.items.empty());
  EXPECT_EQ(a.count[0] + a.count[1], 0u);
}

TEST(Annotate, BlockingCalls) {
  EXPECT_TRUE(gantt::is_blocking_call("cudaStreamSynchronize"));
  EXPECT_TRUE(gantt::is_blocking_call("cuCtxSynchronize"));
  EXPECT_TRUE(gantt::is_blocking_call("cudaMemcpy"));
  EXPECT_FALSE(gantt::is_blocking_call("cudaMemcpyAsync"));
  EXPECT_FALSE(gantt::is_blocking_call("cudaLaunchKernel"));
}
