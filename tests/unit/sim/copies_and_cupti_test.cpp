// Copies, the CUPTI buffer contract, the callback API, and the simulator's cost knobs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

#include "sim_test_util.h"

using namespace simtest;

namespace {

constexpr const char* kCosts = "slow_kernel 20000000\nmid_kernel 300000\nscaled_kernel 300000\n";
// 8 MiB: ~80 ms at the 0.1 GB/s these tests set, long enough that a test machine busy with
// other work (a descheduled thread, page faults in the copy itself) cannot blur the order.
constexpr size_t kCopyBytes = 8u << 20;

class Copies : public ::testing::Test {
 protected:
  void SetUp() override {
    configure(kCosts, {{"GPUHOOK_SIM_QUEUE_DEPTH", "1024"}, {"GPUHOOK_SIM_NOISE", "0"},
                       {"GPUHOOK_SIM_SCALE", ""},
                       {"GPUHOOK_SIM_PINNED_GBPS", "0.1"}, {"GPUHOOK_SIM_PAGEABLE_GBPS", "0.5"}});
    start_tracing();
  }
};

bool overlap(const CopyRec& a, const CopyRec& b) { return a.start < b.end && b.start < a.end; }

TEST_F(Copies, PageableAsyncCopyBlocksTheHostPinnedDoesNot) {
  void* dev = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, kCopyBytes), cudaSuccess);
  std::vector<char> pageable(kCopyBytes, 7);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);

  ASSERT_EQ(cudaMemcpyAsync(dev, pageable.data(), kCopyBytes, cudaMemcpyHostToDevice, s), cudaSuccess);
  const uint64_t after_pageable = monotonic_raw_ns();
  ASSERT_EQ(cudaMemcpyAsync(dev, pinned, kCopyBytes, cudaMemcpyHostToDevice, s), cudaSuccess);
  const uint64_t after_pinned = monotonic_raw_ns();
  finish_tracing();
  std::lock_guard<std::mutex> lock(received().mu);
  ASSERT_EQ(received().copies.size(), 2u);
  const auto& pg = received().copies[0];
  const auto& pn = received().copies[1];
  EXPECT_EQ(pg.src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(pn.src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  EXPECT_EQ(pg.copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_GE(after_pageable, pg.end) << "a copy from pageable memory returns when it is done";
  EXPECT_LT(after_pinned, pn.end) << "a pinned async copy returns at once";
}

TEST_F(Copies, ASyncCopyHasItsResultWhenItReturns) {
  std::vector<int> src(1000), back(1000, 0);
  for (int i = 0; i < 1000; ++i) src[static_cast<size_t>(i)] = i * 3;
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int) * 1000), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, src.data(), sizeof(int) * 1000, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev + 10, 0, sizeof(int) * 5), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, sizeof(int) * 1000, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[9], 27);
  EXPECT_EQ(back[10], 0);
  EXPECT_EQ(back[14], 0);
  EXPECT_EQ(back[15], 45);
  EXPECT_EQ(cudaMemcpy(back.data(), dev, sizeof(int) * 2000, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue) << "past the end of the allocation";
  EXPECT_EQ(cudaMemcpy(dev, src.data(), 4, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  finish_tracing();
}

TEST_F(Copies, EachDirectionHasItsOwnCopyEngine) {
  // Six distinct buffers: the three copies run concurrently and must not touch the same bytes.
  void *dev_a, *dev_b, *dev_c, *host_a, *host_b, *host_c;
  ASSERT_EQ(cudaMalloc(&dev_a, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev_b, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev_c, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host_a, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host_b, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host_c, kCopyBytes), cudaSuccess);
  cudaStream_t s1, s2, s3;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev_a, host_a, kCopyBytes, cudaMemcpyHostToDevice, s1), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host_b, dev_b, kCopyBytes, cudaMemcpyDeviceToHost, s2), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev_c, host_c, kCopyBytes, cudaMemcpyHostToDevice, s3), cudaSuccess);
  finish_tracing();
  std::lock_guard<std::mutex> lock(received().mu);
  auto& c = received().copies;
  ASSERT_EQ(c.size(), 3u);
  std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.correlation < b.correlation; });
  EXPECT_TRUE(overlap(c[0], c[1])) << "H2D and D2H run at once";
  EXPECT_FALSE(overlap(c[0], c[2])) << "two H2D copies share one engine";
}

