// The whatif replay on small hand-built graphs, each span computed by hand in the comment
// above its check; and the change spellings.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "fabricate.h"
#include "gantt/analysis/memory.h"
#include "gantt/whatif/whatif.h"

namespace gantt::whatif {
namespace {

// One capture, one thread starting at t = 1000, device 0.
struct G {
  Graph g;
  G() {
    Thread t;
    t.first_ns = 1000;
    g.threads.push_back(t);
  }
  uint32_t lane(uint32_t stream, bool legacy = false, bool blocking = true, int32_t priority = 0) {
    Lane l;
    l.stream = stream, l.legacy = legacy, l.blocking = blocking, l.priority = priority;
    g.lanes.push_back(l);
    return static_cast<uint32_t>(g.lanes.size() - 1);
  }
  uint32_t call(int64_t gap, int64_t cost, std::vector<uint32_t> waits = {}, int64_t post = 0, uint32_t thread = 0) {
    HostCall c;
    c.thread = thread, c.gap_ns = gap, c.cost_ns = cost, c.waits = std::move(waits), c.post_wait_ns = post;
    c.name = g.name("call");
    g.calls.push_back(c);
    g.threads[thread].calls.push_back(static_cast<uint32_t>(g.calls.size() - 1));
    return static_cast<uint32_t>(g.calls.size() - 1);
  }
  uint32_t op(uint32_t lane, uint32_t call, int64_t offset, int64_t duration, double share = 0, int8_t engine = -1) {
    GpuOp o;
    o.lane = lane, o.call = call, o.ready_offset_ns = offset, o.duration_ns = duration, o.sm_share = share, o.engine = engine;
    o.kind = OpKind::kKernel;
    o.order = g.ops.size() + 1;
    g.ops.push_back(o);
    return static_cast<uint32_t>(g.ops.size() - 1);
  }
};

TEST(WhatifReplay, HostCallsKeepTheirGapsAndCosts) {
  G t;
  t.call(0, 10);
  t.call(5, 20);
  t.call(100, 1);
  replay(t.g);
  // 1000..1010, +5 -> 1015..1035, +100 -> 1135..1136
  EXPECT_EQ(t.g.calls[1].start_ns, 1015u);
  EXPECT_EQ(t.g.calls[2].end_ns, 1136u);
  EXPECT_EQ(replayed_span(t.g, 0).ns(), 136u);
}

TEST(WhatifReplay, OneStreamRunsInOrderAndASyncWaitsForItsEnd) {
  G t;
  const uint32_t s = t.lane(13);
  const uint32_t l1 = t.call(0, 5), l2 = t.call(0, 5);
  const uint32_t k1 = t.op(s, l1, 2, 100), k2 = t.op(s, l2, 2, 50);
  t.call(0, 3, {k2}, 7);
  replay(t.g);
  // k1 ready 1002, runs 1002..1102; k2 ready 1007, after k1: 1102..1152; the sync starts at
  // 1010 and returns 7 after k2: 1159.
  EXPECT_EQ(t.g.ops[k1].end_ns, 1102u);
  EXPECT_EQ(t.g.ops[k2].start_ns, 1102u);
  EXPECT_EQ(t.g.calls[2].end_ns, 1159u);
  EXPECT_EQ(replayed_span(t.g, 0).ns(), 159u);
}

TEST(WhatifReplay, KernelsShareTheSmsOnlyWhileTheyFit) {
  G t;
  const uint32_t a = t.lane(13), b = t.lane(14), c = t.lane(15);
  const uint32_t l = t.call(0, 1);
  const uint32_t k1 = t.op(a, l, 0, 100, 0.5), k2 = t.op(b, l, 0, 100, 0.5), k3 = t.op(c, l, 0, 100, 0.25);
  replay(t.g);
  // k1 and k2 fill the device 1000..1100; k3 (a quarter) waits for room: 1100..1200.
  EXPECT_EQ(t.g.ops[k1].start_ns, 1000u);
  EXPECT_EQ(t.g.ops[k2].start_ns, 1000u);
  EXPECT_EQ(t.g.ops[k3].start_ns, 1100u);
  EXPECT_EQ(replayed_span(t.g, 0).ns(), 200u);
}

TEST(WhatifReplay, CopiesOfOneDirectionShareAnEngine) {
  G t;
  const uint32_t a = t.lane(13), b = t.lane(14);
  const uint32_t l = t.call(0, 1);
  const uint32_t h1 = t.op(a, l, 0, 40, 0, kEngineHtoD), h2 = t.op(b, l, 0, 40, 0, kEngineHtoD);
  const uint32_t d1 = t.op(b, l, 0, 40, 0, kEngineDtoH);
  replay(t.g);
  // h1 1000..1040; h2 waits for the HtoD engine: 1040..1080; d1 is behind h2 on its stream.
  EXPECT_EQ(t.g.ops[h1].end_ns, 1040u);
  EXPECT_EQ(t.g.ops[h2].start_ns, 1040u);
  EXPECT_EQ(t.g.ops[d1].start_ns, 1080u);
}

TEST(WhatifReplay, AnEventWaitOrdersTwoStreams) {
  G t;
  const uint32_t a = t.lane(13), b = t.lane(14);
  const uint32_t l = t.call(0, 1);
  const uint32_t k1 = t.op(a, l, 0, 300), k2 = t.op(b, l, 0, 10);
  t.g.ops[k2].after = {k1};
  replay(t.g);
  EXPECT_EQ(t.g.ops[k2].start_ns, 1300u);  // after k1's end, not at its own ready time
}

TEST(WhatifReplay, TheGreaterPriorityWinsATieForRoom) {
  G t;
  const uint32_t low = t.lane(13, false, true, 0), high = t.lane(14, false, true, 5);
  const uint32_t l = t.call(0, 1);
  const uint32_t k1 = t.op(low, l, 0, 100, 1.0), k2 = t.op(high, l, 0, 100, 1.0);
  replay(t.g);
  // Both ready at 1000 and each needs the whole device: the high-priority one goes first.
  EXPECT_EQ(t.g.ops[k2].start_ns, 1000u);
  EXPECT_EQ(t.g.ops[k1].start_ns, 1100u);
}

// A kernel launched while the device is full competes with the work that becomes ready by the
// time room frees up, as on the simulator and the hardware: at equal priority the earlier
// launch goes first, at a greater priority it goes as soon as the SMs free.
TEST(WhatifReplay, WorkThatFindsTheDeviceFullCompetesWithWhatBecomesReadyMeanwhile) {
  for (const int32_t critical_priority : {0, 5}) {
    G t;
    const uint32_t background = t.lane(13), critical = t.lane(14, false, true, critical_priority);
    const uint32_t l = t.call(0, 1);
    const uint32_t b1 = t.op(background, l, 0, 100, 1.0), b2 = t.op(background, l, 0, 100, 1.0);
    const uint32_t c = t.op(critical, l, 10, 5, 0.1);
    replay(t.g);
    // b1 1000..1100. c is ready at 1010 but the device is full until 1100, when b2 is ready too.
    EXPECT_EQ(t.g.ops[b1].end_ns, 1100u);
    if (critical_priority == 0) {
      EXPECT_EQ(t.g.ops[b2].start_ns, 1100u);  // launched first: 1100..1200, c after it
      EXPECT_EQ(t.g.ops[c].start_ns, 1200u);
    } else {
      EXPECT_EQ(t.g.ops[c].start_ns, 1100u);   // the greater priority: 1100..1105, b2 after it
      EXPECT_EQ(t.g.ops[b2].start_ns, 1105u);
    }
  }
}

TEST(WhatifReplay, ARemovedCallKeepsTheHostWorkBeforeIt) {
  G t;
  const uint32_t s = t.lane(13);
  const uint32_t l = t.call(0, 5);
  const uint32_t k = t.op(s, l, 0, 1000);
  const uint32_t sync = t.call(10, 2, {k}, 3);
  t.call(20, 5);
  t.g.calls[sync].removed = true;
  replay(t.g);
  // launch 1000..1005; the sync is gone but its 10 of host work stays: the last call starts
  // at 1005 + 10 + 20 = 1035 and ends 1040; the kernel still ends at 2000.
  EXPECT_EQ(t.g.calls[2].start_ns, 1035u);
  EXPECT_EQ(replayed_span(t.g, 0).ns(), 1000u);
}

TEST(WhatifReplay, ACallWaitsForTheCopyItLaunchedItself) {
  G t;
  const uint32_t s = t.lane(13);
  const uint32_t memcpy_call = t.call(0, 4, {}, 6);
  const uint32_t copy = t.op(s, memcpy_call, 1, 50, 0, kEngineHtoD);
  t.g.calls[memcpy_call].waits = {copy};
  replay(t.g);
  // The copy runs 1001..1051; cudaMemcpy returns 6 after it: 1057.
  EXPECT_EQ(t.g.calls[memcpy_call].end_ns, 1057u);
}

// Ranks 0 to n-1, one thread and one lane (stream 13) each, threads starting at 1000.
struct Ranks {
  Graph g;
  explicit Ranks(uint16_t n) {
    for (uint16_t r = 0; r < n; ++r) {
      Thread t;
      t.capture = r, t.first_ns = 1000;
      g.threads.push_back(t);
      Lane l;
      l.capture = r, l.stream = 13;
      g.lanes.push_back(l);
    }
  }
  // A call on rank r's thread launching an op of `duration` (its transfer, if it has peers or
  // is a collective).
  uint32_t op(uint16_t r, int64_t duration, int64_t transfer = 0) {
    HostCall c;
    c.thread = r, c.cost_ns = 1;
    g.calls.push_back(c);
    g.threads[r].calls.push_back(static_cast<uint32_t>(g.calls.size() - 1));
    GpuOp o;
    o.capture = r, o.lane = r, o.call = static_cast<uint32_t>(g.calls.size() - 1), o.duration_ns = duration;
    o.transfer_ns = transfer;
    o.order = g.ops.size() + 1;
    g.ops.push_back(o);
    return static_cast<uint32_t>(g.ops.size() - 1);
  }
};

TEST(WhatifReplay, ACollectiveEndsAfterItsLastRankArrives) {
  Ranks t(2);
  // Rank 0 computes 100 then joins; rank 1 computes 400 then joins.
  t.op(0, 100);
  t.op(1, 400);
  const uint32_t n0 = t.op(0, 0, 30), n1 = t.op(1, 0, 30);
  t.g.ops[n0].collective = t.g.ops[n1].collective = 77;
  t.g.collective_ranks = {{77, 2}};
  replay(t.g);
  // Rank 0 arrives at 1100, rank 1 at 1400: both end at 1400 + 30.
  EXPECT_EQ(t.g.ops[n0].start_ns, 1100u);
  EXPECT_EQ(t.g.ops[n0].end_ns, 1430u);
  EXPECT_EQ(t.g.ops[n1].end_ns, 1430u);
}

TEST(WhatifReplay, ASendEndsOnceItsReceiverHasArrived) {
  Ranks t(2);
  // Rank 0 computes 100 then sends (its transfer 30); rank 1 computes 400 then receives (20).
  t.op(0, 100);
  t.op(1, 400);
  const uint32_t send = t.op(0, 5000, 30), recv = t.op(1, 5000, 20);
  t.g.p2p = {{send, recv}};
  replay(t.g);
  // The send arrives at 1100 and waits; the receive arrives at 1400: each ends its own
  // transfer after that, whatever its recorded duration.
  EXPECT_EQ(t.g.ops[send].start_ns, 1100u);
  EXPECT_EQ(t.g.ops[send].end_ns, 1430u);
  EXPECT_EQ(t.g.ops[recv].start_ns, 1400u);
  EXPECT_EQ(t.g.ops[recv].end_ns, 1420u);
}

TEST(WhatifReplay, AGroupedSendAndReceiveWaitsForBothPeers) {
  Ranks t(3);
  // Rank 1's one kernel receives from rank 0 (arriving at 1200) and sends to rank 2 (arriving
  // at 1700): it ends 50 after the later; each peer ends its own transfer after the pair met.
  t.op(0, 200);
  t.op(1, 10);
  t.op(2, 700);
  const uint32_t from0 = t.op(0, 9999, 40), mid = t.op(1, 9999, 50), to2 = t.op(2, 9999, 60);
  t.g.p2p = {{from0, mid}, {mid, to2}};
  replay(t.g);
  EXPECT_EQ(t.g.ops[mid].start_ns, 1010u);
  EXPECT_EQ(t.g.ops[mid].end_ns, 1750u);
  EXPECT_EQ(t.g.ops[from0].end_ns, 1240u);
  EXPECT_EQ(t.g.ops[to2].end_ns, 1760u);
  // The op after the grouped one on rank 1 starts when it ends.
  const uint32_t next = t.op(1, 5);
  replay(t.g);
  EXPECT_EQ(t.g.ops[next].start_ns, 1750u);
}

TEST(WhatifReplay, SendsThatWaitForEachOtherAreAnError) {
  Ranks t(2);
  // Each rank sends before it receives, and each send's receiver is behind the other's send:
  // NCCL hangs so, and the replay says it cannot go on.
  const uint32_t s0 = t.op(0, 10, 1), r0 = t.op(0, 10, 1);
  const uint32_t s1 = t.op(1, 10, 1), r1 = t.op(1, 10, 1);
  t.g.p2p = {{s0, r1}, {s1, r0}};
  EXPECT_THROW(replay(t.g), std::runtime_error);
}

TEST(WhatifReplay, AWaitThatCanNeverEndIsAnError) {
  G t;
  const uint32_t a = t.lane(13), b = t.lane(14);
  const uint32_t l = t.call(0, 1);
  const uint32_t k1 = t.op(a, l, 0, 10), k2 = t.op(b, l, 0, 10);
  t.g.ops[k1].after = {k2};
  t.g.ops[k2].after = {k1};
  EXPECT_THROW(replay(t.g), std::runtime_error);
}

TEST(WhatifChange, SpellingsAreExact) {
  EXPECT_EQ(parse_change("pin-copies").kind, Change::Kind::kPinCopies);
  EXPECT_EQ(parse_change("remove-syncs=cudaStreamSynchronize").name, "cudaStreamSynchronize");
  EXPECT_EQ(parse_change("streams=4").streams, 4u);
  EXPECT_EQ(parse_change("priority=critical_.*").kind, Change::Kind::kPriority);
  EXPECT_EQ(parse_change("priority=critical_.*").name, "critical_.*");
  EXPECT_EQ(parse_change("overlap-copies").kind, Change::Kind::kOverlapCopies);
  EXPECT_EQ(parse_change("block-size=saxpy").kind, Change::Kind::kBlockSize);
  EXPECT_EQ(parse_change("block-size=saxpy").threads, 0u);
  EXPECT_EQ(parse_change("block-size=saxpy:256").threads, 256u);
  EXPECT_EQ(parse_change("block-size=saxpy:256").name, "saxpy");
  EXPECT_EQ(parse_change("block-size=ns::k<1>").name, "ns::k<1>") << "a colon of the regex is not a size";
  EXPECT_EQ(parse_change("fuse=chunk").kind, Change::Kind::kFuse);
  EXPECT_EQ(parse_change("fuse=chunk").launches, 0u);
  EXPECT_EQ(parse_change("fuse=chunk:64").launches, 64u);
  EXPECT_EQ(parse_change("fuse=chunk:64").name, "chunk");
  EXPECT_EQ(parse_change("fuse=ns::k").name, "ns::k");
  EXPECT_EQ(parse_change("checkpoint=activations").every, 0u);
  EXPECT_EQ(parse_change("checkpoint=activations:4").every, 4u);
  EXPECT_EQ(parse_change("checkpoint=activations:4").name, "activations");
  EXPECT_EQ(parse_change("free-idle").kind, Change::Kind::kFreeIdle);
  EXPECT_EQ(parse_change("pipeline=1f1b").kind, Change::Kind::kPipeline);
  EXPECT_EQ(parse_change("pipeline=1f1b").micro_batches, 0u);
  EXPECT_EQ(parse_change("pipeline=1f1b:16").micro_batches, 16u);
  EXPECT_EQ(parse_change("coalesce=gather").kind, Change::Kind::kCoalesce);
  EXPECT_EQ(parse_change("coalesce=gather.*:x").name, "gather.*:x");
  const Change s = parse_change("scale=gemm.*:0.8");
  EXPECT_EQ(s.name, "gemm.*");
  EXPECT_DOUBLE_EQ(s.factor, 0.8);
  for (const char* bad : {"pin_copies", "streams=1", "streams=2.5", "streams=x", "scale=gemm", "scale=:2",
                          "scale=a:-1", "scale=a:nan", "scale=a:1e9", "remove-syncs=", "priority=", "priority", "overlap-copies=2", "block-size=", "block-size=:64",
                          "block-size=k:0", "block-size=k:99999999999", "fuse=", "fuse=:4", "fuse=k:1",
                          "fuse=k:0", "fuse=k:99999999999", "checkpoint=", "checkpoint=:4", "checkpoint=act:0",
                          "free-idle=x", "pipeline=", "pipeline=gpipe", "pipeline=1f1b:", "pipeline=1f1b:0",
                          "pipeline=1f1b:2.5", "pipeline=1f1b:99999999", "pipeline=1F1B", "coalesce=", "coalesce", ""})
    EXPECT_THROW(parse_change(bad), std::invalid_argument) << bad;
}

// Per lane after the line encoding: 8 GT/s x 128/130 / 8 bits = 0.985 GB/s (gen3), doubling to
// gen5; gen6's 64 GT/s in FLITs, 242 of 256 bytes carried; gen1-2 8b/10b.
TEST(WhatifPinCopies, TheLinkRateIsTheLanesTimesTheEncodedRateOfTheGeneration) {
  EXPECT_NEAR(pcie_raw_gbps(3, 16), 15.754, 0.001);
  EXPECT_NEAR(pcie_raw_gbps(4, 16), 31.508, 0.001);
  EXPECT_NEAR(pcie_raw_gbps(5, 16), 63.015, 0.001);
  EXPECT_NEAR(pcie_raw_gbps(5, 8), 31.508, 0.001);
  EXPECT_NEAR(pcie_raw_gbps(6, 16), 121.0, 0.001);
  EXPECT_NEAR(pcie_raw_gbps(1, 1), 0.25, 1e-9);
  EXPECT_NEAR(pcie_raw_gbps(2, 4), 2.0, 1e-9);
  // What the brief's H200 message says: 50.4 GB/s from gen5 x16.
  EXPECT_NEAR(pcie_raw_gbps(5, 16) * kPinnedShareOfPcie, 50.41, 0.01);
  // Unknown: no link recorded (0), a generation not yet defined, a width no slot has.
  for (auto [gen, width] : {std::pair{0u, 16u}, {5u, 0u}, {7u, 16u}, {5u, 64u}, {99u, 99u}})
    EXPECT_EQ(pcie_raw_gbps(gen, width), 0) << gen << " x" << width;
}

}  // namespace
}  // namespace gantt::whatif

