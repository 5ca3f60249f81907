// Clock alignment within a capture: GPU times are on the host clock exactly when the header
// says the CUPTI timestamp callback stamped them; otherwise nothing moves and every output says
// the capture is unaligned. ClockSync records (never written by the hook) move nothing.
#include <gtest/gtest.h>

#include "fabricate.h"
#include "gantt/model/align.h"
#include "gantt/model/model.h"

namespace v1 = gpuhook::v1;

TEST(Align, TheHeaderFeatureDecides) {
  EXPECT_EQ(gantt::clock_alignment(v1::FEATURE_HOST_CLOCK_CALLBACK).method, gantt::AlignMethod::kSharedClock);
  EXPECT_EQ(gantt::clock_alignment(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_NVTX).method,
            gantt::AlignMethod::kSharedClock);
  const gantt::ClockAlignment none = gantt::clock_alignment(v1::FEATURE_LATENCY_TIMESTAMPS);
  EXPECT_EQ(none.method, gantt::AlignMethod::kNone);
  EXPECT_NE(gantt::describe(none).find("UNALIGNED"), std::string::npos);
  EXPECT_EQ(gantt::describe(gantt::clock_alignment(v1::FEATURE_HOST_CLOCK_CALLBACK)).find("UNALIGNED"),
            std::string::npos);
}

TEST(Align, ModelNeverShiftsGpuTimesAndSaysWhenTheyAreUnaligned) {
  using namespace gantt_test;
  for (bool shared : {true, false}) {
    gantt::Model m;
    gantt::ModelBuilder b(m);
    b.begin_capture("x");
    b.add(header(shared ? v1::FEATURE_HOST_CLOCK_CALLBACK : 0));
    // Clock pairs of another tool: read, and ignored.
    b.add(clock_sync(1'000'500, 1'000'000));
    b.add(clock_sync(2'000'500, 2'000'000));
    b.add(api(1, 7, 1'100'000, 1'100'100, 1));
    b.add(kernel(2, 1, 1, 1'200'000, 1'200'100, 1'300'000, 1'400'000));
    b.end_capture({});
    EXPECT_EQ(m.events.start_ns[0], 1'300'000u);
    EXPECT_EQ(m.events.queued_ns[0], 1'200'000u);
    EXPECT_EQ(m.launch_ns(0), 1'100'000u);
    EXPECT_EQ(m.captures[0].alignment.method, shared ? gantt::AlignMethod::kSharedClock : gantt::AlignMethod::kNone);
    bool warned = false;
    for (const std::string& line : gantt::integrity_warnings(m, nullptr))
      warned = warned || line.find("UNALIGNED") != std::string::npos;
    EXPECT_EQ(warned, !shared);
  }
}
