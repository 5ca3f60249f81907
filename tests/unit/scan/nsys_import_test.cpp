// Nsight Systems SQLite exports read as captures (TRACE-FORMATS.md, part B). The databases are
// built here, row by row, with figures worked out by hand: relative times plus the session
// start, names through StringIds, processes and threads packed into global ids.
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gpuhook/capture.h>

#include "gantt/scan/trace_import.h"
#include "trace_gen.h"

namespace {

namespace v1 = gpuhook::v1;

constexpr int64_t kBase = 1'700'000'000'000'000'000;  // TARGET_INFO_SESSION_START_TIME.utcEpochNs
constexpr int64_t kPid = 4242, kMainTid = 4242, kWorkerTid = 4250;

// B3: PID in bits 24-47, TID in bits 0-23, a host id above.
std::string global_id(int64_t pid, int64_t tid = 0) {
  return std::to_string((int64_t{1} << 48) | (pid << 24) | tid);
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/nsys_import_test.XXXXXX";
    path_ = mkdtemp(pattern) != nullptr ? pattern : "";
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void make_db(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string why = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << why;
}

// What an import wrote, read back through CaptureReader.
struct Read {
  v1::Header header;
  std::vector<v1::DeviceInfo> devices;
  std::vector<v1::Kernel> kernels;
  std::vector<v1::Memcpy> copies;
  std::vector<v1::Memset> fills;
  std::vector<v1::ApiCall> calls;
  std::vector<v1::Synchronization> syncs;
  std::vector<v1::Range> ranges;
  std::vector<v1::ThreadInfo> threads;
  std::vector<v1::StreamInfo> streams;
  std::vector<std::string> notices;
  v1::Footer footer;
  std::vector<std::string> strings;
  std::string name(uint32_t id) const { return id < strings.size() ? strings[id] : "<bad id>"; }
  bool notice_has(const std::string& words) const {
    for (const std::string& n : notices) {
      if (n.find(words) != std::string::npos) return true;
    }
    return false;
  }
};

Read import(const std::string& sqlite_path) {
  const std::string out = sqlite_path + ".gpuh";
  std::string error;
  auto writer = gpuhook::CaptureWriter::create(out, gpuhook::WriterOptions{}, &error);
  EXPECT_NE(writer, nullptr) << error;
  gantt::scan::import_nsys(sqlite_path, *writer);
  EXPECT_TRUE(writer->close()) << writer->last_error();
  writer.reset();
  Read read;
  gpuhook::CaptureReader reader(out);
  v1::Record r;
  while (reader.next(r)) {
    switch (r.kind_case()) {
      case v1::Record::kHeader: read.header = r.header(); break;
      case v1::Record::kDevice: read.devices.push_back(r.device()); break;
      case v1::Record::kKernel: read.kernels.push_back(r.kernel()); break;
      case v1::Record::kMemcpy: read.copies.push_back(r.memcpy()); break;
      case v1::Record::kMemset: read.fills.push_back(r.memset()); break;
      case v1::Record::kApi: read.calls.push_back(r.api()); break;
      case v1::Record::kSync: read.syncs.push_back(r.sync()); break;
      case v1::Record::kRange: read.ranges.push_back(r.range()); break;
      case v1::Record::kThread: read.threads.push_back(r.thread()); break;
      case v1::Record::kStream: read.streams.push_back(r.stream()); break;
      case v1::Record::kNotice: read.notices.push_back(r.notice().text()); break;
      case v1::Record::kFooter: read.footer = r.footer(); break;
      default: break;
    }
  }
  read.strings = reader.strings();
  return read;
}

// The CaptureError an import throws, or "" when it throws none.
std::string import_error(const std::string& sqlite_path, gpuhook::CaptureErrorKind* kind = nullptr) {
  std::string error;
  auto writer = gpuhook::CaptureWriter::create(sqlite_path + ".gpuh", gpuhook::WriterOptions{}, &error);
  try {
    gantt::scan::import_nsys(sqlite_path, *writer);
  } catch (const gpuhook::CaptureError& e) {
    if (kind != nullptr) *kind = e.kind();
    return e.what();
  }
  return "";
}

// A report of one process as a recent nsys writes it (schema 3.x column names), one of each kind.
// Relative times (ns): copy 500-900, launch 450-600, kernel 1000-3000, memset 3100-3200, the
// host waits in cudaStreamSynchronize 700-3300; "step" 50-3400 holds "forward" 400-800.
std::string full_report() {
  const std::string g_main = global_id(kPid, kMainTid), g_pid = global_id(kPid);
  return R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'void gemm<float>(float*, int)'), (2, 'gemm'), (3, '_Z4gemmIfEvPfi'),
  (4, 'cudaLaunchKernel_v7000'), (5, 'cudaMemcpyAsync_v3020'), (6, 'cudaStreamSynchronize_v3020'),
  (7, 'forward'), (8, 'cuLaunchKernel'), (9, 'python3'), (11, 'cudaMemsetAsync_v3020');
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES ()sql" +
         std::to_string(kBase) + R"sql(, '2023-11-14T22:13:20Z', '', 0);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT);
INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0, 'Host', 'OsName', 0, 'Linux'), (0, 'Host', 'Hostname', 1, 'node-a');
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER NOT NULL, name TEXT, busLocation TEXT, totalMemory INTEGER,
  clockRate INTEGER, smCount INTEGER, uuid TEXT, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER,
  maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp INTEGER,
  asyncEngines INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER,
  computeMajor INTEGER, computeMinor INTEGER);
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0', 85020000256, 1980000000, 132,
  'GPU-1234', 65536, 49152, 232448, 233472, 65536, 32, 3, 64, 32, 1024, 9, 0);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT,
  numMultiprocessors INTEGER);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'GPU-1234', 132);
CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER, hwId INTEGER, vmId INTEGER, processId INTEGER,
  contextId INTEGER, priority INTEGER, flag INTEGER);
INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7, 0, 0, 4242, 1, -2, 1);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
INSERT INTO ThreadNames VALUES (9, 0, )sql" +
         g_main + R"sql();
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
  blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER, localMemoryPerThread INTEGER,
  graphNodeId INTEGER, graphId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 3000, 0, 1, 7, 11, )sql" +
         g_pid + R"sql(, 1, 2, 3, 0, 40, 4, 2, 1, 128, 1, 1,
  1024, 2048, 16, 9, 5);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,
  copyKind INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, dstDeviceId INTEGER, graphNodeId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (500, 900, 0, 1, 7, 10, )sql" +
         g_pid + R"sql(, 4096, 1, 1, 3, NULL, NULL, NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER,
  bytes INTEGER, graphNodeId INTEGER, memKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (3100, 3200, 0, 1, 7, 12, )sql" +
         g_pid + R"sql(, 255, 256, NULL, 3);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER, callchainId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (700, 3300, 1, )sql" + g_main + R"sql(, 13, 6, 0, NULL),
  (100, 400, 1, )sql" + g_main + R"sql(, 10, 5, 0, NULL),
  (450, 600, 1, )sql" + g_main + R"sql(, 11, 4, 0, NULL),
  (620, 690, 1, )sql" + g_main + R"sql(, 12, 11, 0, NULL),
  (610, 615, 1, )sql" + g_main + R"sql(, NULL, 8, 0, NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL, eventSyncId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (700, 3300, 0, 1, 7, 13, )sql" +
         g_pid + R"sql(, 3, 4294967295, NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES
  (400, 800, 59, NULL, NULL, NULL, NULL, )sql" + g_main + R"sql(, NULL, 7, 0),
  (50, 3400, 59, NULL, 2, 4278190335, 'step', )sql" + g_main + R"sql(, NULL, NULL, 0),
  (60, 70, 60, 1, NULL, NULL, 'load', )sql" + g_main + R"sql(, NULL, NULL, 0),
  (80, NULL, 34, NULL, NULL, NULL, 'here', )sql" + g_main + R"sql(, NULL, NULL, 0);
)sql";
}