// ---- predict(): from a capture file to a predicted one ----------------------------------

namespace gantt::whatif {
namespace {

namespace v1 = gpuhook::v1;

class WhatifPredict : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuhook-whatif-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `records` (after a header and a device) as a capture; names are interned here.
  std::string write(const std::string& name, const std::vector<v1::Record>& records) {
    const std::string path = dir_ + "/" + name;
    std::string err;
    auto w = gpuhook::CaptureWriter::create(path, {}, &err);
    EXPECT_TRUE(w) << err;
    w->write(gantt_test::header());
    w->write(gantt_test::h100());
    for (const v1::Record& r : records) w->write(r);
    EXPECT_TRUE(w->close());
    return path;
  }
  uint32_t id(const std::string& s) { return ids_.try_emplace(s, static_cast<uint32_t>(ids_.size() + 1)).first->second; }
  std::vector<v1::Record> with_strings(std::vector<v1::Record> records) {
    std::vector<v1::Record> out;
    for (const auto& [s, i] : ids_) out.push_back(gantt_test::string_def(i, s));
    out.insert(out.end(), records.begin(), records.end());
    return out;
  }
  v1::Record stream_sync(uint32_t stream, uint32_t corr, uint64_t start, uint64_t end) {
    v1::Record r;
    r.mutable_sync()->set_type(v1::SYNC_STREAM_SYNCHRONIZE);
    r.mutable_sync()->set_stream(stream);
    r.mutable_sync()->set_correlation_id(corr);
    r.mutable_sync()->set_start_ns(static_cast<int64_t>(start));
    r.mutable_sync()->set_end_ns(static_cast<int64_t>(end));
    return r;
  }

