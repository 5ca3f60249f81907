// Each rule on a fabricated problem (it must fire) and on its fixed twin (it must not).
#include "gantt/analysis/diagnose.h"

#include <functional>
#include <optional>

#include <gtest/gtest.h>

#include "../gantt/graph_fixture.h"
#include "diagnose_builder.h"
#include "fixture.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

bool fired(const ga::DiagnoseReport& r, const std::string& rule) {
  bool any = false;
  for (const auto& f : r.findings) {
    if (f.rule != rule) continue;
    any = true;
    EXPECT_FALSE(f.condition.empty());
    EXPECT_FALSE(f.evidence.empty());
    EXPECT_FALSE(f.fix.empty());
  }
  EXPECT_EQ(r.rules.size(), ga::rule_names().size());
  return any;
}

// The report on the builder's capture as diagnose scans it. The model built from the same
// records reports the same: the rules read what either feeds them alike.
ga::DiagnoseReport scanned_report(Builder& b) {
  const gantt::Model m = b.done();
  std::string why;
  const std::optional<ga::ScannedDiagnosis> scanned = ga::diagnose_scan({b.file.path}, {}, &why);
  EXPECT_TRUE(scanned) << why;
  if (!scanned) return {};
  EXPECT_EQ(scanned->late_events, 0u);
  EXPECT_TRUE(scanned->busy_exact);
  EXPECT_EQ(ga::format_diagnose(scanned->report, ga::Format::kJson), ga::format_diagnose(ga::diagnose(m), ga::Format::kJson));
  return scanned->report;
}

bool fired(Builder& b, const std::string& rule) { return fired(scanned_report(b), rule); }

}  // namespace

TEST(Diagnose, StreamSerialisation) {
  Builder bad;
  for (uint64_t i = 0; i < 10; ++i) bad.k(kK, 7, i * 1000, 10'000 + i * 10'000, 20'000 + i * 10'000);
  EXPECT_TRUE(fired(bad, "stream-serialisation"));
  Builder good;
  for (uint64_t i = 0; i < 12; ++i) good.k(kK, 13 + i % 4, i * 1000, 10'000 + (i / 4) * 10'000, 20'000 + (i / 4) * 10'000);
  EXPECT_FALSE(fired(good, "stream-serialisation"));
}