TEST(NsysImport, ReadsEveryKindOfRowWithExactTimes) {
  TempDir dir;
  const std::string db = dir.file("report.sqlite");
  make_db(db, full_report());
  const Read r = import(db);

  EXPECT_NE(r.header.tool_version().find(", read by gantt-cli"), std::string::npos);
  EXPECT_EQ(r.header.host_name(), "node-a");
  EXPECT_EQ(r.header.pid(), 4242u);
  EXPECT_EQ(r.header.clock_domain(), "CLOCK_REALTIME (nsys)");
  EXPECT_EQ(r.header.start_realtime_ns(), uint64_t(kBase + 50));  // the first row: "step" at 50
  EXPECT_TRUE(r.notice_has("queued and submitted times are unknown"));

  ASSERT_EQ(r.devices.size(), 1u);
  const v1::DeviceInfo& d = r.devices[0];
  EXPECT_EQ(d.ordinal(), 0u);
  EXPECT_EQ(d.name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.sm_count(), 132u);
  EXPECT_EQ(d.cc_major(), 9u);
  EXPECT_EQ(d.max_threads_per_sm(), 2048u);  // 64 warps of 32
  EXPECT_EQ(d.max_blocks_per_sm(), 32u);
  EXPECT_EQ(d.shared_memory_per_sm_bytes(), 233472u);
  EXPECT_EQ(d.shared_memory_per_block_optin_bytes(), 232448u);
  EXPECT_EQ(d.core_clock_khz(), 1980000u);
  EXPECT_EQ(d.pci_bus_id(), 0x1bu);

  ASSERT_EQ(r.kernels.size(), 1u);
  const v1::Kernel& k = r.kernels[0];
  EXPECT_EQ(r.name(k.name_id()), "void gemm<float>(float*, int)");
  EXPECT_EQ(k.start_ns(), kBase + 1000);
  EXPECT_EQ(k.end_ns(), kBase + 3000);
  EXPECT_FALSE(k.has_queued_ns());
  EXPECT_EQ(k.stream(), 7u);
  EXPECT_EQ(k.context(), 1u);
  EXPECT_EQ(k.correlation_id(), 11u);
  EXPECT_EQ(k.grid_x(), 4);
  EXPECT_EQ(k.grid_y(), 2);
  EXPECT_EQ(k.block_x(), 128);
  EXPECT_EQ(k.registers_per_thread(), 40u);
  EXPECT_EQ(k.static_shared_memory_bytes(), 1024u);
  EXPECT_EQ(k.dynamic_shared_memory_bytes(), 2048u);
  EXPECT_EQ(k.local_memory_per_thread_bytes(), 16u);
  EXPECT_EQ(k.graph_id(), 5u);
  EXPECT_EQ(k.graph_node_id(), 9u);

  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_EQ(r.copies[0].copy_kind(), v1::COPY_HTOD);
  EXPECT_EQ(r.copies[0].src_kind(), v1::MEMORY_PAGEABLE);
  EXPECT_EQ(r.copies[0].dst_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(r.copies[0].bytes(), 4096u);
  EXPECT_EQ(r.copies[0].start_ns(), kBase + 500);
  EXPECT_EQ(r.copies[0].end_ns(), kBase + 900);
  EXPECT_EQ(r.copies[0].correlation_id(), 10u);
  EXPECT_EQ(r.copies[0].src_device(), 0u);

  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].value(), 255u);
  EXPECT_EQ(r.fills[0].bytes(), 256u);
  EXPECT_EQ(r.fills[0].memory_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(r.fills[0].start_ns(), kBase + 3100);
  EXPECT_EQ(r.fills[0].end_ns(), kBase + 3200);

  // In start order, version suffixes gone; cuLaunchKernel in the RUNTIME table is a driver call.
  ASSERT_EQ(r.calls.size(), 5u);
  const char* names[] = {"cudaMemcpyAsync", "cudaLaunchKernel", "cuLaunchKernel", "cudaMemsetAsync",
                         "cudaStreamSynchronize"};
  const int64_t starts[] = {100, 450, 610, 620, 700};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.name(r.calls[i].name_id()), names[i]);
    EXPECT_EQ(r.calls[i].start_ns(), kBase + starts[i]);
    EXPECT_EQ(r.calls[i].thread_id(), uint64_t(kMainTid));
  }
  EXPECT_EQ(r.calls[2].domain(), v1::API_DOMAIN_DRIVER);
  EXPECT_EQ(r.calls[2].correlation_id(), 0u);
  EXPECT_EQ(r.calls[1].domain(), v1::API_DOMAIN_RUNTIME);
  EXPECT_EQ(r.calls[1].correlation_id(), 11u);
  EXPECT_EQ(r.calls[4].end_ns(), kBase + 3300);

  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].type(), v1::SYNC_STREAM_SYNCHRONIZE);
  EXPECT_EQ(r.syncs[0].start_ns(), kBase + 700);
  EXPECT_EQ(r.syncs[0].end_ns(), kBase + 3300);
  EXPECT_EQ(r.syncs[0].stream(), 7u);
  EXPECT_EQ(r.syncs[0].correlation_id(), 13u);
  EXPECT_EQ(r.syncs[0].event_id(), 0xFFFFFFFFu);  // CUPTI's "no event", kept as its pattern

  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].thread_id(), uint64_t(kMainTid));
  EXPECT_EQ(r.name(r.threads[0].name_id()), "python3");
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].priority(), -2);

  // step pushed at 50, load start/end 60-70, mark at 80, forward pushed at 400 and popped at
  // 800 (written when the thread's ranges end), step popped at 3400.
  ASSERT_EQ(r.ranges.size(), 7u);
  EXPECT_EQ(r.ranges[0].type(), v1::RANGE_PUSH);
  EXPECT_EQ(r.name(r.ranges[0].name_id()), "step");
  EXPECT_EQ(r.ranges[0].time_ns(), kBase + 50);
  EXPECT_EQ(r.ranges[0].category(), 2u);
  EXPECT_EQ(r.ranges[0].color(), 4278190335u);
  EXPECT_EQ(r.ranges[1].type(), v1::RANGE_START);
  EXPECT_EQ(r.ranges[2].type(), v1::RANGE_END);
  EXPECT_EQ(r.ranges[1].range_id(), r.ranges[2].range_id());
  EXPECT_EQ(r.ranges[2].time_ns(), kBase + 70);
  EXPECT_EQ(r.ranges[3].type(), v1::RANGE_MARK);
  EXPECT_EQ(r.ranges[3].time_ns(), kBase + 80);
  EXPECT_EQ(r.ranges[4].type(), v1::RANGE_PUSH);
  EXPECT_EQ(r.name(r.ranges[4].name_id()), "forward");
  EXPECT_EQ(r.ranges[5].type(), v1::RANGE_POP);
  EXPECT_EQ(r.ranges[5].time_ns(), kBase + 800);
  EXPECT_EQ(r.ranges[6].type(), v1::RANGE_POP);
  EXPECT_EQ(r.ranges[6].time_ns(), kBase + 3400);
  for (const v1::Range& g : r.ranges) EXPECT_EQ(g.thread_id(), uint64_t(kMainTid));

  EXPECT_TRUE(r.footer.clean());
  EXPECT_EQ(r.footer.end_realtime_ns(), uint64_t(kBase + 3400));
}

