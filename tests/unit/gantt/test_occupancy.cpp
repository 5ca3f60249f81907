// Theoretical occupancy against cases worked by hand with the CUDA occupancy calculator's
// rules (cuda_occupancy.h), on the A100 (sm_80) and H100 (sm_90) limits in fabricate.h.
#include <gtest/gtest.h>

#include "fabricate.h"
#include "gantt/model/occupancy.h"

using gantt::OccupancyLimit;

namespace {

gantt::Occupancy occ(const gantt_test::v1::Record& dev, uint32_t threads, uint32_t regs, uint64_t smem) {
  return gantt::theoretical_occupancy({threads, regs, smem}, gantt::sm_limits(dev.device()));
}

}  // namespace

TEST(Occupancy, Sm80FullWhenWarpsBind) {
  // 256 threads = 8 warps; 32 regs -> 1024/warp, 16 warps per sub-partition -> 8 blocks;
  // 64 warps / 8 = 8 blocks: warps and registers tie at 64 warps = 100%.
  const auto o = occ(gantt_test::a100(), 256, 32, 0);
  EXPECT_EQ(o.active_blocks, 8u);
  EXPECT_EQ(o.active_warps, 64u);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limit, OccupancyLimit::kWarps);
}

TEST(Occupancy, Sm80RegistersBind) {
  // 64 regs -> 2048/warp -> 8 warps per sub-partition -> 32 warps -> 4 blocks of 8 warps.
  const auto o = occ(gantt_test::a100(), 256, 64, 0);
  EXPECT_EQ(o.blocks_by_registers, 4u);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limit, OccupancyLimit::kRegisters);
}

TEST(Occupancy, Sm80RegisterGranularityRoundsUp) {
  // 37 regs * 32 = 1184 -> 1280 allocated; 16384 / 1280 = 12 warps per sub-partition ->
  // 48 warps -> 6 blocks of 8 -> 75%.
  const auto o = occ(gantt_test::a100(), 256, 37, 0);
  EXPECT_EQ(o.active_blocks, 6u);
  EXPECT_DOUBLE_EQ(o.fraction, 0.75);
  EXPECT_EQ(o.limit, OccupancyLimit::kRegisters);
}

TEST(Occupancy, Sm80SharedMemoryBindsWithReservation) {
  // 48 KiB + 1 KiB reserved = 50176 B (a multiple of 128); 167936 / 50176 = 3 blocks of
  // 4 warps = 12 / 64 warps.
  const auto o = occ(gantt_test::a100(), 128, 32, 48 * 1024);
  EXPECT_EQ(o.blocks_by_shared_memory, 3u);
  EXPECT_DOUBLE_EQ(o.fraction, 12.0 / 64.0);
  EXPECT_EQ(o.limit, OccupancyLimit::kSharedMemory);
}

TEST(Occupancy, Sm80BlockLimitBindsForTinyBlocks) {
  // One warp per block: 64 by warps, but at most 32 blocks per SM -> 50%.
  const auto o = occ(gantt_test::a100(), 32, 16, 0);
  EXPECT_EQ(o.active_blocks, 32u);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limit, OccupancyLimit::kBlocks);
}

TEST(Occupancy, Sm80BlockThatCannotLaunch) {
  // 1024 threads * 255 regs (8192 per warp after rounding) = 262144 > 65536 per block.
  EXPECT_EQ(occ(gantt_test::a100(), 1024, 255, 0).limit, OccupancyLimit::kDoesNotFit);
  EXPECT_EQ(occ(gantt_test::a100(), 2048, 16, 0).limit, OccupancyLimit::kDoesNotFit);
}

TEST(Occupancy, Sm90SharedMemoryBinds) {
  // 100 KiB + 1 KiB = 103424 B; 233472 / 103424 = 2 blocks of 4 warps = 12.5%.
  const auto o = occ(gantt_test::h100(), 128, 32, 100 * 1024);
  EXPECT_EQ(o.active_blocks, 2u);
  EXPECT_DOUBLE_EQ(o.fraction, 0.125);
  EXPECT_EQ(o.limit, OccupancyLimit::kSharedMemory);
}

