// Stats summary files as untrusted input: what is written reads back; a damaged, foreign,
// too new or oversized file is refused with its kind and byte offset; nothing is overwritten.
#include <gtest/gtest.h>

#include <string>

#include <gpuhook/summary_file.h>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

v1::StatsSummary sample() {
  v1::StatsSummary s;
  s.set_version(1);
  s.set_relative_error(0.01);
  s.add_capture()->set_path("rank0.gpuh");
  s.set_events(3);
  auto* g = s.add_by_kernel();
  g->set_key("gemm");
  g->mutable_exec()->set_count(3);
  for (int64_t v : {10, 20, 30}) g->mutable_exec()->add_samples(v);
  return s;
}

CaptureErrorKind kind_of(const std::string& path, uint64_t* offset = nullptr) {
  try {
    read_summary_file(path);
  } catch (const CaptureError& e) {
    if (offset) *offset = e.offset();
    return e.kind();
  }
  ADD_FAILURE() << path << " was read";
  return CaptureErrorKind::kTruncated;
}

TEST(SummaryFile, ReadsBackWhatWasWrittenAndNeverOverwrites) {
  const std::string path = testing::temp_path("summary");
  std::string error;
  ASSERT_TRUE(write_summary_file(path, sample(), &error)) << error;
  EXPECT_TRUE(is_summary_file(path));
  EXPECT_EQ(read_summary_file(path).SerializeAsString(), sample().SerializeAsString());
  EXPECT_FALSE(write_summary_file(path, sample(), &error));
  EXPECT_NE(error.find("never overwritten"), std::string::npos) << error;
}

// Names are the program's bytes: a summary keeps them whole when they are not UTF-8.
TEST(SummaryFile, KeepsNamesThatAreNotUtf8) {
  const std::string path = testing::temp_path("summary-bytes");
  v1::StatsSummary s = sample();
  s.mutable_by_kernel(0)->set_key("gemm\xe9");
  std::string error;
  ASSERT_TRUE(write_summary_file(path, s, &error)) << error;
  EXPECT_EQ(read_summary_file(path).by_kernel(0).key(), "gemm\xe9");
}

TEST(SummaryFile, RefusesDamagedForeignAndHostileFiles) {
  const std::string good = testing::temp_path("summary");
  std::string error;
  ASSERT_TRUE(write_summary_file(good, sample(), &error)) << error;
  const std::string bytes = testing::read_bytes(good);
  std::string bad;
  const auto spit = [&bad](const std::string& b) { bad = testing::write_bytes("bad-summary", b); };
  uint64_t offset = 0;

  spit(bytes.substr(0, bytes.size() - 5));  // truncated frame
  EXPECT_EQ(kind_of(bad, &offset), CaptureErrorKind::kCorruptFrame);
  EXPECT_EQ(offset, 24u);
  spit(bytes.substr(0, 10));
  EXPECT_EQ(kind_of(bad), CaptureErrorKind::kNotACapture);
  spit("");
  EXPECT_EQ(kind_of(bad), CaptureErrorKind::kNotACapture);
  std::string flipped = bytes;
  flipped[flipped.size() - 1] ^= 0x55;  // the content checksum
  spit(flipped);
  const CaptureErrorKind k = kind_of(bad);
  EXPECT_TRUE(k == CaptureErrorKind::kChecksum || k == CaptureErrorKind::kCorruptFrame) << to_string(k);
  std::string newer = bytes;
  newer[16] = 9;
  spit(newer);
  EXPECT_EQ(kind_of(bad, &offset), CaptureErrorKind::kTooNew);
  EXPECT_EQ(offset, 16u);
  // A frame declaring 1 TB of content: refused before anything is allocated.
  std::string huge = bytes.substr(0, 24);
  // magic, descriptor (8-byte content size), window descriptor, content size 2^40
  const unsigned char frame[] = {0x28, 0xB5, 0x2F, 0xFD, 0xC0, 0x00, 0, 0, 0, 0, 0, 0x01, 0, 0};
  huge.append(reinterpret_cast<const char*>(frame), sizeof frame);
  spit(huge);
  EXPECT_EQ(kind_of(bad), CaptureErrorKind::kOversizedLength);
  // Valid zstd around bytes that are not a summary message.
  spit(bytes.substr(0, 24) + bytes.substr(24, 4) + std::string(40, '\xff'));
  const CaptureErrorKind garbage = kind_of(bad);
  EXPECT_TRUE(garbage == CaptureErrorKind::kCorruptFrame || garbage == CaptureErrorKind::kBadRecord) << to_string(garbage);
  // A capture is not a summary.
  EXPECT_FALSE(is_summary_file("/nonexistent/missing.gsum"));
  EXPECT_EQ(kind_of("/nonexistent/missing.gsum"), CaptureErrorKind::kIo);
}

// A summary is held to a capture's limits (issue 44, item 12): a 22.6 KB file of fields no
// version knows once parsed into 2.36 GB. Its records (messages, repeated values, unknown
// fields) are counted on the bytes before anything is parsed.
TEST(SummaryFile, RefusesMoreRecordsOrMemoryThanItsLimitsAndDropsUnknownFields) {
  v1::StatsSummary s = sample();
  auto* unknown = s.GetReflection()->MutableUnknownFields(&s);
  for (int i = 0; i < 1'000'000; ++i) unknown->AddVarint(1000, 0);
  const std::string path = testing::temp_path("summary-unknown");
  std::string error;
  ASSERT_TRUE(write_summary_file(path, s, &error)) << error;
  const auto message = [&](const SummaryLimits& limits) -> std::string {
    try {
      read_summary_file(path, limits);
    } catch (const CaptureError& e) {
      EXPECT_EQ(e.kind(), CaptureErrorKind::kOversizedLength);
      return e.what();
    }
    return "read";
  };
  EXPECT_NE(message({}).find("--max-records-per-byte 0 reads it anyway"), std::string::npos) << message({});
  const std::string records = message({200, 0});
  EXPECT_NE(records.find("repeated values and unknown fields (1000000 of them fields this build does not know)"), std::string::npos)
      << records;
  const std::string memory = message({0, 1 << 20});
  EXPECT_NE(memory.find("over --max-memory 1.0 MiB"), std::string::npos) << memory;
  // Within them, it reads as written, without the fields no version of this build reads.
  const v1::StatsSummary read = read_summary_file(path, {0, 0});
  EXPECT_EQ(read.SerializeAsString(), sample().SerializeAsString());
  // A summary as gantt-cli writes it is far within the defaults.
  v1::StatsSummary real = sample();
  for (int i = 0; i < 2000; ++i) {
    auto* g = real.add_by_stream();
    g->set_stream(static_cast<uint32_t>(i));
    g->mutable_exec()->set_count(1);
    g->mutable_exec()->add_samples(1000 + i);
  }
  const std::string real_path = testing::temp_path("summary-streams");
  ASSERT_TRUE(write_summary_file(real_path, real, &error)) << error;
  EXPECT_EQ(read_summary_file(real_path).by_stream_size(), 2000);
}

}  // namespace
}  // namespace gpuhook