TEST(NsysImport, ColumnsInAnotherOrderWithUnknownColumnsReadTheSame) {
  TempDir dir;
  make_db(dir.file("a.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel_v7000');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
  correlationId INTEGER, shortName INTEGER, gridX INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 1, 7, 5, 1, 8);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2, 8, 77, 5, 2);
)sql");
  make_db(dir.file("b.sqlite"), R"sql(
CREATE TABLE StringIds (value TEXT, id INTEGER PRIMARY KEY, hash INTEGER);
INSERT INTO StringIds VALUES ('k', 1, 99), ('cudaLaunchKernel_v7000', 2, 98);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (gridX INTEGER, futureColumn TEXT, shortName INTEGER, correlationId INTEGER,
  "end" INTEGER, streamId INTEGER, start INTEGER, deviceId INTEGER, greenContextId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (8, 'x', 1, 5, 20, 7, 10, 1, 3);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (nameId INTEGER, correlationId INTEGER, eventClass INTEGER,
  globalTid INTEGER, "end" INTEGER, start INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2, 5, 1, 77, 8, 2);
)sql");
  const Read a = import(dir.file("a.sqlite")), b = import(dir.file("b.sqlite"));
  ASSERT_EQ(a.kernels.size(), 1u);
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].SerializeAsString(), b.kernels[0].SerializeAsString());
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].SerializeAsString(), b.calls[0].SerializeAsString());
  EXPECT_EQ(b.kernels[0].device(), 1u);
  EXPECT_EQ(b.kernels[0].grid_x(), 8);
  EXPECT_EQ(b.kernels[0].start_ns(), 10);  // no session start: times as they are
  EXPECT_EQ(b.calls[0].thread_id(), 77u);
  EXPECT_EQ(b.name(b.calls[0].name_id()), "cudaLaunchKernel");
}

TEST(NsysImport, AnOlderSchemaWithoutMangledNamesOrTextIdsReadsInlineNvtxText) {
  TempDir dir;
  const std::string g = global_id(kPid, kWorkerTid);
  make_db(dir.file("old.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'void scale<2>(float*)'), (2, 'scale');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (300, 400, 0, 1, 7, 3, 0, 2), (100, 200, 0, 1, 7, 2, 1, 2);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER);
INSERT INTO NVTX_EVENTS VALUES (90, 450, 59, 'iteration', )sql" + g + R"sql();
)sql");
  const Read r = import(dir.file("old.sqlite"));
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.name(r.kernels[0].name_id()), "void scale<2>(float*)");
  EXPECT_EQ(r.kernels[0].start_ns(), 100);
  // demangledName 0 is an older export's "none": the short name stands in.
  EXPECT_EQ(r.name(r.kernels[1].name_id()), "scale");
  ASSERT_EQ(r.ranges.size(), 2u);
  EXPECT_EQ(r.name(r.ranges[0].name_id()), "iteration");
  EXPECT_EQ(r.ranges[0].thread_id(), uint64_t(kWorkerTid));
  EXPECT_EQ(r.ranges[1].time_ns(), 450);
  EXPECT_EQ(r.header.clock_domain(), "ns from the nsys session start");
  EXPECT_TRUE(r.notice_has("no TARGET_INFO_SESSION_START_TIME"));
}

TEST(NsysImport, AReportWithOnlyKernelsSaysWhatItLacks) {
  TempDir dir;
  make_db(dir.file("k.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (7, 9, 1);
)sql");
  const Read r = import(dir.file("k.sqlite"));
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].end_ns(), 9);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_TRUE(r.ranges.empty());
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.notice_has("queued and submitted times are unknown"));
  EXPECT_TRUE(r.notice_has("no CUDA API table"));
  EXPECT_TRUE(r.notice_has("describes no GPU"));
}

