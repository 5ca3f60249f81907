// The writer without a thread or CUPTI: records go in through the rings and a fake GPU
// source, the file is read back with the capture reader.
#include "writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <gpuhook/version.h>

#include "clock.h"
#include "cupti_convert.h"
#include "nvtx_names.h"
#include "nvtx_range_window.h"
#include "recorder.h"

namespace gpuhook::hook {
namespace {

namespace fs = std::filesystem;

class FakeGpu : public GpuSource {
 public:
  void poll(RecordSink& sink, bool, bool final) override {
    ++polls;
    if (final) saw_final = true;
    for (auto& k : pending) convert_activity(reinterpret_cast<CUpti_Activity*>(&k), ConvertOptions{}, sink);
    pending.clear();
  }
  uint64_t take_cupti_dropped() override { return std::exchange(cupti_dropped, 0); }
  uint64_t take_no_buffer_dropped() override { return 0; }
  std::vector<CUpti_ActivityKernel10> pending;
  uint64_t cupti_dropped = 0;
  int polls = 0;
  bool saw_final = false;
};

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("gpuhook-writer-test-" + std::to_string(getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    config.output_pattern = (dir / "cap-%p.gpuh").string();
    config.ring_records = 64;
    recorder().config = &config;
    recorder().enabled.store(true);
  }
  void TearDown() override {
    recorder().enabled.store(false);
    // Leave the thread's ring empty for the next test.
    for (Ring* r = recorder().rings.first(); r != nullptr; r = r->next) r->discard();
    fs::remove_all(dir);
  }
  ProcessFacts facts() {
    ProcessFacts f;
    f.host = "testhost";
    f.boot_id = "boot-1";
    f.pid = static_cast<uint32_t>(getpid());
    f.start_monotonic_raw_ns = 1000;
    f.start_realtime_ns = 2000;
    f.command_line = {"app", "--flag"};
    return f;
  }
  void push_range(v1::RangeType type, const char* name, uint64_t t) {
    HostRecord* r = begin_record();
    ASSERT_NE(r, nullptr);
    std::memset(r, 0, sizeof(*r));
    r->kind = HostKind::kRange;
    r->thread_id = 77;
    r->start_ns = t;
    r->range.type = static_cast<uint8_t>(type);
    r->range.name_bytes = static_cast<uint8_t>(std::strlen(name));
    std::memcpy(r->range.name, name, std::strlen(name));
    end_record();
  }
  std::vector<v1::Record> read_back(std::string* path_out = nullptr) {
    std::vector<v1::Record> out;
    for (auto& e : fs::directory_iterator(dir)) {
      if (path_out != nullptr) *path_out = e.path().string();
      CaptureReader reader(e.path().string());
      v1::Record r;
      while (reader.next(r)) {
        if (r.kind_case() != v1::Record::kStringDef) out.push_back(r);
      }
    }
    return out;
  }
  fs::path dir;
  Config config;
};

TEST_F(WriterTest, NcclCallsKeepTheirExternalIdAndNumberSendRecvApart) {
  Writer w(config, facts());
  auto push_nccl = [&](v1::NcclOp op, uint64_t sequence, uint64_t external_id) {
    HostRecord* r = begin_record();
    ASSERT_NE(r, nullptr);
    std::memset(r, 0, sizeof(*r));
    r->kind = HostKind::kNccl;
    r->thread_id = 77;
    r->start_ns = 5000;
    r->end_ns = 6000;
    r->nccl.function = op == v1::NCCL_SEND ? "ncclSend" : "ncclAllReduce";
    r->nccl.op = static_cast<uint8_t>(op);
    r->nccl.sequence = sequence;
    r->nccl.external_id = external_id;
    end_record();
  };
  push_nccl(v1::NCCL_ALL_REDUCE, 3, 41);
  push_nccl(v1::NCCL_SEND, 8, 42);
  w.drain_once(true, false);
  w.finish();
  std::vector<v1::NcclCall> calls;
  for (const v1::Record& r : read_back())
    if (r.has_nccl()) calls.push_back(r.nccl());
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].sequence(), 3u);
  EXPECT_EQ(calls[0].p2p_sequence(), 0u);
  EXPECT_EQ(calls[0].external_id(), 41u);
  EXPECT_EQ(calls[1].sequence(), 0u) << "a send takes no collective number";
  EXPECT_EQ(calls[1].p2p_sequence(), 8u);
  EXPECT_EQ(calls[1].external_id(), 42u);
}

