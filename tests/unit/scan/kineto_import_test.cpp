// torch.profiler/Kineto JSON read as capture records: hand-built traces with hand-computed
// figures (shared/TRACE-FORMATS.md, part A), exact times, and the refusals of bad input.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gpuhook/capture.h>

#include "gantt/scan/trace_import.h"

namespace {

namespace v1 = gpuhook::v1;
namespace fs = std::filesystem;

struct Imported {
  std::vector<v1::Record> records;
  std::vector<std::string> strings;
  template <class F>
  std::vector<const v1::Record*> of(F&& is) const {
    std::vector<const v1::Record*> out;
    for (const v1::Record& r : records) {
      if (is(r)) out.push_back(&r);
    }
    return out;
  }
  std::vector<const v1::Record*> kind(v1::Record::KindCase k) const {
    return of([k](const v1::Record& r) { return r.kind_case() == k; });
  }
  const std::string& str(uint32_t id) const { return strings.at(id); }
};

class KinetoImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kineto_import_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  Imported import(const std::string& json) {
    const std::string in = write("trace.json", json);
    const std::string out = (dir_ / ("out" + std::to_string(++n_) + ".gpuh")).string();
    const int fd = ::open(in.c_str(), O_RDONLY | O_CLOEXEC);
    std::string error;
    auto writer = gpuhook::CaptureWriter::create(out, gpuhook::WriterOptions{}, &error);
    EXPECT_TRUE(writer) << error;
    try {
      gantt::scan::import_kineto(in, fd, false, *writer);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    EXPECT_TRUE(writer->close());
    Imported result;
    gpuhook::CaptureReader reader(out);
    v1::Record r;
    while (reader.next(r)) {
      if (r.kind_case() != v1::Record::kStringDef) result.records.push_back(r);
    }
    result.strings = reader.strings();
    return result;
  }

  // The CaptureError an import throws, or "" when it throws none.
  std::string refusal(const std::string& json, uint64_t* offset = nullptr) {
    try {
      import(json);
    } catch (const gpuhook::CaptureError& e) {
      if (offset != nullptr) *offset = e.offset();
      return e.file() + ": " + e.what();
    }
    return "";
  }

 private:
  fs::path dir_;
  int n_ = 0;
};

// A current trace (relative times with baseTimeNanoseconds, distributedInfo after traceEvents).
const char* kTrace = R"j(
{
  "schemaVersion": 1,
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85020000256, "computeMajor": 9, "computeMinor": 0,
     "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
     "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
     "sharedMemPerMultiprocessor": 233472}
  ],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "pid": 77, "tid": 78, "ts": 100.000, "dur": 50.000},
  {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 77, "tid": 78, "ts": 101.500, "dur": 10.250},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 77, "tid": 78, "ts": 102.001, "dur": 4.999,
   "args": {"cbid": 211, "correlation": 9}},
  {"ph": "s", "id": 9, "pid": 77, "tid": 78, "ts": 102.001, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 110.123, "dur": 20.877,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 9, "registers per thread": 168,
            "shared memory": 197632, "blocks per SM": 2.000000, "grid": [264, 1, 1], "block": [384, 1, 1]}},
  {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 110.123, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "next_kernel", "pid": 0, "tid": 7, "ts": 131.000, "dur": 1.000,
   "args": {"device": 0, "stream": 7, "correlation": 10}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 133.000,
   "dur": 2.221, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 11, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 136.000, "dur": 0.333,
   "args": {"device": 0, "stream": 7, "correlation": 12, "bytes": 1048576}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 137.000, "dur": 3.000,
   "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 13, "device": 0, "context": 1}},
  {"name": "thread_name", "ph": "M", "ts": 100.000, "pid": 77, "tid": 78, "args": {"name": "thread 78 (python3)"}},
  {"ph": "X", "cat": "Trace", "ts": 100.000, "dur": 60.000, "pid": "Spans", "tid": "PyTorch Profiler",
   "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 170.000}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "traceName": "rank1.pt.trace.json"
}
)j";

constexpr int64_t kBase = 1700000000000000000;