TEST(NsysImport, EmptyTablesOfANonLazyExportCountAsMissing) {
  TempDir dir;
  // `nsys export --lazy=false`: every table exists, most of them empty.
  make_db(dir.file("all.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaStreamSynchronize_v3020');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 1);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (5, 30, 9, 4, 2);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, syncType INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER, graphId INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);
)sql");
  const Read r = import(dir.file("all.sqlite"));
  EXPECT_FALSE(r.notice_has("traced whole"));
  EXPECT_TRUE(r.notice_has("no TARGET_INFO_SESSION_START_TIME"));
  // No synchronisation records: the blocking call stands in for one.
  EXPECT_TRUE(r.notice_has("taken from the blocking CUDA calls"));
  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].type(), v1::SYNC_STREAM_SYNCHRONIZE);
  EXPECT_EQ(r.syncs[0].start_ns(), 5);
  EXPECT_EQ(r.syncs[0].end_ns(), 30);
  EXPECT_EQ(r.syncs[0].correlation_id(), 4u);
}

TEST(NsysImport, RowsInAnyOrderAreWrittenInStartOrder) {
  TempDir dir;
  make_db(dir.file("shuffled.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER, correlationId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (500, 510, 1, 5), (100, 110, 1, 1), (300, 310, 1, 3), (200, 210, 1, 2),
  (400, 410, 1, 4);
)sql");
  const Read r = import(dir.file("shuffled.sqlite"));
  ASSERT_EQ(r.kernels.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.kernels[i].start_ns(), 100 * (i + 1));
    EXPECT_EQ(r.kernels[i].correlation_id(), i + 1);
  }
}

TEST(NsysImport, QueuedAndSubmittedColumnsAreUsedWhenTheReportHasThem) {
  TempDir dir;
  make_db(dir.file("q.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER, queued INTEGER,
  submitted INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 1, 40, 60), (300, 400, 1, NULL, 0);
)sql");
  const Read r = import(dir.file("q.sqlite"));
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].queued_ns(), 40);
  EXPECT_EQ(r.kernels[0].submitted_ns(), 60);
  EXPECT_FALSE(r.kernels[1].has_queued_ns());
  EXPECT_FALSE(r.kernels[1].has_submitted_ns());
  EXPECT_FALSE(r.notice_has("queued and submitted times are unknown"));
  EXPECT_NE(r.header.features() & v1::FEATURE_LATENCY_TIMESTAMPS, 0u);
}

