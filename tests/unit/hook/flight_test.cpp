// The flight recorder's memory (FlightBuffer: the last duration, at most a byte bound) and its
// slow-occurrence trigger (SlowDetector), on hand-made frames and durations.
#include "flight.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuhook::hook {
namespace {

ChunkFrame frame(uint64_t min_ns, uint64_t max_ns, size_t bytes) {
  ChunkFrame f;
  f.bytes.assign(bytes, 'x');
  f.min_ns = min_ns;
  f.max_ns = max_ns;
  f.records = 1;
  return f;
}

TEST(FlightBuffer, KeepsTheLastDurationAndLetsTheOldestGo) {
  FlightBuffer b(/*duration_ns=*/1000, /*max_bytes=*/1 << 20);
  for (uint64_t t = 0; t < 10; ++t) b.frame(frame(t * 300 + 1, t * 300 + 300, 10));
  // Newest ends at 3000: frames ending before 2000 go, as long as the next one still starts
  // within the window's reach.
  ASSERT_FALSE(b.frames().empty());
  EXPECT_GE(b.frames().front().max_ns, 2000u);
  EXPECT_EQ(b.frames().back().max_ns, 3000u);
  EXPECT_EQ(b.frames_dropped() + b.frames().size(), 10u);
  EXPECT_EQ(b.bytes(), 10u * b.frames().size());
}

TEST(FlightBuffer, TheByteBoundWinsButTheNewestFrameStays) {
  FlightBuffer b(/*duration_ns=*/1'000'000'000, /*max_bytes=*/100);
  for (uint64_t t = 1; t <= 5; ++t) b.frame(frame(t, t, 40));
  EXPECT_EQ(b.frames().size(), 2u);  // 80 bytes: a third would be 120
  EXPECT_EQ(b.bytes(), 80u);
  b.frame(frame(6, 6, 500));  // one frame over the bound alone: kept, the rest go
  ASSERT_EQ(b.frames().size(), 1u);
  EXPECT_EQ(b.frames().front().bytes.size(), 500u);
}

TEST(FlightBuffer, AWaitingTriggerKeepsTheDurationBeforeItUntilItsDump) {
  FlightBuffer b(/*duration_ns=*/1000, /*max_bytes=*/1 << 20);
  b.hold(1500);  // a trigger at 2500 that the writer has not dumped yet
  b.hold(1800);  // a later one joining it: the earlier hold stands
  for (uint64_t t = 0; t < 20; ++t) b.frame(frame(t * 300 + 1, t * 300 + 300, 10));
  // Newest ends at 6000: without the hold, frames ending before 5000 would go.
  EXPECT_EQ(b.frames().front().max_ns, 1500u);
  b.release(1500);
  b.frame(frame(6001, 6300, 10));
  EXPECT_GE(b.frames().front().max_ns, 5300u);
  // The byte bound still wins over a hold.
  FlightBuffer small(/*duration_ns=*/1000, /*max_bytes=*/100);
  small.hold(1);
  for (uint64_t t = 1; t <= 5; ++t) small.frame(frame(t, t, 40));
  EXPECT_EQ(small.frames().size(), 2u);
}

TEST(SlowDetector, AnOccurrenceOverFactorTimesTheMedianAfterTheWarmUp) {
  std::string why;
  uint64_t t = 1000;
  // A range of another name nested inside, and one on another thread, do not disturb the
  // pairing: each pop ends the innermost open range of its own thread.
  SlowDetector d("step", 3.0);
  for (int k = 0; k < 30; ++k) {
    d.push(7, "step", t);
    d.push(7, "inner", t + 1);
    d.push(8, "other", t + 2);
    EXPECT_FALSE(d.pop(7, t + 5000, &why));  // "inner": not ours, however long
    EXPECT_FALSE(d.pop(8, t + 9000, &why));
    EXPECT_FALSE(d.pop(7, t + 100, &why)) << k;
    t += 10000;
  }
  EXPECT_EQ(d.occurrences(), 30u);
  // 20 steps of 100 ns, then one of 250 (2.5x) and one of 400 (4x, over 3).
  SlowDetector e("step", 3.0);
  for (int k = 0; k < 20; ++k) {
    e.push(1, "step", t);
    EXPECT_FALSE(e.pop(1, t + 100, &why));
    t += 1000;
  }
  e.push(1, "step", t);
  EXPECT_FALSE(e.pop(1, t + 250, &why));  // 2.5x: not slow
  e.push(1, "step", t);
  ASSERT_TRUE(e.pop(1, t + 400, &why));
  EXPECT_NE(why.find("occurrence 22 of 'step' took 0.000 ms, 4.0x the median"), std::string::npos) << why;
  // A pop without a push, or on a thread never seen: nothing.
  EXPECT_FALSE(e.pop(99, t, &why));
}

TEST(SlowDetector, NoVerdictDuringTheWarmUp) {
  SlowDetector d("step", 2.0);
  std::string why;
  for (uint64_t k = 1; k < SlowDetector::kWarmup; ++k) {
    d.push(1, "step", 0);
    EXPECT_FALSE(d.pop(1, k == 3 ? 1'000'000 : 10, &why));  // a huge third one: still warming up
  }
}

}  // namespace
}  // namespace gpuhook::hook