TEST_F(KinetoImport, KernelsKeepTheirExactNanosecondTimesAndLaunchShape) {
  const Imported t = import(kTrace);
  const auto kernels = t.kind(v1::Record::kKernel);
  ASSERT_EQ(kernels.size(), 2u);
  const v1::Kernel& k = kernels[0]->kernel();
  EXPECT_EQ(t.str(k.name_id()), "gemm_kernel");
  EXPECT_EQ(k.start_ns(), kBase + 110'123);
  EXPECT_EQ(k.end_ns(), kBase + 131'000);  // 110.123 + 20.877 µs, exactly
  EXPECT_EQ(k.device(), 0u);
  EXPECT_EQ(k.stream(), 7u);
  EXPECT_EQ(k.correlation_id(), 9u);
  EXPECT_EQ(k.grid_x(), 264);
  EXPECT_EQ(k.block_x(), 384);
  EXPECT_EQ(k.grid_y(), 1);
  EXPECT_EQ(k.registers_per_thread(), 168u);
  EXPECT_EQ(k.static_shared_memory_bytes(), 197632u);
  // Unknown, not invented: Kineto never asks CUPTI for them.
  EXPECT_EQ(k.queued_ns(), 0);
  EXPECT_EQ(k.submitted_ns(), 0);
  // Back to back: the next kernel starts where this one ends, no overlap by a rounding.
  EXPECT_EQ(kernels[1]->kernel().start_ns(), k.end_ns());
}

TEST_F(KinetoImport, CopiesMemsetsCallsAndSyncsKeepTheirFields) {
  const Imported t = import(kTrace);
  const auto copies = t.kind(v1::Record::kMemcpy);
  ASSERT_EQ(copies.size(), 1u);
  const v1::Memcpy& m = copies[0]->memcpy();
  EXPECT_EQ(m.copy_kind(), v1::COPY_DTOH);
  EXPECT_EQ(m.src_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(m.dst_kind(), v1::MEMORY_PINNED);
  EXPECT_EQ(m.bytes(), 4096u);
  EXPECT_EQ(m.end_ns() - m.start_ns(), 2'221);
  const auto fills = t.kind(v1::Record::kMemset);
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0]->memset().bytes(), 1048576u);
  EXPECT_EQ(fills[0]->memset().memory_kind(), v1::MEMORY_DEVICE);
  EXPECT_EQ(fills[0]->memset().end_ns() - fills[0]->memset().start_ns(), 333);
  const auto calls = t.kind(v1::Record::kApi);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(t.str(calls[0]->api().name_id()), "cudaLaunchKernel");
  EXPECT_EQ(calls[0]->api().correlation_id(), 9u);
  EXPECT_EQ(calls[0]->api().thread_id(), 78u);
  EXPECT_EQ(calls[0]->api().start_ns(), kBase + 102'001);
  EXPECT_EQ(calls[0]->api().end_ns(), kBase + 107'000);
  const auto syncs = t.kind(v1::Record::kSync);
  ASSERT_EQ(syncs.size(), 1u);  // from cuda_sync; no second one from a blocking call
  EXPECT_EQ(syncs[0]->sync().type(), v1::SYNC_STREAM_SYNCHRONIZE);
  EXPECT_EQ(syncs[0]->sync().stream(), 7u);
  EXPECT_EQ(syncs[0]->sync().start_ns(), kBase + 137'000);
}

TEST_F(KinetoImport, HeaderTakesRankDevicesAndSaysWhatIsUnknown) {
  const Imported t = import(kTrace);
  const auto headers = t.kind(v1::Record::kHeader);
  ASSERT_EQ(headers.size(), 1u);
  const v1::Header& h = headers[0]->header();
  EXPECT_EQ(h.pid(), 77u);
  ASSERT_TRUE(h.has_rank());
  EXPECT_EQ(h.rank(), 1);  // distributedInfo written after traceEvents is still read
  EXPECT_EQ(h.world_size(), 2);
  EXPECT_NE(h.tool_version().find(", read by gantt-cli"), std::string::npos);
  const auto devices = t.kind(v1::Record::kDevice);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->device().sm_count(), 132u);
  EXPECT_EQ(devices[0]->device().max_warps_per_sm(), 64u);
  EXPECT_EQ(devices[0]->device().shared_memory_per_sm_bytes(), 233472u);
  bool said_queued = false;
  for (const v1::Record* n : t.kind(v1::Record::kNotice)) {
    said_queued |= n->notice().text().find("queued and submitted times are unknown") != std::string::npos;
  }
  EXPECT_TRUE(said_queued);
}

TEST_F(KinetoImport, AnnotationsBecomeNestedRangesOnTheirThread) {
  const Imported t = import(kTrace);
  const auto ranges = t.kind(v1::Record::kRange);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges[0]->range().type(), v1::RANGE_PUSH);
  EXPECT_EQ(t.str(ranges[0]->range().name_id()), "ProfilerStep");  // one name for every step
  EXPECT_EQ(ranges[0]->range().time_ns(), kBase + 100'000);
  EXPECT_EQ(t.str(ranges[1]->range().name_id()), "forward");
  EXPECT_EQ(ranges[1]->range().time_ns(), kBase + 101'500);
  EXPECT_EQ(ranges[2]->range().type(), v1::RANGE_POP);
  EXPECT_EQ(ranges[2]->range().time_ns(), kBase + 111'750);
  EXPECT_EQ(ranges[3]->range().time_ns(), kBase + 150'000);
  for (const v1::Record* r : ranges) EXPECT_EQ(r->range().thread_id(), 78u);
}

TEST_F(KinetoImport, ABaseWrittenAfterTheEventsIsTheHeadersClockPair) {
  // Kineto from 2024-05 to 2025-03 wrote baseTimeNanoseconds after traceEvents: one pass keeps
  // ts as the records' clock and pairs it with the wall clock in the header.
  const Imported t = import(R"j({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.000, "dur": 2.500,
     "args": {"device": 0, "stream": 7, "correlation": 1}}
  ], "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000})j");
  const auto kernels = t.kind(v1::Record::kKernel);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]->kernel().start_ns(), 5'000);
  EXPECT_EQ(kernels[0]->kernel().end_ns(), 7'500);
  const v1::Header& h = t.kind(v1::Record::kHeader).at(0)->header();
  EXPECT_EQ(h.start_monotonic_raw_ns(), 5'000u);
  EXPECT_EQ(h.start_realtime_ns(), uint64_t{kBase} + 5'000);
  const v1::Footer& f = t.kind(v1::Record::kFooter).at(0)->footer();
  EXPECT_EQ(f.end_monotonic_raw_ns(), 7'500u);
  EXPECT_EQ(f.end_realtime_ns(), uint64_t{kBase} + 7'500);
}

TEST_F(KinetoImport, TimesPastTwoToTheSixtySecondNanosecondsAreRefused) {
  // Each within 2^62 ns alone, together past it: refused, never wrapped.
  EXPECT_NE(refusal(R"j({"baseTimeNanoseconds": 4611686018427387903, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4611686018427387.000, "dur": 4611686018427387.000}
  ]})j").find("past 2^62"), std::string::npos);
}

TEST_F(KinetoImport, TheBareArrayFormWithAbsoluteIntegerMicrosecondsReads) {
  // Chrome's other form and a 2022 trace's times: integer µs since the epoch, no base.
  const Imported t = import(R"j([
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1711964646000123, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 9, "tid": -1107294656,
     "ts": 1711964646000200, "dur": 7, "args": {"correlation": 2}}
  ])j");
  const auto kernels = t.kind(v1::Record::kKernel);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]->kernel().start_ns(), 1711964646000123000);
  EXPECT_EQ(kernels[0]->kernel().end_ns(), 1711964646000128000);
  const auto calls = t.kind(v1::Record::kApi);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->api().thread_id(), 1107294656u);  // negative tids, as Kineto before 2024-10 wrote them
  // Before cuda_sync existed, the blocking call itself says the host waited.
  const auto syncs = t.kind(v1::Record::kSync);
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0]->sync().type(), v1::SYNC_STREAM_SYNCHRONIZE);
  EXPECT_EQ(syncs[0]->sync().end_ns() - syncs[0]->sync().start_ns(), 7'000);
}

TEST_F(KinetoImport, NcclKernelsBecomeCollectivesWithTheirSizeAndSequence) {
  const Imported t = import(R"j({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 13,
     "ts": 10, "dur": 5, "args": {"device": 0, "stream": 13, "correlation": 4, "Collective name": "allreduce",
     "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float", "Group size": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 13,
     "ts": 30, "dur": 5, "args": {"device": 0, "stream": 13, "correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 13,
     "ts": 20, "dur": 5, "args": {"device": 0, "stream": 13, "correlation": 5}}
  ], "distributedInfo": {"rank": 0, "world_size": 2}})j");
  const auto calls = t.kind(v1::Record::kNccl);
  ASSERT_EQ(calls.size(), 3u);
  // In time order on the stream, whatever the order in the file.
  EXPECT_EQ(calls[0]->nccl().op(), v1::NCCL_ALL_REDUCE);
  EXPECT_EQ(calls[0]->nccl().bytes(), 4096u);  // 1024 Float elements
  EXPECT_EQ(calls[0]->nccl().nranks(), 2);
  EXPECT_EQ(calls[0]->nccl().sequence(), 0u);
  EXPECT_EQ(calls[1]->nccl().op(), v1::NCCL_ALL_REDUCE);  // from the kernel's name alone
  EXPECT_EQ(calls[1]->nccl().sequence(), 1u);
  EXPECT_EQ(calls[2]->nccl().op(), v1::NCCL_ALL_GATHER);
  EXPECT_EQ(calls[2]->nccl().sequence(), 2u);
  EXPECT_EQ(calls[2]->nccl().rank(), 0);
}

TEST_F(KinetoImport, OlderTracesGiveTheCollectivesFactsOnTheRecordParamCommsOp) {
  // The op comes after its kernel in the file: Kineto writes per buffer, not in time order.
  const Imported t = import(R"j({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllGather_RING_LL_Sum_int8_t", "pid": 0, "tid": 13,
     "ts": 10, "dur": 5, "args": {"device": 0, "stream": 13, "correlation": 4, "External id": 55}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 70, "tid": 71, "ts": 8, "dur": 1,
     "args": {"External id": 55, "Collective name": "_allgather_base", "In msg nelems": 10, "dtype": "Half",
              "Group size": 4, "Process Group Name": "0"}}
  ]})j");
  const auto calls = t.kind(v1::Record::kNccl);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->nccl().op(), v1::NCCL_ALL_GATHER);
  EXPECT_EQ(calls[0]->nccl().count(), 10u);
  EXPECT_EQ(calls[0]->nccl().bytes(), 20u);  // 10 Half elements
  EXPECT_EQ(calls[0]->nccl().nranks(), 4);
}

