// Rank x rank traffic (analysis/comm.h) on NCCL calls whose matrix is known by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "gantt/analysis/comm.h"
#include "gantt/analysis/topology.h"
#include "gantt/model.h"

namespace {

namespace v1 = gpuhook::v1;

// One ncclSend of `bytes` from `rank` to `peer` whose kernel ran `ns`.
void send(gantt::Model& m, uint64_t comm, int32_t nranks, int32_t rank, int32_t peer, uint64_t bytes, uint64_t ns) {
  m.events.for_each_column([](auto& column, auto init) { column.push_back(init); });
  const uint32_t e = static_cast<uint32_t>(m.events.size() - 1);
  m.events.kind[e] = gantt::EventKind::kNccl;
  m.events.start_ns[e] = 1'000'000;
  m.events.end_ns[e] = 1'000'000 + ns;
  gantt::NcclTable& n = m.nccl;
  n.capture.push_back(0), n.op.push_back(v1::NCCL_SEND), n.name.push_back(0), n.thread.push_back(0);
  n.count.push_back(bytes), n.datatype.push_back(0), n.bytes.push_back(bytes), n.reduce_op.push_back(-1);
  n.root_or_peer.push_back(peer), n.comm_id.push_back(comm), n.rank.push_back(rank), n.nranks.push_back(nranks);
  n.sequence.push_back(0), n.device.push_back(0), n.cuda_stream_id.push_back(0), n.start_ns.push_back(1);
  n.end_ns.push_back(2), n.return_value.push_back(0), n.event.push_back(e), n.external_id.push_back(0);
  n.group_depth.push_back(0);
}

}  // namespace

TEST(Comm, PointToPointMatrixAndTheSlowPair) {
  gantt::Model m;
  m.captures.emplace_back();
  send(m, 0x42, 3, 0, 1, 1'000'000, 100'000);    // 10 GB/s
  send(m, 0x42, 3, 1, 2, 1'000'000, 100'000);    // 10 GB/s
  send(m, 0x42, 3, 2, 0, 1'000'000, 1'000'000);  // 1 GB/s: under half the median
  send(m, 0x42, 3, 0, 1, 1'000'000, 100'000);    // the same pair again: adds up
  send(m, 0x42, 3, 5, 1, 1'000'000, 100'000);    // a rank outside the communicator: left out
  send(m, 0x43, 1 << 20, 0, 1, 1, 1);            // 2^20 ranks: no matrix, a note
  std::vector<std::string> notes;
  const auto ms = gantt::analysis::comm_matrices(m, &notes);
  ASSERT_EQ(ms.size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  const auto& c = ms[0];
  EXPECT_EQ(c.nranks, 3);
  EXPECT_EQ(c.sends, 4u);
  EXPECT_EQ(c.p2p_bytes[c.at(0, 1)], 2'000'000u);
  EXPECT_EQ(c.p2p_ns[c.at(0, 1)], 200'000u);
  EXPECT_DOUBLE_EQ(c.p2p_gbps(0, 1), 10.0);
  EXPECT_DOUBLE_EQ(c.p2p_gbps(2, 0), 1.0);
  EXPECT_EQ(c.p2p_bytes[c.at(1, 0)], 0u);
  ASSERT_EQ(c.slow.size(), 1u);
  EXPECT_EQ(c.slow[0].from, 2);
  EXPECT_EQ(c.slow[0].to, 0);
  EXPECT_DOUBLE_EQ(c.slow[0].median_gbps, 10.0);
  const std::string text = gantt::analysis::format_comm_stats(ms, notes, "text");
  EXPECT_NE(text.find("slow pair: rank 2 -> rank 0 at 1.00 GB/s, the median pair 10.00 GB/s"), std::string::npos) << text;
}

TEST(Topology, ParsesNvidiaSmiTopoM) {
  std::ifstream in(std::string(GPUHOOK_SOURCE_DIR) + "/tests/fixtures/topology/dgx_4gpu.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const gantt::analysis::Topology t = gantt::analysis::parse_topology(text, "dgx_4gpu.txt");
  ASSERT_EQ(t.devices.size(), 5u);
  EXPECT_EQ(t.devices[4], "NIC0");
  EXPECT_EQ(t.link(0, 1), "NV18");
  EXPECT_EQ(t.link(2, 3), "PHB");
  EXPECT_EQ(t.link(0, 4), "PXB");
  EXPECT_EQ(t.link(1, 1), "X");
  EXPECT_EQ(gantt::analysis::Topology::rank_of("NV18"), 3);
  EXPECT_EQ(gantt::analysis::Topology::rank_of("SYS"), 0);
}

TEST(Topology, RefusesWhatIsNotAMatrix) {
  for (const char* bad : {"", "hello\nworld\n", "\tGPU0\tGPU1\nGPU0\t X \tNV4\n",   // a row missing
                          "\tGPU0\tGPU1\nGPU1\t X \tNV4\nGPU0\tNV4\t X \n",            // rows out of order
                          "\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV4\t X \n"})                // a short row
    EXPECT_THROW(gantt::analysis::parse_topology(bad, "t.txt"), std::invalid_argument) << bad;
  EXPECT_THROW(gantt::analysis::parse_topology(std::string(2 << 20, ' '), "big.txt"), std::invalid_argument);
}
