// Several devices in one process (GPUHOOK_SIM_DEVICES=2), peer copies, managed memory, memory
// pools and cooperative launches in the simulated runtime, pinned down with the records its
// CUPTI writes. A binary of its own: the device count must be set before the runtime starts,
// and the CUPTI client here keeps the record kinds these cases read (DEVICE, MEMCPY2, MEMORY2,
// MEMORY_POOL), as structs.
#include <cupti.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "sim_test_util.h"

extern "C" int gpuhook_sim_stream_device(const void* stream, int per_thread);

using namespace simtest;

namespace {

struct Records {
  std::mutex mu;
  std::vector<CUpti_ActivityDevice5> devices;
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<CUpti_ActivityMemcpy6> copies;
  std::vector<CUpti_ActivityMemcpyPtoP4> peer_copies;
  std::vector<CUpti_ActivityMemory4> memory;
  std::vector<CUpti_ActivityMemoryPool3> pools;
  std::vector<CUpti_ActivityStream> streams;
};
Records& records() {
  static auto* r = new Records();
  return *r;
}

uint64_t CUPTIAPI clock_cb() { return monotonic_raw_ns(); }

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 256 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Records& r = records();
  std::lock_guard<std::mutex> lock(r.mu);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_DEVICE: r.devices.push_back(*reinterpret_cast<CUpti_ActivityDevice5*>(rec)); break;
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        r.kernels.push_back(*reinterpret_cast<CUpti_ActivityKernel10*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: r.copies.push_back(*reinterpret_cast<CUpti_ActivityMemcpy6*>(rec)); break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        r.peer_copies.push_back(*reinterpret_cast<CUpti_ActivityMemcpyPtoP4*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMORY2: r.memory.push_back(*reinterpret_cast<CUpti_ActivityMemory4*>(rec)); break;
      case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
        r.pools.push_back(*reinterpret_cast<CUpti_ActivityMemoryPool3*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_STREAM: r.streams.push_back(*reinterpret_cast<CUpti_ActivityStream*>(rec)); break;
      default: break;
    }
  }
  std::free(buffer);
}

// Before the runtime starts (DEVICE records are written then): two devices, and a client that
// keeps the kinds read here.
class TwoDevices : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("GPUHOOK_SIM_DEVICES", "2", 1);
    configure("slow_kernel 200000000\nmid_kernel 20000000\n");
    ASSERT_EQ(cuptiActivityRegisterTimestampCallback(clock_cb), CUPTI_SUCCESS);
    ASSERT_EQ(cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
    for (auto kind : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                      CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL,
                      CUPTI_ACTIVITY_KIND_STREAM}) {
      ASSERT_EQ(cuptiActivityEnable(kind), CUPTI_SUCCESS);
    }
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new TwoDevices());

// Every device idle, every record delivered.
void drain() {
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
}

template <class R>
std::vector<R> with_correlation(const std::vector<R>& all, uint32_t correlation) {
  std::vector<R> out;
  for (const R& r : all) {
    if (r.correlationId == correlation) out.push_back(r);
  }
  return out;
}

std::vector<CUpti_ActivityKernel10> kernels_named(const char* name) {
  std::lock_guard<std::mutex> lock(records().mu);
  std::vector<CUpti_ActivityKernel10> out;
  for (const auto& k : records().kernels) {
    if (std::strcmp(k.name, name) == 0) out.push_back(k);
  }
  return out;
}

cudaStream_t stream_on(int device) {
  EXPECT_EQ(cudaSetDevice(device), cudaSuccess);
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreate(&s), cudaSuccess);
  return s;
}

TEST(SimDevices, TheCountComesFromTheEnvironmentAndBadValuesKeepTheDefault) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
  for (const char* bad : {"0", "17", "two", "1.5"}) {
    setenv("GPUHOOK_SIM_DEVICES", bad, 1);
    gpuhook_sim_reload_config();
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    EXPECT_EQ(n, 1) << bad;
  }
  setenv("GPUHOOK_SIM_DEVICES", "2", 1);
  gpuhook_sim_reload_config();
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
}

