// Scheduling semantics of the simulated runtime, pinned down with the timestamps its CUPTI
// hands out: the facts gantt-cli's diagnoses rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cudart/stamps.h"
#include "sim_test_util.h"

using namespace simtest;

namespace {

// slow: 20 ms per wave (far longer than a test machine under load deschedules a thread); small grids (100 blocks of 256 threads) fill ~10% of the device,
// full grids (1056 blocks) all of it.
constexpr const char* kCosts = "slow_kernel 20000000\nmid_kernel 300000\n";
constexpr unsigned kSmallGrid = 100;
constexpr unsigned kFullGrid = 1056;

class StreamSemantics : public ::testing::Test {
 protected:
  void SetUp() override {
    configure(kCosts, {{"GPUHOOK_SIM_QUEUE_DEPTH", "1024"}});
    start_tracing();
  }
};

bool overlap(const KernelRec& a, const KernelRec& b) { return a.start < b.end && b.start < a.end; }

TEST_F(StreamSemantics, KernelsOnOneStreamNeverOverlap) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const void* k = kernel("mid_kernel");
  for (int i = 0; i < 4; ++i) launch(k, kSmallGrid, 256, s);
  finish_tracing();
  auto ks = kernels_named("mid_kernel");
  ASSERT_EQ(ks.size(), 4u);
  std::sort(ks.begin(), ks.end(), [](auto& a, auto& b) { return a.correlation < b.correlation; });
  for (size_t i = 1; i < ks.size(); ++i) {
    EXPECT_GE(ks[i].start, ks[i - 1].end) << "kernel " << i;
  }
}

TEST_F(StreamSemantics, SmallKernelsOnTwoStreamsOverlap) {
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&b), cudaSuccess);
  const void* k = kernel("slow_kernel");
  launch(k, kSmallGrid, 256, a);
  launch(k, kSmallGrid, 256, b);
  finish_tracing();
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_TRUE(overlap(ks[0], ks[1])) << "two 10% kernels on two streams must share the SMs";
}

TEST_F(StreamSemantics, TheSerialisingKernelKindStopsOverlap) {
  // CUPTI-NOTES §2: KERNEL serialises all kernels, CONCURRENT_KERNEL keeps concurrency.
  ASSERT_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&b), cudaSuccess);
  const void* k = kernel("slow_kernel");
  launch(k, kSmallGrid, 256, a);
  launch(k, kSmallGrid, 256, b);
  finish_tracing();
  ASSERT_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_FALSE(overlap(ks[0], ks[1]));
}

TEST_F(StreamSemantics, FullDeviceKernelsOnTwoStreamsDoNotOverlap) {
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&b), cudaSuccess);
  const void* k = kernel("mid_kernel");
  launch(k, kFullGrid, 256, a);
  launch(k, kFullGrid, 256, b);
  finish_tracing();
  auto ks = kernels_named("mid_kernel");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_FALSE(overlap(ks[0], ks[1])) << "each grid needs every SM";
}

TEST_F(StreamSemantics, HighPriorityStartsFirstWhenTheDeviceIsFull) {
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  ASSERT_LT(greatest, least);
  cudaStream_t blocker, low, high;
  ASSERT_EQ(cudaStreamCreate(&blocker), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest), cudaSuccess);
  launch(kernel("slow_kernel"), kFullGrid, 256, blocker);
  launch(kernel("low_kernel"), kFullGrid, 256, low);  // issued first ...
  launch(kernel("high_kernel"), kFullGrid, 256, high);
  finish_tracing();
  auto lo = kernels_named("low_kernel");
  auto hi = kernels_named("high_kernel");
  auto bl = kernels_named("slow_kernel");
  ASSERT_EQ(lo.size(), 1u);
  ASSERT_EQ(hi.size(), 1u);
  ASSERT_EQ(bl.size(), 1u);
  EXPECT_GE(hi[0].start, bl[0].end);
  EXPECT_LT(hi[0].start, lo[0].start) << "... but the high-priority kernel gets the SMs first";
  EXPECT_GE(lo[0].start, hi[0].end);
}

