// Hostile and damaged files: every way a capture can be wrong gets its own error kind and the
// byte offset where it starts; a truncated tail costs only the incomplete frame.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <random>
#include <set>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace gpuhook::testing;

std::vector<v1::Record> small_records() {
  std::mt19937_64 rng(3);
  std::vector<v1::Record> out;
  const auto* kernel = v1::Record::descriptor()->FindFieldByName("kernel");
  const auto* api = v1::Record::descriptor()->FindFieldByName("api");
  const auto* header = v1::Record::descriptor()->FindFieldByName("header");
  out.push_back(random_record(header, rng));
  for (int i = 0; i < 8; ++i) out.push_back(random_record(i % 2 ? kernel : api, rng));
  return out;
}

// The expected error from reading `path` in strict mode.
CaptureError read_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const CaptureError& e) {
    return e;
  }
  return CaptureError(CaptureErrorKind::kIo, path, UINT64_MAX, "no error");
}

TEST(CaptureTruncation, EveryPrefixRecoversEveryCompleteChunk) {
  auto records = small_records();
  std::string path = write_capture("trunc", records, 2);
  std::string bytes = read_bytes(path);
  // Frame boundaries and how many records precede each, from the index of the intact file.
  std::vector<std::pair<uint64_t, size_t>> ends{{24, 0}};
  {
    CaptureReader r(path);
    ASSERT_TRUE(r.index().has_value());
    size_t n = 0;
    for (const auto& e : r.index()->chunk()) {
      n += e.records();
      ends.emplace_back(e.offset() + e.compressed_bytes(), n);
    }
    ends.emplace_back(bytes.size(), n);
    ASSERT_EQ(n, records.size());
  }
  ASSERT_GT(bytes.size(), 200u);
  for (size_t len = 0; len <= bytes.size(); ++len) {
    std::string p = write_bytes("prefix", bytes.substr(0, len));
    uint64_t boundary = 0;
    size_t expect_records = 0;
    bool at_boundary = false;
    for (auto [end, n] : ends) {
      if (end <= len) {
        boundary = end;
        expect_records = n;
        at_boundary = end == len;
      }
    }
    for (bool strict : {true, false}) {
      ReaderOptions o;
      o.strict = strict;
      CaptureReader reader(p, o);  // never throws: a prefix of a capture is a capture
      std::vector<v1::Record> got;
      v1::Record r;
      while (reader.next(r)) got.push_back(r);
      ASSERT_EQ(got.size(), expect_records) << "prefix " << len;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(MessageDifferencer::Equals(got[i], records[i]));
      const Integrity& in = reader.integrity();
      EXPECT_FALSE(in.error.has_value()) << "prefix " << len;
      EXPECT_EQ(in.truncated, !at_boundary) << "prefix " << len;
      if (!at_boundary) {
        EXPECT_EQ(in.truncated_at, boundary) << "prefix " << len;
        EXPECT_EQ(in.truncated_bytes, len - boundary) << "prefix " << len;
      }
    }
    std::remove(p.c_str());
  }
}

TEST(CaptureHostile, WrongMagicIsNotACapture) {
  auto e = read_error(write_bytes("magic", "this is a text file, not a capture at all\n"));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kNotACapture);
  EXPECT_EQ(e.offset(), 0u);
  // A plain zstd file (no gpuhook header frame) is not a capture either.
  std::string plain = file_with_chunk(chunk_start_bytes()).substr(24);
  e = read_error(write_bytes("plainzstd", plain));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kNotACapture);
}

TEST(CaptureHostile, NewerVersionIsTooNew) {
  std::string bytes = read_bytes(write_capture("new", small_records()));
  const uint32_t next = kFormatVersion + 1;
  bytes[16] = static_cast<char>(next);
  auto e = read_error(write_bytes("new" + std::to_string(next), bytes));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kTooNew);
  EXPECT_EQ(e.offset(), 16u);
  EXPECT_NE(std::string(e.what()).find("version " + std::to_string(next)), std::string::npos);
}

TEST(CaptureHostile, FlippedChecksumIsChecksum) {
  std::string path = write_capture("sum", small_records(), 2);
  std::string bytes = read_bytes(path);
  CaptureReader r(path);
  const auto& second = r.index()->chunk(1);
  // The frame's last 4 bytes are its content checksum.
  bytes[second.offset() + second.compressed_bytes() - 1] ^= 0x5A;
  auto e = read_error(write_bytes("sum2", bytes));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kChecksum);
  EXPECT_EQ(e.offset(), second.offset());
}

TEST(CaptureHostile, GarbageFrameIsCorruptFrame) {
  std::string path = write_capture("garbage", small_records(), 2, /*close=*/false);
  std::string bytes = read_bytes(path);
  size_t at = bytes.size();
  bytes += std::string("\x01\x02\x03\x04garbage after the last chunk");
  auto e = read_error(write_bytes("garbage2", bytes));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kCorruptFrame);
  EXPECT_EQ(e.offset(), at);
}

TEST(CaptureHostile, ReservedFrameHeaderBitIsCorruptFrame) {
  std::string bytes = file_with_chunk(chunk_start_bytes());
  bytes[24 + 4] |= 0x08;  // frame header descriptor: reserved bit
  auto e = read_error(write_bytes("reserved", bytes));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kCorruptFrame);
  EXPECT_EQ(e.offset(), 24u);
}