TEST(SimDevices, TheCurrentDeviceBelongsToEachHostThread) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  int other_thread_device = -1;
  std::thread([&] { cudaGetDevice(&other_thread_device); }).join();
  EXPECT_EQ(other_thread_device, 0);
  int mine = -1;
  ASSERT_EQ(cudaGetDevice(&mine), cudaSuccess);
  EXPECT_EQ(mine, 1);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  ASSERT_EQ(cudaGetDevice(&mine), cudaSuccess);
  EXPECT_EQ(mine, 1);
  cudaGetLastError();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(SimDevices, EachDeviceHasItsPropertiesPciBusAndDeviceRecord) {
  cudaDeviceProp p0{}, p1{};
  ASSERT_EQ(cudaGetDeviceProperties(&p0, 0), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceProperties(&p1, 1), cudaSuccess);
  EXPECT_NE(p0.pciBusID, p1.pciBusID);
  EXPECT_EQ(p1.multiProcessorCount, 132);
  EXPECT_EQ(cudaGetDeviceProperties(&p0, 2), cudaErrorInvalidDevice);
  int bus = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, 1), cudaSuccess);
  EXPECT_EQ(bus, p1.pciBusID);
  char id[32] = {};
  ASSERT_EQ(cudaDeviceGetPCIBusId(id, sizeof id, 1), cudaSuccess);
  int back = -1;
  ASSERT_EQ(cudaDeviceGetByPCIBusId(&back, id), cudaSuccess);
  EXPECT_EQ(back, 1) << id;
  cudaGetLastError();
  drain();
  std::lock_guard<std::mutex> lock(records().mu);
  std::vector<uint32_t> ids;
  for (const auto& d : records().devices) ids.push_back(d.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint32_t>{0, 1}));
}

TEST(SimDevices, RecordsCarryTheDeviceAndContextOfTheirStream) {
  cudaStream_t s0 = stream_on(0);
  cudaStream_t s1 = stream_on(1);
  void* d1 = nullptr;
  ASSERT_EQ(cudaMalloc(&d1, 4096), cudaSuccess);  // on device 1, current now
  std::vector<char> host(4096, 1);
  ASSERT_EQ(cudaMemcpyAsync(d1, host.data(), host.size(), cudaMemcpyHostToDevice, s1), cudaSuccess);
  launch(kernel("on_s1"), 4, 128, s1);
  launch(kernel("on_legacy1"), 4, 128, nullptr);  // device 1's legacy stream
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  launch(kernel("on_s0"), 4, 128, s0);
  launch(kernel("on_legacy0"), 4, 128, nullptr);  // device 0's legacy stream
  drain();
  const auto on0 = kernels_named("on_s0");
  ASSERT_EQ(on0.size(), 1u);
  EXPECT_EQ(on0[0].deviceId, 0u);
  EXPECT_EQ(on0[0].contextId, 1u);
  const auto on1 = kernels_named("on_s1");
  ASSERT_EQ(on1.size(), 1u);
  EXPECT_EQ(on1[0].deviceId, 1u);
  EXPECT_EQ(on1[0].contextId, 2u);
  EXPECT_NE(on0[0].streamId, on1[0].streamId);
  // Each device's legacy default stream is stream 7 of its own context.
  for (const auto& [name, device] : {std::pair{"on_legacy0", 0u}, std::pair{"on_legacy1", 1u}}) {
    const auto ks = kernels_named(name);
    ASSERT_EQ(ks.size(), 1u) << name;
    EXPECT_EQ(ks[0].streamId, 7u) << name;
    EXPECT_EQ(ks[0].deviceId, device) << name;
    EXPECT_EQ(ks[0].contextId, device + 1) << name;
  }
  std::lock_guard<std::mutex> lock(records().mu);
  bool copy_seen = false;
  for (const auto& c : records().copies) {
    if (c.streamId == on1[0].streamId) {
      copy_seen = true;
      EXPECT_EQ(c.deviceId, 1u);
      EXPECT_EQ(c.contextId, 2u);
    }
  }
  EXPECT_TRUE(copy_seen);
  bool alloc_seen = false;
  for (const auto& m : records().memory) {
    if (m.address == reinterpret_cast<uint64_t>(d1) && m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
      alloc_seen = true;
      EXPECT_EQ(m.deviceId, 1u);
      EXPECT_EQ(m.contextId, 2u);
    }
  }
  EXPECT_TRUE(alloc_seen);
  bool stream_record_seen = false;
  for (const auto& s : records().streams) {
    if (s.streamId == on1[0].streamId) {
      stream_record_seen = true;
      EXPECT_EQ(s.contextId, 2u);
    }
  }
  EXPECT_TRUE(stream_record_seen);
}

TEST(SimDevices, FullGridsOnTwoDevicesRunSideBySide) {
  // 20 ms a wave; 1056 blocks of 256 threads fill a device.
  cudaStream_t s0 = stream_on(0);
  cudaStream_t s1 = stream_on(1);
  launch(kernel("mid_kernel_a"), 1056, 256, s1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  launch(kernel("mid_kernel_b"), 1056, 256, s0);
  drain();
  const auto a = kernels_named("mid_kernel_b");
  const auto b = kernels_named("mid_kernel_a");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(a[0].start < b[0].end && b[0].start < a[0].end)
      << "device 0 [" << a[0].start << ", " << a[0].end << "), device 1 [" << b[0].start << ", " << b[0].end << ")";
}

TEST(SimDevices, DeviceSynchronizeWaitsForTheCurrentDeviceOnly) {
  const void* k = kernel("slow_kernel");  // 200 ms a wave
  cudaStream_t s1 = stream_on(1);
  launch(k, 4, 128, s1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s1), cudaErrorNotReady);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaGetLastError();
}

