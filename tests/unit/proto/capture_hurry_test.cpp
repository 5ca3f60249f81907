// WriterOptions::hurry: a slow level's chunks go in pieces, and a hurried chunk at level 1;
// either way every record reads back (SIGTERM waited seconds for zstd 19).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using namespace gpuhook::testing;

// About 1 MiB of ranges with distinct names: several of the 128 KiB pieces.
void write_chunk(CaptureWriter& w, int first) {
  for (int i = first; i < first + 20000; ++i) {
    v1::Record r;
    r.mutable_range()->set_time_ns(1000 + i);
    r.mutable_range()->set_name_id(w.intern("range-" + std::to_string(i) + "-with-a-longer-name"));
    w.write(r);
  }
}

TEST(CaptureHurry, SlowAndHurriedChunksBothReadBack) {
  std::atomic<bool> hurry{false};
  WriterOptions o;
  o.zstd_level = 19;
  o.hurry = &hurry;
  const std::string path = temp_path("hurry");
  std::string err;
  auto w = CaptureWriter::create(path, o, &err);
  ASSERT_TRUE(w) << err;
  write_chunk(*w, 0);
  ASSERT_TRUE(w->flush()) << w->last_error();  // level 19, in pieces
  const uint64_t slow_bytes = w->stats().bytes_written;
  hurry.store(true);
  write_chunk(*w, 20000);
  ASSERT_TRUE(w->flush()) << w->last_error();  // level 1
  hurry.store(false);
  write_chunk(*w, 40000);
  ASSERT_TRUE(w->close()) << w->last_error();  // level 19 again
  const uint64_t hurried_bytes = w->stats().bytes_written - slow_bytes;
  EXPECT_GT(hurried_bytes, slow_bytes) << "the hurried chunk was not compressed at a faster level";
  EXPECT_EQ(read_all(path).size(), 3u * 2 * 20000);
}

// A hurry that comes while a level-19 chunk is being compressed restarts it at level 1.
TEST(CaptureHurry, AHurryDuringASlowChunkEndsItSoon) {
  std::atomic<bool> hurry{false};
  WriterOptions o;
  o.zstd_level = 19;
  o.hurry = &hurry;
  o.chunk_bytes = 16u << 20;  // one chunk for everything below
  const std::string path = temp_path("hurry-midway");
  std::string err;
  auto w = CaptureWriter::create(path, o, &err);
  ASSERT_TRUE(w) << err;
  for (int k = 0; k < 4; ++k) write_chunk(*w, k * 20000);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    hurry.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(w->flush()) << w->last_error();
  const auto took = std::chrono::steady_clock::now() - start;
  later.join();
  ASSERT_TRUE(w->close()) << w->last_error();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_EQ(read_all(path).size(), 4u * 2 * 20000);
}

}  // namespace
}  // namespace gpuhook