  std::string dir_;
  std::map<std::string, uint32_t> ids_;
};

TEST_F(WhatifPredict, AKernelQueuedBehindAScaledOneStartsEarlier) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), big = id("big"), small = id("small");
  // big runs 10 us from 1015; small, launched at 1020, waits for it (no launch stamps): it
  // starts the moment big ends. The sync returns 85 ns after small.
  const std::string in = write("in.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(big, 13, 1, 0, 0, 1015, 11015),
      api(launch, 7, 1020, 1030, 2), kernel(small, 13, 2, 0, 0, 11015, 12015),
      api(sync, 7, 1040, 12100, 3), stream_sync(13, 3, 1040, 12100)}));
  const Prediction p = predict({in}, {parse_change("scale=big:0.1")}, {}, dir_ + "/out.gpuh");
  ASSERT_EQ(p.sections.size(), 1u);
  EXPECT_EQ(p.sections[0].measured.ns(), 11100u);
  EXPECT_EQ(p.sections[0].unchanged.ns(), 11100u);
  // big 1015..2015; small ready 1035 (the 15 ns latency of an unblocked launch), runs
  // 2015..3015; the sync returns at 3100.
  EXPECT_EQ(p.sections[0].predicted.ns(), 2100u);
  const Model m = load({dir_ + "/out.gpuh"});
  ASSERT_EQ(m.captures.size(), 1u);
  EXPECT_EQ(m.captures[0].header.predicted_change_size(), 1);
  EXPECT_EQ(m.captures[0].header.predicted_from(), in);
}

// coalesce: a kernel's time times ideal over touched sectors, the counts summed over a name's
// KernelSectors records (two devices here), from the capture or from another (--sectors-from).
TEST_F(WhatifPredict, CoalesceTimesAKernelByItsIdealOverTouchedSectors) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), gather = id("gather"),
                 other = id("other");
  auto sectors = [](uint32_t name, uint32_t device, uint64_t touched, uint64_t ideal) {
    v1::Record r;
    r.mutable_kernel_sectors()->set_name_id(name);
    r.mutable_kernel_sectors()->set_device(device);
    r.mutable_kernel_sectors()->set_sectors(touched);
    r.mutable_kernel_sectors()->set_ideal_sectors(ideal);
    return r;
  };
  // gather 1015..11015 then other 11015..12015 on one stream; the sync returns at 12100.
  const std::vector<v1::Record> ops = {api(launch, 7, 1000, 1010, 1), kernel(gather, 13, 1, 0, 0, 1015, 11015),
                                       api(launch, 7, 1020, 1030, 2), kernel(other, 13, 2, 0, 0, 11015, 12015),
                                       api(sync, 7, 1040, 12100, 3), stream_sync(13, 3, 1040, 12100)};
  std::vector<v1::Record> counted = ops;
  counted.push_back(sectors(gather, 0, 300, 60));  // 400 touched where 100 would do: x0.25
  counted.push_back(sectors(gather, 1, 100, 40));
  counted.push_back(sectors(other, 0, 50, 50));  // already coalesced: kept
  const std::string in = write("in.gpuh", with_strings(counted));
  const Prediction p = predict({in}, {parse_change("coalesce=gather|other")}, {}, dir_ + "/out.gpuh");
  // gather takes 2500 ns: 1015..3515, other 3515..4515, the sync returns 85 ns later.
  EXPECT_EQ(p.sections[0].predicted.ns(), 4600u - 1000u);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("1 kernel(s) of 2 name(s)"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("450 sectors where 150"), std::string::npos) << p.notes[0];

  // The times from a run without counts, the counts from another.
  const std::string times = write("times.gpuh", with_strings(ops));
  Options from;
  from.sectors_from = {in};
  const Prediction q = predict({times}, {parse_change("coalesce=gather")}, from, dir_ + "/out2.gpuh");
  EXPECT_EQ(q.sections[0].predicted.ns(), p.sections[0].predicted.ns());
  EXPECT_NE(q.notes[0].find("counts from " + in), std::string::npos) << q.notes[0];
  // Without counts it refuses and says how to record them; a name without counts is kept.
  try {
    predict({times}, {parse_change("coalesce=gather")}, {}, dir_ + "/out3.gpuh");
    ADD_FAILURE() << "predicted without sector counts";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GPUHOOK_SECTORS=1"), std::string::npos) << e.what();
  }
  std::vector<v1::Record> partly = ops;
  partly.push_back(sectors(other, 0, 200, 50));
  const std::string half = write("half.gpuh", with_strings(partly));
  const Prediction h = predict({half}, {parse_change("coalesce=.")}, {}, dir_ + "/out4.gpuh");
  EXPECT_EQ(h.sections[0].predicted.ns(), 12100u - 1000u - 750u);
  EXPECT_NE(h.notes[0].find("1 name(s) without counts kept as recorded"), std::string::npos) << h.notes[0];
  // Hostile counts: sums saturate, a zero count divides nothing.
  std::vector<v1::Record> hostile = ops;
  hostile.push_back(sectors(gather, 0, UINT64_MAX, UINT64_MAX));
  hostile.push_back(sectors(gather, 1, UINT64_MAX, 0));
  hostile.push_back(sectors(other, 0, 0, 0));
  const std::string bad = write("bad.gpuh", with_strings(hostile));
  const Prediction b = predict({bad}, {parse_change("coalesce=.")}, {}, dir_ + "/out5.gpuh");
  EXPECT_EQ(b.sections[0].predicted.ns(), 12100u - 1000u);  // UINT64_MAX of UINT64_MAX: x1
}

TEST_F(WhatifPredict, RemoveSyncsKeepsTheLastWaitAndEveryLaunch) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), k = id("k");
  const std::string in = write("in.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(k, 13, 1, 1005, 1006, 1015, 2015),
      api(sync, 7, 1020, 2100, 2), stream_sync(13, 2, 1020, 2100),
      api(launch, 7, 2110, 2120, 3), kernel(k, 13, 3, 2115, 2116, 2125, 3125),
      api(sync, 7, 2130, 3200, 4), stream_sync(13, 4, 2130, 3200)}));
  const Prediction p = predict({in}, {parse_change("remove-syncs")}, {}, dir_ + "/out.gpuh");
  // The first sync goes: the second launch starts right after the first (1010 + its gap of
  // 10 + the first sync's host gap of 10), and the kernels run back to back.
  EXPECT_LT(p.sections[0].predicted.ns(), p.sections[0].measured.ns());
  const Model m = load({dir_ + "/out.gpuh"});
  int syncs = 0, launches = 0;
  for (size_t i = 0; i < m.api.size(); ++i) {
    syncs += m.string(m.api.name[i]) == "cudaStreamSynchronize";
    launches += m.string(m.api.name[i]) == "cudaLaunchKernel";
  }
  EXPECT_EQ(syncs, 1);
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(m.events.size(), 2u + 1u);  // two kernels and the kept sync's record
}