TEST_F(Copies, PinnedAsyncCopyOverlapsAKernel) {
  void *dev, *host;
  ASSERT_EQ(cudaMalloc(&dev, kCopyBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host, kCopyBytes), cudaSuccess);
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  launch(kernel("slow_kernel"), 1056, 256, s1);
  ASSERT_EQ(cudaMemcpyAsync(dev, host, kCopyBytes, cudaMemcpyHostToDevice, s2), cudaSuccess);
  finish_tracing();
  auto k = kernels_named("slow_kernel");
  std::lock_guard<std::mutex> lock(received().mu);
  ASSERT_EQ(k.size(), 1u);
  ASSERT_EQ(received().copies.size(), 1u);
  EXPECT_LT(received().copies[0].start, k[0].end);
  EXPECT_GT(received().copies[0].end, k[0].start);
}

class Cupti : public Copies {};

TEST_F(Cupti, RecordsAreDroppedAndCountedWithoutABuffer) {
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);  // resets
  received().refuse_buffers = true;
  for (int i = 0; i < 3; ++i) launch(kernel("mid_kernel"), 10, 32, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  received().refuse_buffers = false;
  EXPECT_GE(dropped, 6u) << "3 kernel and 3 launch API records had nowhere to go";
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u) << "the count resets when read";
  finish_tracing();
  EXPECT_TRUE(kernels_named("mid_kernel").empty());
}

TEST_F(Cupti, FullBuffersComeBackFromCuptisWorkerThread) {
  received().buffer_bytes = 1024;  // four kernel records
  for (int i = 0; i < 12; ++i) launch(kernel("mid_kernel"), 10, 32, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // No flush: the full buffers must arrive on their own, from the worker.
  for (int waited_ms = 0; waited_ms < 2000; waited_ms += 10) {
    {
      std::lock_guard<std::mutex> lock(received().mu);
      if (received().kernels.size() >= 8) break;
    }
    usleep(10 * 1000);
  }
  {
    std::lock_guard<std::mutex> lock(received().mu);
    EXPECT_GE(received().kernels.size(), 8u);
    ASSERT_FALSE(received().completing_threads.empty());
    for (const auto& name : received().completing_threads) EXPECT_EQ(name, "cupti_worker");
  }
  finish_tracing();
  received().buffer_bytes = 64 * 1024;
  EXPECT_EQ(kernels_named("mid_kernel").size(), 12u) << "the rest arrives with FlushAll";
}

// CUDA 13: a buffer per producing thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER).
TEST_F(Cupti, EachLaunchingThreadFillsABufferOfItsOwn) {
  // Both threads live at once: a thread id can be reused once its thread has ended.
  std::atomic<int> launched{0};
  auto launch_some = [&launched] {
    for (int i = 0; i < 3; ++i) launch(kernel("mid_kernel"), 10, 32, cudaStreamPerThread);
    cudaStreamSynchronize(cudaStreamPerThread);
    launched.fetch_add(1);
    while (launched.load() < 2) std::this_thread::yield();
  };
  std::thread a(launch_some), b(launch_some);
  a.join();
  b.join();
  finish_tracing();
  std::lock_guard<std::mutex> lock(received().mu);
  EXPECT_GE(received().requesting_threads.size(), 2u);
  EXPECT_EQ(received().kernels.size(), 6u);
}

// cuptiActivityFlushAll(0) "doesn't return buffers which have one or more incomplete records";
// FORCED does, and GetNextRecord stops at the incomplete one with CUPTI_ERROR_INVALID_KIND
// (cupti_activity.h). A record completed after its buffer left is dropped and counted.
TEST_F(Cupti, PlainFlushKeepsABufferWithARunningKernelForcedReturnsItIncomplete) {
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);  // resets
  launch(kernel("slow_kernel"), 1056, 256, nullptr);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  {
    std::lock_guard<std::mutex> lock(received().mu);
    EXPECT_TRUE(received().kernels.empty());
    EXPECT_TRUE(received().apis.empty()) << "the launch record shares the kernel's buffer";
  }
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  {
    std::lock_guard<std::mutex> lock(received().mu);
    EXPECT_EQ(received().incomplete_stops, 1u);
    EXPECT_TRUE(received().kernels.empty());
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 1u) << "the kernel record ended after its buffer was forced out";
  // And with the work done, a plain flush returns the buffer.
  launch(kernel("mid_kernel"), 10, 32, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  std::lock_guard<std::mutex> lock(received().mu);
  EXPECT_EQ(received().kernels.size(), 1u);
}

TEST_F(Cupti, QueuedAndSubmittedOnlyWithLatencyTimestamps) {
  ASSERT_EQ(cuptiActivityEnableLatencyTimestamps(0), CUPTI_SUCCESS);
  launch(kernel("mid_kernel"), 10, 32, nullptr);
  finish_tracing();
  ASSERT_EQ(cuptiActivityEnableLatencyTimestamps(1), CUPTI_SUCCESS);
  auto k = kernels_named("mid_kernel");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].queued, 0u);
  EXPECT_EQ(k[0].submitted, 0u);
  EXPECT_GT(k[0].start, 0u);
}

