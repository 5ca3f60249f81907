// merge_captures on files fabricated with CaptureWriter: offsets applied to every time,
// strings re-interned, one section per input (even one without a header), read back per rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "capture_builder.h"
#include "gantt/analysis/clock_scan.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/ranks_merge_test.XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// One rank: `steps` all-reduces whose kernels end at the same true instants; the file's
// clock reads true time + clock_offset. Kernel names differ per rank so ids must be remapped.
// `linked`: each call carries the hook's external id and its kernel's launch is tied to it (an
// ExternalCorrelation record), as the hook writes them, and a chunk holds a few steps, so that
// a scan reads the file in several shares.
void write_rank(const std::string& path, int rank, const std::string& boot, int64_t clock_offset, int steps,
                bool with_header = true, bool linked = false) {
  gpuhook::WriterOptions wo;
  if (linked) wo.chunk_bytes = 2048;
  gpuhook::test::CaptureBuilder b(path, wo);
  ASSERT_TRUE(b.ok()) << b.error();
  if (with_header) {
    auto h = b.add(&v1::Record::mutable_header);
    h->set_format_version(1);
    h->set_host_name("host-" + boot);
    h->set_boot_id(boot);
    h->set_rank(rank);
    h->set_start_monotonic_raw_ns(static_cast<uint64_t>(10'000'000'000 + clock_offset));
    h->set_start_realtime_ns(1'700'000'000'000'000'000ull);
    h->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK);
  }
  const std::string other = "rank_only_kernel_" + std::to_string(rank);
  const std::string host_fn = "rank_host_fn_" + std::to_string(rank);
  const std::string kernel = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
  for (const std::string& name : {std::string("ncclAllReduce"), std::string("cudaLaunchKernel"), other, host_fn,
                                  kernel})
    b.intern(name);  // every name defined before the first step, as this file always had them
  for (int s = 0; s < steps; ++s) {
    const uint64_t t = static_cast<uint64_t>(10'000'100'000 + s * 1'000'000 + clock_offset);
    const uint32_t corr = static_cast<uint32_t>(2 * s + 1);
    {
      auto n = b.nccl(v1::NCCL_ALL_REDUCE, "ncclAllReduce", 1, t, t + 4'000);
      n->set_count(256);
      n->set_datatype(7);
      n->set_comm_id(5);
      n->set_rank(rank);
      n->set_nranks(2);
      n->set_sequence(static_cast<uint64_t>(s));
      if (linked) n->set_external_id(static_cast<uint64_t>(s + 1));
    }
    if (linked) b.external(static_cast<uint64_t>(s + 1), corr);
    b.api("cudaLaunchKernel", 1, t + 1'000, t + 2'000, corr)->set_cbid(211);
    b.kernel(kernel, 0, corr, t + 3'000, t + 100'000);
    b.api("cudaLaunchKernel", 1, t + 300'000, t + 301'000, corr + 1)->set_cbid(211);
    b.kernel(other, 0, corr + 1, t + 400'000, t + 500'000);
    if (linked) {  // a scan refuses host functions on streams
      b.writer().maybe_flush(0);  // no record is open: each above was written at the end of its statement
      continue;
    }
    auto h = b.add(&v1::Record::mutable_host_function);  // host clock: shifted like the API calls
    h->set_name_id(b.intern(host_fn));
    h->set_thread_id(2);
    h->set_start_ns(static_cast<int64_t>(t + 600'000));
    h->set_end_ns(static_cast<int64_t>(t + 700'000));
  }
  ASSERT_TRUE(b.close());
}

TEST(Merge, AlignsReinternsAndSplitsBackPerRank) {
  TempDir dir;
  const std::string a = dir.path + "/a.gpuh", b = dir.path + "/b.gpuh", out = dir.path + "/job.gpuh";
  write_rank(a, 0, "A", 0, 8);
  write_rank(b, 1, "B", 3'000'000, 8);
  MergeResult r = merge_captures({a, b}, out);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.records_lost, 0u);
  EXPECT_EQ(r.alignment.captures[1].offset_ns, -3'000'000);
  EXPECT_THROW(merge_captures({a, b}, out), std::runtime_error);  // never overwrites

  Model m = load({out}, LoadOptions{});
  ASSERT_EQ(m.captures.size(), 2u);
  EXPECT_EQ(m.captures[1].path, out + "#1");
  EXPECT_EQ(m.captures[1].header.rank(), 1);
  EXPECT_EQ(m.captures[1].header.start_monotonic_raw_ns(), 10'000'000'000u);
  EXPECT_NE(m.captures[1].header.note().find("shifted -3.000000 ms"), std::string::npos) << m.captures[1].header.note();
  // Kernel names survived re-interning, per rank.
  std::vector<std::string> names;
  for (uint32_t e = 0; e < m.events.size(); ++e)
    if (m.events.capture[e] == 1 && m.events.kind[e] == EventKind::kKernel) names.emplace_back(m.display_name(e));
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "rank_only_kernel_1");
  // Host functions: re-interned and on the shifted host clock.
  uint32_t first_host_fn = kNone;
  for (uint32_t e = 0; e < m.events.size() && first_host_fn == kNone; ++e)
    if (m.events.capture[e] == 1 && m.events.kind[e] == EventKind::kHostFunc) first_host_fn = e;
  ASSERT_NE(first_host_fn, kNone);
  EXPECT_EQ(m.display_name(first_host_fn), "rank_host_fn_1");
  EXPECT_EQ(m.events.start_ns[first_host_fn], 10'000'700'000u);
  // Already aligned: the ends coincide, and a second alignment finds nothing left to shift.
  RankAlignment again = align_model_ranks(m);
  EXPECT_EQ(again.captures[1].offset_ns, 0);
  EXPECT_EQ(again.residual_max_ns, 0);
  auto coll = match_collectives(collective_calls(m));
  ASSERT_EQ(coll.size(), 8u);
  EXPECT_TRUE(coll[0].complete);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// merge's first pass scans each input for its collectives' ends: the same inputs, alignment
// and merged bytes as loading the input gives, with the file read in several shares.
TEST(Merge, ScannedClockInputsAreTheLoadedOnes) {
  TempDir dir;
  const std::string a = dir.path + "/a.gpuh", b = dir.path + "/b.gpuh";
  write_rank(a, 0, "A", 0, 200, true, true);
  write_rank(b, 1, "B", 3'000'000, 200, true, true);
  analysis::EventScanOptions so;
  so.threads = 3;
  for (const std::string& path : {a, b}) {
    std::string why_not;
    const auto scanned = analysis::scan_clock_input(path, so, &why_not);
    ASSERT_TRUE(scanned) << why_not;
    std::vector<RankClockInput> loaded = rank_clock_inputs(load({path}, LoadOptions{}));
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(scanned->host, loaded[0].host);
    EXPECT_EQ(scanned->boot_id, loaded[0].boot_id);
    EXPECT_EQ(scanned->start_monotonic_raw_ns, loaded[0].start_monotonic_raw_ns);
    EXPECT_EQ(scanned->start_realtime_ns, loaded[0].start_realtime_ns);
    ASSERT_EQ(scanned->ends.size(), 200u);
    ASSERT_EQ(scanned->ends.size(), loaded[0].ends.size());
    for (size_t i = 0; i < scanned->ends.size(); ++i) {
      EXPECT_EQ(scanned->ends[i].comm_id, loaded[0].ends[i].comm_id);
      EXPECT_EQ(scanned->ends[i].sequence, loaded[0].ends[i].sequence);
      EXPECT_EQ(scanned->ends[i].end_ns, loaded[0].ends[i].end_ns) << i;
    }
  }
  const MergeResult by_load = merge_captures({a, b}, dir.path + "/loaded.gpuh", LoadOptions{});
  const MergeResult by_scan = merge_captures({a, b}, dir.path + "/scanned.gpuh", [&so](const std::string& path) {
    std::string why_not;
    auto in = analysis::scan_clock_input(path, so, &why_not);
    if (!in) throw std::runtime_error(why_not);
    return std::vector<RankClockInput>{*in};
  });
  EXPECT_EQ(by_scan.alignment.captures[1].offset_ns, -3'000'000);
  EXPECT_EQ(by_scan.alignment.captures[1].collectives_used, 200u);
  EXPECT_EQ(by_scan.alignment.captures[1].offset_ns, by_load.alignment.captures[1].offset_ns);
  EXPECT_EQ(file_bytes(dir.path + "/scanned.gpuh"), file_bytes(dir.path + "/loaded.gpuh"));
  // A merged file is read whole: the scan says why not.
  std::string why_not;
  EXPECT_FALSE(analysis::scan_clock_input(dir.path + "/loaded.gpuh", so, &why_not));
  EXPECT_FALSE(why_not.empty());
}

TEST(Merge, InputWithoutHeaderKeepsItsOwnSection) {
  TempDir dir;
  const std::string a = dir.path + "/a.gpuh", b = dir.path + "/b.gpuh", c = dir.path + "/c.gpuh";
  write_rank(a, 0, "A", 0, 3);
  write_rank(b, 1, "B", 0, 3, /*with_header=*/false);
  write_rank(c, 2, "C", 0, 3);
  MergeResult r = merge_captures({a, b, c}, dir.path + "/job.gpuh");
  Model m = load({dir.path + "/job.gpuh"}, LoadOptions{});
  ASSERT_EQ(m.captures.size(), 3u);
  EXPECT_NE(m.captures[1].header.note().find("no readable header"), std::string::npos);
  EXPECT_EQ(m.captures[2].header.rank(), 2);
  size_t in_section_1 = 0;
  for (uint32_t e = 0; e < m.events.size(); ++e) in_section_1 += m.events.capture[e] == 1;
  EXPECT_EQ(in_section_1, 9u);  // per step: two kernels and a host function
}

// Issue 22 item 8: string ids are values from an untrusted file. 0xFFFFFFFF used to wrap the
// id table's resize (id + 1 == 0) and write out of bounds; a large id allocated gigabytes.
// Every id is checked against the StringDefs seen: one never defined is named as missing.
TEST(Merge, StringIdsWithoutADefinitionAreNamedMissingNotIndexed) {
  TempDir dir;
  const std::string a = dir.path + "/a.gpuh", out = dir.path + "/job.gpuh";
  {
    std::string err;
    auto w = gpuhook::CaptureWriter::create(a, gpuhook::WriterOptions{}, &err);
    ASSERT_TRUE(w) << err;
    v1::Record r;
    r.mutable_header()->set_format_version(1);
    w->write(r);
    const uint32_t known = w->intern("known_kernel");
    int64_t t = 10'000'000'000;
    for (uint32_t id : {known, 0xFFFFFFFFu, 0xFFFFFFF0u, 1u << 30, 1u << 20}) {
      r.Clear();
      auto* k = r.mutable_kernel();
      k->set_name_id(id);
      k->set_start_ns(t);
      k->set_end_ns(t + 1'000);
      t += 10'000;
      w->write(r);
    }
    r.Clear();
    r.mutable_range()->set_type(v1::RANGE_PUSH);
    r.mutable_range()->set_name_id(0xFFFFFFFFu);
    r.mutable_range()->set_domain_id(0x7FFFFFFFu);
    r.mutable_range()->set_time_ns(t);
    w->write(r);
    ASSERT_TRUE(w->close());
  }
  MergeResult r = merge_captures({a}, out);
  EXPECT_EQ(r.records_lost, 0u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("undefined string id"), std::string::npos) << r.warnings[0];
  Model m = load({out}, LoadOptions{});
  std::vector<std::string> names;
  for (uint32_t e = 0; e < m.events.size(); ++e)
    if (m.events.kind[e] == EventKind::kKernel) names.emplace_back(m.display_name(e));
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[0], "known_kernel");
  EXPECT_EQ(names[1], "<string 4294967295 missing>");
  EXPECT_EQ(names[3], "<string 1073741824 missing>");
}

// gpuhook_mem_tag()'s category is a string id like a kernel's name: merged files must carry it
// re-interned, else each tag names whatever string the output gave that number (or none).
TEST(Merge, MemoryTagCategoriesAreReinterned) {
  TempDir dir;
  const std::string a = dir.path + "/a.gpuh", b = dir.path + "/b.gpuh", out = dir.path + "/job.gpuh";
  auto write = [](const std::string& path, const std::vector<std::string>& interned_first, const std::string& category) {
    std::string err;
    auto w = gpuhook::CaptureWriter::create(path, gpuhook::WriterOptions{}, &err);
    ASSERT_TRUE(w) << err;
    v1::Record r;
    r.mutable_header()->set_format_version(1);
    r.mutable_header()->set_start_monotonic_raw_ns(10'000'000'000);
    w->write(r);
    for (const std::string& s : interned_first) w->intern(s);  // shifts the category's id apart per input
    r.Clear();
    auto* x = r.mutable_memory();
    x->set_op(v1::MEMORY_OP_ALLOC);
    x->set_address(0x1000);
    x->set_bytes(0x100);
    x->set_time_ns(10'000'100'000);
    x->set_memory_kind(v1::MEMORY_DEVICE);
    w->write(r);
    r.Clear();
    auto* g = r.mutable_memory_tag();
    g->set_address(0x1000);
    g->set_category_id(w->intern(category));
    g->set_time_ns(10'000'200'000);
    w->write(r);
    ASSERT_TRUE(w->close());
  };
  write(a, {}, "params");
  write(b, {"unused-1", "unused-2"}, "activations");
  MergeResult r = merge_captures({a, b}, out);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  Model m = load({out}, LoadOptions{});
  ASSERT_EQ(m.memory.size(), 2u);
  ASSERT_EQ(m.memory.capture[1], 1u);
  EXPECT_EQ(m.string(m.memory.category[0]), "params");
  EXPECT_EQ(m.string(m.memory.category[1]), "activations");
}

}  // namespace
}  // namespace gantt
