// Fabricated CUPTI records (the toolkit's real structs) through the converter: no GPU needed.
#include "cupti_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "api_groups.h"
#include "config.h"

namespace gpuhook::hook {
namespace {

class FakeSink : public RecordSink {
 public:
  uint32_t intern(std::string_view s) override {
    auto [it, added] = ids.emplace(std::string(s), static_cast<uint32_t>(ids.size() + 1));
    return it->second;
  }
  // Read back as protobuf reads the file: the test checks the bytes, not the wire classes.
  void emit(wire::Record& r) override {
    std::string bytes(r.ByteSizeLong(), '\0');
    r.Write(reinterpret_cast<uint8_t*>(bytes.data()));
    v1::Record parsed;
    EXPECT_TRUE(parsed.ParseFromString(bytes));
    records.push_back(parsed);
  }
  void emit(const KernelFields& k) override { records.push_back(to_record(k)); }
  void emit(const ApiFields& a) override { records.push_back(to_record(a)); }
  void device_seen(uint32_t d) override { devices.push_back(d); }
  void invalid_time() override { ++invalid; }
  std::map<std::string, uint32_t> ids;
  std::vector<v1::Record> records;
  std::vector<uint32_t> devices;
  int invalid = 0;
};

CUpti_ActivityKernel10 kernel(uint64_t queued, uint64_t submitted, uint64_t start, uint64_t end) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.queued = queued;
  k.submitted = submitted;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.streamId = 7;
  k.correlationId = 99;
  k.gridX = 4;
  k.blockX = 128;
  k.registersPerThread = 32;
  k.dynamicSharedMemory = 1024;
  k.name = "_Z6kernelv";
  return k;
}

TEST(CuptiConvert, KernelKeepsAllFourTimestampsAndShape) {
  FakeSink sink;
  ConvertOptions o;
  auto k = kernel(100, 150, 200, 300);
  ASSERT_TRUE(convert_activity(reinterpret_cast<CUpti_Activity*>(&k), o, sink));
  ASSERT_EQ(sink.records.size(), 1u);
  const v1::Kernel& r = sink.records[0].kernel();
  EXPECT_EQ(r.queued_ns(), 100);
  EXPECT_EQ(r.submitted_ns(), 150);
  EXPECT_EQ(r.start_ns(), 200);
  EXPECT_EQ(r.end_ns(), 300);
  EXPECT_EQ(r.correlation_id(), 99u);
  EXPECT_EQ(r.stream(), 7u);
  EXPECT_EQ(r.grid_x(), 4);
  EXPECT_EQ(r.block_x(), 128);
  EXPECT_EQ(r.registers_per_thread(), 32u);
  EXPECT_EQ(r.dynamic_shared_memory_bytes(), 1024u);
  EXPECT_EQ(r.name_id(), sink.ids.at("_Z6kernelv"));
  EXPECT_EQ(sink.devices, std::vector<uint32_t>{1});
  EXPECT_EQ(sink.invalid, 0);
}

TEST(CuptiConvert, InvalidTimesBecomeUnknownAndAreCounted) {
  struct Case {
    uint64_t q, s, b, e;
    bool pair_known, latency_known;
  } cases[] = {
      {100, 150, 0, 300, false, true},    // start missing (no device memory for it)
      {100, 150, 300, 200, false, true},  // end before start (seen after ~25M graph kernels)
      {160, 150, 200, 300, true, false},  // queued after submitted: two CPU stamps out of order
  };
  for (const Case& c : cases) {
    FakeSink sink;
    auto k = kernel(c.q, c.s, c.b, c.e);
    convert_activity(reinterpret_cast<CUpti_Activity*>(&k), ConvertOptions{}, sink);
    ASSERT_EQ(sink.records.size(), 1u);  // kept, never dropped
    const v1::Kernel& r = sink.records[0].kernel();
    EXPECT_EQ(sink.invalid, 1);
    EXPECT_EQ(r.start_ns() != 0, c.pair_known);
    EXPECT_EQ(r.end_ns() != 0, c.pair_known);
    EXPECT_EQ(r.queued_ns() != 0, c.latency_known);
    EXPECT_EQ(r.submitted_ns() != 0, c.latency_known);
    if (c.pair_known) {
      EXPECT_EQ(r.start_ns(), static_cast<int64_t>(c.b));  // never repaired
    }
  }
}

// CUPTI_TIMESTAMP_UNKNOWN (0) is "could not be collected" (cupti_activity.h): graph and
// device-launched kernels have no queued/submitted. And submitted is a CPU stamp while start is
// a GPU stamp on the CPU clock, so submitted may pass start by a little. Both are unknown
// stages of a good record: not invalid, not dropped.
TEST(CuptiConvert, UnknownLatencyStampsAreUnknownStagesNotErrors) {
  struct Case {
    uint64_t q, s, b, e;
    int64_t want_q, want_s;
  } cases[] = {
      {0, 0, 200, 300, 0, 0},        // a graph kernel: neither stamp collected
      {0, 150, 200, 300, 0, 150},    // queued not collected
      {100, 0, 200, 300, 100, 0},    // submitted not collected
      {100, 250, 200, 300, 100, 0},  // submitted 50 ns past start: that stage is unknown
  };
  for (const Case& c : cases) {
    FakeSink sink;
    auto k = kernel(c.q, c.s, c.b, c.e);
    convert_activity(reinterpret_cast<CUpti_Activity*>(&k), ConvertOptions{}, sink);
    ASSERT_EQ(sink.records.size(), 1u);
    const v1::Kernel& r = sink.records[0].kernel();
    EXPECT_EQ(sink.invalid, 0) << c.q << " " << c.s;
    EXPECT_EQ(r.queued_ns(), c.want_q);
    EXPECT_EQ(r.submitted_ns(), c.want_s);
    EXPECT_EQ(r.start_ns(), 200);
    EXPECT_EQ(r.end_ns(), 300);
  }
}

TEST(CuptiConvert, WithoutLatencyTimestampsZeroQueuedIsNotAnError) {
  FakeSink sink;
  ConvertOptions o;
  o.latency_timestamps = false;
  auto k = kernel(0, 0, 200, 300);
  convert_activity(reinterpret_cast<CUpti_Activity*>(&k), o, sink);
  EXPECT_EQ(sink.invalid, 0);
}

TEST(CuptiConvert, CopiesAndMemsetsCarryBytesAndDirection) {
  FakeSink sink;
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.correlationId = 5;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&m), ConvertOptions{}, sink);
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.value = 0xab;
  s.start = 30;
  s.end = 40;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&s), ConvertOptions{}, sink);
  ASSERT_EQ(sink.records.size(), 2u);
  const v1::Memcpy& c = sink.records[0].memcpy();
  EXPECT_EQ(c.copy_kind(), v1::COPY_HTOD);
  EXPECT_EQ(c.src_kind(), v1::MEMORY_PINNED);
  EXPECT_EQ(c.dst_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(c.bytes(), 1u << 20);
  EXPECT_TRUE(c.async());
  EXPECT_EQ(c.correlation_id(), 5u);
  EXPECT_EQ(sink.records[1].memset().bytes(), 4096u);
  EXPECT_EQ(sink.records[1].memset().value(), 0xabu);
  EXPECT_EQ(sink.invalid, 0);
}