// Only subscribing refuses (cupti_callbacks.h); the activity API is shared silently.
TEST_F(Cupti, ABusyCuptiRefusesSubscribersNamingTheHolderButNotActivities) {
  setenv("GPUHOOK_SIM_CUPTI_BUSY", "1", 1);
  CUpti_SubscriberHandle sub = nullptr;
  EXPECT_EQ(cuptiSubscribe(&sub, nullptr, nullptr), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "test";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  EXPECT_EQ(cuptiSubscribe_v2(&sub, nullptr, nullptr, &params), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_STREQ(holder, "Nsight Systems");
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), CUPTI_SUCCESS);
  unsetenv("GPUHOOK_SIM_CUPTI_BUSY");
  ASSERT_EQ(cuptiSubscribe_v2(&sub, nullptr, nullptr, &params), CUPTI_SUCCESS);
  CUpti_SubscriberHandle second = nullptr;
  EXPECT_EQ(cuptiSubscribe_v2(&second, nullptr, nullptr, &params), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_STREQ(holder, "CUPTI for test");
  EXPECT_EQ(cuptiUnsubscribe(sub), CUPTI_SUCCESS);
}

struct CallbackLog {
  std::vector<std::pair<int, uint32_t>> sites;  // (site, correlation id)
  std::string symbol;
};

void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  auto* log = static_cast<CallbackLog*>(userdata);
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cbid != CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) return;
  log->sites.emplace_back(cb->callbackSite, cb->correlationId);
  if (cb->symbolName != nullptr) log->symbol = cb->symbolName;
}

TEST_F(Cupti, LaunchCallbacksCarryTheKernelsCorrelationId) {
  CallbackLog log;
  CUpti_SubscriberHandle sub = nullptr;
  ASSERT_EQ(cuptiSubscribe(&sub, on_callback, &log), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_SUCCESS);
  launch(kernel("mid_kernel"), 10, 32, nullptr);
  finish_tracing();
  ASSERT_EQ(cuptiUnsubscribe(sub), CUPTI_SUCCESS);
  auto k = kernels_named("mid_kernel");
  ASSERT_EQ(k.size(), 1u);
  ASSERT_EQ(log.sites.size(), 2u);
  EXPECT_EQ(log.sites[0].first, CUPTI_API_ENTER);
  EXPECT_EQ(log.sites[1].first, CUPTI_API_EXIT);
  EXPECT_EQ(log.sites[0].second, k[0].correlation);
  EXPECT_EQ(log.symbol, "mid_kernel");
}