TEST_F(WhatifPredict, RemoveSyncsDropsTheLoopsWaitsAndKeepsTheOneAfterIt) {
  using gantt_test::api;
  using gantt_test::kernel;
  using gantt_test::memcpy_rec;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), copy = id("cudaMemcpy"), k = id("k");
  // Three steps of launch (1 us of work) and wait, the wait after the loop, 50 us of host work,
  // then a blocking device-to-host copy: the last wait is the copy's.
  std::vector<v1::Record> records;
  uint32_t corr = 1;
  uint64_t t = 1000;
  for (int step = 0; step < 3; ++step, t += 2000) {
    records.push_back(api(launch, 7, t, t + 10, corr));
    records.push_back(kernel(k, 13, corr, t + 5, t + 6, t + 15, t + 1015));
    ++corr;
    records.push_back(api(sync, 7, t + 20, t + 1100, corr));
    records.push_back(stream_sync(13, corr, t + 20, t + 1100));
    ++corr;
  }
  records.push_back(api(sync, 7, t, t + 10, corr));
  records.push_back(stream_sync(13, corr, t, t + 10));
  ++corr;
  records.push_back(api(copy, 7, t + 50010, t + 51010, corr));
  records.push_back(memcpy_rec(v1::COPY_DTOH, 1 << 20, 13, corr, t + 50010, t + 51000));
  const std::string in = write("in.gpuh", with_strings(records));
  const Prediction p = predict({in}, {parse_change("remove-syncs")}, {}, dir_ + "/out.gpuh");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("3 synchronising call(s) removed, 1 kept"), std::string::npos) << p.notes[0];
  // The kernels run back to back, the kept wait returns when the last ends, and the host's
  // 50 us come after it, as the program after its loop does: not under the kernels.
  const Model m = load({dir_ + "/out.gpuh"});
  uint64_t last_kernel_end = 0, copy_start = 0;
  for (size_t e = 0; e < m.events.size(); ++e) {
    if (m.events.kind[e] == EventKind::kKernel) last_kernel_end = std::max(last_kernel_end, m.events.end_ns[e]);
    if (m.events.kind[e] == EventKind::kMemcpy) copy_start = m.events.start_ns[e];
  }
  EXPECT_GE(copy_start, last_kernel_end + 50000);
}

TEST_F(WhatifPredict, GraphsCaptureTheFirstRepetitionAndLaunchTheRest) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), inst = id("cudaGraphInstantiate"),
                 a = id("a"), b = id("b");
  // Three steps of two launches (5 us each, 5 us of host work before each), 1 us kernels; then
  // the sync. With `instantiate`, the program instantiated some other graph in 40 us first.
  auto capture = [&](bool instantiate) {
    std::vector<v1::Record> records;
    uint32_t corr = 1;
    uint64_t t = 1000;
    if (instantiate) {
      records.push_back(api(inst, 7, t, t + 40000, corr++));
      t += 40000;
    }
    for (int step = 0; step < 3; ++step) {
      for (uint32_t name : {a, b}) {
        t += 5000;
        records.push_back(api(launch, 7, t, t + 5000, corr));
        records.push_back(kernel(name, 13, corr, t + 5000, t + 5001, t + 6000, t + 7000));
        t += 5000, ++corr;
      }
    }
    records.push_back(api(sync, 7, t + 5000, t + 8000, corr));
    records.push_back(stream_sync(13, corr, t + 5000, t + 8000));
    return write(instantiate ? "inst.gpuh" : "in.gpuh", with_strings(records));
  };
  const Prediction p = predict({capture(false)}, {parse_change("graphs")}, {}, dir_ + "/out.gpuh");
  bool noted = false;
  for (const std::string& n : p.notes) noted |= n.find("instantiated at no cost") != std::string::npos;
  EXPECT_TRUE(noted);
  const Model m = load({dir_ + "/out.gpuh"});
  int graph_launches = 0, launches = 0;
  for (size_t i = 0; i < m.api.size(); ++i) {
    graph_launches += m.string(m.api.name[i]) == "cudaGraphLaunch";
    launches += m.string(m.api.name[i]) == "cudaLaunchKernel";
  }
  // The first step is captured (its first call stays, its last launches the graph); the two
  // others are one graph launch each.
  EXPECT_EQ(graph_launches, 3);
  EXPECT_EQ(launches, 1);
  // Host time: the first step as measured (20 us) and then its graph's launch (5 us, as a
  // launch call of the capture costs); the two other steps a graph launch of 5 us with the 5 us
  // before it, where each took 20 us: 15 us less in all.
  EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].measured.ns() - 15000);

  const Prediction q = predict({capture(true)}, {parse_change("graphs")}, {}, dir_ + "/out_inst.gpuh");
  noted = false;
  for (const std::string& n : q.notes) noted |= n.find("instantiated in 40.00 us (the capture's cudaGraphInstantiate)") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(q.sections[0].predicted.ns(), q.sections[0].measured.ns() - 15000 + 40000);
}

TEST_F(WhatifPredict, AnEventWaitHoldsEvenWithoutItsApiRecords) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), a = id("producer"), b = id("consumer");
  // producer on stream 13 (10 us); cudaEventRecord and cudaStreamWaitEvent recorded only as
  // their CUDA_EVENT / SYNCHRONIZATION records (the default GPUHOOK_API leaves the calls out);
  // consumer on stream 14 waits: it started when producer ended.
  v1::Record ev;
  ev.mutable_cuda_event()->set_event_id(9);
  ev.mutable_cuda_event()->set_stream(13);
  ev.mutable_cuda_event()->set_correlation_id(2);
  v1::Record wait;
  wait.mutable_sync()->set_type(v1::SYNC_STREAM_WAIT_EVENT);
  wait.mutable_sync()->set_stream(14);
  wait.mutable_sync()->set_event_id(9);
  wait.mutable_sync()->set_correlation_id(3);
  wait.mutable_sync()->set_start_ns(1020);
  wait.mutable_sync()->set_end_ns(1021);
  const std::string in = write("in.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(a, 13, 1, 1005, 1015, 1015, 11015), ev, wait,
      api(launch, 7, 1030, 1040, 4), kernel(b, 14, 4, 1035, 1036, 11015, 12015)}));
  const Prediction p = predict({in}, {parse_change("scale=producer:0.5")}, {}, dir_ + "/out.gpuh");
  // producer 1015..6015; consumer waits for it: 6015..7015 (without the wait it would start
  // at 1036 and the span would be 5,015 ns).
  EXPECT_EQ(p.sections[0].predicted.ns(), 6015u);
}

// An NCCL call record of a 2-rank communicator (comm 42, 1 MiB).
v1::Record nccl_call(uint32_t name_id, v1::NcclOp op, int32_t rank, int32_t peer, uint64_t start, uint64_t end,
                     uint32_t group_depth = 0) {
  v1::Record r;
  auto* n = r.mutable_nccl();
  n->set_op(op);
  n->set_name_id(name_id);
  n->set_bytes(1 << 20);
  n->set_root_or_peer(peer);
  n->set_comm_id(42);
  n->set_rank(rank);
  n->set_nranks(2);
  n->set_thread_id(7);
  n->set_start_ns(static_cast<int64_t>(start));
  n->set_end_ns(static_cast<int64_t>(end));
  n->set_group_depth(group_depth);
  return r;
}

