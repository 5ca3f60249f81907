// CaptureReader::next(RecordView&) decodes Kernel and ApiCall records by hand
// (fast_decode.h). Whatever the bytes, it must give what next(v1::Record&) gives: the same
// records with the same values, the same records skipped by a window, and the same error at
// the same place.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

#include <gpuhook/record_times.h>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace gpuhook::testing;

struct Read {
  std::vector<v1::Record> records;
  std::optional<CaptureError> error;
  uint64_t count = 0;
};

Read read_records(const std::string& path, ReaderOptions o) {
  o.strict = false;
  CaptureReader reader(path, o);
  Read out;
  v1::Record r;
  while (reader.next(r)) out.records.push_back(r);
  out.error = reader.integrity().error;
  out.count = reader.integrity().records;
  return out;
}

// The view as a record: Kernel and ApiCall through their plain forms, so a time the view
// carries as 0 compares equal to the record's unset one (kernel_fields() maps both to 0).
Read read_views(const std::string& path, ReaderOptions o) {
  o.strict = false;
  CaptureReader reader(path, o);
  Read out;
  v1::Record other;
  RecordView view;
  view.record = &other;
  while (reader.next(view)) {
    if (view.kind == v1::Record::kKernel) out.records.push_back(to_record(view.kernel));
    else if (view.kind == v1::Record::kApi) out.records.push_back(to_record(view.api));
    else out.records.push_back(other);
    EXPECT_EQ(out.records.back().kind_case(), view.kind);
  }
  out.error = reader.integrity().error;
  out.count = reader.integrity().records;
  return out;
}

v1::Record plain(const v1::Record& r) {
  if (r.kind_case() == v1::Record::kKernel) return to_record(kernel_fields(r.kernel()));
  if (r.kind_case() == v1::Record::kApi) return to_record(api_fields(r.api()));
  return r;
}

void expect_same_reads(const std::string& path, const ReaderOptions& o = {}) {
  const Read a = read_records(path, o), b = read_views(path, o);
  ASSERT_EQ(a.records.size(), b.records.size()) << path;
  for (size_t i = 0; i < a.records.size(); ++i)
    EXPECT_TRUE(MessageDifferencer::Equals(plain(a.records[i]), b.records[i]))
        << path << " record " << i << ":\n" << a.records[i].DebugString() << "against\n" << b.records[i].DebugString();
  EXPECT_EQ(a.count, b.count) << path;
  ASSERT_EQ(a.error.has_value(), b.error.has_value()) << path;
  if (a.error) {
    EXPECT_EQ(a.error->kind(), b.error->kind());
    EXPECT_EQ(a.error->offset(), b.error->offset());
    EXPECT_STREQ(a.error->what(), b.error->what());
  }
}