std::vector<uint64_t> durations(const char* name, int n) {
  for (int i = 0; i < n; ++i) launch(kernel(name), 10, 32, nullptr);
  finish_tracing();
  auto ks = kernels_named(name);
  std::sort(ks.begin(), ks.end(), [](auto& a, auto& b) { return a.correlation < b.correlation; });
  std::vector<uint64_t> d;
  for (const auto& k : ks) d.push_back(k.end - k.start);
  return d;
}

TEST_F(Cupti, NoiseIsReproducibleForOneSeedAndDiffersAcrossSeeds) {
  configure(kCosts, {{"GPUHOOK_SIM_NOISE", "0.2"}, {"GPUHOOK_SIM_SEED", "7"}});
  const auto first = durations("mid_kernel", 5);
  start_tracing();
  configure(kCosts, {{"GPUHOOK_SIM_NOISE", "0.2"}, {"GPUHOOK_SIM_SEED", "7"}});
  const auto again = durations("mid_kernel", 5);
  start_tracing();
  configure(kCosts, {{"GPUHOOK_SIM_NOISE", "0.2"}, {"GPUHOOK_SIM_SEED", "8"}});
  const auto other = durations("mid_kernel", 5);
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  for (uint64_t d : first) {
    EXPECT_GE(d, 240000u);  // 300 us +- 20 %
    EXPECT_LE(d, 360000u);
  }
}

TEST_F(Cupti, ScaleRaisesOneKernelsCost) {
  configure(kCosts, {{"GPUHOOK_SIM_SCALE", "scaled_kernel:1.1"}});
  const auto scaled = durations("scaled_kernel", 1);
  start_tracing();
  const auto plain = durations("mid_kernel", 1);
  ASSERT_EQ(scaled.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0], 300000u);
  EXPECT_EQ(scaled[0], 330000u);
}

TEST(SimDevice, PropertiesSayItIsTheSimulator) {
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "gpuhook simulator (H200 model)");
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.maxThreadsPerMultiProcessor, 2048);
  EXPECT_EQ(p.maxBlocksPerMultiProcessor, 32);
  EXPECT_EQ(p.major * 10 + p.minor, 90);
  EXPECT_EQ(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(SimDevice, AttributesMatchThePropertiesAndUnknownOnesFail) {
  int v = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(v, 132);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), cudaSuccess);
  EXPECT_EQ(v, 228 * 1024);
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaSuccess);
  EXPECT_GT(v, 0);
  EXPECT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrHostNativeAtomicSupported, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 1), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
}

TEST(SimDevice, OccupancyFollowsTheSmLimits) {
  const void* k = kernel("occupancy_kernel");
  int blocks = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 32, 0), cudaSuccess);
  EXPECT_EQ(blocks, 32);  // the 32-blocks-per-SM limit
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 1024, 0), cudaSuccess);
  EXPECT_EQ(blocks, 2);   // 2048 threads per SM
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 256, 100 * 1024), cudaSuccess);
  EXPECT_EQ(blocks, 2);   // 228 KiB of shared memory, 1 KiB reserved per block
  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(2048), nullptr, 0, nullptr), cudaErrorInvalidConfiguration);
}

}  // namespace

namespace {

TEST(SimCupti, CallbackNamesFollowTheToolkitsCbidHeaders) {
  const char* name = nullptr;
  ASSERT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &name),
            CUPTI_SUCCESS);
  EXPECT_STREQ(name, "cudaLaunchKernel_v7000");
  ASSERT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &name),
            CUPTI_SUCCESS);
  EXPECT_STREQ(name, "__cudaLaunchKernel_v13000");
  ASSERT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                 &name),
            CUPTI_SUCCESS);
  EXPECT_STREQ(name, "cuLaunchKernel");
  EXPECT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 0, &name), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 1, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
}

}  // namespace