TEST(CuptiConvert, ASyncTakesTheDeviceOfItsContext) {
  // CUpti_ActivitySynchronization2 has a context and no device: the sync of context 902 is
  // device 3's, as a kernel of that context said; a context never seen leaves the device 0.
  FakeSink sink;
  CUpti_ActivityKernel10 k = kernel(0, 0, 10, 20);
  k.deviceId = 3;
  k.contextId = 902;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&k), ConvertOptions{}, sink);
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  s.start = 30;
  s.end = 31;
  s.contextId = 902;
  s.streamId = 14;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&s), ConvertOptions{}, sink);
  s.contextId = 903;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&s), ConvertOptions{}, sink);
  ASSERT_EQ(sink.records.size(), 3u);
  EXPECT_EQ(sink.records[1].sync().device(), 3u);
  EXPECT_EQ(sink.records[1].sync().context(), 902u);
  EXPECT_EQ(sink.records[2].sync().device(), 0u);
}

TEST(CuptiConvert, CopiesAndMemsetsOfAGraphKeepTheirGraphAndNode) {
  FakeSink sink;
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.start = 10;
  m.end = 20;
  m.graphId = 3;
  m.graphNodeId = 0x100000007ull;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&m), ConvertOptions{}, sink);
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.start = 30;
  s.end = 40;
  s.graphId = 3;
  s.graphNodeId = 9;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&s), ConvertOptions{}, sink);
  ASSERT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(sink.records[0].memcpy().graph_id(), 3u);
  EXPECT_EQ(sink.records[0].memcpy().graph_node_id(), 0x100000007ull);
  EXPECT_EQ(sink.records[1].memset().graph_id(), 3u);
  EXPECT_EQ(sink.records[1].memset().graph_node_id(), 9u);
}