TEST(NsysImport, TextWhereAnIntegerBelongsIsAnErrorNamingTableRowAndColumn) {
  TempDir dir;
  make_db(dir.file("bad.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER, deviceId);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (rowid, start, end, shortName, deviceId) VALUES (1, 10, 20, 1, 0),
  (2, 30, 40, 1, 'zero');
)sql");
  gpuhook::CaptureErrorKind kind{};
  const std::string error = import_error(dir.file("bad.sqlite"), &kind);
  EXPECT_EQ(kind, gpuhook::CaptureErrorKind::kBadRecord);
  EXPECT_NE(error.find("table CUPTI_ACTIVITY_KIND_KERNEL, row 2: column deviceId holds the text 'zero'"),
            std::string::npos)
      << error;
}

TEST(NsysImport, TimesOutsideZeroTo2Pow62AndEndsBeforeStartsAreErrors) {
  TempDir dir;
  auto report = [](const std::string& row) {
    return "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); INSERT INTO StringIds VALUES (1, 'k');"
           "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, bytes INTEGER);"
           "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (rowid, start, end, bytes) VALUES " + row + ";";
  };
  make_db(dir.file("negative.sqlite"), report("(3, -5, 10, 1)"));
  make_db(dir.file("huge.sqlite"), report("(4, 1, 4611686018427387905, 1)"));
  make_db(dir.file("reversed.sqlite"), report("(5, 100, 90, 1)"));
  make_db(dir.file("real.sqlite"), report("(6, 1.5, 90, 1)"));
  make_db(dir.file("null.sqlite"), report("(7, NULL, 90, 1)"));
  const std::string negative = import_error(dir.file("negative.sqlite"));
  EXPECT_NE(negative.find("table CUPTI_ACTIVITY_KIND_MEMSET, row 3: column start is -5"), std::string::npos);
  EXPECT_NE(import_error(dir.file("huge.sqlite")).find("row 4: column end is 4611686018427387905"), std::string::npos);
  EXPECT_NE(import_error(dir.file("reversed.sqlite")).find("row 5: end (90) is before start (100)"), std::string::npos);
  EXPECT_NE(import_error(dir.file("real.sqlite")).find("row 6: column start holds the real number"), std::string::npos);
  EXPECT_NE(import_error(dir.file("null.sqlite")).find("row 7: column start is NULL"), std::string::npos);
}

TEST(NsysImport, AMissingRequiredColumnOrStringIsAnError) {
  TempDir dir;
  make_db(dir.file("noend.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 1);
)sql");
  make_db(dir.file("noname.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (rowid, start, end, nameId) VALUES (8, 1, 2, 42);
)sql");
  const std::string no_end = import_error(dir.file("noend.sqlite"));
  EXPECT_NE(no_end.find("table CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos) << no_end;
  EXPECT_NE(no_end.find("end"), std::string::npos) << no_end;
  const std::string no_name = import_error(dir.file("noname.sqlite"));
  EXPECT_NE(no_name.find("table CUPTI_ACTIVITY_KIND_RUNTIME, row 8: column nameId refers to string 42"),
            std::string::npos)
      << no_name;
}

TEST(NsysImport, AnSQLiteFileWithoutNsysTablesIsRefusedClearly) {
  TempDir dir;
  make_db(dir.file("other.sqlite"), "CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup');");
  gpuhook::CaptureErrorKind kind{};
  const std::string error = import_error(dir.file("other.sqlite"), &kind);
  EXPECT_EQ(kind, gpuhook::CaptureErrorKind::kNotACapture);
  EXPECT_NE(error.find("without Nsight Systems tables"), std::string::npos) << error;
}

TEST(NsysImport, ADamagedSQLiteFileIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.file("damaged.sqlite");
  make_db(path, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    const std::string junk(200, '\xA5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));  // page size, header fields, schema
  }
  EXPECT_NE(import_error(path), "");
}

// Bytes flipped anywhere in a report: each import reads it or throws CaptureError, nothing else.
TEST(NsysImport, RandomlyDamagedReportsAreReadOrRefusedNeverCrash) {
  TempDir dir;
  const std::string good = dir.file("good.sqlite");
  make_db(good, full_report());
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::mt19937 rng(7);
  size_t refused = 0;
  for (int round = 0; round < 200; ++round) {
    std::string damaged = bytes;
    for (int flips = 1 + static_cast<int>(rng() % 8); flips > 0; --flips) {
      damaged[100 + rng() % (damaged.size() - 100)] = static_cast<char>(rng());  // past the 100-byte file header
    }
    const std::string path = dir.file("damaged" + std::to_string(round) + ".sqlite");
    std::ofstream(path, std::ios::binary) << damaged;
    std::string error;
    auto writer = gpuhook::CaptureWriter::create(path + ".gpuh", gpuhook::WriterOptions{}, &error);
    try {
      gantt::scan::import_nsys(path, *writer);
    } catch (const gpuhook::CaptureError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()), "");
    }
  }
  EXPECT_GT(refused, 0u);
}

TEST(NsysImport, SeveralProcessesKeepTheirLaunchesAndDevicesApart) {
  TempDir dir;
  // Two processes, each with CUDA_VISIBLE_DEVICES set to its own GPU: both call it device 0 and
  // both number their calls from 1. Process 200 launched two kernels, process 100 one.
  const std::string a = global_id(100, 100), b = global_id(200, 200);
  make_db(dir.file("two.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel_v7000');
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER);
INSERT INTO TARGET_INFO_GPU VALUES (0, 'gpu zero', 132), (1, 'gpu one', 114);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 100), (1, 0, 200);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, correlationId INTEGER,
  globalPid INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 1, )sql" + a + R"sql(, 1),
  (11, 21, 0, 1, )sql" + b + R"sql(, 1), (30, 40, 0, 2, )sql" + b + R"sql(, 1);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 5, )sql" + a + R"sql(, 1, 2), (2, 6, )sql" + b +
                                      R"sql(, 1, 2), (25, 28, )sql" + b + R"sql(, 2, 2);
)sql");
  const Read r = import(dir.file("two.sqlite"));
  EXPECT_EQ(r.header.pid(), 200u);
  EXPECT_TRUE(r.notice_has("holds 2 processes"));
  ASSERT_EQ(r.kernels.size(), 3u);
  ASSERT_EQ(r.calls.size(), 3u);
  // id * 2 processes + index (100 -> 0, 200 -> 1).
  EXPECT_EQ(r.kernels[0].correlation_id(), 2u);
  EXPECT_EQ(r.kernels[1].correlation_id(), 3u);
  EXPECT_EQ(r.kernels[2].correlation_id(), 5u);
  EXPECT_EQ(r.calls[0].correlation_id(), 2u);
  EXPECT_EQ(r.calls[0].thread_id(), 100u);
  EXPECT_EQ(r.calls[1].correlation_id(), 3u);
  EXPECT_EQ(r.calls[2].correlation_id(), 5u);
  EXPECT_EQ(r.kernels[0].device(), 0u);
  EXPECT_EQ(r.kernels[1].device(), 1u);
  ASSERT_EQ(r.devices.size(), 2u);
  for (const v1::DeviceInfo& d : r.devices) EXPECT_EQ(d.name(), d.ordinal() == 1 ? "gpu one" : "gpu zero");
}

TEST(NsysImport, EnumTablesNameTheKindsWhenTheyNumberThemTheirOwnWay) {
  TempDir dir;
  make_db(dir.file("enums.sqlite"), R"sql(
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (1, 'STREAM_SYNCHRONIZE', 'Stream synchronize'),
  (2, 'CONTEXT_SYNCHRONIZE', 'Context synchronize');
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'Device-to-Host'), (2, 'Host-to-Device');
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PINNED'),
  (1, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC');
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, syncType INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (1, 2, 2), (3, 4, 1), (5, 6, 4);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, copyKind INTEGER, srcKind INTEGER,
  dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2, 1, 1, 0), (3, 4, 8, 2, 7);
)sql");
  const Read r = import(dir.file("enums.sqlite"));
  ASSERT_EQ(r.syncs.size(), 3u);
  EXPECT_EQ(r.syncs[0].type(), v1::SYNC_CONTEXT_SYNCHRONIZE);
  EXPECT_EQ(r.syncs[1].type(), v1::SYNC_STREAM_SYNCHRONIZE);
  EXPECT_EQ(r.syncs[2].type(), v1::SYNC_CONTEXT_SYNCHRONIZE);  // not in the enum: CUPTI's 4
  ASSERT_EQ(r.copies.size(), 2u);
  EXPECT_EQ(r.copies[0].copy_kind(), v1::COPY_DTOH);
  EXPECT_EQ(r.copies[0].src_kind(), v1::MEMORY_MANAGED_STATIC);
  EXPECT_EQ(r.copies[0].dst_kind(), v1::MEMORY_PINNED);
  EXPECT_EQ(r.copies[1].copy_kind(), v1::COPY_DTOD);  // not in the enum: CUPTI's 8
  EXPECT_EQ(r.copies[1].src_kind(), v1::MEMORY_PINNED);
  EXPECT_EQ(r.copies[1].dst_kind(), v1::MEMORY_MANAGED_STATIC);
}