TEST_F(KinetoImport, RocmTracesReadWithoutDeviceProperties) {
  // AMD GPUs: the same categories, hip* runtime names, no deviceProperties (A4).
  const Imported t = import(R"j({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 6, "ts": 1, "dur": 2,
     "args": {"cid": 1, "correlation": 3, "kernel": "Cijk_Ailk_Bljk", "grid": [256, 1, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk", "pid": 2, "tid": 0, "ts": 4, "dur": 10,
     "args": {"device": 2, "stream": 0, "correlation": 3}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Dispatch Kernel)", "pid": 2, "tid": 0, "ts": 20, "dur": 1,
     "args": {"device": 2, "stream": 0, "correlation": 4, "bytes": 64}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 2, "tid": 0, "ts": 30, "dur": 1,
     "args": {"device": 2, "stream": 0, "correlation": 5, "bytes": 128}}
  ]})j");
  ASSERT_EQ(t.kind(v1::Record::kKernel).size(), 1u);
  EXPECT_EQ(t.kind(v1::Record::kKernel)[0]->kernel().device(), 2u);
  ASSERT_EQ(t.kind(v1::Record::kMemset).size(), 1u);
  ASSERT_EQ(t.kind(v1::Record::kMemcpy).size(), 1u);
  EXPECT_EQ(t.kind(v1::Record::kMemcpy)[0]->memcpy().copy_kind(), v1::COPY_HTOD);
  EXPECT_EQ(t.kind(v1::Record::kApi).size(), 1u);
  // The device the events use is described by its ordinal alone: occupancy unknown, not wrong.
  const auto devices = t.kind(v1::Record::kDevice);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->device().ordinal(), 2u);
  EXPECT_EQ(devices[0]->device().sm_count(), 0u);
}