TEST_F(WriterTest, NothingRecordedMeansNoFile) {
  Writer w(config, facts());
  w.drain_once(true, true);
  w.finish();
  EXPECT_FALSE(w.file_opened());
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_TRUE(w.summary().empty());
}

TEST_F(WriterTest, HostAndGpuRecordsLandAfterTheHeaderWithAFooter) {
  Writer w(config, facts());
  FakeGpu gpu;
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.queued = 10;
  k.submitted = 20;
  k.start = 0;  // invalid: kept as unknown and counted
  k.end = 40;
  k.name = "kern";
  gpu.pending.push_back(k);
  gpu.cupti_dropped = 3;
  w.set_gpu_source(&gpu);
  w.set_cupti_version("130001");
  push_range(v1::RANGE_PUSH, "step", 5000);
  push_range(v1::RANGE_POP, "", 6000);
  w.drain_once(true, false);
  w.finish();
  EXPECT_TRUE(gpu.saw_final);
  std::string path;
  auto recs = read_back(&path);
  ASSERT_GE(recs.size(), 5u);
  ASSERT_EQ(recs[0].kind_case(), v1::Record::kHeader);
  const v1::Header& h = recs[0].header();
  EXPECT_EQ(h.host_name(), "testhost");
  EXPECT_EQ(h.boot_id(), "boot-1");
  EXPECT_EQ(h.start_monotonic_raw_ns(), 1000u);
  EXPECT_EQ(h.cupti_version(), "130001");
  EXPECT_EQ(h.tool_version(), "gpuhook " GPUHOOK_VERSION);
  EXPECT_EQ(h.command_line_size(), 2);
  std::map<int, int> kinds;
  uint64_t invalid = 0, cupti = 0;
  for (auto& r : recs) {
    kinds[r.kind_case()]++;
    if (r.has_drops() && r.drops().source() == v1::DROP_INVALID_TIME) invalid += r.drops().count();
    if (r.has_drops() && r.drops().source() == v1::DROP_CUPTI) cupti += r.drops().count();
  }
  EXPECT_EQ(kinds[v1::Record::kRange], 2);
  EXPECT_EQ(kinds[v1::Record::kKernel], 1);
  EXPECT_EQ(invalid, 1u);
  EXPECT_EQ(cupti, 3u);
  ASSERT_EQ(recs.back().kind_case(), v1::Record::kFooter);
  EXPECT_TRUE(recs.back().footer().clean());
  // Records lost: CUPTI's 3. The kernel with an invalid time was kept, so it is no loss.
  EXPECT_EQ(recs.back().footer().dropped(), 3u);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_NE(w.summary().find("2 range"), std::string::npos) << w.summary();
  EXPECT_NE(w.summary().find(path), std::string::npos);
}

TEST_F(WriterTest, AFooterWrittenOnTheSignalPathIsNotClean) {
  Writer w(config, facts());
  HostRecord* r = begin_record();
  ASSERT_NE(r, nullptr);
  std::memset(r, 0, sizeof(*r));
  r->kind = HostKind::kRange;
  r->start_ns = 100;
  r->range.type = v1::RANGE_MARK;
  end_record();
  // No thread was started, so stop() only marks the process as dying; finish() writes the end.
  EXPECT_TRUE(w.stop(1000, /*hurry=*/true));
  w.finish();
  auto recs = read_back();
  ASSERT_FALSE(recs.empty());
  ASSERT_EQ(recs.back().kind_case(), v1::Record::kFooter);
  EXPECT_FALSE(recs.back().footer().clean());
}