TEST(Diagnose, CopyOverlap) {
  Builder bad;
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t t = i * 30'000;
    bad.copy("cudaMemcpy", 13, t, t + 1000, t + 11'000);
    bad.k(kK, 13, t + 11'200, t + 12'000, t + 22'000);
  }
  EXPECT_TRUE(fired(bad, "copy-overlap"));
  Builder good;
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t t = i * 12'000;
    good.copy("cudaMemcpyAsync", 14, t, t + 1000, t + 11'000);
    good.k(kK, 13, t, t + 1000, t + 12'000);
  }
  EXPECT_FALSE(fired(good, "copy-overlap"));
}

TEST(Diagnose, LaunchBound) {
  Builder bad;
  for (uint64_t i = 0; i < 40; ++i) bad.k(kK, 13, i * 5000, i * 5000 + 900, i * 5000 + 1900);
  EXPECT_TRUE(fired(bad, "launch-bound"));
  Builder good;
  for (uint64_t i = 0; i < 2; ++i) good.k(kK, 13, i * 5000, i * 5000 + 900, i * 5000 + 40'900);
  EXPECT_FALSE(fired(good, "launch-bound"));
}

TEST(Diagnose, ImbalanceBetweenDevices) {
  Builder bad;
  bad.k(kK, 13, 0, 1000, 101'000, 256, 0);
  bad.k(kK, 13, 100, 1000, 31'000, 256, 1);
  EXPECT_TRUE(fired(bad, "imbalance"));
  Builder good;
  good.k(kK, 13, 0, 1000, 101'000, 256, 0);
  good.k(kK, 13, 100, 1000, 99'000, 256, 1);
  EXPECT_FALSE(fired(good, "imbalance"));
}

TEST(Diagnose, LowOccupancy) {
  Builder bad;
  bad.grid_x = 2 * 108 * 32;  // two waves of 32-thread blocks: the per-SM block limit queues half
  for (uint64_t i = 0; i < 4; ++i) bad.k(kK, 13, i * 20'000, i * 20'000 + 1000, i * 20'000 + 11'000, 32);
  const ga::DiagnoseReport r = scanned_report(bad);
  EXPECT_TRUE(fired(r, "low-occupancy"));
  bool names_limit = false;
  for (const auto& f : r.findings)
    if (f.rule == "low-occupancy") names_limit = f.title.find("limited by") != std::string::npos;
  EXPECT_TRUE(names_limit);
  Builder good;
  for (uint64_t i = 0; i < 4; ++i) good.k(kK, 13, i * 20'000, i * 20'000 + 1000, i * 20'000 + 11'000, 256);
  EXPECT_FALSE(fired(good, "low-occupancy"));
}

// A <<<1,1>>> spin kernel waiting on a flag has 50% theoretical occupancy (one warp per block,
// 32 blocks per SM) and most of the kernel time, but its one block runs from the start: more
// occupancy would not change the timeline, so no finding (issue 44, item 9).
TEST(Diagnose, LowOccupancyIgnoresAGridThatFitsTheDeviceAtOnce) {
  Builder b;
  b.grid_x = 1;
  b.k(kK2, 14, 0, 1000, 901'000, 1);
  b.grid_x = 80;
  for (uint64_t i = 0; i < 4; ++i) b.k(kK, 13, i * 20'000, i * 20'000 + 1000, i * 20'000 + 11'000, 256);
  const ga::DiagnoseReport r = scanned_report(b);
  EXPECT_FALSE(fired(r, "low-occupancy"));
  for (const auto& rule : r.rules) {
    if (rule.rule != "low-occupancy") continue;
    EXPECT_NE(rule.note.find("otherKernel: 1 block(s), 3456 fit at once"), std::string::npos) << rule.note;
  }
  // The same kernel with a grid of two waves fires.
  Builder wide;
  wide.grid_x = 2 * 108 * 32;
  wide.k(kK2, 14, 0, 1000, 901'000, 1);
  EXPECT_TRUE(fired(wide, "low-occupancy"));
}

// Set-up kernels on one stream, then the main phase's kernels on another: the set-up stream
// was never idle beside the main one, so "one stream while another sits idle" is noise there;
// a stream that did run during the main phase is named.
TEST(Diagnose, StreamSerialisationIgnoresAStreamOfAnotherPhase) {
  const auto phases = [](Builder& b, bool beside) {
    for (uint64_t i = 0; i < 4; ++i) b.k(kK2, 13, i * 1000, i * 1000 + 500, i * 1000 + 1000);
    for (uint64_t i = 0; i < 20; ++i) b.k(kK, 14, 100'000 + i * 1000, 100'000 + i * 10'000, 110'000 + i * 10'000);
    if (beside) b.k(kK2, 13, 150'000, 150'500, 151'000);
  };
  Builder before, beside;
  phases(before, false);
  phases(beside, true);
  EXPECT_FALSE(fired(before, "stream-serialisation"));
  EXPECT_TRUE(fired(beside, "stream-serialisation"));
}

TEST(Diagnose, SyncStall) {
  Builder bad;
  for (uint64_t i = 0; i < 6; ++i) {
    const uint64_t t = i * 20'000;
    bad.k(kK, 13, t, t + 1000, t + 11'000);
    bad.sync(t + 600, t + 11'200);
  }
  EXPECT_TRUE(fired(bad, "sync-stall"));
  Builder good;
  for (uint64_t i = 0; i < 6; ++i) good.k(kK, 13, i * 600, 1000 + i * 10'000, 11'000 + i * 10'000);
  good.sync(3600, 61'200);
  EXPECT_FALSE(fired(good, "sync-stall"));
}

TEST(Diagnose, Fragmentation) {
  const auto build = [](Builder& b, bool contended) {
    for (uint64_t i = 0; i < 8; ++i) {
      const uint64_t t = i * 100'000;
      const bool stretch = contended && i % 3 == 1;  // 3 of 8: the median stays unstretched
      b.k(kK, 13, t, t + 1000, t + 1000 + (stretch ? 30'000 : 10'000));
      if (stretch) b.k(kK2, 14, t + 100, t + 1000, t + 31'000);
    }
  };
  Builder contended, alone;
  build(contended, true);
  build(alone, false);
  EXPECT_TRUE(fired(contended, "fragmentation"));
  EXPECT_FALSE(fired(alone, "fragmentation"));
}

// Short kernels queued behind another stream's long ones: a priority problem when their stream
// has no higher priority, and not one when it has.
TEST(Diagnose, PriorityInversionNamesTheStreamToRaise) {
  const auto build = [](Builder& b, int32_t short_priority) {
    for (uint64_t i = 0; i < 4; ++i) {
      const uint64_t t = i * 1'000'000;
      for (uint64_t j = 0; j < 4; ++j) b.k(kK, 13, t + j * 100, t + 1000 + j * 300'000, t + 1000 + (j + 1) * 300'000);
      // Queued right after the first long kernel started, started after the last ended.
      b.launch(t + 500, t + 1000);
      b.kernel(kK2, 14, t + 1500, t + 1600, t + 1'201'000, t + 1'206'000)->set_stream_priority(short_priority);
      ++b.corr;
    }
  };
  Builder same, raised;
  build(same, 0);
  build(raised, -5);  // the greatest priority: the fix applied
  EXPECT_TRUE(fired(same, "priority-inversion"));
  EXPECT_FALSE(fired(raised, "priority-inversion"));
}

// The stream waited behind is the one of the longest kernels at no lower a priority (the lowest
// id among equals), never a longer one at a lower priority; chosen in priority order, not by
// comparing every pair (26,000 streams took 72.8 s).
TEST(Diagnose, PriorityInversionWaitsBehindTheLongestStreamAtItsPriority) {
  Builder b;
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t t = i * 1'000'000;
    for (uint32_t s : {13u, 16u})
      for (uint64_t j = 0; j < 4; ++j) b.k(kK, s, t + j * 100, t + 1000 + j * 300'000, t + 1000 + (j + 1) * 300'000);
    // A stream of longer kernels, at a lower priority: the short kernels cannot wait behind it.
    b.kernel(kK, 15, t + 100, t + 200, t + 1000, t + 1'100'000)->set_stream_priority(1);
    ++b.corr;
    b.launch(t + 500, t + 1000);
    b.kernel(kK2, 14, t + 1500, t + 1600, t + 1'201'000, t + 1'206'000);
    ++b.corr;
  }
  const ga::DiagnoseReport r = scanned_report(b);
  std::vector<std::string> titles;
  for (const auto& f : r.findings)
    if (f.rule == "priority-inversion") titles.push_back(f.title);
  ASSERT_EQ(titles.size(), 1u);
  EXPECT_NE(titles[0].find("on stream 14 waited behind stream 13's"), std::string::npos) << titles[0];
}

TEST(Diagnose, FormatsAreDeterministicAndJsonParses) {
  Builder b;
  for (uint64_t i = 0; i < 10; ++i) b.k(kK, 7, i * 1000, 10'000 + i * 10'000, 20'000 + i * 10'000, 32);
  const gantt::Model m = b.done();
  for (ga::Format f : {ga::Format::kText, ga::Format::kMarkdown, ga::Format::kJson})
    EXPECT_EQ(ga::format_diagnose(ga::diagnose(m), f), ga::format_diagnose(ga::diagnose(m), f));
  const gantt_analysis_test::TempFile file(".diag.json");
  const std::string& path = file.path;
  FILE* fp = std::fopen(path.c_str(), "w");
  ASSERT_NE(fp, nullptr);
  std::fputs(ga::format_diagnose(ga::diagnose(m), ga::Format::kJson).c_str(), fp);
  std::fclose(fp);
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP();
  EXPECT_EQ(std::system(("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + path).c_str()), 0);
}

namespace {
const ga::Finding* finding(const ga::DiagnoseReport& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}
}  // namespace

TEST(Diagnose, LaunchBoundNamesCudaGraphsWhenTheSameSequenceRepeats) {
  // A training step of three short kernels, launched one by one, ten times over.
  Builder bad;
  constexpr const char* kK3 = "thirdKernel";
  for (uint64_t i = 0; i < 45; ++i) {
    const uint64_t t = i * 5000;
    bad.k(i % 3 == 0 ? kK : i % 3 == 1 ? kK2 : kK3, 13, t, t + 900, t + 1900);
  }
  const ga::DiagnoseReport r = scanned_report(bad);
  const ga::Finding* f = finding(r, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->fix.find("CUDA graph"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("cudaGraphLaunch"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("stream 13"), std::string::npos) << f->fix;
  bool named = false;
  for (const auto& e : f->evidence) named |= e.find("same sequence of 3 kernels (workKernel, otherKernel") != std::string::npos;
  EXPECT_TRUE(named) << ::testing::PrintToString(f->evidence);
}

TEST(Diagnose, LaunchBoundDoesNotFlagWorkThatAlreadyRunsAsAGraph) {
  // Many short nodes per launch, launches far apart: a graph, launch-bound or not, is the fix
  // already applied.
  const gantt::Model m = gantt_test::graph_model(40);
  const ga::DiagnoseReport r = ga::diagnose(m);
  EXPECT_EQ(finding(r, "launch-bound"), nullptr);
  bool noted = false;
  for (const auto& rule : r.rules)
    if (rule.rule == "launch-bound") noted = rule.note.find("CUDA graph nodes") != std::string::npos;
  EXPECT_TRUE(noted);
}

// NVML's samples are kept whole by the scan: without a throttle stretch, throttled decides on
// them alone and the capture stays scanned; with one (40 ms at a power cap while a kernel ran),
// it judges the kernels in it, and the scan says the capture must be loaded.
// A throttle stretch is judged against the kernels that ran in it: the scan reads them once
// more, and reports what the loaded capture does (scanned_report() compares the two).
TEST(Diagnose, AThrottleStretchIsJudgedOnTheScanWithTheKernelsInIt) {
  constexpr uint64_t kMs = 1'000'000;
  const auto build = [](Builder& b, bool capped) {
    b.k(kK, 13, 4 * kMs, 5 * kMs, 60 * kMs);
    for (uint64_t t = 1; t <= 50; ++t) {
      const bool low = capped && t >= 10 && t < 50;
      b.capture().metric(0, t * kMs, v1::GPU_METRIC_SM_CLOCK_MHZ, low ? 1410u : 1980u);
      b.capture().metric(0, t * kMs, v1::GPU_METRIC_CLOCKS_EVENT_REASONS, low ? 0x4u : 0u);
    }
  };
  Builder steady, capped;
  build(steady, false);
  build(capped, true);
  EXPECT_FALSE(fired(steady, "throttled"));
  const ga::DiagnoseReport r = scanned_report(capped);
  ASSERT_TRUE(fired(r, "throttled"));
  const auto f = std::find_if(r.findings.begin(), r.findings.end(), [](const ga::Finding& x) { return x.rule == "throttled"; });
  // Its time inside the stretch (the samples from 10 ms to 50 ms).
  EXPECT_NE(f->evidence[1].find("ran 40000.000 us inside it"), std::string::npos) << f->evidence[1];
}

// PM sampling's SM active, judged on the scan with the kernels that ran at each sample (one
// more scan of the events): a name's samples count once where two of its runs overlap.
TEST(Diagnose, SmActiveSamplesAreJudgedOnTheScanEachSampleOnceAName) {
  constexpr uint64_t kUs = 1'000;
  Builder b;
  for (uint64_t t = 1000; t <= 20000; t += 100) {
    const bool low = t >= 2000 && t < 12000;
    b.capture().metric(0, t * kUs, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, low ? 1200u : 9000u);
    b.capture().metric(0, t * kUs, v1::GPU_METRIC_DRAM_READ_CENTIPCT, 5000u);
    b.capture().metric(0, t * kUs, v1::GPU_METRIC_DRAM_WRITE_CENTIPCT, 1500u);
  }
  for (uint64_t s = 2000; s < 12000; s += 2000) b.k("gather", 13, (s - 500) * kUs, s * kUs, (s + 2000) * kUs);
  b.k("gather", 14, 2900 * kUs, 3000 * kUs, 5000 * kUs);  // beside the run from 2 ms: the same samples
  b.k("busy", 13, 11900 * kUs, 12000 * kUs, 20000 * kUs);
  const ga::DiagnoseReport r = scanned_report(b);
  ASSERT_TRUE(fired(r, "stalled"));
  std::vector<const ga::Finding*> found;
  for (const ga::Finding& f : r.findings)
    if (f.rule == "stalled") found.push_back(&f);
  ASSERT_EQ(found.size(), 1u);  // not busy, at 90%
  EXPECT_NE(found[0]->title.find("gather ran with its SMs mostly idle (SM active 12.0%, memory-bound)"), std::string::npos)
      << found[0]->title;
  EXPECT_EQ(found[0]->evidence[0], "SM active 12.0% on average over 100 samples while it ran");
  EXPECT_EQ(found[0]->evidence[1], "6 runs, 12000.000 us in all: 60.0% of the device's kernel time");
  EXPECT_NE(found[0]->evidence[2].find("DRAM read + write 65.0% of peak"), std::string::npos) << found[0]->evidence[2];
}

// memory-idle weighs an allocation's idle time against the capture's span as a load has it:
// to its last call or operation, not to its last counter sample (NVML reads go on after the
// program's last call, and the chunk index's last time counts them). Seen beside a second
// build: the scan said the capture spanned 60.087 ms where a load said 59.667.
TEST(Diagnose, MemoryIdleWeighsTheSpanALoadSees) {
  Builder b;
  gpuhook::test::CaptureBuilder& c = b.capture();
  constexpr uint64_t T = 1'000'100;  // just after the header's start
  auto alloc = [&](uint64_t address, uint64_t at) {
    auto m = c.memory(v1::MEMORY_OP_ALLOC, address, 8u << 20, at);
    m->set_memory_kind(v1::MEMORY_DEVICE);
    m->set_device(0);
  };
  auto use = [&](uint64_t address, uint64_t at, uint32_t corr) {
    auto u = c.add(&v1::Record::mutable_memory_use);
    u->set_address(address);
    u->set_time_ns(static_cast<int64_t>(at));
    u->set_correlation_id(corr);
    u->set_thread_id(100);
  };
  alloc(0x10000000, T + 10);  // a table, used once before the peak
  use(0x10000000, T + 20, b.corr);
  alloc(0x20000000, T + 30);  // the peak: the weights, used by every kernel
  for (uint64_t i = 0; i < 10; ++i) {
    use(0x20000000, T + 1000 + i * 100'000, b.corr);
    b.k(kK, 7, T + 1000 + i * 100'000, T + 2000 + i * 100'000, T + 50'000 + i * 100'000);
  }
  // The device's counters, read for 2 ms after the program's last call.
  for (uint64_t t = T; t <= T + 3'000'000; t += 100'000) c.metric(0, t, v1::GPU_METRIC_GPU_UTIL_PERCENT, 50);
  const ga::DiagnoseReport r = scanned_report(b);  // the same JSON as the load's
  EXPECT_TRUE(fired(r, "memory-idle"));
}