std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string field(uint32_t number, uint64_t v) { return varint(number << 3) + varint(v); }
std::string bytes_field(uint32_t number, const std::string& b) { return varint(number << 3 | 2) + varint(b.size()) + b; }
// Capture.record holding a Record of these bytes.
std::string record(const std::string& body) { return "\x0A" + varint(body.size()) + body; }
std::string kernel(const std::string& fields) { return record(bytes_field(v1::Record::kKernel, fields)); }
std::string api(const std::string& fields) { return record(bytes_field(v1::Record::kApi, fields)); }
uint64_t zz(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

TEST(RecordView, EqualsTheProtobufReadOnWrittenCaptures) {
  std::mt19937_64 rng(11);
  const auto* kernel_kind = v1::Record::descriptor()->FindFieldByName("kernel");
  const auto* api_kind = v1::Record::descriptor()->FindFieldByName("api");
  std::vector<v1::Record> records;
  const auto kinds = record_kinds();
  for (int i = 0; i < 3000; ++i) {
    // Mostly launches and their kernels with close correlation ids, which the format codes
    // against each other; every other kind now and then.
    const auto* kind = i % 7 == 6 ? kinds[rng() % kinds.size()] : (i % 2 ? kernel_kind : api_kind);
    v1::Record r = random_record(kind, rng);
    if (r.has_kernel()) r.mutable_kernel()->set_correlation_id(static_cast<uint32_t>(i / 2));
    if (r.has_api()) r.mutable_api()->set_correlation_id(static_cast<uint32_t>(i / 2));
    if (r.has_kernel()) {
      // A few streams, whose kernels the format codes against the stream's last end.
      r.mutable_kernel()->set_context(1);
      r.mutable_kernel()->set_stream(static_cast<uint32_t>(rng() % 3));
      if (i % 5 == 0) r.mutable_kernel()->clear_queued_ns();  // unknown stamps
    }
    records.push_back(r);
  }
  const std::string path = write_capture("view", records, 97);
  expect_same_reads(path);
  ReaderOptions window;
  const auto all = read_all(path);
  std::vector<uint64_t> times;
  for (const auto& r : all) times.push_back(placing_time_ns(r));
  std::sort(times.begin(), times.end());
  window.from_ns = times[times.size() / 3];
  window.to_ns = times[times.size() / 2];
  expect_same_reads(path, window);
  ReaderOptions share;
  share.first_chunk = 3;
  share.end_chunk = 9;
  share.outside_strings_only = true;
  expect_same_reads(path, share);
}

// Bytes no writer of this project produces, but protobuf reads: both paths must agree.
TEST(RecordView, EqualsTheProtobufReadOnUnusualEncodings) {
  using K = v1::Kernel;
  using A = v1::ApiCall;
  const std::string launch = api(field(A::kCorrelationIdFieldNumber, 1) + field(A::kStartNsFieldNumber, zz(50)) +
                                 field(A::kEndNsFieldNumber, zz(9)));
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"fields in number order", launch + kernel(field(K::kNameIdFieldNumber, 3) + field(K::kStreamFieldNumber, 7) +
                                                 field(K::kCorrelationIdFieldNumber, 1) +
                                                 field(K::kQueuedNsFieldNumber, zz(2)) +
                                                 field(K::kStartNsFieldNumber, zz(40)) + field(K::kEndNsFieldNumber, zz(5)))},
      {"a field twice: the last wins",
       kernel(field(K::kStreamFieldNumber, 7) + field(K::kStartNsFieldNumber, zz(4)) + field(K::kStreamFieldNumber, 9) +
              field(K::kStartNsFieldNumber, zz(-3)) + field(K::kEndNsFieldNumber, zz(8)))},
      {"an unknown field", kernel(field(K::kNameIdFieldNumber, 3) + field(40, 1) + field(K::kEndNsFieldNumber, zz(8)))},
      {"a known field as bytes", kernel(field(K::kNameIdFieldNumber, 3) + bytes_field(K::kStreamFieldNumber, "ab"))},
      {"a fixed64 field", kernel(field(K::kNameIdFieldNumber, 3) + varint(K::kGraphIdFieldNumber << 3 | 1) +
                                 std::string(8, '\x01'))},
      {"the kind field twice: merged",
       record(bytes_field(v1::Record::kKernel, field(K::kNameIdFieldNumber, 3)) +
              bytes_field(v1::Record::kKernel, field(K::kStreamFieldNumber, 5) + field(K::kEndNsFieldNumber, zz(8))))},
      {"an ApiCall, then a Kernel in one Record: the last kind wins",
       record(bytes_field(v1::Record::kApi, field(A::kCbidFieldNumber, 3)) +
              bytes_field(v1::Record::kKernel, field(K::kStreamFieldNumber, 5)))},
      {"ten-byte varints and 64-bit values in 32-bit fields",
       kernel(field(K::kGridXFieldNumber, static_cast<uint64_t>(-5)) + field(K::kDeviceFieldNumber, (uint64_t{1} << 40) + 3) +
              field(K::kGraphIdFieldNumber, UINT64_MAX) + field(K::kStartNsFieldNumber, UINT64_MAX) +
              field(K::kDeviceLaunchedFieldNumber, 256))},
      {"a varint of more than ten bytes", kernel(varint(K::kStreamFieldNumber << 3) + std::string(10, '\xFF') + "\x01")},
      {"a varint cut short", kernel(varint(K::kStreamFieldNumber << 3) + "\xFF")},
      {"field number 0", kernel(field(0, 1))},
      {"an empty kernel", kernel("")},
      {"a start that wraps to 0 and below", launch + kernel(field(K::kStartNsFieldNumber, zz(-100)) +
                                                            field(K::kEndNsFieldNumber, zz(-1)))},
      {"a correlation id step past 2^32",
       launch + kernel(field(K::kCorrelationIdFieldNumber, (uint64_t{1} << 33) + 1) + field(K::kQueuedNsFieldNumber, zz(1)))},
  };
  for (uint32_t version : {1u, 3u}) {
    for (const auto& [what, body] : cases) {
      SCOPED_TRACE(std::string(what) + ", format version " + std::to_string(version));
      // Followed by a kernel on the same stream, which is coded against the last one's end.
      const std::string after = kernel(field(K::kStreamFieldNumber, 7) + field(K::kStartNsFieldNumber, zz(3)) +
                                       field(K::kEndNsFieldNumber, zz(3)));
      expect_same_reads(write_bytes("odd", file_with_chunk(chunk_start_bytes() + body + after, version)));
    }
  }
}

}  // namespace
}  // namespace gpuhook