TEST_F(StreamSemantics, KernelAfterStreamWaitEventStartsAfterTheEventsWork) {
  cudaStream_t producer, consumer;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t ready;
  ASSERT_EQ(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), cudaSuccess);
  launch(kernel("slow_kernel"), kSmallGrid, 256, producer);
  ASSERT_EQ(cudaEventRecord(ready, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(consumer, ready, 0), cudaSuccess);
  launch(kernel("after_kernel"), kSmallGrid, 256, consumer);
  finish_tracing();
  auto p = kernels_named("slow_kernel");
  auto c = kernels_named("after_kernel");
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_GE(c[0].start, p[0].end);
  EXPECT_EQ(cudaEventDestroy(ready), cudaSuccess);
}

TEST_F(StreamSemantics, WithoutTheWaitTheConsumerDoesNotWait) {
  // The control for the test above: the same kernels with no event start together.
  cudaStream_t producer, consumer;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  launch(kernel("slow_kernel"), kSmallGrid, 256, producer);
  launch(kernel("after_kernel"), kSmallGrid, 256, consumer);
  finish_tracing();
  auto p = kernels_named("slow_kernel");
  auto c = kernels_named("after_kernel");
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_LT(c[0].start, p[0].end);
}

TEST_F(StreamSemantics, StartIsAfterSubmittedAfterQueuedAfterTheLaunchCall) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const void* k = kernel("mid_kernel");
  for (int i = 0; i < 3; ++i) launch(k, kSmallGrid, 256, s);
  finish_tracing();
  auto ks = kernels_named("mid_kernel");
  ASSERT_EQ(ks.size(), 3u);
  std::lock_guard<std::mutex> lock(received().mu);
  for (const auto& kr : ks) {
    EXPECT_NE(kr.queued, 0u);
    // A kernel that starts the moment it is submitted may show its CPU-stamped submitted up to
    // the modelled clock disagreement after its GPU-stamped start, as real CUPTI records can.
    EXPECT_GE(kr.start + gpuhook::sim::kSubmittedClockErrorNs, kr.submitted);
    EXPECT_GE(kr.submitted, kr.queued);
    EXPECT_GT(kr.end, kr.start);
    auto api = std::find_if(received().apis.begin(), received().apis.end(),
                            [&](const ApiRec& a) { return a.correlation == kr.correlation; });
    ASSERT_NE(api, received().apis.end()) << "no runtime API record for the launch";
    EXPECT_EQ(api->cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
    EXPECT_GE(kr.queued, api->start);
    EXPECT_LE(kr.queued, api->end);
  }
}

TEST_F(StreamSemantics, TimestampsUseTheRegisteredClock) {
  const uint64_t before = monotonic_raw_ns();
  launch(kernel("mid_kernel"), kSmallGrid, 256, nullptr);
  finish_tracing();
  const uint64_t after = monotonic_raw_ns();
  auto ks = kernels_named("mid_kernel");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_GE(ks[0].queued, before);
  EXPECT_LE(ks[0].end, after);
}

TEST_F(StreamSemantics, BoundedLaunchQueueBlocksTheHost) {
  configure(kCosts, {{"GPUHOOK_SIM_QUEUE_DEPTH", "2"}});
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const void* k = kernel("slow_kernel");
  for (int i = 0; i < 6; ++i) launch(k, kSmallGrid, 256, s);
  const uint64_t host_after_launches = monotonic_raw_ns();
  finish_tracing();
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 6u);
  std::sort(ks.begin(), ks.end(), [](auto& a, auto& b) { return a.correlation < b.correlation; });
  // With room for two operations (the running one and one waiting), the sixth launch could
  // only be queued once the fourth kernel had finished.
  EXPECT_GE(host_after_launches, ks[3].end);
  EXPECT_LT(host_after_launches, ks[5].end);
}

TEST_F(StreamSemantics, UnboundedEnoughQueueDoesNotBlock) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const void* k = kernel("slow_kernel");
  for (int i = 0; i < 6; ++i) launch(k, kSmallGrid, 256, s);
  const uint64_t host_after_launches = monotonic_raw_ns();
  finish_tracing();
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 6u);
  std::sort(ks.begin(), ks.end(), [](auto& a, auto& b) { return a.correlation < b.correlation; });
  EXPECT_LT(host_after_launches, ks[1].end);
}

