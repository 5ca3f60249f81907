// Issue 22 item 10: a small file of one valid chunk repeated decodes to millions of records
// (a 320 KB file once became 26.5 M events, 6.5 GB and 43 s in `stats`). Loading stops at
// a limit of decoded records per byte of file, with an error that names the file, the byte
// offset and the override; the override reads it anyway.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

namespace {

namespace v1 = gpuhook::v1;

// A capture whose second chunk (`kernels` identical kernel records) is repeated `copies`
// times: every copy is a valid frame, so only the ratio gives it away.
std::string amplified_capture(const std::string& dir, uint32_t kernels, int copies) {
  const std::string one = dir + "/one.gpuh", out = dir + "/amplified.gpuh";
  std::string err;
  gpuhook::WriterOptions wo;
  wo.chunk_bytes = 64u << 20;
  auto w = gpuhook::CaptureWriter::create(one, wo, &err);
  EXPECT_TRUE(w) << err;
  v1::Record r;
  r.mutable_header()->set_format_version(1);
  w->write(r);
  w->flush();
  const uint64_t chunk_at = w->stats().bytes_written;
  const uint32_t name = w->intern("k");
  for (uint32_t i = 0; i < kernels; ++i) {
    r.Clear();
    r.mutable_kernel()->set_name_id(name);
    r.mutable_kernel()->set_start_ns(10'000);
    r.mutable_kernel()->set_end_ns(11'000);
    w->write(r);
  }
  w->flush();
  const uint64_t chunk_end = w->stats().bytes_written;
  EXPECT_TRUE(w->close());
  std::ifstream in(one, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string amplified = bytes.substr(0, chunk_at);
  for (int c = 0; c < copies; ++c) amplified += bytes.substr(chunk_at, chunk_end - chunk_at);
  std::ofstream(out, std::ios::binary) << amplified;  // no index: the reader scans
  return out;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/gantt_amplification.XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(Amplification, RepeatedChunksStopTheLoadWithAClearError) {
  TempDir dir;
  const std::string path = amplified_capture(dir.path, 100'000, 20);
  const uint64_t file_bytes = std::filesystem::file_size(path);
  ASSERT_LT(file_bytes, 100'000u);  // 2 M records in a few KB
  try {
    gantt::load({path});
    FAIL() << "2 M records from " << file_bytes << " bytes loaded without complaint";
  } catch (const gpuhook::CaptureError& e) {
    EXPECT_EQ(e.kind(), gpuhook::CaptureErrorKind::kOversizedLength);
    EXPECT_EQ(e.file(), path);
    EXPECT_GT(e.offset(), 0u);
    EXPECT_LT(e.offset(), file_bytes);
    EXPECT_NE(std::string(e.what()).find("--max-records-per-byte 0"), std::string::npos) << e.what();
  }
}

TEST(Amplification, TheOverrideReadsItAnyway) {
  TempDir dir;
  const std::string path = amplified_capture(dir.path, 100'000, 4);
  gantt::LoadOptions o;
  o.max_records_per_byte = 0;
  const gantt::Model m = gantt::load({path}, o);
  EXPECT_EQ(m.events.size(), 400'000u);
}

TEST(Amplification, ARecordedCaptureIsFarBelowTheLimit) {
  // A kernel stream with real, varying times: what the hook writes.
  TempDir dir;
  const std::string path = dir.path + "/real.gpuh";
  std::string err;
  auto w = gpuhook::CaptureWriter::create(path, {}, &err);
  ASSERT_TRUE(w) << err;
  v1::Record r;
  r.mutable_header()->set_format_version(1);
  w->write(r);
  const uint32_t name = w->intern("gemm");
  uint64_t t = 1'000'000, x = 88172645463325252ull;
  for (int i = 0; i < 300'000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    r.Clear();
    auto* k = r.mutable_kernel();
    k->set_name_id(name);
    k->set_correlation_id(static_cast<uint32_t>(i));
    k->set_queued_ns(static_cast<int64_t>(t));
    k->set_start_ns(static_cast<int64_t>(t + 2'000 + x % 500));
    k->set_end_ns(static_cast<int64_t>(t + 12'000 + x % 3'000));
    t += 15'000 + x % 1'000;
    w->write(r);
  }
  ASSERT_TRUE(w->close());
  const double per_byte = 300'001.0 / static_cast<double>(std::filesystem::file_size(path));
  EXPECT_LT(per_byte * 4, static_cast<double>(gantt::kDefaultMaxRecordsPerByte)) << per_byte;
  EXPECT_EQ(gantt::load({path}).events.size(), 300'000u);
}

}  // namespace