TEST(NsysImport, NvtxRangesNestPerThreadAndDomainAndUnfinishedOnesEndWithTheTrace) {
  TempDir dir;
  const std::string g = global_id(kPid, kMainTid);
  make_db(dir.file("nvtx.sqlite"), R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 900, 1);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
  domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES
  (0, NULL, 75, 'nccl', )sql" + g + R"sql(, 5),
  (10, 50, 59, 'outer', )sql" + g + R"sql(, 0),
  (20, 70, 59, 'overhangs', )sql" + g + R"sql(, 0),
  (30, 60, 59, 'other domain', )sql" + g + R"sql(, 5),
  (55, NULL, 59, 'unfinished', )sql" + g + R"sql(, 0),
  (80, NULL, 60, 'open start/end', )sql" + g + R"sql(, 0);
)sql");
  const Read r = import(dir.file("nvtx.sqlite"));
  struct Expected {
    v1::RangeType type;
    int64_t time;
    const char* name;
    const char* domain;
  };
  // "overhangs" is cut at its parent's end (50); "unfinished" starts after both closed and
  // lasts to the trace end (900); the nccl domain keeps its own stack.
  const Expected expected[] = {
      {v1::RANGE_PUSH, 10, "outer", ""},        {v1::RANGE_PUSH, 20, "overhangs", ""},
      {v1::RANGE_PUSH, 30, "other domain", "nccl"}, {v1::RANGE_POP, 50, "", ""},
      {v1::RANGE_POP, 50, "", ""},             {v1::RANGE_PUSH, 55, "unfinished", ""},
      {v1::RANGE_START, 80, "open start/end", ""}, {v1::RANGE_END, 900, "", ""},
      {v1::RANGE_POP, 900, "", ""},            {v1::RANGE_POP, 60, "", "nccl"}};
  ASSERT_EQ(r.ranges.size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r.ranges[i].type(), expected[i].type);
    EXPECT_EQ(r.ranges[i].time_ns(), expected[i].time);
    EXPECT_EQ(r.name(r.ranges[i].name_id()), expected[i].name);
    EXPECT_EQ(r.name(r.ranges[i].domain_id()), expected[i].domain);
  }
}

TEST(NsysImport, CaptureReaderOpensAnExportThroughTheImporter) {
  TempDir dir;
  const std::string db = dir.file("report.sqlite");
  make_db(db, full_report());
  gantt::scan::enable_trace_import();
  gpuhook::CaptureReader reader(db);
  v1::Record r;
  size_t kernels = 0;
  while (reader.next(r)) kernels += r.kind_case() == v1::Record::kKernel;
  EXPECT_EQ(kernels, 1u);
}