TEST(CaptureHostile, HugeDeclaredChunkIsOversizedAndNeverAllocated) {
  // Frame header: magic, descriptor 0xC0 (8-byte content size, windowed), window byte, size.
  std::string f = le32(0x184D2A50) + le32(16) + std::string("GPUHOOK\0", 8) + le32(1) + le32(0);
  f += le32(0xFD2FB528) + std::string("\xC0\x50", 2);
  uint64_t declared = 1ull << 40;
  for (int i = 0; i < 8; ++i) f += static_cast<char>(declared >> (8 * i));
  f += std::string(16, '\0');
  auto e = read_error(write_bytes("huge", f));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kOversizedLength);
  EXPECT_EQ(e.offset(), 24u);
}

TEST(CaptureHostile, HugeWindowIsOversizedAndNeverAllocated) {
  // Frame header: descriptor 0x00 (no content size), window descriptor 0x88 = 128 MiB.
  std::string f = le32(0x184D2A50) + le32(16) + std::string("GPUHOOK\0", 8) + le32(1) + le32(0);
  f += le32(0xFD2FB528) + std::string("\x00\x88", 2) + std::string(16, '\0');
  auto e = read_error(write_bytes("window", f));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kOversizedLength) << e.what();
  EXPECT_EQ(e.offset(), 24u);
}

TEST(CaptureHostile, HugeSkippableFrameIsOversized) {
  std::string bytes = read_bytes(write_capture("skip", small_records(), 0, false));
  size_t at = bytes.size();
  bytes += le32(0x184D2A5E) + le32(0xFFFFFFF0) + "x";
  auto e = read_error(write_bytes("skip2", bytes));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kOversizedLength);
  EXPECT_EQ(e.offset(), at + 4);
}

TEST(CaptureHostile, HugeRecordLengthIsOversized) {
  // A record claiming 2^40 bytes inside a small chunk.
  std::string content = chunk_start_bytes() + std::string("\x0A\x80\x80\x80\x80\x80\x20", 7) + "abc";
  auto e = read_error(write_bytes("reclen", file_with_chunk(content)));
  EXPECT_EQ(e.kind(), CaptureErrorKind::kOversizedLength);
  EXPECT_EQ(e.offset(), 24u);
}

TEST(CaptureHostile, BadRecordsAreBadRecord) {
  const std::vector<std::string> contents = {
      chunk_start_bytes() + std::string("\x12\x01\x00", 3),             // wrong tag
      chunk_start_bytes() + std::string("\x0A\x10\x08", 3),             // runs past the chunk
      chunk_start_bytes() + std::string("\x0A\x02\x32\x05", 4),         // kernel field cut short
      std::string("\x0A\x02\x32\x00", 4),                               // no ChunkStart first
      chunk_start_bytes() + std::string("\x0A\x80", 2),                 // varint cut short
  };
  for (const auto& c : contents) {
    auto e = read_error(write_bytes("badrec", file_with_chunk(c)));
    EXPECT_EQ(e.kind(), CaptureErrorKind::kBadRecord) << e.what();
    EXPECT_EQ(e.offset(), 24u);
  }
}

TEST(CaptureHostile, LenientReadKeepsEverythingBeforeTheDamage) {
  auto records = small_records();
  std::string path = write_capture("lenient", records, 3);
  std::string bytes = read_bytes(path);
  uint64_t third = 0;
  {
    CaptureReader r(path);
    third = r.index()->chunk(2).offset();
  }
  bytes[third + 1] ^= 0x40;  // break the third frame's magic
  std::string p = write_bytes("lenient2", bytes);
  ReaderOptions o;
  o.strict = false;
  CaptureReader reader(p, o);
  std::vector<v1::Record> got;
  v1::Record r;
  while (reader.next(r)) got.push_back(r);
  EXPECT_EQ(got.size(), 6u);
  ASSERT_TRUE(reader.integrity().error.has_value());
  EXPECT_EQ(reader.integrity().error->kind(), CaptureErrorKind::kCorruptFrame);
  EXPECT_EQ(reader.integrity().error->offset(), third);
  EXPECT_FALSE(reader.next(r));  // stays stopped
}

TEST(CaptureHostile, DistinctKindsHaveDistinctNames) {
  std::set<std::string> names;
  for (auto k : {CaptureErrorKind::kIo, CaptureErrorKind::kNotACapture, CaptureErrorKind::kTooNew,
                 CaptureErrorKind::kCorruptFrame, CaptureErrorKind::kChecksum, CaptureErrorKind::kOversizedLength,
                 CaptureErrorKind::kBadRecord, CaptureErrorKind::kTruncated}) {
    names.insert(to_string(k));
  }
  EXPECT_EQ(names.size(), 8u);
}

TEST(CaptureHostile, MissingFileIsIo) {
  try {
    CaptureReader r("/nonexistent/dir/x.gpuh");
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_EQ(e.kind(), CaptureErrorKind::kIo);
  }
}

}  // namespace
}  // namespace gpuhook
