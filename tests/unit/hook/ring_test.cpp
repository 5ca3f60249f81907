#include "ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "comm_map.h"

namespace gpuhook::hook {
namespace {

TEST(Ring, FillsThenDropsThenDrains) {
  Ring ring(64);
  int written = 0;
  for (int i = 0; i < 100; ++i) {
    HostRecord* r = ring.reserve();
    if (r == nullptr) {
      ring.count_drop();
      continue;
    }
    r->start_ns = static_cast<uint64_t>(i);
    ring.commit();
    ++written;
  }
  EXPECT_EQ(written, 64);
  EXPECT_EQ(ring.take_dropped(), 36u);
  EXPECT_EQ(ring.take_dropped(), 0u);
  std::vector<uint64_t> seen;
  ring.drain([&](const HostRecord& r) { seen.push_back(r.start_ns); });
  ASSERT_EQ(seen.size(), 64u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  EXPECT_TRUE(ring.empty());
  EXPECT_NE(ring.reserve(), nullptr);
}

TEST(Ring, ProducerAndConsumerOnTwoThreadsLoseNothingInOrder) {
  Ring ring(256);
  constexpr uint64_t kCount = 200'000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kCount; ++i) {
      HostRecord* r;
      while ((r = ring.reserve()) == nullptr) std::this_thread::yield();
      r->start_ns = i;
      ring.commit();
    }
  });
  uint64_t expected = 0;
  bool in_order = true;
  while (expected < kCount) {
    ring.drain([&](const HostRecord& r) {
      in_order = in_order && r.start_ns == expected;
      ++expected;
    });
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kCount);
}

TEST(RingRegistry, ReusesADrainedRetiredRingOnly) {
  RingRegistry reg;
  Ring* a = reg.acquire(64);
  ASSERT_NE(a, nullptr);
  a->reserve();
  a->commit();
  RingRegistry::retire(a);
  Ring* b = reg.acquire(64);
  EXPECT_NE(a, b);  // a still holds an unread record
  a->drain([](const HostRecord&) {});
  Ring* c = reg.acquire(64);
  EXPECT_EQ(a, c);
  int n = 0;
  for (Ring* r = reg.first(); r != nullptr;) {
    Ring* next = r->next;
    delete r;  // a registry lives as long as its process; a test's must not leak
    r = next;
    ++n;
  }
  EXPECT_EQ(n, 2);
}

TEST(CommMap, SameUniqueIdSameIdSequencesCount) {
  CommMap map;
  unsigned char unique_id[128] = {1, 2, 3};
  uint64_t id = fnv1a64(unique_id, sizeof(unique_id));
  int comm_a = 0, comm_b = 0;
  ASSERT_TRUE(map.insert(&comm_a, id, 0, 2, 0));
  ASSERT_TRUE(map.insert(&comm_b, fnv1a64(unique_id, sizeof(unique_id)), 1, 2, 3));
  EXPECT_EQ(map.lookup(&comm_a, false).id, map.lookup(&comm_b, false).id);
  EXPECT_EQ(map.lookup(&comm_a, true).sequence, 0u);
  EXPECT_EQ(map.lookup(&comm_a, true).sequence, 1u);
  EXPECT_EQ(map.lookup(&comm_b, true).sequence, 0u);
  EXPECT_EQ(map.lookup(&comm_b, false).rank, 1);
  EXPECT_EQ(map.lookup(&comm_a, false).device, 0);
  EXPECT_EQ(map.lookup(&comm_b, false).device, 3);
  map.erase(&comm_a);
  EXPECT_EQ(map.lookup(&comm_a, false).id, 0u);
  EXPECT_EQ(map.lookup(&comm_b, false).nranks, 2);
  unique_id[5] = 9;
  EXPECT_NE(fnv1a64(unique_id, sizeof(unique_id)), id);
}

TEST(CommMap, ConcurrentInsertsAllFindable) {
  CommMap map;
  std::vector<int> comms(2000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < comms.size(); i += 4) map.insert(&comms[i], i + 100, 0, 1, 0);
    });
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < comms.size(); ++i) EXPECT_EQ(map.lookup(&comms[i], false).id, i + 100);
}

}  // namespace
}  // namespace gpuhook::hook