TEST(CuptiConvert, PeerCopiesKeepBothDevices) {
  FakeSink sink;
  CUpti_ActivityMemcpyPtoP4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.bytes = 1 << 22;
  m.start = 10;
  m.end = 90;
  m.deviceId = 1;
  m.srcDeviceId = 1;
  m.dstDeviceId = 3;
  m.streamId = 17;
  m.correlationId = 8;
  ASSERT_TRUE(convert_activity(reinterpret_cast<CUpti_Activity*>(&m), ConvertOptions{}, sink));
  ASSERT_EQ(sink.records.size(), 1u);
  const v1::Memcpy& c = sink.records[0].memcpy();
  EXPECT_EQ(c.copy_kind(), v1::COPY_PTOP);
  EXPECT_EQ(c.bytes(), 1u << 22);
  EXPECT_EQ(c.device(), 1u);
  EXPECT_EQ(c.src_device(), 1u);
  EXPECT_EQ(c.dst_device(), 3u);
  EXPECT_EQ(c.end_ns() - c.start_ns(), 80);
  EXPECT_EQ(sink.devices, std::vector<uint32_t>{1});
}

TEST(CuptiConvert, StreamOrderedAllocationsKeepTheirPool) {
  FakeSink sink;
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = 0x7f0000001000;
  m.bytes = 1 << 20;
  m.timestamp = 500;
  m.deviceId = 1;
  m.streamId = 13;
  m.isAsync = 1;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.address = 0x5000;
  m.memoryPoolConfig.utilizedSize = 3 << 20;
  ASSERT_TRUE(convert_activity(reinterpret_cast<CUpti_Activity*>(&m), ConvertOptions{}, sink));
  m.isAsync = 0;  // cudaMalloc: no pool
  ASSERT_TRUE(convert_activity(reinterpret_cast<CUpti_Activity*>(&m), ConvertOptions{}, sink));
  ASSERT_EQ(sink.records.size(), 2u);
  const v1::Memory& a = sink.records[0].memory();
  EXPECT_EQ(a.op(), v1::MEMORY_OP_ALLOC);
  EXPECT_TRUE(a.async());
  EXPECT_EQ(a.pool_address(), 0x5000u);
  EXPECT_EQ(a.pool_utilized_bytes(), 3u << 20);
  EXPECT_EQ(a.stream(), 13u);
  EXPECT_FALSE(sink.records[1].memory().async());
  EXPECT_EQ(sink.records[1].memory().pool_address(), 0u);
}

