// gpuhook_synth writes captures that read back with the shape it promises: every kernel
// paired with its launch by correlation id, ordered times, all streams used, big enough
// to span many chunks and windowed reads.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "capture_test_util.h"
#include "synth.h"

namespace gpuhook {
namespace {

TEST(SynthCapture, KernelsPairWithLaunchesAndTimesAreOrdered) {
  synth::SynthOptions o;
  o.kernels = 30'000;
  WriterOptions wo;
  wo.chunk_bytes = 64 * 1024;  // many chunks
  std::string path = testing::temp_path("synth");
  ASSERT_EQ(synth::write_capture(path, o, wo), "");

  CaptureReader reader(path);
  std::map<uint32_t, int64_t> launch_start;
  std::set<uint32_t> streams;
  uint64_t kernels = 0;
  size_t longest_name = 0;
  v1::Record r;
  while (reader.next(r)) {
    if (r.has_api()) launch_start[r.api().correlation_id()] = r.api().start_ns();
    if (r.has_kernel()) {
      const auto& k = r.kernel();
      ++kernels;
      streams.insert(k.stream());
      auto it = launch_start.find(k.correlation_id());
      ASSERT_NE(it, launch_start.end()) << "kernel " << k.correlation_id() << " before its launch";
      EXPECT_LT(it->second, k.queued_ns());
      EXPECT_LE(k.queued_ns(), k.submitted_ns());
      EXPECT_LT(k.submitted_ns(), k.start_ns());
      EXPECT_LT(k.start_ns(), k.end_ns());
      EXPECT_EQ(k.start_ns() % 32, 0);  // the GPU timer's resolution
      longest_name = std::max(longest_name, reader.string(k.name_id()).size());
    }
  }
  EXPECT_EQ(kernels, o.kernels);
  EXPECT_EQ(streams.size(), o.streams);
  EXPECT_GE(longest_name, 100u);
  EXPECT_LE(longest_name, 200u);
  EXPECT_GT(reader.integrity().chunks, 20u);
  EXPECT_TRUE(reader.integrity().has_index);

  // A window in the middle returns fewer kernels, all overlapping it.
  const auto& idx = *reader.index();
  uint64_t mid = (idx.chunk(0).min_ns() + idx.chunk(idx.chunk_size() - 1).max_ns()) / 2;
  ReaderOptions wopt;
  wopt.from_ns = mid;
  wopt.to_ns = mid + 1'000'000;
  uint64_t in_window = 0;
  for (const auto& rec : testing::read_all(path, wopt)) {
    if (!rec.has_kernel()) continue;
    ++in_window;
    EXPECT_LE(static_cast<uint64_t>(rec.kernel().queued_ns()), wopt.to_ns);
    EXPECT_GE(static_cast<uint64_t>(rec.kernel().end_ns()), wopt.from_ns);
  }
  EXPECT_GT(in_window, 0u);
  EXPECT_LT(in_window, kernels / 10);
}

TEST(SynthCapture, SameSeedSameBytes) {
  synth::SynthOptions o;
  o.kernels = 2'000;
  std::string a = testing::temp_path("synth-a"), b = testing::temp_path("synth-b");
  ASSERT_EQ(synth::write_capture(a, o), "");
  ASSERT_EQ(synth::write_capture(b, o), "");
  EXPECT_EQ(testing::read_bytes(a), testing::read_bytes(b));
  o.seed = 2;
  std::string c = testing::temp_path("synth-c");
  ASSERT_EQ(synth::write_capture(c, o), "");
  EXPECT_NE(testing::read_bytes(a), testing::read_bytes(c));
}

}  // namespace
}  // namespace gpuhook