TEST_F(KinetoImport, BadTimesAreRefusedAtTheEventsOffset) {
  const std::string head = R"({"traceEvents": [)";
  const std::string good = R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1},)";
  for (const char* bad_field : {R"("ts": NaN, "dur": 1)", R"("ts": -5, "dur": 1)", R"("ts": 1, "dur": -1.500)",
                                R"("ts": 1e300, "dur": 1)", R"("ts": "12", "dur": 1)", R"("ts": 1, "dur": Infinity)"}) {
    const std::string json = head + good + R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, )" +
                             bad_field + "}]}";
    uint64_t offset = 0;
    const std::string why = refusal(json, &offset);
    EXPECT_NE(why, "") << bad_field;
    // NaN and Infinity are not JSON: the parser stops inside the event; the others are named at its '{'.
    EXPECT_GE(offset, head.size() + good.size()) << bad_field << ": " << why;
    if (why.find("malformed") == std::string::npos) {
      EXPECT_EQ(json[offset], '{') << bad_field;
    }
    EXPECT_LE(offset, json.size()) << bad_field;
    EXPECT_NE(why.find("trace.json"), std::string::npos) << why;
  }
}

TEST_F(KinetoImport, TextThatIsNoTraceIsRefusedClearly) {
  uint64_t offset = 0;
  const std::string cut = std::string(kTrace).substr(0, 900);
  EXPECT_NE(refusal(cut, &offset).find("malformed JSON trace"), std::string::npos);
  EXPECT_GT(offset, 800u);
  EXPECT_NE(refusal(R"({"schemaVersion": 1})").find("without a traceEvents array"), std::string::npos);
  EXPECT_NE(refusal("42").find("not a trace"), std::string::npos);
  std::string deep = R"({"traceEvents": [{"args": {"x": )";
  for (int i = 0; i < 200; ++i) deep += "[";
  EXPECT_NE(refusal(deep).find("nested deeper"), std::string::npos);
}