TEST(CuptiConvert, ApiRecordsAreNamedByCallbackId) {
  FakeSink sink;
  ConvertOptions o;
  o.callback_name = [](CUpti_CallbackDomain d, uint32_t cbid) -> const char* {
    return d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211 ? "cudaLaunchKernel_v7000" : nullptr;
  };
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 211;
  a.start = 5;
  a.end = 9;
  a.threadId = 1234;
  a.correlationId = 99;
  convert_activity(reinterpret_cast<CUpti_Activity*>(&a), o, sink);
  ASSERT_EQ(sink.records.size(), 1u);
  const v1::ApiCall& r = sink.records[0].api();
  EXPECT_EQ(r.domain(), v1::API_DOMAIN_RUNTIME);
  EXPECT_EQ(r.name_id(), sink.ids.at("cudaLaunchKernel_v7000"));
  EXPECT_EQ(r.correlation_id(), 99u);
  EXPECT_EQ(r.thread_id(), 1234u);
}

TEST(CuptiConvert, UnknownKindsAreSkipped) {
  FakeSink sink;
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = CUPTI_ACTIVITY_KIND_NAME;
  EXPECT_FALSE(convert_activity(reinterpret_cast<CUpti_Activity*>(&a), ConvertOptions{}, sink));
  EXPECT_TRUE(sink.records.empty());
}

// The one table of kinds: each converts a record of its kind, CONCURRENT_KERNEL is the one
// required kind, and KERNEL (which serialises every kernel) is never enabled by the tracer.
TEST(ActivityKinds, EveryKindConvertsAndOnlyConcurrentKernelIsRequired) {
  size_t n = 0;
  const ActivityKindRow* rows = activity_kinds(&n);
  ASSERT_GT(n, 10u);
  for (size_t i = 0; i < n; ++i) {
    alignas(8) unsigned char record[1024] = {};
    reinterpret_cast<CUpti_Activity*>(record)->kind = rows[i].kind;
    FakeSink sink;
    EXPECT_TRUE(convert_activity(reinterpret_cast<CUpti_Activity*>(record), ConvertOptions{}, sink)) << rows[i].kind;
    EXPECT_EQ(rows[i].required, rows[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) << rows[i].kind;
    if (rows[i].kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      EXPECT_EQ(rows[i].enable, KindEnable::kNotByTracer);
    }
  }
  EXPECT_EQ(rows[0].kind, CUPTI_ACTIVITY_KIND_DEVICE);  // enabled first
  alignas(8) unsigned char other[64] = {};
  reinterpret_cast<CUpti_Activity*>(other)->kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  FakeSink sink;
  EXPECT_FALSE(convert_activity(reinterpret_cast<CUpti_Activity*>(other), ConvertOptions{}, sink));
}

TEST(ApiGroups, NamesFallInTheirGroups) {
  EXPECT_EQ(api_group_of("cudaLaunchKernel_v7000"), kApiLaunch);
  EXPECT_EQ(api_group_of("__cudaLaunchKernel_v13000"), kApiLaunch);
  EXPECT_EQ(api_group_of("cuLaunchKernelEx"), kApiLaunch);
  EXPECT_EQ(api_group_of("cudaStreamAddCallback_v5000"), kApiLaunch);  // its host function joins the call
  EXPECT_EQ(api_group_of("cudaGraphLaunch_v10000"), kApiLaunch);
  EXPECT_EQ(api_group_of("cudaStreamSynchronize_v3020"), kApiSync);
  EXPECT_EQ(api_group_of("cudaStreamWaitEvent_v3020"), kApiSync);
  EXPECT_EQ(api_group_of("cuCtxSynchronize"), kApiSync);
  EXPECT_EQ(api_group_of("cudaMemcpyAsync_v3020"), kApiMemcpy);
  EXPECT_EQ(api_group_of("cudaMemsetAsync_v3020"), kApiMemcpy);
  EXPECT_EQ(api_group_of("cudaMalloc_v3020"), kApiAlloc);
  EXPECT_EQ(api_group_of("cudaFreeHost_v3020"), kApiAlloc);
  EXPECT_EQ(api_group_of("cuMemAlloc_v2"), kApiAlloc);
  EXPECT_EQ(api_group_of("cudaGetDeviceCount_v3020"), kApiOther);
  EXPECT_EQ(api_group_of(nullptr), kApiOther);
}

}  // namespace
}  // namespace gpuhook::hook