TEST_F(WhatifPredict, ASendFollowsItsReceiverOnTheOtherRank) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), work = id("work"),
                 sendrecv = id("ncclDevKernel_SendRecv"), send = id("ncclSend"), recv = id("ncclRecv"),
                 start = id("ncclGroupStart"), end = id("ncclGroupEnd");
  // Rank 0 computes 100 ns, then sends in a group: its kernel starts at 1300 and waits for the
  // receiver until 5100; its sync returns 100 ns later. Rank 1 computes 4 us, then receives
  // (ungrouped): 5015..5100. The pair met at 5015: each transfer is 85 ns.
  const std::string r0 = write("r0.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(work, 13, 1, 0, 0, 1015, 1115),
      nccl_call(start, v1::NCCL_GROUP_START, 0, -1, 1150, 1160),
      nccl_call(send, v1::NCCL_SEND, 0, 1, 1200, 1210, 1),
      nccl_call(end, v1::NCCL_GROUP_END, 0, -1, 1220, 1300),
      api(launch, 7, 1230, 1290, 2), kernel(sendrecv, 13, 2, 0, 0, 1300, 5100),
      api(sync, 7, 1400, 5200, 3), stream_sync(13, 3, 1400, 5200)}));
  const std::string r1 = write("r1.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(work, 13, 1, 0, 0, 1015, 5015),
      nccl_call(recv, v1::NCCL_RECV, 1, 0, 1020, 1100),
      api(launch, 7, 1030, 1090, 2), kernel(sendrecv, 13, 2, 0, 0, 5015, 5100),
      api(sync, 7, 1200, 5200, 3), stream_sync(13, 3, 1200, 5200)}));
  const Prediction p = predict({r0, r1}, {parse_change("scale=work:0.5")}, {}, dir_ + "/out.gpuh");
  ASSERT_EQ(p.sections.size(), 2u);
  EXPECT_EQ(p.sections[0].unchanged.ns(), p.sections[0].measured.ns());
  // Rank 1's work 1015..3015; its receive 3015..3100, and rank 0's send, there since 1300,
  // ends with it: rank 0's sync returns at 3200, 2 us sooner than measured, for a change made
  // on rank 1 only.
  EXPECT_EQ(p.sections[1].predicted.ns(), 2200u);
  EXPECT_EQ(p.sections[0].predicted.ns(), 2200u);
  bool said = false;
  for (const std::string& n : p.notes) said = said || n.find("1 point-to-point transfer") != std::string::npos;
  EXPECT_TRUE(said) << "no note of the matched transfer";
}

// One GPipe stage of a 2-rank pipeline, one step of two micro-batches: forward kernels of 1000 ns,
// backward of 2000, transfers of 100 once both sides are there. Every call is issued from 500 on,
// 10 ns apart; each kernel starts where the step's schedule puts it.
struct GpipeStage {
  std::vector<v1::Record> records;
  uint64_t call_at = 500;
  uint32_t corr = 1;
  int32_t rank;
  GpipeStage(int32_t r) : rank(r) {}
  uint64_t next_call() { return (call_at += 10) - 10; }
  void kernel(uint32_t launch, uint32_t name, uint64_t start, uint64_t end) {
    const uint64_t at = next_call();
    records.push_back(gantt_test::api(launch, 7, at, at + 5, corr));
    records.push_back(gantt_test::kernel(name, 13, corr++, at + 5, at + 6, start, end));
  }
  void transfer(uint32_t call_name, v1::NcclOp op, uint32_t launch, uint32_t name, uint64_t start, uint64_t end) {
    const uint64_t at = next_call();
    records.push_back(nccl_call(call_name, op, rank, 1 - rank, at, at + 8));
    records.push_back(gantt_test::api(launch, 7, at + 1, at + 7, corr));
    records.push_back(gantt_test::kernel(name, 13, corr++, at + 2, at + 3, start, end));
  }
};

class WhatifPipeline : public WhatifPredict {
 protected:
  // The two stages' captures: stage 0 runs F0 F1 B0 B1, stage 1 F0 F1 B0 B1 after receiving each
  // forward input and before sending each backward output.
  std::vector<std::string> gpipe() {
    const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), fwd = id("stage_forward"),
                   bwd = id("stage_backward"), sr = id("ncclDevKernel_SendRecv"), send = id("ncclSend"), recv = id("ncclRecv");
    GpipeStage s0(0), s1(1);
    // A barrier first: an all-reduce of 4 bytes, 100 ns once both ranks are there (the
    // transfers' fixed latency, as pipeline=1f1b measures it).
    const uint32_t all_reduce = id("ncclAllReduce"), ar_kernel = id("ncclDevKernel_AllReduce");
    for (GpipeStage* st : {&s0, &s1}) {
      const uint64_t at = st->next_call();
      v1::Record barrier = nccl_call(all_reduce, v1::NCCL_ALL_REDUCE, st->rank, -1, at, at + 8);
      barrier.mutable_nccl()->set_bytes(4);
      barrier.mutable_nccl()->set_sequence(1);
      st->records.push_back(barrier);
      st->records.push_back(gantt_test::api(launch, 7, at + 1, at + 7, st->corr));
      st->records.push_back(gantt_test::kernel(ar_kernel, 13, st->corr++, at + 2, at + 3, 700, 800));
    }
    s0.kernel(launch, fwd, 1000, 2000);
    s0.transfer(send, v1::NCCL_SEND, launch, sr, 2000, 2100);
    s0.kernel(launch, fwd, 2100, 3100);
    s0.transfer(send, v1::NCCL_SEND, launch, sr, 3100, 3200);
    s0.transfer(recv, v1::NCCL_RECV, launch, sr, 3200, 6300);
    s0.kernel(launch, bwd, 6300, 8300);
    s0.transfer(recv, v1::NCCL_RECV, launch, sr, 8300, 8400);
    s0.kernel(launch, bwd, 8400, 10400);
    s1.transfer(recv, v1::NCCL_RECV, launch, sr, 1000, 2100);
    s1.kernel(launch, fwd, 2100, 3100);
    s1.transfer(recv, v1::NCCL_RECV, launch, sr, 3100, 3200);
    s1.kernel(launch, fwd, 3200, 4200);
    s1.kernel(launch, bwd, 4200, 6200);
    s1.transfer(send, v1::NCCL_SEND, launch, sr, 6200, 6300);
    s1.kernel(launch, bwd, 6300, 8300);
    s1.transfer(send, v1::NCCL_SEND, launch, sr, 8300, 8400);
    for (GpipeStage* st : {&s0, &s1}) {
      const uint64_t at = st->next_call();
      st->records.push_back(gantt_test::api(sync, 7, at, 10500, st->corr));
      st->records.push_back(stream_sync(13, st->corr, at, 10500));
    }
    return {write("s0.gpuh", with_strings(s0.records)), write("s1.gpuh", with_strings(s1.records))};
  }
  // The predicted kernels of a stage, by start: (first letter of the name: f, b or n, duration).
  std::vector<std::pair<char, uint64_t>> kernels(const Model& m, uint16_t capture) {
    std::vector<std::pair<uint64_t, std::pair<char, uint64_t>>> v;
    for (size_t e = 0; e < m.events.size(); ++e)
      if ((m.events.kind[e] == EventKind::kKernel || m.events.kind[e] == EventKind::kNccl) && m.events.capture[e] == capture) {
        const std::string& name = m.strings[m.events.name[e]];
        v.push_back({m.events.start_ns[e], {name.find("forward") != std::string::npos    ? 'f'
                                            : name.find("backward") != std::string::npos ? 'b'
                                                                                           : 'n',
                                            m.events.end_ns[e] - m.events.start_ns[e]}});
      }
    std::sort(v.begin(), v.end());
    std::vector<std::pair<char, uint64_t>> out;
    for (const auto& x : v) out.push_back(x.second);
    return out;
  }
  static std::string order(const std::vector<std::pair<char, uint64_t>>& ks, bool with_transfers = false) {
    std::string s;
    for (const auto& k : ks)
      if (with_transfers || k.first != 'n') s += k.first;
    return s;
  }
};

TEST_F(WhatifPipeline, OneFOneBInterleavesEachStageAndSplitsItsMicroBatches) {
  const std::vector<std::string> in = gpipe();
  const Prediction p = predict(in, {parse_change("pipeline=1f1b:4")}, {}, dir_ + "/out.gpuh");
  ASSERT_EQ(p.sections.size(), 2u);
  const Model m = load({dir_ + "/out.gpuh"});
  const auto s0 = kernels(m, 0), s1 = kernels(m, 1);
  // Megatron-LM's 1F1B with 4 micro-batches over 2 stages: one warm-up forward on stage 0, none
  // on stage 1; each send of a forward's output grouped with the receive of a backward's input.
  EXPECT_EQ(order(s0), "ffbfbfbb");
  EXPECT_EQ(order(s1), "fbfbfbfb");
  EXPECT_EQ(order(s0, true), "nfnfnbfnbfnbnb") << "the barrier, then the schedule";
  EXPECT_EQ(order(s1, true), "nnfbnfbnfbnfbn");
  // Two recorded micro-batches split in four: each kernel half its recorded time.
  for (const auto& k : s0) {
    if (k.first == 'f') {
      EXPECT_EQ(k.second, 500u);
    } else if (k.first == 'b') {
      EXPECT_EQ(k.second, 1000u);
    }
  }
  // Each new transfer is written with its NCCL calls, joined to its kernel: 4 sends each way
  // (the recorded 2 dropped), each of half the recorded bytes, a kernel for every one.
  size_t sends = 0, joined = 0;
  for (size_t n = 0; n < m.nccl.size(); ++n) {
    if (m.nccl.op[n] != v1::NCCL_SEND) continue;
    ++sends;
    EXPECT_EQ(m.nccl.bytes[n], uint64_t{1} << 19);
    if (m.nccl.event[n] != kNone && m.events.kind[m.nccl.event[n]] == EventKind::kNccl) ++joined;
  }
  EXPECT_EQ(sends, 8u);
  EXPECT_EQ(joined, 8u);
  // GPipe's step took 9400 ns from stage 0's first forward to its last backward; 1F1B's bubble is
  // (p-1)/(m+p-1) of 4 micro-batches rather than 2.
  EXPECT_LT(p.sections[0].predicted.ns(), p.sections[0].measured.ns());
  bool said = false;
  for (const std::string& n : p.notes)
    said = said || (n.find("2 stages, 1 step(s) of 2 micro-batches (GPipe) as 1F1B with 4") != std::string::npos &&
                    n.find("each transfer 0.1 us of latency (the smallest NCCL operation's transfer in the captures, "
                           "ncclAllReduce of 4 B)") != std::string::npos);
  EXPECT_TRUE(said) << (p.notes.empty() ? std::string() : p.notes.back());
}