TEST(ExactTime, MicrosecondTextBecomesIntegerNanosecondsWithoutRounding) {
  int64_t ns = 0;
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("12", &ns));
  EXPECT_EQ(ns, 12'000);
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("12.5", &ns));
  EXPECT_EQ(ns, 12'500);
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("1712345678901234.567", &ns));
  EXPECT_EQ(ns, 1712345678901234567);  // 19 digits: a double would keep ~0.25 µs of them
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("1.5e3", &ns));
  EXPECT_EQ(ns, 1'500'000);
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("0.0009", &ns));
  EXPECT_EQ(ns, 0);  // below a ns: dropped
  ASSERT_TRUE(gantt::scan::parse_us_as_ns("0", &ns));
  EXPECT_EQ(ns, 0);
  for (const char* bad : {"", "-1", "NaN", "inf", "1e400", "1.2.3", "99999999999999999999", "1e", "12abc", "."}) {
    EXPECT_FALSE(gantt::scan::parse_us_as_ns(bad, &ns)) << bad;
  }
}

TEST_F(KinetoImport, AValueQuotedInAnErrorCannotReachTheTerminalRaw) {
  const std::string why = refusal(R"j({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
    "ts": "\u001b[31mred\u0007", "dur": 1}]})j");
  EXPECT_NE(why.find("\\x1b[31mred\\x07"), std::string::npos) << why;
  EXPECT_EQ(why.find('\x1b'), std::string::npos);
  EXPECT_EQ(gantt::scan::excerpt(std::string(100, 'a')), std::string(40, 'a') + "...");
  EXPECT_EQ(gantt::scan::excerpt("a\\b\xff"), "a\\x5cb\\xff");
}

TEST(DetectFormat, ByContentNeverByName) {
  using gantt::scan::TraceFormat;
  EXPECT_EQ(gantt::scan::detect_format(std::string_view("\x1f\x8b\x08\x00", 4)), TraceFormat::kKinetoJsonGzip);
  EXPECT_EQ(gantt::scan::detect_format(std::string_view("SQLite format 3\0xxxx", 20)), TraceFormat::kNsysSqlite);
  EXPECT_EQ(gantt::scan::detect_format("\n  {\"schemaVersion\": 1"), TraceFormat::kKinetoJson);
  EXPECT_EQ(gantt::scan::detect_format("[{\"ph\": \"X\"}]"), TraceFormat::kKinetoJson);
  EXPECT_EQ(gantt::scan::detect_format("PK\x03\x04"), TraceFormat::kUnknown);
  EXPECT_EQ(gantt::scan::detect_format(""), TraceFormat::kUnknown);
  EXPECT_EQ(gantt::scan::detect_format("SQLite format 2"), TraceFormat::kUnknown);
}

}  // namespace
