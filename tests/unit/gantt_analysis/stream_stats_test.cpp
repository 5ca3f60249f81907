// stream_stats() against summarize() of the loaded capture: the same report, for any number
// of decoding threads, on a capture made to exercise the joins and the shares' seams.
#include "gantt/analysis/stream_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include <gpuhook/capture.h>

#include "../../support/fake_device.h"
#include "../gantt/fabricate.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/summary.h"

namespace gantt::analysis {
namespace {

namespace v1 = gpuhook::v1;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/stream_" + std::to_string(::getpid()) + "_" + name + ".gpuh";
}

struct Spec {
  uint32_t devices = 3;
  uint64_t activities = 40000;
  bool nccl = false;
  bool merged = false;
  bool nccl_linked = false;  // all-reduces every 40 activities, joined through external ids
  bool ranges = false;       // NVTX ranges around the launches of both threads, nested, every 1000 activities
  std::string inner_range = "forward";  // the name of the range nested in "step"
  size_t chunk_bytes = 64 << 10;  // many chunks, so that several threads get shares
};

// Kernels, copies and memsets on several devices and streams, with idle gaps of equal
// lengths (ties), launches that come after their kernels, kernels whose launch is lost,
// unknown queued stamps, zero-length and unknown-time activities, API calls across gaps.
std::string write_capture(const std::string& name, const Spec& spec) {
  const std::string path = temp_path(name);
  std::remove(path.c_str());
  gpuhook::WriterOptions wo;
  wo.chunk_bytes = spec.chunk_bytes;
  std::string err;
  auto w = gpuhook::CaptureWriter::create(path, wo, &err);
  EXPECT_TRUE(w) << err;
  std::mt19937_64 rng(7);
  const auto header = [&] {
    v1::Record h;
    h.mutable_header()->set_format_version(gpuhook::kFormatVersion);
    h.mutable_header()->set_host_name("stream-host");
    h.mutable_header()->set_pid(77);
    h.mutable_header()->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
    w->write(h);
  };
  header();
  for (uint32_t d = 0; d < spec.devices; ++d) {
    v1::Record dev;
    dev.mutable_device()->set_ordinal(d);
    dev.mutable_device()->set_name("Fabricated GPU");
    gpuhook::test::set_sm_limits(dev.mutable_device(), 9);
    w->write(dev);
  }
  std::vector<uint32_t> names;
  for (int i = 0; i < 12; ++i) names.push_back(w->intern("_Z6kernelILi" + std::to_string(i) + "EEvPf"));
  names.push_back(w->intern("plain_kernel"));
  const uint32_t launch = w->intern("cudaLaunchKernel"), sync = w->intern("cudaStreamSynchronize");
  const uint32_t memcpy_sync = w->intern("cudaMemcpy"), memcpy_async = w->intern("cudaMemcpyAsync");
  const uint32_t all_reduce = w->intern("ncclAllReduce"),
                 nccl_kernel = w->intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const uint32_t step = w->intern("step"), forward = w->intern(spec.inner_range), load = w->intern("load");
  uint64_t external = 1;
  uint64_t t = 5'000'000'000ull;
  uint32_t corr = 1;
  std::vector<v1::Record> late_launches;
  for (uint64_t i = 0; i < spec.activities; ++i) {
    const uint32_t dev = static_cast<uint32_t>(rng() % spec.devices), stream = 7 + static_cast<uint32_t>(rng() % 4);
    const uint64_t len = 1000 + rng() % 20000, start = t + rng() % 500;
    const uint64_t gap = rng() % 5 == 0 ? 50'000 : 0;  // equal idle gaps: ties in the largest ones
    t += len / 3 + gap;
    v1::Record api;
    auto* a = api.mutable_api();
    a->set_domain(v1::API_DOMAIN_RUNTIME);
    a->set_name_id(launch);
    a->set_thread_id(4242 + rng() % 2);
    a->set_correlation_id(corr);
    a->set_start_ns(static_cast<int64_t>(start - 3000));
    a->set_end_ns(static_cast<int64_t>(start - 3000 + 2500 + (gap ? gap / 2 : 0)));
    const uint64_t kind = rng() % 10;
    v1::Record r;
    if (spec.nccl_linked && i % 40 == 0) {
      // The hook's record of the call, CUPTI's external id around its launch, the kernel.
      v1::Record call;
      auto* n = call.mutable_nccl();
      n->set_op(v1::NCCL_ALL_REDUCE);
      n->set_name_id(all_reduce);
      n->set_bytes(1024 * (1 + rng() % 4096));
      n->set_thread_id(4242);
      n->set_device(static_cast<int32_t>(dev));
      n->set_start_ns(static_cast<int64_t>(start - 3500));
      n->set_end_ns(static_cast<int64_t>(start - 200));
      n->set_external_id(external);
      w->write(call);
      w->write(gantt_test::external(external++, corr));  // CUPTI's record of the hook's id
      auto* k = r.mutable_kernel();
      k->set_name_id(nccl_kernel);
      k->set_device(dev);
      k->set_stream(stream);
      k->set_correlation_id(corr);
      k->set_queued_ns(static_cast<int64_t>(start - 900));
      k->set_start_ns(static_cast<int64_t>(start));
      k->set_end_ns(static_cast<int64_t>(start + len));
    } else if (kind < 7) {
      auto* k = r.mutable_kernel();
      k->set_name_id(names[rng() % names.size()]);
      k->set_device(dev);
      k->set_stream(stream);
      k->set_correlation_id(corr);
      if (rng() % 8 != 0) k->set_queued_ns(static_cast<int64_t>(start - 1000 - rng() % 1000));
      if (rng() % 200 != 0) k->set_start_ns(static_cast<int64_t>(start));
      k->set_end_ns(static_cast<int64_t>(rng() % 300 == 0 ? start : start + len));
    } else if (kind < 9) {
      a->set_name_id(corr % 3 == 0 ? memcpy_sync : memcpy_async);
      auto* c = r.mutable_memcpy();
      c->set_device(dev);
      c->set_stream(stream);
      c->set_correlation_id(corr);
      c->set_copy_kind(static_cast<v1::CopyKind>(1 + rng() % 3));
      c->set_bytes(1 + rng() % (1 << 24));
      c->set_start_ns(static_cast<int64_t>(start));
      c->set_end_ns(static_cast<int64_t>(start + len / 2));
    } else {
      auto* m = r.mutable_memset();
      m->set_device(dev);
      m->set_stream(stream);
      m->set_correlation_id(corr);
      m->set_bytes(4096);
      m->set_start_ns(static_cast<int64_t>(start));
      m->set_end_ns(static_cast<int64_t>(start + 700));
    }
    ++corr;
    const uint64_t fate = rng() % 50;
    if (fate == 0) {
      // lost launch: no API record
    } else if (fate < 4) {
      late_launches.push_back(api);  // written after its kernel, a few hundred records later
    } else {
      w->write(api);
    }
    w->write(r);
    if (late_launches.size() > 40) {
      for (const auto& l : late_launches) w->write(l);
      late_launches.clear();
    }
    if (i % 1000 == 999) {
      v1::Record s;
      s.mutable_api()->set_domain(v1::API_DOMAIN_RUNTIME);
      s.mutable_api()->set_name_id(sync);
      s.mutable_api()->set_thread_id(4242);
      s.mutable_api()->set_correlation_id(corr++);
      s.mutable_api()->set_start_ns(static_cast<int64_t>(t));
      s.mutable_api()->set_end_ns(static_cast<int64_t>(t + 400'000));
      w->write(s);
      t += 400'000;  // the GPU waits for the host: the largest gaps, named after this call
    }
    if (spec.merged && i == spec.activities / 2) header();
    // Thread 4242: "step" over 900 of each 1000 activities, "forward" nested in its middle;
    // thread 4243: "load" over the first half. Launch calls fall inside, outside and across.
    const auto range = [&](v1::RangeType type, uint32_t name, uint64_t thread) {
      v1::Record g;
      g.mutable_range()->set_type(type);
      g.mutable_range()->set_name_id(name);
      g.mutable_range()->set_thread_id(thread);
      g.mutable_range()->set_time_ns(static_cast<int64_t>(t));
      w->write(g);
    };
    if (spec.ranges && i % 1000 == 0) range(v1::RANGE_PUSH, step, 4242), range(v1::RANGE_PUSH, load, 4243);
    if (spec.ranges && i % 1000 == 200) range(v1::RANGE_PUSH, forward, 4242);
    if (spec.ranges && i % 1000 == 500) range(v1::RANGE_POP, 0, 4243);
    if (spec.ranges && i % 1000 == 600) range(v1::RANGE_POP, 0, 4242);
    if (spec.ranges && i % 1000 == 900) range(v1::RANGE_POP, 0, 4242);
    if (spec.nccl && i == spec.activities / 3) {
      v1::Record n;
      n.mutable_nccl()->set_op(v1::NCCL_ALL_REDUCE);
      n.mutable_nccl()->set_bytes(1 << 20);
      w->write(n);
    }
  }
  for (const auto& l : late_launches) w->write(l);
  EXPECT_TRUE(w->close()) << w->last_error();
  return path;
}

std::string report_of(const StatsSummary& s, GroupBy by, Format f) {
  StatsOptions o;
  o.by = by;
  o.gaps = 5;
  return format_stats(report(s, o), f);
}

// What diagnose reads of a summary (the copies, the work without NCCL's kernels), and its report.
void expect_same_diagnose_figures(const StatsSummary& got, const StatsSummary& want, const std::string& what) {
  ASSERT_EQ(got.captures.size(), 1u);
  ASSERT_EQ(want.captures.size(), 1u);
  EXPECT_GT(want.captures[0].busy_ns_without_nccl, 0u);
  EXPECT_EQ(got.captures[0].busy_ns_without_nccl, want.captures[0].busy_ns_without_nccl) << what;
  const auto ordered = [](std::vector<DeviceRow> d) {
    std::sort(d.begin(), d.end(), [](const DeviceRow& a, const DeviceRow& b) { return a.device < b.device; });
    return d;
  };
  const std::vector<DeviceRow> g = ordered(got.devices), w = ordered(want.devices);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_GT(w[i].sync_copies, 0u);
    EXPECT_LT(w[i].sync_copies, w[i].copies);
    EXPECT_EQ(g[i].copies, w[i].copies) << what;
    EXPECT_EQ(g[i].copy_bytes, w[i].copy_bytes) << what;
    EXPECT_EQ(g[i].sync_copies, w[i].sync_copies) << what;
  }
  // The stream groups' kernels (stream-serialisation), where the summary has stream groups.
  const auto kernels = [](const StatsSummary& s) {
    std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> out;
    for (const SummaryGroup& row : s.groups[static_cast<size_t>(GroupBy::kStream)])
      out[{row.device, row.stream}] = {row.kernels, row.kernel_ns};
    return out;
  };
  EXPECT_EQ(kernels(got), kernels(want)) << what;
  if (want.grouped[static_cast<size_t>(GroupBy::kStream)]) {
    EXPECT_GT(kernels(want).begin()->second.first, 0u);
  }
  EXPECT_EQ(format_diagnose(diagnose(got), Format::kJson), format_diagnose(diagnose(want), Format::kJson)) << what;
}

TEST(StreamStats, EqualsTheLoadedCaptureForAnyNumberOfThreads) {
  const std::string path = write_capture("mixed", {});
  const Model model = load({path});
  ASSERT_GT(model.captures.front().integrity.chunks, 8u);
  for (GroupBy by : {GroupBy::kKernel, GroupBy::kStream, GroupBy::kDevice}) {
    const StatsSummary want = summarize(model, {by}, 5);
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
      StreamStatsOptions o;
      o.by = {by};
      o.gaps = 5;
      o.threads = threads;
      std::string why;
      const auto got = stream_stats(path, o, &why);
      ASSERT_TRUE(got) << why;
      EXPECT_EQ(got->threads, threads);
      EXPECT_TRUE(got->busy_exact);
      for (Format f : {Format::kText, Format::kJson})
        EXPECT_EQ(report_of(got->summary, by, f), report_of(want, by, f)) << to_string(by) << " with " << threads << " threads";
      EXPECT_EQ(got->summary.launch_to_queued.count(), want.launch_to_queued.count());
      expect_same_diagnose_figures(got->summary, want, std::to_string(threads) + " threads");
      EXPECT_EQ(got->summary.devices.size(), 3u);
      EXPECT_EQ(got->summary.devices.front().gaps.size(), 5u);
      EXPECT_NE(got->summary.devices.front().gaps.front().host.find("cudaStreamSynchronize"), std::string::npos)
          << got->summary.devices.front().gaps.front().host;
    }
  }
  std::remove(path.c_str());
}

TEST(StreamStats, NcclCallsJoinTheirKernelsAsWhenLoaded) {
  Spec spec;
  spec.activities = 20000;
  spec.nccl_linked = true;
  const std::string path = write_capture("nccl_linked", spec);
  const Model model = load({path});
  ASSERT_GT(std::count(model.events.kind.begin(), model.events.kind.end(), EventKind::kNccl), 100);
  for (GroupBy by : {GroupBy::kKernel, GroupBy::kStream, GroupBy::kDevice}) {
    const StatsSummary want = summarize(model, {by}, 5);
    ASSERT_EQ(want.nccl.size(), 1u);
    ASSERT_GT(want.nccl.front().bytes, 0u);
    for (unsigned threads : {1u, 3u}) {
      StreamStatsOptions o;
      o.by = {by};
      o.gaps = 5;
      o.threads = threads;
      std::string why;
      const auto got = stream_stats(path, o, &why);
      ASSERT_TRUE(got) << why;
      for (Format f : {Format::kText, Format::kJson})
        EXPECT_EQ(report_of(got->summary, by, f), report_of(want, by, f)) << to_string(by) << " with " << threads << " threads";
      // NCCL's kernels are work on their devices, but not the rank's own work.
      expect_same_diagnose_figures(got->summary, want, std::to_string(threads) + " threads");
    }
  }
  std::remove(path.c_str());
}

TEST(StreamStats, WhatNeedsTheWholeTimelineIsLeftToTheLoader) {
  std::string why;
  StreamStatsOptions o;
  o.by = {GroupBy::kGraph};
  EXPECT_FALSE(stream_stats("/nonexistent", o, &why));
  EXPECT_NE(why.find("--by graph"), std::string::npos) << why;

  o.by = {GroupBy::kKernel};
  for (const auto& [name, spec] : {std::pair<std::string, Spec>{"nccl", {3, 6000, true, false}},
                                   std::pair<std::string, Spec>{"merged", {3, 6000, false, true}}}) {
    const std::string path = write_capture(name, spec);
    for (unsigned threads : {1u, 4u}) {
      o.threads = threads;
      why.clear();
      EXPECT_FALSE(stream_stats(path, o, &why)) << name;
      EXPECT_NE(why.find(name == "nccl" ? "without external ids" : "merged"), std::string::npos) << why;
    }
    std::remove(path.c_str());
  }
}

// NVTX ranges: each launch's range path (--by range, diff's matches), from a first read of only
// the ranges, joined by correlation id as launches are; work read before its launch call
// waits for it, in its own share or another. NCCL's kernels' bytes join their range's row.
TEST(StreamStats, RangePathsAsWhenLoaded) {
  Spec spec;
  spec.activities = 20000;
  spec.ranges = true;
  spec.nccl_linked = true;
  const std::string path = write_capture("ranges", spec);
  const Model model = load({path});
  ASSERT_GT(model.ranges.size(), 40u);
  StatsSummary want = summarize(model, {GroupBy::kRange, GroupBy::kKernel}, 5);
  add_diff_samples(want, model);
  ASSERT_GE(want.groups[static_cast<size_t>(GroupBy::kRange)].size(), 4u);  // step, step/forward, load, (no range)
  for (unsigned threads : {1u, 3u}) {
    StreamStatsOptions o;
    o.by = {GroupBy::kRange, GroupBy::kKernel};
    o.gaps = 5;
    o.threads = threads;
    o.matches = true;
    std::string why;
    const auto got = stream_stats(path, o, &why);
    ASSERT_TRUE(got) << why;
    for (Format f : {Format::kText, Format::kJson})
      EXPECT_EQ(report_of(got->summary, GroupBy::kRange, f), report_of(want, GroupBy::kRange, f)) << threads << " threads";
    // The matches diff reads: the same keys, counts and totals.
    ASSERT_EQ(got->summary.matches.size(), want.matches.size());
    for (const auto& [key, m] : want.matches) {
      auto it = got->summary.matches.find(key);
      ASSERT_NE(it, got->summary.matches.end()) << m.range << " " << m.name;
      EXPECT_EQ(it->second.range, m.range);
      EXPECT_EQ(it->second.exec.count(), m.exec.count()) << m.range << " " << m.name;
      EXPECT_EQ(it->second.exec.total_ns(), m.exec.total_ns()) << m.range << " " << m.name;
      EXPECT_EQ(it->second.queue.count(), m.queue.count()) << m.range << " " << m.name;
    }
    ASSERT_EQ(got->summary.top_ranges.size(), want.top_ranges.size());
    for (const auto& [name, d] : want.top_ranges) EXPECT_EQ(got->summary.top_ranges.at(name).total_ns(), d.total_ns()) << name;
  }
  std::remove(path.c_str());
}

// diff -o's flame graph: the GPU time by range path and kernel, as gpu_stacks() gives it for
// the loaded capture, also when a range's name holds what a path text would split at.
TEST(StreamStats, FlameStacksAsWhenLoaded) {
  Spec spec;
  spec.activities = 20000;
  spec.ranges = true;
  spec.nccl_linked = true;
  spec.inner_range = "fwd/a;b\x1f";
  for (bool ranges : {true, false}) {
    spec.ranges = ranges;
    const std::string path = write_capture(ranges ? "stacks" : "stacks_flat", spec);
    const Model model = load({path});
    const Stacks want = gpu_stacks(model);
    ASSERT_GE(want.size(), ranges ? 20u : 10u);
    // The nested range's frame keeps its '/' (its ';' shown as ':') under "step".
    const bool nested = std::any_of(want.begin(), want.end(), [](const auto& s) { return s.first.rfind("step\x1f" "fwd/a:b", 0) == 0; });
    EXPECT_EQ(nested, ranges);
    for (unsigned threads : {1u, 3u}) {
      StreamStatsOptions o;
      o.by = {GroupBy::kKernel};
      o.threads = threads;
      o.matches = true;
      std::string why;
      const auto got = stream_stats(path, o, &why);
      ASSERT_TRUE(got) << why;
      EXPECT_EQ(got->stacks, want) << threads << " threads, ranges " << ranges;
    }
    std::remove(path.c_str());
  }
}

TEST(StreamStats, DamageEndsTheCaptureWhereTheLoaderEndsIt) {
  const std::string path = write_capture("damaged", {3, 20000});
  {
    // Flip a byte in the middle of the file: a chunk that does not decode.
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_TRUE(f);
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    std::fseek(f, size / 2, SEEK_SET);
    const int c = std::fgetc(f);
    std::fseek(f, size / 2, SEEK_SET);
    std::fputc(c ^ 0x5A, f);
    std::fclose(f);
  }
  const Model model = load({path});
  bool corrupt = false;
  const auto lines = integrity_warnings(model, &corrupt);
  ASSERT_TRUE(corrupt);
  const StatsSummary want = summarize(model, {GroupBy::kKernel}, 5);
  for (unsigned threads : {1u, 2u, 5u}) {
    StreamStatsOptions o;
    o.by = {GroupBy::kKernel};
    o.gaps = 5;
    o.threads = threads;
    std::string why;
    const auto got = stream_stats(path, o, &why);
    ASSERT_TRUE(got) << why;
    EXPECT_TRUE(got->corrupt);
    EXPECT_EQ(got->warnings, lines);
    EXPECT_EQ(report_of(got->summary, GroupBy::kKernel, Format::kJson), report_of(want, GroupBy::kKernel, Format::kJson));
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gantt::analysis
