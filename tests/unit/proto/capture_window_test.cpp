// Windowed reads return the same records with and without the index; the index only lets the
// reader skip chunks.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace gpuhook::testing;

// Chunk c holds kernels at [c*1000 + 10*i, +5] for i < 10, plus a StringDef in chunk 0.
std::vector<v1::Record> timeline() {
  std::vector<v1::Record> out;
  v1::Record s;
  s.mutable_string_def()->set_id(1);
  s.mutable_string_def()->set_value("k");
  out.push_back(s);
  for (int c = 0; c < 5; ++c) {
    for (int i = 0; i < 10; ++i) {
      v1::Record r;
      r.mutable_kernel()->set_name_id(1);
      r.mutable_kernel()->set_correlation_id(static_cast<uint32_t>(c * 10 + i));
      r.mutable_kernel()->set_start_ns(1'000'000 + c * 1000 + 10 * i);
      r.mutable_kernel()->set_end_ns(1'000'000 + c * 1000 + 10 * i + 5);
      out.push_back(r);
    }
  }
  return out;
}

std::vector<uint32_t> window(const std::string& path, uint64_t from, uint64_t to, size_t* strings = nullptr) {
  ReaderOptions o;
  o.from_ns = from;
  o.to_ns = to;
  std::vector<uint32_t> ids;
  size_t s = 0;
  for (const auto& r : read_all(path, o)) {
    if (r.has_kernel()) ids.push_back(r.kernel().correlation_id());
    if (r.has_string_def()) ++s;
  }
  if (strings) *strings = s;
  return ids;
}

TEST(CaptureWindow, IndexAndScanAgree) {
  auto recs = timeline();
  // One StringDef + 10 kernels in chunk 0, then 10 kernels per chunk.
  std::string path = temp_path("window");
  {
    std::string err;
    auto w = CaptureWriter::create(path, WriterOptions{}, &err);
    ASSERT_TRUE(w);
    for (size_t i = 0; i < recs.size(); ++i) {
      w->write(recs[i]);
      if (i % 10 == 0 && i > 0) w->flush();
    }
    ASSERT_TRUE(w->close());
  }
  std::string bytes = read_bytes(path);
  uint64_t index_at = 0;
  {
    CaptureReader r(path);
    ASSERT_TRUE(r.index());
    const auto& last = r.index()->chunk(r.index()->chunk_size() - 1);
    index_at = last.offset() + last.compressed_bytes();
  }
  std::string no_index = write_bytes("window-noindex", bytes.substr(0, index_at));
  {
    CaptureReader r(no_index);
    EXPECT_FALSE(r.integrity().has_index);
  }
  struct Case {
    uint64_t from, to;
    std::vector<uint32_t> expect;
  };
  std::vector<Case> cases = {
      {1'002'000, 1'002'020, {20, 21, 22}},  // kernel 22 starts at 1'002'020
      {1'002'003, 1'002'004, {20}},          // inside one kernel
      {1'004'095, 0, {49}},                  // to 0 = open ended
      {1'000'006, 1'000'009, {}},            // in a gap
      {2'000'000, 3'000'000, {}},            // after everything
  };
  for (const auto& c : cases) {
    size_t strings_a = 0, strings_b = 0;
    EXPECT_EQ(window(path, c.from, c.to, &strings_a), c.expect) << c.from;
    EXPECT_EQ(window(no_index, c.from, c.to, &strings_b), c.expect) << c.from;
    EXPECT_EQ(strings_a, 1u);  // context records come whatever the window
    EXPECT_EQ(strings_b, 1u);
  }
  EXPECT_EQ(window(path, 0, 0).size(), 50u);
}

TEST(CaptureWindow, CorruptIndexFallsBackToScanning) {
  auto recs = timeline();
  std::string path = write_capture("badindex", recs, 11);
  std::string bytes = read_bytes(path);
  // A wrong length in the index trailer: the reader must not trust the index.
  bytes[bytes.size() - 12] ^= 0x01;
  std::string p = write_bytes("badindex2", bytes);
  EXPECT_FALSE(CaptureReader(p).integrity().has_index);
  ReaderOptions o;
  o.from_ns = 1'002'000;
  o.to_ns = 1'002'020;
  std::vector<uint32_t> ids;
  for (const auto& r : read_all(p, o)) {
    if (r.has_kernel()) ids.push_back(r.kernel().correlation_id());
  }
  EXPECT_EQ(ids, (std::vector<uint32_t>{20, 21, 22}));
}

}  // namespace
}  // namespace gpuhook