TEST_F(WhatifPipeline, ItNeedsEveryStageAndAPipeline) {
  const std::vector<std::string> in = gpipe();
  try {
    predict({in[0]}, {parse_change("pipeline=1f1b")}, {}, dir_ + "/one.gpuh");
    ADD_FAILURE() << "one stage of two was rescheduled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("give every stage's capture"), std::string::npos) << e.what();
  }
  using gantt_test::api;
  using gantt_test::kernel;
  const std::string plain = write("plain.gpuh", with_strings({api(id("cudaLaunchKernel"), 7, 1000, 1010, 1),
                                                              kernel(id("k"), 13, 1, 0, 0, 1015, 2015)}));
  try {
    predict({plain}, {parse_change("pipeline=1f1b")}, {}, dir_ + "/plain_out.gpuh");
    ADD_FAILURE() << "a capture without sends was rescheduled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no ncclSend or ncclRecv"), std::string::npos) << e.what();
  }
  // The twin's own shape (sends grouped with receives) is not GPipe: refused, not reshuffled.
  GpipeStage g0(0), g1(1);
  const uint32_t launch = id("cudaLaunchKernel"), sr = id("ncclDevKernel_SendRecv"), send = id("ncclSend"),
                 recv = id("ncclRecv"), start = id("ncclGroupStart"), end = id("ncclGroupEnd");
  for (GpipeStage* st : {&g0, &g1}) {
    const uint64_t at = st->next_call();
    st->records.push_back(nccl_call(start, v1::NCCL_GROUP_START, st->rank, -1, at, at + 1));
    st->records.push_back(nccl_call(send, v1::NCCL_SEND, st->rank, 1 - st->rank, at + 2, at + 3, 1));
    st->records.push_back(nccl_call(recv, v1::NCCL_RECV, st->rank, 1 - st->rank, at + 4, at + 5, 1));
    st->records.push_back(nccl_call(end, v1::NCCL_GROUP_END, st->rank, -1, at + 6, at + 9));
    st->records.push_back(gantt_test::api(launch, 7, at + 7, at + 8, st->corr));
    st->records.push_back(gantt_test::kernel(sr, 13, st->corr++, 0, 0, 1000, 1100));
  }
  const std::string a = write("a.gpuh", with_strings(g0.records)), b = write("b.gpuh", with_strings(g1.records));
  try {
    predict({a, b}, {parse_change("pipeline=1f1b")}, {}, dir_ + "/grouped.gpuh");
    ADD_FAILURE() << "a grouped exchange was rescheduled";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("already groups"), std::string::npos) << e.what();
  }
}

TEST_F(WhatifPipeline, HostilePeersAndRanksAreNotTransfers) {
  // A send to a rank past the communicator, one from a negative rank and one to itself: none is
  // matched, the replay keeps their kernels' recorded times, nothing wraps.
  GpipeStage s(0);
  const uint32_t launch = id("cudaLaunchKernel"), sr = id("ncclDevKernel_SendRecv"), send = id("ncclSend");
  s.kernel(launch, id("work"), 600, 700);
  for (const auto& [rank, peer] : std::vector<std::pair<int32_t, int32_t>>{{0, 7}, {-5, 1}, {0, INT32_MAX}, {1, -1}}) {
    const uint64_t at = s.next_call();
    s.records.push_back(nccl_call(send, v1::NCCL_SEND, rank, peer, at, at + 8));
    s.records.push_back(gantt_test::api(launch, 7, at + 1, at + 7, s.corr));
    s.records.push_back(gantt_test::kernel(sr, 13, s.corr++, 0, 0, 1000 + at, 1100 + at));
  }
  const std::string in = write("hostile.gpuh", with_strings(s.records));
  const Prediction p = predict({in}, {parse_change("scale=work:1")}, {}, dir_ + "/hostile_out.gpuh");
  EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].unchanged.ns());
  for (const std::string& n : p.notes) EXPECT_EQ(n.find("matched across the ranks"), std::string::npos) << n;
  EXPECT_THROW(predict({in}, {parse_change("pipeline=1f1b")}, {}, dir_ + "/hostile_1f1b.gpuh"), std::invalid_argument);
}

TEST_F(WhatifPredict, AHostileDurationSaturatesInsteadOfWrapping) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), k = id("k");
  const uint64_t huge = uint64_t{1} << 62;
  const std::string in = write("in.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), kernel(k, 13, 1, 0, 0, 1015, huge),
      api(launch, 7, 1020, 1030, 2), kernel(k, 13, 2, 0, 0, huge, huge + huge / 2)}));
  const Prediction p = predict({in}, {parse_change("scale=k:1000")}, {}, dir_ + "/out.gpuh");
  EXPECT_GE(p.sections[0].predicted.last_ns, p.sections[0].predicted.first_ns);
  const Model m = load({dir_ + "/out.gpuh"});
  for (size_t e = 0; e < m.events.size(); ++e) EXPECT_LE(m.events.start_ns[e], m.events.end_ns[e]);
}

// A CUPTI synchronisation record names its context, not its device: a capture's records of
// device 1 say device 0 beside context 2. The wait is on device 1's stream 14 all the same.
TEST_F(WhatifPredict, AnEventWaitOnTheSecondDeviceIsFoundByItsContext) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), a = id("producer"), b = id("consumer");
  auto on_device_1 = [](v1::Record r) {
    r.mutable_kernel()->set_device(1);
    r.mutable_kernel()->set_context(2);
    return r;
  };
  v1::Record ev;
  ev.mutable_cuda_event()->set_event_id(9);
  ev.mutable_cuda_event()->set_device(1);
  ev.mutable_cuda_event()->set_context(2);
  ev.mutable_cuda_event()->set_stream(13);
  ev.mutable_cuda_event()->set_correlation_id(2);
  v1::Record wait;
  wait.mutable_sync()->set_type(v1::SYNC_STREAM_WAIT_EVENT);
  wait.mutable_sync()->set_context(2);  // device left 0, as the hook writes it
  wait.mutable_sync()->set_stream(14);
  wait.mutable_sync()->set_event_id(9);
  wait.mutable_sync()->set_correlation_id(3);
  wait.mutable_sync()->set_start_ns(1020);
  wait.mutable_sync()->set_end_ns(1021);
  const std::string in = write("in.gpuh", with_strings({
      gantt_test::h100(1), api(launch, 7, 1000, 1010, 1), on_device_1(kernel(a, 13, 1, 1005, 1015, 1015, 11015)), ev,
      wait, api(launch, 7, 1030, 1040, 4), on_device_1(kernel(b, 14, 4, 1035, 1036, 11015, 12015))}));
  const Prediction p = predict({in}, {parse_change("scale=producer:0.5")}, {}, dir_ + "/out.gpuh");
  EXPECT_EQ(p.sections[0].predicted.ns(), 6015u);  // 1036..2036 without the wait: 5,015 ns
}

