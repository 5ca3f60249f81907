// GPUHOOK_MEM_USE's hot-path parts (memory_use.h): which values are taken for addresses, how
// often an address is written again, and what a kernel's arguments yield.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "memory_use.h"

namespace gpuhook::hook {
namespace {

TEST(MemoryUse, AddressesAreAbove4GiBAndBelow2To57) {
  EXPECT_FALSE(may_be_address(0));
  EXPECT_FALSE(may_be_address(16384));                   // a size
  EXPECT_FALSE(may_be_address((uint64_t{1} << 32) - 1));
  EXPECT_TRUE(may_be_address(uint64_t{1} << 32));
  EXPECT_TRUE(may_be_address(0x7f4e5a000000ull));        // a device address
  EXPECT_FALSE(may_be_address(uint64_t{1} << 57));
  double one = 1.0;
  uint64_t bits;
  std::memcpy(&bits, &one, sizeof bits);
  EXPECT_FALSE(may_be_address(bits));                    // a double's exponent puts it above
}

TEST(MemoryUse, ThePauseIs1msOrARun32nd) {
  EXPECT_EQ(use_pause_ns(0), 1'000'000u);
  EXPECT_EQ(use_pause_ns(32'000'000), 1'000'000u);
  EXPECT_EQ(use_pause_ns(320'000'000), 10'000'000u);   // 0.32 s into the run: 10 ms
}

TEST(MemoryUse, AnAddressIsWrittenAgainOnlyAfterThePause) {
  auto filter = std::make_unique<UseFilter>();
  const uint64_t a = 0x7f0000001000ull, b = 0x7f0000002000ull;
  EXPECT_TRUE(filter->admit(a, 1'000, 500));
  EXPECT_FALSE(filter->admit(a, 1'200, 500));  // within the pause
  EXPECT_TRUE(filter->admit(b, 1'200, 500));   // another address
  EXPECT_FALSE(filter->admit(a, 1'499, 500));
  EXPECT_TRUE(filter->admit(a, 1'500, 500));   // the pause has passed
  EXPECT_FALSE(filter->admit(a, 1'600, 500));  // and starts again from there
}

TEST(MemoryUse, EveryAligned8BytesOfAnArgumentUpTo64AreCandidates) {
  auto filter = std::make_unique<UseFilter>();
  // kernel(float* p, int n, struct { float* q; double x; float* r; } s, char big[80])
  uint64_t p = 0x7f0000010000ull;
  int n = 1000;
  struct {
    uint64_t q, x, r;
  } s{0x7f0000020000ull, 0x3ff0000000000000ull, 0x7f0000030004ull};
  unsigned char big[80] = {};
  const uint64_t past_64 = 0x7f0000040000ull, within = 0x7f0000050000ull;
  std::memcpy(big + 56, &within, 8);
  std::memcpy(big + 64, &past_64, 8);  // past the first 64 bytes: not looked at
  void* args[] = {&p, &n, &s, big};
  ParamLayout layout;
  layout.count = 4;
  layout.size[0] = 8, layout.size[1] = 4, layout.size[2] = sizeof s, layout.size[3] = sizeof big;
  UseCollector c(*filter, 1'000, 500);
  c.add_kernel_args(layout, args);
  ASSERT_EQ(c.count(), 4u);
  EXPECT_EQ(c.address(0), p);
  EXPECT_EQ(c.address(1), s.q);
  EXPECT_EQ(c.address(2), s.r);  // an interior pointer counts
  EXPECT_EQ(c.address(3), within);
  // The same call again within the pause yields nothing; a buffer given twice is one use.
  UseCollector again(*filter, 1'100, 500);
  again.add_kernel_args(layout, args);
  EXPECT_EQ(again.count(), 0u);
  UseCollector twice(*filter, 5'000, 500);
  twice.add(p);
  twice.add(p);
  EXPECT_EQ(twice.count(), 1u);
}

TEST(MemoryUse, AnUnknownLayoutYieldsNothing) {
  auto filter = std::make_unique<UseFilter>();
  uint64_t p = 0x7f0000010000ull;
  void* args[] = {&p};
  UseCollector c(*filter, 1'000, 500);
  c.add_kernel_args(ParamLayout{}, args);
  c.add_kernel_args(ParamLayout{}, nullptr);
  EXPECT_EQ(c.count(), 0u);
}

}  // namespace
}  // namespace gpuhook::hook
