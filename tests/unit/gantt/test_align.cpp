// Clock alignment: a known offset and drift must be recovered from the pairs, and the
// model must shift GPU times only when it says it did.
#include <gtest/gtest.h>

#include <cmath>

#include "fabricate.h"
#include "gantt/align.h"
#include "gantt/model.h"

TEST(Align, RecoversOffsetAndDrift) {
  std::vector<gantt::ClockPair> pairs;
  const uint64_t gpu0 = 5'000'000'000ull;
  for (int i = 0; i < 20; ++i) {
    const uint64_t gpu = gpu0 + uint64_t(i) * 100'000'000ull;  // every 100 ms
    const double host = double(gpu) + 250'000.0 + 20e-6 * double(gpu - gpu0);
    pairs.push_back({0, uint64_t(std::llround(host)), gpu});
  }
  const auto a = gantt::fit_clocks(false, pairs);
  ASSERT_EQ(a.method, gantt::AlignMethod::kFit);
  ASSERT_EQ(a.fits.size(), 1u);
  EXPECT_NEAR(a.fits[0].offset_ns, 250'000.0, 1.0);
  EXPECT_NEAR(a.fits[0].drift * 1e6, 20.0, 0.01);
  EXPECT_LT(a.fits[0].residual_rms_ns, 1.0);
  // 1 s after the reference: 250 us offset + 20 us drift.
  EXPECT_NEAR(double(a.to_host(0, gpu0 + 1'000'000'000ull)), double(gpu0 + 1'000'000'000ull + 270'000), 1.0);
  EXPECT_EQ(a.to_host(0, 0), 0u);  // unknown stays unknown
}

TEST(Align, ReportsResidualOfNoisyPairs) {
  std::vector<gantt::ClockPair> pairs;
  for (int i = 0; i < 100; ++i) {
    const uint64_t gpu = 1'000'000 + uint64_t(i) * 1'000'000;
    const int64_t noise = (i % 2) ? 100 : -100;  // +-100 ns around an offset of 1 ms
    pairs.push_back({1, uint64_t(int64_t(gpu) + 1'000'000 + noise), gpu});
  }
  const auto a = gantt::fit_clocks(false, pairs);
  ASSERT_EQ(a.fits.size(), 1u);
  EXPECT_EQ(a.fits[0].device, 1u);
  EXPECT_NEAR(a.fits[0].offset_ns, 1'000'000.0, 20.0);
  EXPECT_NEAR(a.fits[0].residual_rms_ns, 100.0, 2.0);
  EXPECT_NE(gantt::describe(a).find("residual"), std::string::npos);
}

TEST(Align, SinglePairIsOffsetOnly) {
  const auto a = gantt::fit_clocks(false, {{0, 2000, 1000}});
  ASSERT_EQ(a.fits.size(), 1u);
  EXPECT_DOUBLE_EQ(a.fits[0].offset_ns, 1000.0);
  EXPECT_DOUBLE_EQ(a.fits[0].drift, 0.0);
}

TEST(Align, SharedClockAndNoPairs) {
  EXPECT_EQ(gantt::fit_clocks(true, {{0, 2000, 1000}}).method, gantt::AlignMethod::kSharedClock);
  const auto none = gantt::fit_clocks(false, {});
  EXPECT_EQ(none.method, gantt::AlignMethod::kNone);
  EXPECT_EQ(none.to_host(0, 1234), 1234u);
  EXPECT_NE(gantt::describe(none).find("UNALIGNED"), std::string::npos);
}

TEST(Align, ModelShiftsGpuTimesOnlyWithoutSharedClock) {
  using namespace gantt_test;
  for (bool shared : {true, false}) {
    gantt::Model m;
    gantt::ModelBuilder b(m);
    b.begin_capture("x");
    b.add(header(shared ? v1::FEATURE_HOST_CLOCK_CALLBACK : 0));
    b.add(clock_sync(1'000'500, 1'000'000));
    b.add(clock_sync(2'000'500, 2'000'000));
    b.add(api(1, 7, 1'100'000, 1'100'100, 1));
    b.add(kernel(2, 1, 1, 1'200'000, 1'200'100, 1'300'000, 1'400'000));
    b.end_capture({});
    const uint64_t shift = shared ? 0 : 500;
    EXPECT_EQ(m.events.start_ns[0], 1'300'000 + shift);
    EXPECT_EQ(m.events.queued_ns[0], 1'200'000 + shift);
    EXPECT_EQ(m.launch_ns(0), 1'100'000u);  // host times never move
    EXPECT_EQ(m.captures[0].alignment.method, shared ? gantt::AlignMethod::kSharedClock : gantt::AlignMethod::kFit);
  }
}
