// Round trips: what goes into CaptureWriter comes out of CaptureReader, field for field.
#include <fcntl.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include <gpuhook/record_times.h>

#include "capture_test_util.h"
#include "record_codec.h"

namespace gpuhook {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace gpuhook::testing;

TEST(CaptureRoundTrip, EveryRecordKindEveryField) {
  std::mt19937_64 rng(42);
  std::vector<v1::Record> in;
  for (const auto* kind : record_kinds()) {
    for (int i = 0; i < 3; ++i) in.push_back(random_record(kind, rng));
  }
  ASSERT_GE(in.size(), 16u * 3);
  // A StringDef written directly passes through like any record.
  std::string path = write_capture("every-kind", in, 7);
  ASSERT_FALSE(path.empty());
  CaptureReader reader(path);
  v1::Record out;
  size_t i = 0;
  while (reader.next(out)) {
    ASSERT_LT(i, in.size());
    EXPECT_TRUE(MessageDifferencer::Equals(in[i], out))
        << "record " << i << "\nwrote: " << in[i].ShortDebugString() << "\nread:  " << out.ShortDebugString();
    ++i;
  }
  EXPECT_EQ(i, in.size());
  const Integrity& integ = reader.integrity();
  EXPECT_TRUE(integ.has_index);
  EXPECT_FALSE(integ.truncated);
  EXPECT_FALSE(integ.error.has_value());
  EXPECT_EQ(integ.chunks, (in.size() + 6) / 7);
  EXPECT_EQ(integ.records, in.size());
  EXPECT_TRUE(integ.has_footer);  // record_kinds() includes Footer
}

TEST(CaptureRoundTrip, UnknownTimesStayUnknownAndEqualTimesStayKnown) {
  v1::Record a;
  a.mutable_kernel()->set_start_ns(0);  // 0 = unknown: must come back unset, not invented
  a.mutable_kernel()->set_end_ns(5'000);
  v1::Record b;
  b.mutable_kernel()->set_queued_ns(5'000);  // zero delta from the previous time: still known
  b.mutable_kernel()->set_start_ns(5'000);
  b.mutable_kernel()->set_end_ns(4'000);  // going backwards is stored as is
  std::string path = write_capture("unknown", {a, b});
  auto out = read_all(path);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].kernel().has_queued_ns());
  EXPECT_FALSE(out[0].kernel().has_start_ns());
  EXPECT_EQ(out[0].kernel().end_ns(), 5'000);
  EXPECT_TRUE(out[1].kernel().has_queued_ns());
  EXPECT_EQ(out[1].kernel().queued_ns(), 5'000);
  EXPECT_FALSE(out[1].kernel().has_submitted_ns());
  EXPECT_EQ(out[1].kernel().start_ns(), 5'000);
  EXPECT_EQ(out[1].kernel().end_ns(), 4'000);
}

TEST(CaptureRoundTrip, InternedStringsResolveAcrossChunks) {
  std::string path = temp_path("intern");
  std::string err;
  auto w = CaptureWriter::create(path, WriterOptions{}, &err);
  ASSERT_TRUE(w) << err;
  uint32_t a = w->intern("_Z6kernelPfi");
  EXPECT_EQ(w->intern("_Z6kernelPfi"), a);
  EXPECT_EQ(w->intern(""), 0u);
  w->flush();
  uint32_t b = w->intern(std::string("bytes\0with\xff nul", 16));
  EXPECT_NE(a, b);
  v1::Record k;
  k.mutable_kernel()->set_name_id(b);
  w->write(k);
  ASSERT_TRUE(w->close()) << w->last_error();
  EXPECT_EQ(w->stats().records, 3u);
  EXPECT_EQ(w->stats().records_by_kind[v1::Record::kStringDef], 2u);
  EXPECT_EQ(w->stats().chunks, 2u);

  CaptureReader reader(path);
  v1::Record r;
  while (reader.next(r)) {
  }
  EXPECT_EQ(reader.string(a), "_Z6kernelPfi");
  EXPECT_EQ(reader.string(b), std::string_view("bytes\0with\xff nul", 16));
  EXPECT_EQ(reader.string(0), "");
  EXPECT_EQ(reader.string(999), "");
  EXPECT_EQ(reader.strings().size(), 3u);
}

// What the program's environment sets (GPUHOOK_RANGE, GPUHOOK_API) is kept as given, even
// when it is not UTF-8, and the header reads back.
TEST(CaptureRoundTrip, HeaderKeepsSettingsThatAreNotUtf8) {
  std::string path = temp_path("settings");
  std::string err;
  auto w = CaptureWriter::create(path, WriterOptions{}, &err);
  ASSERT_TRUE(w) << err;
  v1::Record h;
  h.mutable_header()->set_format_version(kFormatVersion);
  h.mutable_header()->set_capture_range("nvtx:caf\xe9");
  h.mutable_header()->set_api_set("cudaLaunch\xff");
  w->write(h);
  ASSERT_TRUE(w->close()) << w->last_error();
  CaptureReader reader(path);
  v1::Record r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.header().capture_range(), "nvtx:caf\xe9");
  EXPECT_EQ(r.header().api_set(), "cudaLaunch\xff");
}

TEST(CaptureRoundTrip, ExistingFileIsNeverOverwritten) {
  std::string path = write_bytes("exists", "precious");
  std::string err;
  EXPECT_EQ(CaptureWriter::create(path, WriterOptions{}, &err), nullptr);
  EXPECT_NE(err.find("File exists"), std::string::npos) << err;
  EXPECT_EQ(read_bytes(path), "precious");
}

TEST(CaptureRoundTrip, WriteFailureIsReportedAndCountedNeverThrown) {
  int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "/dev/full not available";
  std::string err;
  // /dev/full fails the very first write (the file magic): create reports it.
  EXPECT_EQ(CaptureWriter::from_fd(fd, WriterOptions{}, &err), nullptr);
  EXPECT_NE(err.find("No space"), std::string::npos) << err;
}

TEST(CaptureRoundTrip, ChunksFlushBySize) {
  WriterOptions o;
  o.chunk_bytes = 4096;
  std::string path = temp_path("by-size");
  std::string err;
  auto w = CaptureWriter::create(path, o, &err);
  ASSERT_TRUE(w);
  std::mt19937_64 rng(7);
  const auto* kernel = v1::Record::descriptor()->FindFieldByName("kernel");
  for (int i = 0; i < 2000; ++i) w->write(random_record(kernel, rng));
  ASSERT_TRUE(w->close());
  EXPECT_GT(w->stats().chunks, 10u);
  EXPECT_EQ(read_all(path).size(), 2000u);
}

TEST(CaptureRoundTrip, MaybeFlushByTime) {
  WriterOptions o;
  o.flush_interval_ns = 100;
  std::string path = temp_path("by-time");
  std::string err;
  auto w = CaptureWriter::create(path, o, &err);
  ASSERT_TRUE(w);
  v1::Record r;
  r.mutable_range()->set_time_ns(1);
  w->write(r);
  EXPECT_TRUE(w->maybe_flush(1000));  // first call starts the clock
  EXPECT_EQ(w->stats().chunks, 0u);
  EXPECT_TRUE(w->maybe_flush(1050));
  EXPECT_EQ(w->stats().chunks, 0u);
  EXPECT_TRUE(w->maybe_flush(1100));
  EXPECT_EQ(w->stats().chunks, 1u);
  w->write(r);
  EXPECT_TRUE(w->maybe_flush(500));  // the clock went backwards: restart, no flush
  EXPECT_EQ(w->stats().chunks, 1u);
  EXPECT_TRUE(w->maybe_flush(600));
  EXPECT_EQ(w->stats().chunks, 2u);
  ASSERT_TRUE(w->close());
}

v1::Record launch(uint32_t correlation, int64_t start_ns) {
  v1::Record r;
  auto* a = r.mutable_api();
  a->set_domain(v1::API_DOMAIN_RUNTIME);
  a->set_cbid(211);
  a->set_correlation_id(correlation);
  if (start_ns != 0) a->set_start_ns(start_ns);
  a->set_end_ns(start_ns + 2'800);
  return r;
}

v1::Record kernel(uint32_t correlation, int64_t queued_ns, int64_t submitted_ns, int64_t start_ns) {
  v1::Record r;
  auto* k = r.mutable_kernel();
  k->set_stream(7);
  k->set_correlation_id(correlation);
  if (queued_ns != 0) k->set_queued_ns(queued_ns);
  if (submitted_ns != 0) k->set_submitted_ns(submitted_ns);
  k->set_start_ns(start_ns);
  k->set_end_ns(start_ns + 4'000);
  return r;
}

// A field number no version declares: the writer must take the generic path for the record.
void add_unknown_field(v1::Record& r) {
  google::protobuf::Message* m = r.has_api() ? static_cast<google::protobuf::Message*>(r.mutable_api())
                                             : static_cast<google::protobuf::Message*>(r.mutable_kernel());
  m->GetReflection()->MutableUnknownFields(m)->AddVarint(1000, 7);
}

// Version 3: a Kernel's queued_ns is stored against its launch's start_ns (record_codec.h).
TEST(LaunchCoding, QueuedIsStoredAgainstItsLaunchStart) {
  codec::Cursors cursors;
  cursors.start_chunk(1'000'000);
  auto ignore = [](int64_t) {};
  v1::Record a = launch(42, 2'000'000);
  codec::delta_encode(a, cursors, ignore);
  v1::Record k = kernel(42, 2'001'100, 2'002'000, 2'010'000);
  codec::delta_encode(k, cursors, ignore);
  EXPECT_EQ(k.kernel().queued_ns(), 1'100);
  // Another correlation id in the same slot is a miss: back to the kernel cursor.
  v1::Record other = kernel(42 + codec::Cursors::kLaunchSlots, 2'020'000, 2'021'000, 2'030'000);
  codec::delta_encode(other, cursors, ignore);
  EXPECT_EQ(other.kernel().queued_ns(), 2'020'000 - 2'001'100);
  // A new chunk forgets every launch.
  cursors.start_chunk(3'000'000);
  v1::Record later = kernel(42, 3'001'000, 3'002'000, 3'010'000);
  codec::delta_encode(later, cursors, ignore);
  EXPECT_EQ(later.kernel().queued_ns(), 1'000);
  // A version 2 file never took that base.
  codec::Cursors v2(2);
  v2.start_chunk(1'000'000);
  v1::Record a2 = launch(42, 2'000'000), k2 = kernel(42, 2'001'100, 2'002'000, 2'010'000);
  codec::delta_encode(a2, v2, ignore);
  codec::delta_encode(k2, v2, ignore);
  EXPECT_EQ(k2.kernel().queued_ns(), 1'001'100);
}

// Every way a launch can be found or missed, through both encoders (fast and generic) and
// across chunks, reads back exactly.
TEST(LaunchCoding, EveryHitAndMissRoundTrips) {
  std::mt19937_64 rng(7);
  std::vector<v1::Record> in;
  int64_t t = 5'000'000'000;
  std::vector<std::pair<uint32_t, int64_t>> pending;  // launches whose kernel is still to come
  uint32_t correlation = 1;
  for (int i = 0; i < 6000; ++i) {
    t += 1'000 + static_cast<int64_t>(rng() % 5'000);
    // Ids jump now and then, so slots collide (id and id + 16384 share one).
    correlation += rng() % 50 == 0 ? codec::Cursors::kLaunchSlots : 1 + rng() % 3;
    int64_t start = rng() % 40 == 0 ? 0 : t;  // an unknown start is never a base
    in.push_back(launch(rng() % 60 == 0 ? 0 : correlation, start));
    if (rng() % 30 == 0) add_unknown_field(in.back());
    pending.emplace_back(correlation, t);
    // Kernels trail their launches by a random lag, up to past the table's reach.
    while (!pending.empty() && (rng() % 3 == 0 || pending.size() > 20'000)) {
      size_t pick = rng() % 4 == 0 ? pending.size() - 1 : 0;
      auto [id, launched] = pending[pick];
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(pick));
      int64_t queued = rng() % 25 == 0 ? 0 : launched + 1'100;  // latency stamps may be missing
      in.push_back(kernel(id, queued, launched + 2'000, launched + 9'000));
      if (rng() % 30 == 0) add_unknown_field(in.back());
    }
  }
  std::string path = write_capture("launch-coding", in, 1'500);
  ASSERT_FALSE(path.empty());
  auto out = read_all(path);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(MessageDifferencer::Equals(in[i], out[i]))
        << "record " << i << "\nwrote: " << in[i].ShortDebugString() << "\nread:  " << out[i].ShortDebugString();
  }
}

// A read of the kernels alone (ReaderOptions::only_kinds) still decodes the launches their
// queued times are stored against: the kernels come out as a full read gives them, through
// both forms of next(). (Skipping the launches shifted every kernel's times by its chunk's
// base: the communication figures of a scan were off by the ranks' clock offsets.)
TEST(LaunchCoding, AKernelOnlyReadGivesTheFullReadsKernels) {
  std::vector<v1::Record> in;
  for (uint32_t c = 1; c <= 3000; ++c) {
    const int64_t t = 5'000'000'000'000 + c * 3'000;
    in.push_back(launch(c, t));
    in.push_back(kernel(c, c % 7 == 0 ? 0 : t + 1'100, t + 2'000, t + 9'000));
  }
  const std::string path = write_capture("kernel-only", in, 700);
  ASSERT_FALSE(path.empty());
  std::vector<v1::Record> kernels;
  for (const v1::Record& r : read_all(path))
    if (r.has_kernel()) kernels.push_back(r);
  ASSERT_EQ(kernels.size(), 3000u);
  ReaderOptions only;
  only.only_kinds = uint64_t{1} << v1::Record::kKernel;
  std::vector<v1::Record> read;
  for (const v1::Record& r : read_all(path, only))
    if (!r.has_header()) read.push_back(r);
  ASSERT_EQ(read.size(), kernels.size());
  for (size_t i = 0; i < read.size(); ++i)
    ASSERT_TRUE(MessageDifferencer::Equals(read[i], kernels[i])) << "kernel " << i << ": " << read[i].ShortDebugString();
  CaptureReader viewed(path, only);
  v1::Record parsed;
  RecordView view;
  view.record = &parsed;
  size_t k = 0;
  while (viewed.next(view)) {
    if (view.kind == v1::Record::kHeader) continue;
    ASSERT_EQ(view.kind, v1::Record::kKernel);
    ASSERT_LT(k, kernels.size());
    EXPECT_EQ(view.kernel.queued_ns, kernels[k].kernel().queued_ns()) << "kernel " << k;
    EXPECT_EQ(view.kernel.start_ns, kernels[k].kernel().start_ns()) << "kernel " << k;
    EXPECT_EQ(view.kernel.end_ns, kernels[k].kernel().end_ns()) << "kernel " << k;
    ++k;
  }
  EXPECT_EQ(k, kernels.size());
}

TEST(CorrelationCoding, OneToOneAtTheEdges) {
  const uint32_t edges[] = {0, 1, 2, 3, 0x7FFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF};
  for (uint32_t prev : edges) {
    std::set<uint32_t> stored_values;
    for (uint32_t base : edges) {
      for (uint32_t id : {base, base + 1, base - 1, prev, prev + 1, prev - 1}) {
        uint32_t enc_prev = prev, dec_prev = prev;
        uint32_t stored = codec::correlation_encode(id, enc_prev);
        EXPECT_EQ(codec::correlation_decode(stored, dec_prev), id) << "prev " << prev << " id " << id;
        EXPECT_EQ(stored == 0, id == 0);
        if (id != 0) {
          EXPECT_EQ(enc_prev, id);
        }
        EXPECT_EQ(enc_prev, dec_prev);
      }
    }
  }
  uint32_t prev = 41;
  EXPECT_EQ(codec::correlation_encode(42, prev), 3u);  // the common case: one byte
}

}  // namespace
}  // namespace gpuhook

namespace gpuhook {
namespace {

// visit_times is the format's one list of time fields (delta coding, windowed reads,
// rank merging, `info` all walk it). Every `optional sint64` field of every record kind is a
// time: the list must hold each, or a new kind's times are stored absolute, left out of
// windows and never shifted by a merge.
TEST(CaptureFormat, VisitTimesListsEveryTimeFieldOfEveryKind) {
  namespace pb = google::protobuf;
  const pb::Descriptor* rd = v1::Record::descriptor();
  for (int k = 0; k < rd->field_count(); ++k) {
    const pb::FieldDescriptor* kind = rd->field(k);
    v1::Record r;
    pb::Message* m = r.GetReflection()->MutableMessage(&r, kind);
    const pb::Reflection* mr = m->GetReflection();
    std::set<int64_t> want;
    for (int i = 0; i < m->GetDescriptor()->field_count(); ++i) {
      const pb::FieldDescriptor* f = m->GetDescriptor()->field(i);
      if (f->has_presence() && f->type() == pb::FieldDescriptor::TYPE_SINT64) {
        const int64_t v = 1000 + 10 * k + i;
        mr->SetInt64(m, f, v);
        want.insert(v);
      }
    }
    std::set<int64_t> seen, seen_const;
    visit_times(r, [&seen](bool& has, int64_t& v) {
      if (has) seen.insert(v);
    });
    EXPECT_EQ(seen, want) << "record kind " << kind->name();
    // A const record is read the same way, and nothing is written back.
    const v1::Record& cr = r;
    visit_times(cr, [&seen_const](bool& has, int64_t& v) {
      if (has) seen_const.insert(v);
      v = 7;
    });
    EXPECT_EQ(seen_const, want) << "record kind " << kind->name();
  }
}

// The named positions the coders use are the fields they name.
TEST(CaptureFormat, NamedTimePositionsAreTheirFields) {
  const auto position_of = [](v1::Record r, int64_t marker) {
    int at = -1, i = 0;
    visit_times(r, [&](bool& has, int64_t& v) {
      if (has && v == marker) at = i;
      ++i;
    });
    return at;
  };
  v1::Record k;
  auto* kk = k.mutable_kernel();
  kk->set_queued_ns(1), kk->set_submitted_ns(2), kk->set_start_ns(3), kk->set_end_ns(4);
  EXPECT_EQ(position_of(k, 1), kKernelQueuedTime);
  EXPECT_EQ(position_of(k, 2), kKernelSubmittedTime);
  EXPECT_EQ(position_of(k, 3), kKernelStartTime);
  EXPECT_EQ(position_of(k, 4), kKernelEndTime);
  v1::Record a;
  a.mutable_api()->set_start_ns(5), a.mutable_api()->set_end_ns(6);
  EXPECT_EQ(position_of(a, 5), kApiStartTime);
  EXPECT_EQ(position_of(a, 6), kApiEndTime);
  v1::Record c;
  c.mutable_clock_sync()->set_host_ns(7), c.mutable_clock_sync()->set_gpu_ns(8);
  EXPECT_EQ(position_of(c, 7), kClockSyncHostTime);
}

// What places a record in a time window: a kernel by its start (graph nodes have unknown
// queued stamps), capture-wide records by nothing, the rest by their first known time.
TEST(CaptureFormat, PlacingTimeIsAKernelsStartAndNoneForCaptureWideRecords) {
  v1::Record k;
  k.mutable_kernel()->set_start_ns(5'000);
  k.mutable_kernel()->set_end_ns(6'000);
  EXPECT_EQ(placing_time_ns(k), 5'000u);
  k.mutable_kernel()->set_queued_ns(4'000);
  EXPECT_EQ(placing_time_ns(k), 5'000u);
  v1::Record api;
  api.mutable_api()->set_end_ns(9'000);  // start unknown: placed by what is known
  EXPECT_EQ(placing_time_ns(api), 9'000u);
  api.mutable_api()->set_start_ns(8'000);
  EXPECT_EQ(placing_time_ns(api), 8'000u);
  v1::Record drops;
  drops.mutable_drops()->set_time_ns(1'000);
  EXPECT_EQ(placing_time_ns(drops), 0u);
  v1::Record notice;
  notice.mutable_notice()->set_time_ns(1'000);
  EXPECT_EQ(placing_time_ns(notice), 0u);
  v1::Record header;
  header.mutable_header()->set_pid(1);
  EXPECT_EQ(placing_time_ns(header), 0u);
  v1::Record range;
  range.mutable_range()->set_time_ns(3'000);
  EXPECT_EQ(placing_time_ns(range), 3'000u);
}

}  // namespace
}  // namespace gpuhook