TEST_F(StreamSemantics, LegacyDefaultStreamSynchronisesWithBlockingStreams) {
  cudaStream_t blocking, non_blocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);
  launch(kernel("slow_kernel"), kSmallGrid, 256, blocking);         // A
  launch(kernel("free_kernel"), kSmallGrid, 256, non_blocking);     // N
  launch(kernel("legacy_kernel"), kSmallGrid, 256, nullptr);        // B: waits for A, not N
  launch(kernel("follow_kernel"), kSmallGrid, 256, blocking);       // C: waits for B
  finish_tracing();
  auto a = kernels_named("slow_kernel");
  auto n = kernels_named("free_kernel");
  auto b = kernels_named("legacy_kernel");
  auto c = kernels_named("follow_kernel");
  ASSERT_EQ(a.size() + n.size() + b.size() + c.size(), 4u);
  EXPECT_GE(b[0].start, a[0].end);
  EXPECT_GE(c[0].start, b[0].end);
  EXPECT_LT(n[0].start, a[0].end) << "a non-blocking stream runs beside the blocking one";
}

TEST_F(StreamSemantics, ADestroyedStreamFinishesItsWorkAndItsHandleIsRefused) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  launch(kernel("mid_kernel"), kSmallGrid, 256, s);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel(kernel("mid_kernel"), dim3(1), dim3(32), nullptr, 0, s),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  finish_tracing();
  EXPECT_EQ(kernels_named("mid_kernel").size(), 1u) << "queued work still runs";
  (void)cudaGetLastError();
}

TEST_F(StreamSemantics, PerThreadDefaultStreamsRunSideBySide) {
  // Each host thread's cudaStreamPerThread is its own stream: two threads' work overlaps.
  // Both launch once both run: a thread started 20 ms after the other (a busy machine
  // starting it late) launched after the first kernel had ended, and nothing overlapped.
  const void* k = kernel("slow_kernel");
  std::atomic<int> ready{0};
  auto work = [&] {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    launch(k, kSmallGrid, 256, cudaStreamPerThread);
    EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  finish_tracing();
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_NE(ks[0].stream, ks[1].stream);
  EXPECT_TRUE(overlap(ks[0], ks[1]));
}

TEST_F(StreamSemantics, StreamSynchronizeBlocksTheHostUntilTheWorkIsDone) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  launch(kernel("slow_kernel"), kSmallGrid, 256, s);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const uint64_t host_after_sync = monotonic_raw_ns();
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  finish_tracing();
  auto ks = kernels_named("slow_kernel");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_GE(host_after_sync, ks[0].end);
  std::lock_guard<std::mutex> lock(received().mu);
  // The synchronize itself, not a query (queries write STREAM_SYNCHRONIZE records too, those
  // that found work pending with returnValue CUDA_ERROR_NOT_READY).
  const auto sync = std::find_if(received().syncs.begin(), received().syncs.end(), [](const auto& r) {
    return r.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE && r.returnValue == 0 &&
           r.correlationId != 0;
  });
  ASSERT_NE(sync, received().syncs.end());
  EXPECT_GE(sync->end, ks[0].end);
  EXPECT_LE(sync->start, ks[0].end);
  // CUDA 13 records both queries (cuptiActivityEnableAllSyncRecords defaults to all): the
  // first found the kernel running, the last found it done.
  const auto pending = std::count_if(received().syncs.begin(), received().syncs.end(), [](const auto& r) {
    return r.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE && r.returnValue == 600;
  });
  EXPECT_EQ(pending, 1);
}

TEST_F(StreamSemantics, EventElapsedTimeCoversTheKernel) {
  cudaEvent_t a, b;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a, nullptr), cudaSuccess);
  launch(kernel("slow_kernel"), kSmallGrid, 256, nullptr);
  ASSERT_EQ(cudaEventRecord(b, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 20.0f);  // the kernel's modelled 20 ms lies between the two events
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
  finish_tracing();
}

}  // namespace