// A step computed in two chunks, then both sent (a peer copy each) on the same stream: with
// overlap-copies each chunk's copy runs behind its own kernel on a copy stream, so the first
// copy overlaps the second kernel, and the next step's first kernel waits for the last copy
// (it overwrites what the copies read). An unrelated copy earlier gives copies a launch latency.
TEST_F(WhatifPredict, OverlapCopiesShipsEachChunkBehindItsOwnKernel) {
  using gantt_test::api;
  using gantt_test::kernel;
  using gantt_test::memcpy_rec;
  const uint32_t launch = id("cudaLaunchKernel"), copy = id("cudaMemcpyPeerAsync"), k = id("produce");
  std::vector<v1::Record> records = {api(copy, 7, 500, 510, 1), memcpy_rec(v1::COPY_HTOD, 1 << 20, 14, 1, 520, 900)};
  // Two steps: k k c c, at 1000 and at 20000; each kernel and copy 1000 ns, back to back.
  uint32_t corr = 2;
  for (uint64_t step : {uint64_t{1000}, uint64_t{20000}}) {
    for (int i = 0; i < 2; ++i, ++corr) {
      records.push_back(api(launch, 7, step + 10 * corr, step + 10 * corr + 5, corr));
      records.push_back(kernel(k, 13, corr, 0, 0, step + 100 + 1000 * i, step + 1100 + 1000 * i));
    }
    for (int i = 0; i < 2; ++i, ++corr) {
      records.push_back(api(copy, 7, step + 10 * corr, step + 10 * corr + 5, corr));
      records.push_back(memcpy_rec(v1::COPY_PTOP, 1 << 20, 13, corr, step + 2100 + 1000 * i, step + 3100 + 1000 * i));
    }
  }
  const std::string in = write("in.gpuh", with_strings(records));
  const Prediction p = predict({in}, {parse_change("overlap-copies")}, {}, dir_ + "/out.gpuh");
  const Model m = load({dir_ + "/out.gpuh"});
  std::vector<size_t> kernels, copies;
  for (size_t e = 0; e < m.events.size(); ++e) {
    if (m.events.kind[e] == EventKind::kKernel) kernels.push_back(e);
    if (m.events.kind[e] == EventKind::kMemcpy && m.events.copy_kind[e] == v1::COPY_PTOP) copies.push_back(e);
  }
  ASSERT_EQ(kernels.size(), 4u);
  ASSERT_EQ(copies.size(), 4u);
  auto by_start = [&](size_t a, size_t b) { return m.events.start_ns[a] < m.events.start_ns[b]; };
  std::sort(kernels.begin(), kernels.end(), by_start);
  std::sort(copies.begin(), copies.end(), by_start);
  for (size_t c : copies) EXPECT_NE(m.events.stream[c], 13u);  // on a copy stream of their own
  // Chunk 0's copy starts when kernel 0 ends, while kernel 1 runs; chunk 1's after kernel 1.
  EXPECT_EQ(m.events.start_ns[copies[0]], m.events.end_ns[kernels[0]]);
  EXPECT_LT(m.events.start_ns[copies[0]], m.events.end_ns[kernels[1]]);
  EXPECT_GE(m.events.start_ns[copies[1]], m.events.end_ns[kernels[1]]);
  // The next step's first kernel waits for the last copy of this one.
  EXPECT_GE(m.events.start_ns[kernels[2]], m.events.end_ns[copies[1]]);
  EXPECT_LT(p.sections[0].predicted.ns(), p.sections[0].measured.ns());
  bool noted = false;
  for (const std::string& n : p.notes) noted |= n.find("4 copies in 2 runs on 1 copy stream") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace gantt::whatif

namespace gantt::whatif {
namespace {

// H100: 132 SMs, 32 resident blocks, 64 warps and 64 K registers an SM, 1024 threads a block.
TEST_F(WhatifPredict, BlockSizeTimesAKernelByItsWavesOfBlocks) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), tiny = id("tiny"), other = id("other");
  // 33,792 blocks of 32 threads: 32 resident a SM (the block limit), 4,224 at once, 8 waves
  // of 1 us. `other` is not matched and keeps its time.
  v1::Record small_blocks = kernel(tiny, 13, 1, 0, 0, 2000, 10000, 32);
  small_blocks.mutable_kernel()->set_grid_x(33792);
  const std::string in = write("in.gpuh", with_strings({
      api(launch, 7, 1000, 1010, 1), small_blocks,
      api(launch, 7, 1020, 1030, 2), kernel(other, 13, 2, 0, 0, 10000, 11000),
      api(sync, 7, 1040, 11100, 3), stream_sync(13, 3, 1040, 11100)}));
  const auto predicted = [&](const std::string& change, const std::string& out) {
    const Prediction p = predict({in}, {parse_change(change)}, {}, dir_ + "/" + out);
    EXPECT_EQ(p.sections[0].unchanged.ns(), p.sections[0].measured.ns());
    return std::make_pair(p, load({dir_ + "/" + out}));
  };
  {
    // The suggested size: 1024 threads (2 resident: all 2048 threads of an SM), 1,056 blocks
    // over 264 at once: 4 waves, 4 us.
    const auto [p, m] = predicted("block-size=tiny", "out.gpuh");
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_NE(p.notes[0].find("from 32 to 1024 threads a block, occupancy 50% to 100%), 8 waves of blocks to 4"), std::string::npos)
        << p.notes[0];
    EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].measured.ns() - 4000);
    uint32_t k = kNone, o = kNone;
    for (uint32_t e = 0; e < m.events.size(); ++e) {
      if (m.string(m.events.name[e]) == "tiny") k = e;
      if (m.string(m.events.name[e]) == "other") o = e;
    }
    ASSERT_NE(k, kNone);
    ASSERT_NE(o, kNone);
    EXPECT_EQ(m.events.end_ns[k] - m.events.start_ns[k], 4000u);
    EXPECT_EQ(m.events.grid[k][0], 1056);
    EXPECT_EQ(m.events.block[k][0], 1024);
    EXPECT_EQ(m.events.end_ns[o] - m.events.start_ns[o], 1000u);
  }
  {
    // 64 threads: still 32 resident (4,224 at once), 16,896 blocks: 4 waves.
    const auto [p, m] = predicted("block-size=tiny:64", "out64.gpuh");
    EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].measured.ns() - 4000);
  }
  {
    // 96 threads: 21 resident by warps (63 of 64), 11,264 blocks over 2,772 at once: 5 waves.
    const auto [p, m] = predicted("block-size=tiny:96", "out96.gpuh");
    EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].measured.ns() - 3000);
  }
  EXPECT_THROW(predict({in}, {parse_change("block-size=tiny:2048")}, {}, dir_ + "/big.gpuh"), std::invalid_argument)
      << "a block over the device's 1024 threads does not launch";
  EXPECT_THROW(predict({in}, {parse_change("block-size=nothing")}, {}, dir_ + "/none.gpuh"), std::invalid_argument);
}

// H100: 132 SMs; 256-thread blocks of 32 registers, 8 resident an SM: 1,056 blocks a wave.
TEST_F(WhatifPredict, FuseMakesARunOfLaunchesOneKernelTimedByItsWaves) {
  using gantt_test::api;
  using gantt_test::kernel;
  const uint32_t launch = id("cudaLaunchKernel"), sync = id("cudaStreamSynchronize"), tiny = id("tiny"), other = id("other");
  // Host launches every 10 us, each 5 us of call. Four `tiny` kernels of 80 blocks, 2 us each
  // (one wave each), on stream 13; then `other`; then two `tiny` of 528 blocks with 512
  // threads (another shape: 4 resident an SM, 528 a wave), then the sync.
  std::vector<v1::Record> records;
  uint32_t corr = 1;
  uint64_t t = 1000;
  auto add = [&](uint32_t name, int grid, int block) {
    records.push_back(api(launch, 7, t, t + 5000, corr));
    v1::Record k = kernel(name, 13, corr, 0, 0, t + 6000, t + 8000, block);
    k.mutable_kernel()->set_grid_x(grid);
    records.push_back(k);
    t += 10000, ++corr;
  };
  for (int i = 0; i < 4; ++i) add(tiny, 80, 256);
  add(other, 80, 256);
  add(tiny, 528, 512);
  add(tiny, 528, 512);
  records.push_back(api(sync, 7, t, t + 10000, corr));
  records.push_back(stream_sync(13, corr, t, t + 10000));
  const std::string in = write("in.gpuh", with_strings(records));
  const auto kernels_of = [](const Model& m) {
    std::vector<std::pair<std::string, uint64_t>> out;  // (name, duration) in start order
    std::vector<size_t> order;
    for (size_t e = 0; e < m.events.size(); ++e)
      if (m.events.kind[e] == EventKind::kKernel) order.push_back(e);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.events.start_ns[a] < m.events.start_ns[b]; });
    for (size_t e : order) out.emplace_back(m.string(m.events.name[e]), m.events.end_ns[e] - m.events.start_ns[e]);
    return out;
  };
  {
    const Prediction p = predict({in}, {parse_change("fuse=tiny")}, {}, dir_ + "/out.gpuh");
    EXPECT_EQ(p.sections[0].unchanged.ns(), p.sections[0].measured.ns());
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_NE(p.notes[0].find("6 launches in 2 run(s) become 2 kernel(s) (the first over 320 blocks), 6 waves of blocks to 3"),
              std::string::npos)
        << p.notes[0];
    const Model m = load({dir_ + "/out.gpuh"});
    // 320 blocks in one wave of 1,056: 2 us; `other` as measured; 1,056 blocks of 512 threads
    // over 528 a wave: 2 waves, 4 us.
    const std::vector<std::pair<std::string, uint64_t>> want = {{"tiny", 2000}, {"other", 2000}, {"tiny", 4000}};
    EXPECT_EQ(kernels_of(m), want);
    for (size_t e = 0; e < m.events.size(); ++e) {
      if (m.events.kind[e] == EventKind::kKernel && m.string(m.events.name[e]) == "tiny" && m.events.block[e][0] == 256) {
        EXPECT_EQ(m.events.grid[e][0], 320);
      }
    }
    // Three launch calls of the first run and one of the second go, with the host time before
    // each (10 us a launch: 40 us).
    EXPECT_EQ(p.sections[0].predicted.ns(), p.sections[0].measured.ns() - 40000);
  }
  {
    // At most two launches a kernel: the first run becomes two kernels of 160 blocks.
    const Prediction p = predict({in}, {parse_change("fuse=tiny:2")}, {}, dir_ + "/out2.gpuh");
    const std::vector<std::pair<std::string, uint64_t>> want = {{"tiny", 2000}, {"tiny", 2000}, {"other", 2000}, {"tiny", 4000}};
    EXPECT_EQ(kernels_of(load({dir_ + "/out2.gpuh"})), want);
  }
  EXPECT_THROW(predict({in}, {parse_change("fuse=other")}, {}, dir_ + "/one.gpuh"), std::invalid_argument)
      << "a lone launch is no run";
  EXPECT_THROW(predict({in}, {parse_change("fuse=nothing")}, {}, dir_ + "/none.gpuh"), std::invalid_argument);
}