TEST(NsysImport, TracegenWriterRoundTripsThroughTheImporter) {
  tracegen::Run run;
  run.pid = 3000;
  run.host_name = "node-b";
  run.devices.push_back(tracegen::Device{});
  const int64_t t0 = run.base_ns;
  run.calls = {{"cudaMemcpyAsync", 0, 3000, t0 + 100, t0 + 150, 1},
               {"cudaLaunchKernel", 0, 3000, t0 + 200, t0 + 230, 2},
               {"cudaLaunchKernel", 0, 3000, t0 + 240, t0 + 260, 3},
               {"cudaMemsetAsync", 0, 3001, t0 + 270, t0 + 280, 4},
               {"cudaStreamSynchronize", 0, 3000, t0 + 300, t0 + 2000, 5}};
  tracegen::Kernel gemm;
  gemm.name = "void gemm<128>(float const*, float*)";
  gemm.correlation_id = 2;
  gemm.start_ns = t0 + 400;
  gemm.end_ns = t0 + 900;
  gemm.grid[0] = 66;
  gemm.block[0] = 256;
  gemm.shared_memory_bytes = 4096;
  tracegen::Kernel relu = gemm;
  relu.name = "relu";
  relu.correlation_id = 3;
  relu.start_ns = t0 + 900;
  relu.end_ns = t0 + 1000;
  run.kernels = {relu, gemm};
  run.copies = {{0, 7, 1, 1, 1, 3, 1 << 20, t0 + 160, t0 + 390}};
  run.fills = {{0, 7, 4, 3, 512, t0 + 1000, t0 + 1010}};
  run.syncs = {{3, 0, 7, 5, 3000, t0 + 300, t0 + 2000}};
  run.ranges = {{"ProfilerStep#1", 3000, t0 + 50, t0 + 2100}, {"forward", 3000, t0 + 60, t0 + 1500}};
  TempDir dir;
  const std::string db = dir.file("run.sqlite");
  tracegen::write_nsys(run, db);
  const Read r = import(db);

  EXPECT_EQ(r.header.host_name(), "node-b");
  EXPECT_EQ(r.header.pid(), 3000u);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].sm_count(), 132u);
  EXPECT_EQ(r.devices[0].max_threads_per_sm(), 2048u);
  EXPECT_EQ(r.devices[0].registers_per_sm(), 65536u);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.name(r.kernels[0].name_id()), "void gemm<128>(float const*, float*)");
  EXPECT_EQ(r.kernels[0].start_ns(), t0 + 400);
  EXPECT_EQ(r.kernels[0].end_ns(), t0 + 900);
  EXPECT_EQ(r.kernels[0].grid_x(), 66);
  EXPECT_EQ(r.kernels[0].block_x(), 256);
  EXPECT_EQ(r.kernels[0].static_shared_memory_bytes() + r.kernels[0].dynamic_shared_memory_bytes(), 4096u);
  EXPECT_EQ(r.kernels[0].launch_type(), v1::LAUNCH_REGULAR);
  EXPECT_EQ(r.kernels[0].correlation_id(), 2u);
  EXPECT_EQ(r.name(r.kernels[1].name_id()), "relu");
  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_EQ(r.copies[0].copy_kind(), v1::COPY_HTOD);
  EXPECT_EQ(r.copies[0].src_kind(), v1::MEMORY_PAGEABLE);
  EXPECT_EQ(r.copies[0].dst_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(r.copies[0].bytes(), 1u << 20);
  ASSERT_EQ(r.fills.size(), 1u);
  EXPECT_EQ(r.fills[0].correlation_id(), 4u);
  EXPECT_EQ(r.fills[0].end_ns(), t0 + 1010);
  ASSERT_EQ(r.calls.size(), 5u);
  const char* names[] = {"cudaMemcpyAsync", "cudaLaunchKernel", "cudaLaunchKernel", "cudaMemsetAsync",
                         "cudaStreamSynchronize"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.name(r.calls[i].name_id()), names[i]);
    EXPECT_EQ(r.calls[i].start_ns(), run.calls[i].start_ns);
    EXPECT_EQ(r.calls[i].end_ns(), run.calls[i].end_ns);
    EXPECT_EQ(r.calls[i].thread_id(), run.calls[i].thread_id);
    EXPECT_EQ(r.calls[i].correlation_id(), run.calls[i].correlation_id);
  }
  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].type(), v1::SYNC_STREAM_SYNCHRONIZE);
  ASSERT_EQ(r.ranges.size(), 4u);
  EXPECT_EQ(r.name(r.ranges[0].name_id()), "ProfilerStep");  // torch.profiler's steps, one name for all
  EXPECT_EQ(r.name(r.ranges[1].name_id()), "forward");
  EXPECT_EQ(r.ranges[2].time_ns(), t0 + 1500);
  EXPECT_EQ(r.ranges[3].time_ns(), t0 + 2100);
  ASSERT_EQ(r.threads.size(), 2u);
  EXPECT_EQ(r.name(r.threads[0].name_id()), "python3");
  EXPECT_EQ(r.footer.end_realtime_ns(), uint64_t(t0 + 2100));
}

}  // namespace