namespace {
// One program's GPU timeline, every kernel, copy and memset relative to the end of the first
// kernel, in issue order. `burners` threads spin meanwhile, loading the machine.
struct Span {
  int64_t start;
  int64_t end;
  bool operator==(const Span&) const = default;
};
std::vector<Span> timeline_of_one_program(int burners) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int i = 0; i < burners; ++i) {
    load.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  start_tracing();
  cudaStream_t a, b, c;
  EXPECT_EQ(cudaStreamCreate(&a), cudaSuccess);
  EXPECT_EQ(cudaStreamCreateWithPriority(&b, cudaStreamDefault, -1), cudaSuccess);
  EXPECT_EQ(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t after_hold;
  EXPECT_EQ(cudaEventCreate(&after_hold), cudaSuccess);
  // The copy (stream c) and the memset (stream b) are not ordered: each has a buffer of its
  // own, or the program races with itself (TSan saw the two writes).
  void *pinned = nullptr, *device = nullptr, *cleared = nullptr;
  EXPECT_EQ(cudaMallocHost(&pinned, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&device, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&cleared, 1 << 20), cudaSuccess);
  // Two waves of slow_kernel (40 ms) hold the whole device while the host submits the rest,
  // so every start below is decided by the submissions, none by when a thread ran.
  launch(kernel("slow_kernel"), 2 * kFullGrid, 256, a);
  EXPECT_EQ(cudaEventRecord(after_hold, a), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(c, after_hold, 0), cudaSuccess);
  for (int i = 0; i < 6; ++i) {
    launch(kernel("mid_kernel"), i % 2 == 0 ? kFullGrid : kSmallGrid, 256, a);
    launch(kernel("mid_kernel"), kSmallGrid, 256, b);  // the higher priority
    launch(kernel("mid_kernel"), kSmallGrid * 3, 256, c);
    if (i == 2) {
      EXPECT_EQ(cudaMemcpyAsync(device, pinned, 1 << 20, cudaMemcpyHostToDevice, c), cudaSuccess);
    }
    if (i == 3) {
      EXPECT_EQ(cudaMemsetAsync(cleared, 0, 1 << 20, b), cudaSuccess);
    }
  }
  finish_tracing();
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(cleared), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  for (cudaStream_t s : {a, b, c}) EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(after_hold), cudaSuccess);

  std::lock_guard<std::mutex> lock(received().mu);
  std::vector<std::pair<uint32_t, Span>> ops;
  uint64_t zero = 0;
  for (const auto& k : received().kernels) {
    if (k.name == "slow_kernel") zero = k.end;
  }
  EXPECT_NE(zero, 0u);
  auto rel = [&](uint64_t t) { return static_cast<int64_t>(t) - static_cast<int64_t>(zero); };
  for (const auto& k : received().kernels) {
    if (k.name == "mid_kernel") ops.push_back({k.correlation, {rel(k.start), rel(k.end)}});
  }
  for (const auto& m : received().copies) ops.push_back({m.correlation, {rel(m.start), rel(m.end)}});
  for (const auto& m : received().memsets) ops.push_back({m.correlation, {rel(m.start), rel(m.end)}});
  std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Span> out;
  for (const auto& [id, span] : ops) out.push_back(span);
  return out;
}
}  // namespace

// The simulator plans the GPU's timeline from what the host submitted and when: the machine's
// load moves the host, never the plan. Every start here follows from the submissions alone.
TEST_F(StreamSemantics, TheSameSubmissionsGiveTheSameTimelineUnderLoad) {
  const std::vector<Span> quiet = timeline_of_one_program(0);
  const std::vector<Span> loaded = timeline_of_one_program(3);
  ASSERT_EQ(quiet.size(), 6u * 3u + 2u);
  ASSERT_EQ(loaded.size(), quiet.size());
  for (size_t i = 0; i < quiet.size(); ++i) {
    EXPECT_EQ(quiet[i].start, loaded[i].start) << "operation " << i;
    EXPECT_EQ(quiet[i].end, loaded[i].end) << "operation " << i;
  }
  // And the work of the three streams really competed: something started after the hold.
  EXPECT_GE(quiet.front().start, 0);
}