TEST(SimDevices, AKernelOnAnotherDevicesStreamIsRefusedAndACopyIsNot) {
  const void* k = kernel("tiny_kernel");
  cudaStream_t s1 = stream_on(1);
  void* d1 = nullptr;
  ASSERT_EQ(cudaMalloc(&d1, 256), cudaSuccess);
  EXPECT_EQ(gpuhook_sim_stream_device(s1, 0), 1);
  int dev = -1;
  ASSERT_EQ(cudaStreamGetDevice(s1, &dev), cudaSuccess);
  EXPECT_EQ(dev, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel(k, dim3(1), dim3(32), nullptr, 0, s1), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  char host[256] = {};
  EXPECT_EQ(cudaMemcpyAsync(d1, host, sizeof host, cudaMemcpyHostToDevice, s1), cudaSuccess);
  cudaEvent_t e0 = nullptr;
  ASSERT_EQ(cudaEventCreate(&e0), cudaSuccess);  // on device 0
  EXPECT_EQ(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  drain();
  EXPECT_EQ(cudaEventDestroy(e0), cudaSuccess);
}

TEST(SimDevices, PeerAccessIsOneWayAndSaysWhatIsAlreadyDone) {
  int can = -1;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 1, 1), cudaSuccess);
  EXPECT_EQ(can, 0);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(0), cudaErrorPeerAccessNotEnabled);  // only 0 -> 1 was enabled
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
  cudaGetLastError();
}