// ---- the memory changes -----------------------------------------------------------------

v1::Record memory(v1::MemoryOp op, uint64_t address, uint64_t bytes, uint64_t t) {
  v1::Record r;
  r.mutable_memory()->set_op(op);
  r.mutable_memory()->set_address(address);
  r.mutable_memory()->set_bytes(bytes);
  r.mutable_memory()->set_time_ns(static_cast<int64_t>(t));
  r.mutable_memory()->set_memory_kind(v1::MEMORY_DEVICE);
  return r;
}
v1::Record memory_tag(uint64_t address, uint32_t category, uint64_t t) {
  v1::Record r;
  r.mutable_memory_tag()->set_address(address);
  r.mutable_memory_tag()->set_category_id(category);
  r.mutable_memory_tag()->set_time_ns(static_cast<int64_t>(t));
  return r;
}
v1::Record memory_use(uint64_t address, uint64_t t) {
  v1::Record r;
  r.mutable_memory_use()->set_address(address);
  r.mutable_memory_use()->set_time_ns(static_cast<int64_t>(t));
  return r;
}
uint64_t peak_of(const std::string& path) {
  const std::vector<analysis::DeviceMemory> report = analysis::memory_report(load({path}));
  return report.empty() ? 0 : report[0].peak_bytes;
}

// A forward pass makes four activations of 100 bytes (A0-A3, tagged "act") and the backward
// pass frees them in reverse; a 300-byte table T is used once at the start and held to the
// end, a 10-byte P used before the peak and after it.
class WhatifMemory : public WhatifPredict {
 protected:
  std::string capture() {
    using gantt_test::api;
    const uint32_t call = id("cudaMalloc"), act = id("act");
    std::vector<v1::Record> r;
    r.push_back(api(call, 7, 1000, 1010, 1));
    r.push_back(memory(v1::MEMORY_OP_ALLOC, 0x100000, 300, 1005));  // T
    r.push_back(memory(v1::MEMORY_OP_ALLOC, 0x200000, 10, 1006));    // P
    r.push_back(memory_use(0x100000, 1060));
    r.push_back(memory_use(0x200000, 1070));
    for (uint64_t i = 0; i < 4; ++i) {
      r.push_back(memory(v1::MEMORY_OP_ALLOC, 0x1000 * (i + 1), 100, 1100 + 100 * i));
      r.push_back(memory_tag(0x1000 * (i + 1), act, 1100 + 100 * i));
    }
    for (uint64_t i = 0; i < 4; ++i) r.push_back(memory(v1::MEMORY_OP_FREE, 0x1000 * (4 - i), 0, 2000 + 100 * i));
    r.push_back(memory_use(0x200000, 2500));
    r.push_back(memory(v1::MEMORY_OP_FREE, 0x100000, 0, 9000));
    r.push_back(memory(v1::MEMORY_OP_FREE, 0x200000, 0, 9000));
    r.push_back(api(call, 7, 8990, 9010, 2));
    return write("mem.gpuh", with_strings(r));
  }
};

TEST_F(WhatifMemory, CheckpointKeepsOneInKAndMakesASegmentAgainWhenTheBackwardPassReachesIt) {
  const std::string in = capture();
  // All four activations live at 1400-2000 beside T and P: 710.
  EXPECT_EQ(peak_of(in), 710u);
  // K = 2 keeps A1 and A3. Forward: A0 freed at 1201, A2 at 1401; at 1400 A1, A2, A3 live
  // (300). Backward: A3 freed at 2000, A2 made again at 2001 and freed at 2100 (A1 and A2 live,
  // 200), A1 freed at 2200, A0 made again at 2201. The peak: 310 + 300.
  const Prediction p = predict({in}, {parse_change("checkpoint=^act$:2")}, {}, dir_ + "/out.gpuh");
  EXPECT_EQ(peak_of(dir_ + "/out.gpuh"), 610u);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("2 made again"), std::string::npos) << p.notes[0];
  // Every allocation is freed once: the ones made again too.
  const Model m = load({dir_ + "/out.gpuh"});
  size_t allocs = 0, frees = 0;
  for (size_t i = 0; i < m.memory.size(); ++i) (m.memory.op[i] == v1::MEMORY_OP_ALLOC ? allocs : frees)++;
  EXPECT_EQ(allocs, 8u);
  EXPECT_EQ(frees, 8u);
  // The default K is the square root of the run: 2 here, the same prediction.
  predict({in}, {parse_change("checkpoint=act")}, {}, dir_ + "/default.gpuh");
  EXPECT_EQ(peak_of(dir_ + "/default.gpuh"), 610u);
  EXPECT_THROW(predict({in}, {parse_change("checkpoint=weights")}, {}, dir_ + "/none.gpuh"), std::invalid_argument);
}

TEST_F(WhatifMemory, FreeIdleFreesWhatIsHeldUnusedAtThePeakAfterItsLastUse) {
  const std::string in = capture();
  // T (last used at 1060, held to 9000) goes after its use; P, used after the peak, stays:
  // the activations and P, 410 (T and P at the start: 310).
  predict({in}, {parse_change("free-idle")}, {}, dir_ + "/out.gpuh");
  EXPECT_EQ(peak_of(dir_ + "/out.gpuh"), 410u);
  // With checkpointing as well: 10 + 300, and T and P at the start, 310.
  predict({in}, {parse_change("free-idle"), parse_change("checkpoint=act:2")}, {}, dir_ + "/both.gpuh");
  EXPECT_EQ(peak_of(dir_ + "/both.gpuh"), 310u);
}

// A hostile file: sizes that sum past any integer, times at the top of the format's range.
// Both changes run to the end (UBSan would name a wrapped sum or time) and write a capture.
TEST_F(WhatifMemory, HostileSizesAndTimesNeitherWrapNorCrash) {
  using gantt_test::api;
  const uint32_t call = id("cudaMalloc"), act = id("act");
  const uint64_t top = static_cast<uint64_t>(INT64_MAX) - 2;
  std::vector<v1::Record> r{api(call, 7, 1000, 1010, 1)};
  // Their writers: two kernels of over half the format's range each (their sum passes it), and
  // one that starts before zero.
  const uint64_t half = static_cast<uint64_t>(INT64_MAX) / 2 + 10;
  r.push_back(gantt_test::kernel(id("w"), 13, 1, 0, 0, 1, half));
  r.push_back(gantt_test::kernel(id("w"), 13, 2, 0, 0, 1, half));
  {
    v1::Record k = gantt_test::kernel(id("w"), 13, 3, 0, 0, 1, 1000);
    k.mutable_kernel()->set_start_ns(INT64_MIN + 1);
    r.push_back(k);
  }
  for (uint64_t i = 0; i < 3; ++i) {
    r.push_back(memory(v1::MEMORY_OP_ALLOC, 0x1000 * (i + 1), UINT64_MAX, 1100 + i));
    r.push_back(memory_tag(0x1000 * (i + 1), act, 1100 + i));
    v1::Record use = memory_use(0x1000 * (i + 1), 1100 + i);
    use.mutable_memory_use()->set_correlation_id(static_cast<uint32_t>(i + 1));
    r.push_back(use);
  }
  for (uint64_t i = 0; i < 3; ++i) r.push_back(memory(v1::MEMORY_OP_FREE, 0x1000 * (3 - i), 0, top - 100 + 50 * i));
  const std::string in = write("hostile.gpuh", with_strings(r));
  // K = 3 keeps the last of three: the first two are made again, their writers' times summed.
  const Prediction p = predict({in}, {parse_change("checkpoint=act:3"), parse_change("free-idle")}, {}, dir_ + "/out.gpuh");
  EXPECT_GT(p.records_written, 0u);
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("2 made again"), std::string::npos) << p.notes[0];
  EXPECT_EQ(p.notes[0].find("measured: -"), std::string::npos) << "a wrapped sum: " << p.notes[0];
  EXPECT_NO_THROW(load({dir_ + "/out.gpuh"}));
}

TEST_F(WhatifMemory, FreeIdleNeedsTheRecordedUses) {
  using gantt_test::api;
  const uint32_t call = id("cudaMalloc");
  const std::string in = write("nouse.gpuh", with_strings({api(call, 7, 1000, 1010, 1), memory(v1::MEMORY_OP_ALLOC, 0x1000, 100, 1005),
                                                           memory(v1::MEMORY_OP_FREE, 0x1000, 0, 9000), api(call, 7, 8990, 9010, 2)}));
  EXPECT_THROW(predict({in}, {parse_change("free-idle")}, {}, dir_ + "/out.gpuh"), std::invalid_argument);
}

}  // namespace
}  // namespace gantt::whatif