TEST_F(WriterTest, RingOverflowIsCountedInTheFile) {
  Writer w(config, facts());
  int accepted = 0;
  for (int i = 0; i < 100; ++i) {
    HostRecord* r = begin_record();
    if (r == nullptr) continue;
    std::memset(r, 0, sizeof(*r));
    r->kind = HostKind::kRange;
    r->start_ns = 100 + static_cast<uint64_t>(i);
    r->range.type = v1::RANGE_MARK;
    end_record();
    ++accepted;
  }
  EXPECT_EQ(accepted, 64);
  w.finish();
  uint64_t ring_drops = 0;
  int ranges = 0;
  for (auto& r : read_back()) {
    if (r.has_drops() && r.drops().source() == v1::DROP_RING_FULL) ring_drops += r.drops().count();
    if (r.has_range()) ++ranges;
  }
  EXPECT_EQ(ranges, 64);
  EXPECT_EQ(ring_drops, 36u);
}

// Range names as the capture holds them, in record order (push/mark/start only).
std::vector<std::string> range_names(const std::string& path) {
  std::vector<std::string> names;
  CaptureReader reader(path);
  v1::Record r;
  std::vector<v1::Record> ranges;
  while (reader.next(r)) {
    if (r.has_range()) ranges.push_back(r);
  }
  for (const auto& g : ranges) names.push_back(reader.strings().at(g.range().name_id()));
  return names;
}

std::string pattern(size_t bytes) {
  std::string s(bytes, ' ');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

void write_named(const std::string& name, uint64_t t, bool cut = false, HostKind kind = HostKind::kRange) {
  RangeEvent e;
  e.kind = kind;
  e.type = v1::RANGE_MARK;
  e.name = name.data();
  e.name_bytes = name.size();
  e.name_cut = cut;
  e.thread_id = 77;
  e.time_ns = t;
  write_range_event(e);
}

TEST_F(WriterTest, LongNamesArriveWholeAndCutNamesSaySo) {
  Writer w(config, facts());
  const std::string short_name = pattern(56), long_name = pattern(300), longest = pattern(kMaxNameBytes);
  write_named(short_name, 100);
  write_named(long_name, 200);
  w.drain_once(false, false);
  write_named(longest, 300, /*cut=*/true);  // 44 records: most of this 64-record ring
  w.drain_once(false, false);
  write_named(pattern(5) + "\xC3\xBC", 400);  // ends in a two-byte character
  w.finish();
  std::string path;
  read_back(&path);
  auto names = range_names(path);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], short_name);
  EXPECT_EQ(names[1], long_name);
  EXPECT_EQ(names[2], longest + "\xE2\x80\xA6");
  EXPECT_EQ(names[3], pattern(5) + "\xC3\xBC");
}

TEST_F(WriterTest, ANameWithoutRoomForItsContinuationsKeepsOneRecordMarkedCut) {
  Writer w(config, facts());
  for (int i = 0; i < 40; ++i) write_named("x", 100 + static_cast<uint64_t>(i));  // 24 of 64 left
  // 3,057 bytes need 33 records; the second 步 (bytes 54-56) straddles the record's 56.
  std::string name = pattern(51) + "\xE6\xAD\xA5\xE6\xAD\xA5" + pattern(3000);
  write_named(name, 500);
  w.finish();
  std::string path;
  read_back(&path);
  auto names = range_names(path);
  ASSERT_EQ(names.size(), 41u);
  // Cut at a whole character (54 bytes), never inside the second 步, and marked.
  EXPECT_EQ(names[40], pattern(51) + "\xE6\xAD\xA5" + "\xE2\x80\xA6");
}

TEST_F(WriterTest, ALongThreadNameIsJoinedToo) {
  Writer w(config, facts());
  write_named(pattern(10), 100);  // the file exists before the thread name arrives
  w.drain_once(false, false);
  write_named(pattern(200), 150, false, HostKind::kThreadName);
  w.finish();
  std::string path;
  read_back(&path);
  CaptureReader reader(path);
  v1::Record r;
  std::string thread_name;
  while (reader.next(r)) {
    if (r.has_thread()) thread_name = reader.strings().at(r.thread().name_id());
  }
  EXPECT_EQ(thread_name, pattern(200));
}