TEST(SimDevices, CopiesBetweenDevicesAreMemcpy2RecordsWithBothDevices) {
  constexpr size_t kBytes = 1 << 16;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  void* src = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(src, 7, kBytes), cudaSuccess);
  cudaStream_t s1 = stream_on(1);
  void* dst_a = nullptr;
  void* dst_b = nullptr;
  ASSERT_EQ(cudaMalloc(&dst_a, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst_b, kBytes), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the memset
  EXPECT_EQ(cudaMemcpyPeerAsync(dst_a, 1, src, 0, kBytes, s1), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(dst_b, src, kBytes, cudaMemcpyDefault, s1), cudaSuccess);
  EXPECT_EQ(cudaMemcpyPeerAsync(dst_a, 0, src, 0, kBytes, s1), cudaErrorInvalidValue);  // dst is device 1's
  cudaGetLastError();
  drain();
  for (void* d : {dst_a, dst_b}) {
    std::vector<unsigned char> back(kBytes);
    ASSERT_EQ(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 7; }));
  }
  drain();
  std::lock_guard<std::mutex> lock(records().mu);
  size_t peers = 0;
  for (const auto& p : records().peer_copies) {
    if (p.bytes != kBytes) continue;
    ++peers;
    EXPECT_EQ(p.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
    EXPECT_EQ(p.srcDeviceId, 0u);
    EXPECT_EQ(p.dstDeviceId, 1u);
    EXPECT_EQ(p.srcContextId, 1u);
    EXPECT_EQ(p.dstContextId, 2u);
    EXPECT_EQ(p.deviceId, 1u);  // where it ran: the stream's device
    EXPECT_EQ(p.srcKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    EXPECT_LT(p.start, p.end);
  }
  EXPECT_EQ(peers, 2u);
  for (const auto& c : records().copies) EXPECT_NE(c.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
}

TEST(SimDevices, ManagedMemoryIsRecordedAsManagedAndCopiesBothWays) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  constexpr size_t kBytes = 4096;
  void* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, kBytes, cudaMemAttachGlobal), cudaSuccess);
  EXPECT_EQ(cudaMallocManaged(&m, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, kBytes), cudaSuccess);
  std::vector<char> host(kBytes, 3);
  ASSERT_EQ(cudaMemcpy(m, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, m, kBytes, cudaMemcpyDefault), cudaSuccess);
  std::vector<char> back(kBytes, 0);
  ASSERT_EQ(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  cudaMemLocation here{};
  here.type = cudaMemLocationTypeDevice;
  here.id = 1;
  EXPECT_EQ(cudaMemPrefetchAsync(m, kBytes, here, 0, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemAdvise(m, kBytes, cudaMemAdviseSetReadMostly, here), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(d, kBytes, here, 0, nullptr), cudaErrorInvalidValue);  // not managed
  cudaGetLastError();
  ASSERT_EQ(cudaFree(m), cudaSuccess);
  drain();
  std::lock_guard<std::mutex> lock(records().mu);
  size_t alloc = 0, release = 0;
  for (const auto& r : records().memory) {
    if (r.address != reinterpret_cast<uint64_t>(m)) continue;
    EXPECT_EQ(r.memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
    EXPECT_EQ(r.deviceId, 1u);
    if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) ++alloc;
    if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) ++release;
  }
  EXPECT_EQ(alloc, 1u);
  EXPECT_EQ(release, 1u);
  size_t into_managed = 0, from_managed = 0;
  for (const auto& c : records().copies) {
    if (c.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED && c.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) ++into_managed;
    if (c.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED && c.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
      ++from_managed;
      EXPECT_EQ(c.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    }
  }
  EXPECT_GE(into_managed, 1u);
  EXPECT_GE(from_managed, 1u);
}

TEST(SimDevices, PoolsWriteMemoryPoolRecordsAndAsyncAllocationsNameTheirPool) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 1;
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  uint64_t threshold = 1 << 20;
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  cudaStream_t s1 = stream_on(1);
  void* a = nullptr;
  ASSERT_EQ(cudaMallocFromPoolAsync(&a, 1000, pool, s1), cudaSuccess);
  void* b = nullptr;
  ASSERT_EQ(cudaMallocAsync(&b, 3000, s1), cudaSuccess);  // device 1's default pool
  ASSERT_EQ(cudaFreeAsync(a, s1), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(b, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 512), cudaSuccess);
  ASSERT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
  cudaMemPool_t def = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&def, 1), cudaSuccess);
  EXPECT_EQ(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
  cudaGetLastError();
  drain();
  std::lock_guard<std::mutex> lock(records().mu);
  std::vector<CUpti_ActivityMemoryPoolOperationType> ops;
  for (const auto& p : records().pools) {
    ops.push_back(p.memoryPoolOperationType);
    EXPECT_EQ(p.deviceId, 1u);
    EXPECT_EQ(p.memoryPoolType, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
    if (p.memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED) {
      EXPECT_EQ(p.minBytesToKeep, 512u);
      EXPECT_EQ(p.releaseThreshold, threshold);
    }
  }
  EXPECT_EQ(ops, (std::vector<CUpti_ActivityMemoryPoolOperationType>{
                     CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED,
                     CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED}));
  size_t seen = 0;
  std::vector<uint32_t> stream_ids;
  for (const auto& m : records().memory) {
    if (m.address != reinterpret_cast<uint64_t>(a) && m.address != reinterpret_cast<uint64_t>(b)) continue;
    ++seen;
    stream_ids.push_back(m.streamId);
    EXPECT_EQ(m.isAsync, 1u);
    EXPECT_EQ(m.deviceId, 1u);
    EXPECT_EQ(m.memoryPoolConfig.memoryPoolType, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
    if (m.address == reinterpret_cast<uint64_t>(a) && m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
      EXPECT_EQ(m.memoryPoolConfig.utilizedSize, 1000u);
      EXPECT_EQ(m.memoryPoolConfig.releaseThreshold, threshold);
    }
  }
  EXPECT_EQ(seen, 4u);
  // All on s1: one stream id, a real one.
  ASSERT_FALSE(stream_ids.empty());
  EXPECT_NE(stream_ids[0], CUPTI_INVALID_STREAM_ID);
  EXPECT_NE(stream_ids[0], 7u);
  EXPECT_EQ(std::count(stream_ids.begin(), stream_ids.end(), stream_ids[0]), 4);
}

TEST(SimDevices, CooperativeLaunchesRefuseGridsThatCannotAllBeResident) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const void* k = kernel("coop_kernel");
  int per_sm = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 256, 0), cudaSuccess);
  const unsigned most = static_cast<unsigned>(per_sm) * 132;
  EXPECT_EQ(cudaLaunchCooperativeKernel(k, dim3(most + 1), dim3(256), nullptr, 0, nullptr),
            cudaErrorCooperativeLaunchTooLarge);
  cudaGetLastError();
  EXPECT_EQ(cudaLaunchCooperativeKernel(k, dim3(most), dim3(256), nullptr, 0, nullptr), cudaSuccess);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(256);
  config.attrs = &attr;
  config.numAttrs = 1;
  EXPECT_EQ(cudaLaunchKernelExC(&config, k, nullptr), cudaSuccess);
  config.gridDim = dim3(most + 1);
  EXPECT_EQ(cudaLaunchKernelExC(&config, k, nullptr), cudaErrorCooperativeLaunchTooLarge);
  cudaGetLastError();
  drain();
  std::lock_guard<std::mutex> lock(records().mu);
  size_t coop = 0;
  for (const auto& r : records().kernels) {
    if (std::strcmp(r.name, "coop_kernel") != 0) continue;
    ++coop;
    EXPECT_EQ(r.launchType, CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
  }
  EXPECT_EQ(coop, 2u);
}

}  // namespace
