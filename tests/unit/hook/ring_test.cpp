#include "ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "comm_map.h"

namespace gpuhook::hook {
namespace {

// The hot path must not take page faults: every page of a new ring is resident before its
// first record. 1M records (128 MiB) is past glibc's largest mmap threshold, so the slots are
// fresh mmap'd pages that only a real write makes resident (a memset of zeros that the
// compiler turns into calloc is not one).
TEST(Ring, ANewRingsPagesAreAlreadyResident) {
  constexpr uint32_t kRecords = 1u << 20;
  Ring ring(kRecords);
  ASSERT_EQ(ring.capacity(), kRecords);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ring.slot(0)) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(ring.slot(0)) + size_t{kRecords} * sizeof(HostRecord);
  std::vector<unsigned char> resident((end - begin + page - 1) / page);
  ASSERT_EQ(mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()), 0);
  size_t missing = 0;
  for (unsigned char r : resident) missing += (r & 1) == 0;
  EXPECT_EQ(missing, 0u) << "of " << resident.size() << " pages";
}

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

TEST(Ring, ARecordAndItsContinuationsArePublishedTogether) {
  Ring ring(64);
  // 60 records in and 50 out: the next group of 44 wraps around the end of the slots.
  for (int i = 0; i < 60; ++i) {
    ring.reserve()->start_ns = 1;
    ring.commit();
  }
  ring.drain([](const HostRecord&) {}, 50);
  EXPECT_FALSE(ring.has_room(55));  // 10 still unread: 54 free
  ASSERT_TRUE(ring.has_room(44));
  for (uint64_t i = 0; i < 44; ++i) ring.slot(i)->start_ns = 100 + i;
  // Nothing is visible to the writer before the one commit.
  uint64_t seen_before = 0;
  ring.drain([&](const HostRecord&) { ++seen_before; });
  EXPECT_EQ(seen_before, 10u);
  ring.commit(44);
  std::vector<uint64_t> seen;
  ring.drain([&](const HostRecord& r) { seen.push_back(r.start_ns); });
  ASSERT_EQ(seen.size(), 44u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 100 + i);
  EXPECT_TRUE(ring.has_room(64));
  EXPECT_FALSE(ring.has_room(65));
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
  EXPECT_EQ(map.lookup(&comm_a).id, map.lookup(&comm_b).id);
  EXPECT_EQ(map.lookup(&comm_a, SequenceKind::kCollective).sequence, 0u);
  EXPECT_EQ(map.lookup(&comm_a, SequenceKind::kCollective).sequence, 1u);
  EXPECT_EQ(map.lookup(&comm_b, SequenceKind::kCollective).sequence, 0u);
  EXPECT_EQ(map.lookup(&comm_b).rank, 1);
  EXPECT_EQ(map.lookup(&comm_a).device, 0);
  EXPECT_EQ(map.lookup(&comm_b).device, 3);
  map.erase(&comm_a);
  EXPECT_EQ(map.lookup(&comm_a).id, 0u);
  EXPECT_EQ(map.lookup(&comm_b).nranks, 2);
  unique_id[5] = 9;
  EXPECT_NE(fnv1a64(unique_id, sizeof(unique_id)), id);
}

TEST(CommMap, SendAndRecvAreNumberedApartFromCollectives) {
  // Ranks 0 and 1 trade messages between two all-reduces, rank 2 does not: the second
  // all-reduce must be number 1 on every rank.
  CommMap map;
  int rank0 = 0, rank2 = 0;
  ASSERT_TRUE(map.insert(&rank0, 7, 0, 3, 0));
  ASSERT_TRUE(map.insert(&rank2, 7, 2, 3, 0));
  EXPECT_EQ(map.lookup(&rank0, SequenceKind::kCollective).sequence, 0u);
  EXPECT_EQ(map.lookup(&rank2, SequenceKind::kCollective).sequence, 0u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(map.lookup(&rank0, SequenceKind::kPointToPoint).sequence, i);
  EXPECT_EQ(map.lookup(&rank0, SequenceKind::kCollective).sequence, 1u);
  EXPECT_EQ(map.lookup(&rank2, SequenceKind::kCollective).sequence, 1u);
  EXPECT_EQ(map.lookup(&rank0).sequence, 0u) << "a lookup without a kind takes no number";
  EXPECT_EQ(map.lookup(&rank0, SequenceKind::kCollective).sequence, 2u);
}

TEST(CommMap, ANonBlockingCommunicatorIsKnownBeforeItCanSayItsRank) {
  // ncclInProgress: the id is known at once, rank/size/device once NCCL answers.
  CommMap map;
  int comm = 0;
  ASSERT_TRUE(map.insert(&comm, 9, -1, -1, -1, true));
  CommInfo before = map.lookup(&comm, SequenceKind::kCollective);
  EXPECT_EQ(before.id, 9u);
  EXPECT_TRUE(before.unresolved);
  map.resolve(&comm, 1, 4, 2);
  CommInfo after = map.lookup(&comm, SequenceKind::kCollective);
  EXPECT_FALSE(after.unresolved);
  EXPECT_EQ(after.rank, 1);
  EXPECT_EQ(after.nranks, 4);
  EXPECT_EQ(after.device, 2);
  EXPECT_EQ(after.sequence, 1u) << "resolving keeps the numbering";
}

TEST(CommMap, ShrinksAreCountedApartFromSplits) {
  // The ranks a shrink excludes do not call it; their later splits must agree with the others'.
  CommMap map;
  int survivor = 0, excluded = 0;
  ASSERT_TRUE(map.insert(&survivor, 5, 0, 2, 0));
  ASSERT_TRUE(map.insert(&excluded, 5, 1, 2, 0));
  EXPECT_EQ(map.next_shrink(&survivor), 0u);
  EXPECT_EQ(map.next_split(&survivor), map.next_split(&excluded));
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
  for (size_t i = 0; i < comms.size(); ++i) EXPECT_EQ(map.lookup(&comms[i]).id, i + 100);
}

}  // namespace
}  // namespace gpuhook::hook