// One NVML read of a device (nvml_sampler.cpp) becomes one MetricSample per counter it read,
// at the read's time, and only inside the capture window.
TEST_F(WriterTest, AnNvmlReadBecomesOneSamplePerCounterReadInsideTheWindow) {
  config.range.kind = RangeKind::kNvtx;  // closed until opened
  Writer w(config, facts());
  auto push_read = [&](uint64_t t, uint32_t device) {
    HostRecord* r = begin_record();
    ASSERT_NE(r, nullptr);
    std::memset(r, 0, sizeof(*r));
    r->kind = HostKind::kGpuMetrics;
    r->thread_id = 9;
    r->start_ns = t;
    r->metrics.device = device;
    r->metrics.present = (1u << v1::GPU_METRIC_GPU_UTIL_PERCENT) | (1u << v1::GPU_METRIC_POWER_MW) |
                         (1u << v1::GPU_METRIC_PCIE_RX_KBPS);
    r->metrics.value[v1::GPU_METRIC_GPU_UTIL_PERCENT - 1] = 0;  // a zero read is a value, not nothing
    r->metrics.value[v1::GPU_METRIC_POWER_MW - 1] = 412'000;
    r->metrics.value[v1::GPU_METRIC_PCIE_RX_KBPS - 1] = 7;
    r->metrics.value[v1::GPU_METRIC_SM_CLOCK_MHZ - 1] = 1980;  // not present: not written
    end_record();
  };
  push_read(100, 0);
  w.drain_once(false, false);
  w.set_window(200, 300);
  push_read(250, 3);
  push_read(350, 0);
  w.finish();
  std::map<int, uint64_t> got;
  for (auto& r : read_back()) {
    if (!r.has_metric_sample()) continue;
    const v1::MetricSample& s = r.metric_sample();
    EXPECT_EQ(s.time_ns(), 250);
    EXPECT_EQ(s.device(), 3u);
    EXPECT_TRUE(got.emplace(s.metric(), s.value()).second) << "a counter twice";
  }
  const std::map<int, uint64_t> want = {
      {v1::GPU_METRIC_GPU_UTIL_PERCENT, 0}, {v1::GPU_METRIC_POWER_MW, 412'000}, {v1::GPU_METRIC_PCIE_RX_KBPS, 7}};
  EXPECT_EQ(got, want);
}

TEST_F(WriterTest, CaptureWindowKeepsOnlyRecordsInside) {
  config.range.kind = RangeKind::kNvtx;  // closed until opened
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "before", 100);
  w.drain_once(false, false);
  w.set_window(200, 300);
  push_range(v1::RANGE_MARK, "inside", 250);
  push_range(v1::RANGE_MARK, "after", 350);
  w.finish();
  int ranges = 0;
  for (auto& r : read_back()) {
    if (r.has_range()) {
      ++ranges;
      EXPECT_EQ(r.range().time_ns(), 250);
    }
  }
  EXPECT_EQ(ranges, 1);
}

// A sampled range's windows are numbered: the pop that closes one and the push that opens the
// next run on different threads, and the close can land after the open. It must close its
// own window, not the newest one (that cut the new window short and left the old one open to
// the end).
TEST_F(WriterTest, SampledWindowsCloseTheWindowTheyName) {
  config.range.kind = RangeKind::kNvtx;
  config.range.nvtx_name = "step";
  config.range.every = 1;
  Writer w(config, facts());
  w.open_window(0, 1100);
  w.open_window(1, 1300);
  w.close_window(0, 1200);  // late
  w.close_window(1, 1400);
  for (uint64_t t : {1050, 1150, 1250, 1350, 1450}) push_range(v1::RANGE_MARK, "m", t);
  w.finish();
  std::vector<int64_t> times;
  for (auto& r : read_back())
    if (r.has_range()) times.push_back(r.range().time_ns());
  EXPECT_EQ(times, (std::vector<int64_t>{1150, 1350}));
}

// The ring holds the latest 1024 windows of a sampled range: a record older than all of them (a
// writer that far behind) cannot be judged and is left out, but counted on the exit line; one in
// a held window is kept, one between two held windows is outside and not counted.
TEST_F(WriterTest, ARecordOlderThanEveryWindowHeldIsCounted) {
  config.range.kind = RangeKind::kNvtx;
  config.range.nvtx_name = "step";
  config.range.every = 1;
  window_after_fork();  // no window claimed by an earlier test in this process
  Writer w(config, facts());
  const uint64_t windows = 1100;
  for (uint64_t i = 0; i < windows; ++i) {
    w.open_window(i, 10'000 + i * 100);
    w.close_window(i, 10'000 + i * 100 + 50);
  }
  push_range(v1::RANGE_MARK, "evicted", 10'010);                        // in window 0, long let go
  push_range(v1::RANGE_MARK, "held", 10'000 + (windows - 1) * 100 + 10);  // in the newest window
  push_range(v1::RANGE_MARK, "gap", 10'000 + (windows - 1) * 100 - 20);   // between two held windows
  w.finish();
  std::vector<std::string> kept;
  for (auto& r : read_back())
    if (r.has_range()) kept.push_back(std::to_string(r.range().time_ns()));
  EXPECT_EQ(kept, std::vector<std::string>{std::to_string(10'000 + (windows - 1) * 100 + 10)});
  EXPECT_NE(w.summary().find("; 1 record older than the last 1024 capture windows left out"), std::string::npos)
      << w.summary();
}

// A push claims a sampled range's window before its thread publishes it (open_window): a
// record of another thread's occurrence in it that the writer drains in between waits for the
// publication, rather than being judged outside every window (a range record was lost so,
// uncounted, once under ASan). Here the pusher is held between the two until the drain has
// begun.
TEST_F(WriterTest, ARecordInAClaimedWindowWaitsForItsPublication) {
  static CaptureRange range = *settings::parse_range("nvtx:step%1");
  static Writer* writer = nullptr;
  static std::atomic<bool> publish{false};
  config.range = range;
  window_after_fork();  // no window claimed by an earlier test in this process
  Writer w(config, facts());
  writer = &w;
  publish = false;
  window_configure(
      &range, [](uint64_t, uint64_t) {},
      [](uint64_t number, uint64_t ns) {
        while (!publish.load()) std::this_thread::yield();
        writer->open_window(number, ns);
      },
      [](uint64_t number, uint64_t ns) { writer->close_window(number, ns); }, 1);
  std::thread opener([] {  // claims window 0, then waits to publish it
    nvtx_window_push("step", 0);
    nvtx_window_pop(0);
  });
  while (windows_claimed() == 0) std::this_thread::yield();
  std::thread joiner([] { nvtx_window_push("step", 0); });  // in flight beside it: no window of its own
  joiner.join();
  push_range(v1::RANGE_MARK, "inside", now_ns());  // the joiner's occurrence, after the claim
  std::thread publisher([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    publish = true;
  });
  w.drain_once(false, false);  // the mark: waits for window 0
  publisher.join();
  opener.join();
  w.finish();
  window_after_fork();
  window_configure(nullptr, nullptr, nullptr, nullptr, 0);
  int marks = 0;
  for (auto& r : read_back())
    if (r.has_range() && r.range().type() == v1::RANGE_MARK) ++marks;
  EXPECT_EQ(marks, 1);
}

TEST_F(WriterTest, TimeRangeOpensAfterTheDelayForTheDuration) {
  config.range.kind = RangeKind::kTime;
  config.range.delay_ns = 100;
  config.range.duration_ns = 50;
  Writer w(config, facts());  // starts at 1000: window [1100, 1150]
  push_range(v1::RANGE_MARK, "early", 1050);
  push_range(v1::RANGE_MARK, "inside", 1120);
  push_range(v1::RANGE_MARK, "late", 1200);
  w.finish();
  std::vector<int64_t> times;
  for (auto& r : read_back()) {
    if (r.has_range()) times.push_back(r.range().time_ns());
  }
  EXPECT_EQ(times, std::vector<int64_t>{1120});
}

TEST_F(WriterTest, APerProcessNameThatExistsGetsASuffix) {
  // exec keeps the pid: the new image must not fail on, nor overwrite, the old image's file.
  std::string path = expand_output(config.output_pattern, "testhost", getpid(), std::nullopt);
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("earlier image", f);
  std::fclose(f);
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "x", 100);
  w.finish();
  // The suffix goes before the extension: cap-PID.1.gpuh (tools that glob *.gpuh find it).
  EXPECT_TRUE(fs::exists(path.substr(0, path.size() - std::string(".gpuh").size()) + ".1.gpuh"));
  EXPECT_EQ(fs::file_size(path), 13u);
}

TEST_F(WriterTest, AnExistingFileIsNeverOverwritten) {
  config.output_pattern = (dir / "fixed.gpuh").string();  // no %p: the user named one file
  std::string path = config.output_pattern;
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("precious", f);
  std::fclose(f);
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "x", 100);
  testing::internal::CaptureStderr();
  w.finish();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("gpuhook: cannot create", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  FILE* g = std::fopen(path.c_str(), "r");
  char buf[16] = {};
  ASSERT_NE(std::fgets(buf, sizeof(buf), g), nullptr);
  std::fclose(g);
  EXPECT_STREQ(buf, "precious");
}

// GPUHOOK_FLIGHT: triggers that come while a dump waits for the writer join it, each reason
// kept in the dump's header and the exit line, and the next dump starts afresh.
class FlightWriterTest : public WriterTest {
 protected:
  void SetUp() override {
    WriterTest::SetUp();
    config.flight_ns = 10'000'000'000ull;
    config.flight_text = "GPUHOOK_FLIGHT=10s";
  }
  v1::Header dump_header(uint32_t sequence) {
    CaptureReader reader((dir / ("cap-" + std::to_string(getpid()) + ".flight" + std::to_string(sequence) + ".gpuh")).string());
    v1::Record r;
    while (reader.next(r))
      if (r.has_header()) return r.header();
    ADD_FAILURE() << "no dump " << sequence;
    return {};
  }
};

TEST_F(FlightWriterTest, ATriggerThatJoinsAWaitingDumpKeepsItsReason) {
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "step", now_ns());
  w.drain_once(true, false);
  w.request_dump(Writer::Trigger::kSlow, "occurrence 1499 of 'step' took 30 ms", 0);
  w.request_dump(Writer::Trigger::kSlow, "occurrence 1500 of 'step' took 200 ms", 0);
  w.request_dump(Writer::Trigger::kSignal);  // no reason: named
  w.request_dump(Writer::Trigger::kCall, "step 1500", 0);
  ASSERT_TRUE(w.dump_pending());
  EXPECT_FALSE(w.dump_pending());  // all four went into dump 1
  w.finish();
  const v1::Header h = dump_header(1);
  EXPECT_EQ(h.flight_trigger(), "slow");
  const std::string want =
      "occurrence 1499 of 'step' took 30 ms; then slow: occurrence 1500 of 'step' took 200 ms; then call: step 1500; "
      "also signal";
  EXPECT_EQ(h.flight_reason(), want);
  EXPECT_NE(w.summary().find("(slow: " + want + ", "), std::string::npos) << w.summary();
}

TEST_F(FlightWriterTest, TheNextDumpHasOnlyItsOwnReason) {
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "step", now_ns());
  w.drain_once(true, false);
  // A signal first (no reason), a call joining it: the call's reason is this dump's, not the next's.
  w.request_dump(Writer::Trigger::kSignal);
  w.request_dump(Writer::Trigger::kCall, "joined the signal", 0);
  ASSERT_TRUE(w.dump_pending());
  w.request_dump(Writer::Trigger::kCall, "on its own", 0);
  ASSERT_TRUE(w.dump_pending());
  w.finish();
  EXPECT_EQ(dump_header(1).flight_trigger(), "signal");
  EXPECT_EQ(dump_header(1).flight_reason(), "then call: joined the signal");
  EXPECT_EQ(dump_header(2).flight_trigger(), "call");
  EXPECT_EQ(dump_header(2).flight_reason(), "on its own");
}

TEST_F(FlightWriterTest, ReasonsPastTheBufferAreNamedNotCut) {
  Writer w(config, facts());
  push_range(v1::RANGE_MARK, "step", now_ns());
  w.drain_once(true, false);
  const std::string long_reason(300, 'x');
  w.request_dump(Writer::Trigger::kCall, long_reason.c_str(), 0);
  w.request_dump(Writer::Trigger::kCall, long_reason.c_str(), 0);  // 300 + 316 bytes: no room
  w.request_dump(Writer::Trigger::kSlow, "short", 0);
  ASSERT_TRUE(w.dump_pending());
  w.finish();
  EXPECT_EQ(dump_header(1).flight_reason(), long_reason + "; then slow: short; also call");
}

}  // namespace
}  // namespace gpuhook::hook