TEST(Occupancy, Sm90OddWarpCountRegisters) {
  // 96 threads = 3 warps; 40 regs -> 1280/warp -> 12 warps per sub-partition -> 48 warps
  // -> 16 blocks (warps alone would allow 21) -> 48 / 64 = 75%.
  const auto o = occ(gantt_test::h100(), 96, 40, 0);
  EXPECT_EQ(o.blocks_by_warps, 21u);
  EXPECT_EQ(o.blocks_by_registers, 16u);
  EXPECT_DOUBLE_EQ(o.fraction, 0.75);
  EXPECT_EQ(o.limit, OccupancyLimit::kRegisters);
}

TEST(Occupancy, Sm90OverOptInSharedMemoryDoesNotFit) {
  EXPECT_EQ(occ(gantt_test::h100(), 128, 32, 240 * 1024).limit, OccupancyLimit::kDoesNotFit);
  // ...while 200 KiB fits once: 1 block of 4 warps.
  const auto o = occ(gantt_test::h100(), 128, 32, 200 * 1024);
  EXPECT_EQ(o.active_blocks, 1u);
  EXPECT_EQ(o.limit, OccupancyLimit::kSharedMemory);
}

TEST(Occupancy, UnknownDeviceGivesUnknown) {
  gantt_test::v1::Record empty;
  empty.mutable_device();
  EXPECT_EQ(occ(empty, 256, 32, 0).limit, OccupancyLimit::kUnknown);
  EXPECT_EQ(occ(gantt_test::a100(), 0, 32, 0).limit, OccupancyLimit::kUnknown);
}

// Issue 22 item 9: a DeviceInfo and a launch shape are untrusted values. Each of these once
// divided by zero (SIGFPE) in every subcommand that loads a capture.
TEST(Occupancy, HostileLaunchShapeNeverDividesByZero) {
  // 65537 * 65535 = 2^32 - 1 threads: (threads + 31) wrapped to 30, 0 warps per block.
  const auto o = occ(gantt_test::a100(), 0xFFFFFFFFu, 32, 0);
  EXPECT_EQ(o.limit, OccupancyLimit::kDoesNotFit);
  EXPECT_EQ(occ(gantt_test::a100(), 0xFFFFFFE1u, 0, 0).limit, OccupancyLimit::kDoesNotFit);
  EXPECT_EQ(occ(gantt_test::a100(), 256, 0xFFFFFFFFu, ~0ull).limit, OccupancyLimit::kDoesNotFit);
}

TEST(Occupancy, HostileDeviceIsUnknownNotACrash) {
  auto with = [](auto set) {
    gantt_test::v1::Record r = gantt_test::a100();
    set(r.mutable_device());
    return r;
  };
  // A 2^24 warp: 256 registers * 2^24 rounded to 256 truncated to 0 registers per warp.
  const auto huge_warp = with([](auto* d) { d->set_warp_size(1u << 24); });
  EXPECT_NE(gantt::sm_limits_problem(gantt::sm_limits(huge_warp.device())), "");
  EXPECT_EQ(occ(huge_warp, 256, 256, 0).limit, OccupancyLimit::kUnknown);
  const auto big_warp = with([](auto* d) { d->set_warp_size(0x80000000u); });
  EXPECT_EQ(occ(big_warp, 256, 32, 0).limit, OccupancyLimit::kUnknown);
  const auto no_warps = with([](auto* d) { d->set_max_warps_per_sm(0); d->set_max_threads_per_sm(31); });
  EXPECT_EQ(occ(no_warps, 256, 32, 0).limit, OccupancyLimit::kUnknown);
  EXPECT_EQ(gantt::sm_limits_problem(gantt::sm_limits(gantt_test::a100().device())), "");
  EXPECT_EQ(gantt::sm_limits_problem(gantt::sm_limits(gantt_test::h100().device())), "");
}
