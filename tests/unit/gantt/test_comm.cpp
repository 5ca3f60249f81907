// Rank x rank traffic (analysis/comm.h) on NCCL calls whose matrix is known by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <variant>

#include "gantt/analysis/comm.h"
#include "gantt/analysis/topology.h"
#include "gantt/model/model.h"
#include "gantt/render/render.h"

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

std::string fixture(const std::string& file) {
  std::ifstream in(std::string(GPUHOOK_SOURCE_DIR) + "/tests/fixtures/topology/" + file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The matrix as nvidia-smi lays it out: a header of device names, then a row per device.
std::string matrix(const gantt::analysis::Topology& t) {
  std::string out;
  for (const std::string& d : t.devices) out += "\t" + d;
  for (size_t i = 0; i < t.devices.size(); ++i) {
    out += "\n" + t.devices[i];
    for (size_t j = 0; j < t.devices.size(); ++j) out += "\t" + t.link(i, j);
  }
  return out + "\n";
}

// What parse_topology throws for `text`, "" if it does not.
std::string refusal(const std::string& text) {
  try {
    (void)gantt::analysis::parse_topology(text, "t.xml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// NCCL's topology XML around one <cpu>'s children.
std::string nccl_xml(const std::string& cpu_children) {
  return "<system version=\"1\">\n<cpu numaid=\"0\">\n" + cpu_children + "</cpu>\n</system>\n";
}

std::string gpu_at(const std::string& busid, const std::string& gpu_attrs, const std::string& nvlinks = "") {
  return "<pci busid=\"" + busid + "\" class=\"0x030200\"><gpu " + gpu_attrs + ">" + nvlinks + "</gpu></pci>\n";
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
  send(m, 0x43, 1 << 20, 1, 2, 1, 1);            // the same communicator again: no second note
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

// tests/fixtures/topology/dgx_h100.xml is a DGX H100 written by hand in the shape NCCL dumps
// (NCCL_TOPO_DUMP_FILE): four PCIe switches per socket, each with a GPU and its ConnectX-7,
// every GPU with 5+5+4+4 NVLinks to four NVSwitches. dgx_h100.txt is what `nvidia-smi topo -m`
// prints for that layout: the two must read as the same topology.
TEST(Topology, NcclXmlOfAnNvSwitchBoxReadsAsNvidiaSmiPrintsIt) {
  const gantt::analysis::Topology xml = gantt::analysis::parse_topology(fixture("dgx_h100.xml"), "dgx_h100.xml");
  const gantt::analysis::Topology smi = gantt::analysis::parse_topology(fixture("dgx_h100.txt"), "dgx_h100.txt");
  ASSERT_EQ(xml.devices.size(), 16u);
  EXPECT_EQ(xml.devices[7], "GPU7");
  EXPECT_EQ(xml.devices[8], "NIC0");
  EXPECT_EQ(xml.link(0, 7), "NV18");   // through the NVSwitches: min(18, 18)
  EXPECT_EQ(xml.link(0, 8), "PIX");    // GPU0 and mlx5_0 under one switch
  EXPECT_EQ(xml.link(0, 9), "NODE");   // mlx5_1: another switch on the same socket
  EXPECT_EQ(xml.link(0, 12), "SYS");   // mlx5_4: the other socket
  EXPECT_EQ(xml.link(12, 9), "SYS");
  EXPECT_EQ(matrix(xml), matrix(smi));
}

// tests/fixtures/topology/pcie_4gpu.xml, as a hand-edited NCCL_TOPO_FILE (prolog, comment):
// two sockets, GPU0 and GPU1 behind one switch that sits behind another with mlx5_0, GPU2 and
// GPU3 on root ports of socket 1 with an NVLink bridge, eth0 listed under both <cpu>s.
TEST(Topology, NcclXmlOfAPcieBoxWithTwoSockets) {
  const gantt::analysis::Topology t = gantt::analysis::parse_topology(fixture("pcie_4gpu.xml"), "pcie_4gpu.xml");
  EXPECT_EQ(matrix(t),
            "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\n"
            "GPU0\tX\tPIX\tSYS\tSYS\tPXB\tNODE\n"
            "GPU1\tPIX\tX\tSYS\tSYS\tPXB\tNODE\n"
            "GPU2\tSYS\tSYS\tX\tNV4\tSYS\tNODE\n"
            "GPU3\tSYS\tSYS\tNV4\tX\tSYS\tNODE\n"
            "NIC0\tPXB\tPXB\tSYS\tSYS\tX\tNODE\n"
            "NIC1\tNODE\tNODE\tNODE\tNODE\tNODE\tX\n");
}

TEST(Topology, NcclXmlGpusAreNamedByDevAndTheirNvlinksCountedOnce) {
  const std::string nvswitch18 = R"(<nvlink target="0000:0a:00.0" count="9" tclass="0x068000"/>)"
                                 R"(<nvlink target="fffffff:ff:ff.0" count="9" tclass="0x068000"/>)";
  const gantt::analysis::Topology t = gantt::analysis::parse_topology(
      nccl_xml(
          // dev 5 twice under one <pci> (two ranks on one GPU, or its MLOPart halves), each
          // with the whole GPU's links: NV18 to dev 7, not NV36.
          "<pci busid=\"0000:50:00.0\"><gpu dev=\"5\" rank=\"0\">" + nvswitch18 + "</gpu>" +
          "<gpu dev=\"5\" rank=\"1\">" + nvswitch18 + "</gpu></pci>\n" +
          gpu_at("0000:70:00.0", R"(dev="7")", R"(<nvlink target="0000:0c:00.0" count="12" tclass="0x068000"/>)") +
          // Listed before dev 2 but sorted after it. Two <nvlink>s to dev 2 in NVML's 8-digit
          // form add up; one to a GPU not in the file is no link.
          gpu_at("0000:30:00.0", R"(dev="3")",
                 R"(<nvlink target="00000000:20:00.0" count="2" tclass="0x030200"/>)"
                 R"(<nvlink target="0000:20:00.0" count="2" tclass="0x030200"/>)"
                 R"(<nvlink target="0000:99:00.0" count="4" tclass="0x030200"/>)") +
          gpu_at("0000:20:00.0", R"(dev="2")", R"(<nvlink target="0000:30:00.0" count="4" tclass="0x030200"/>)")),
      "t.xml");
  ASSERT_EQ(t.devices, (std::vector<std::string>{"GPU2", "GPU3", "GPU5", "GPU7"}));
  EXPECT_EQ(t.link(0, 1), "NV4");
  EXPECT_EQ(t.link(2, 3), "NV12");  // the narrower end of the NVSwitch fabric
  EXPECT_EQ(t.link(1, 2), "NODE");  // the bridged pair reaches no NVSwitch
}

TEST(Topology, RefusesHostileNcclXml) {
  const std::string gpu0 = gpu_at("0000:18:00.0", R"(dev="0")");
  // Each refusal names the line, as the matrix's do.
  const std::pair<std::string, std::string> refused[] = {
      {"<system version=\"1\"><cpu>", "t.xml: line 1: not well-formed XML"},
      {"<", "line 1: not well-formed XML"},
      {std::string("<\0\xff\xfe garbage \x01\x02", 14), "not well-formed XML"},
      {"<system version=\"1\"/>", "no <gpu>"},
      {"<system version=\"1\"><cpu/></system>", "no <gpu>"},
      {"<html/>", "not NCCL's <system>"},
      {"<system/>", "<system> without version"},
      {"<system version=\"2\"/>", "topology version 2: this reads NCCL's version 1"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="-1")")), "line 3: dev=\"-1\": not a number from 0 to 1023"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="99999999999")")), "dev=\"99999999999\": not a number"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="0x1")")), "dev=\"0x1\": not a number"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(sm="90")")), "<gpu> without dev"},
      {nccl_xml(gpu0 + gpu_at("0000:19:00.0", R"(dev="0")")), "line 4: GPU dev 0 again, under another <pci> than at line 3"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="0")", R"(<nvlink target="0000:05:00.0" tclass="0x068000"/>)")),
       "<nvlink> without count"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="0")", R"(<nvlink target="0000:05:00.0" count="-3" tclass="0x068000"/>)")),
       "count=\"-3\""},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="0")", R"(<nvlink target="0000:05:00.0" count="4"/>)")),
       "<nvlink> without tclass"},
      {nccl_xml(gpu_at("0000:18:00.0", R"(dev="0")", R"(<nvlink count="4" tclass="0x030200"/>)")),
       "<nvlink> without target"},
      {nccl_xml(gpu_at("0000:18:00.0", "dev=\"" + std::string(300'000, '1') + "\"")), "longer than 255 bytes"},
      // Entities come only from a DTD; a DOCTYPE stops the parse before its subset is read.
      {"<?xml version=\"1.0\"?>\n<!DOCTYPE system [\n<!ENTITY a \"aaaaaaaaaa\">\n"
       "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">\n"
       "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">]>\n"
       "<system version=\"1\" name=\"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"/>\n",
       "line 2: a DOCTYPE"},
      {"<!DOCTYPE system [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><system version=\"1\" name=\"&x;\"/>", "a DOCTYPE"},
      {"<system version=\"1\" name=\"&x;\"/>", "not well-formed XML"},  // no DTD, no entity
  };
  for (const auto& [text, expected] : refused) {
    const std::string error = refusal(text);
    EXPECT_NE(error.find(expected), std::string::npos) << "got \"" << error << "\" for " << text.substr(0, 200);
  }

  // Deep nesting: past 64 PCIe switches our limit, past 256 elements libxml2's own.
  std::string deep = gpu0;
  for (int i = 0; i < 70; ++i) deep += "<pci busid=\"0000:01:00.0\">";
  for (int i = 0; i < 70; ++i) deep += "</pci>";
  EXPECT_NE(refusal(nccl_xml(deep)).find("PCIe switches nested deeper than 64"), std::string::npos);
  std::string deeper = "<system version=\"1\"><cpu>";
  for (int i = 0; i < 100'000; ++i) deeper += "<pci>";
  EXPECT_NE(refusal(deeper).find("not well-formed XML"), std::string::npos);

  // libxml2 2.9 takes quadratic time over one tag's attributes: refused before it parses.
  std::string crowded = "<system version=\"1\">\n<cpu";
  while (crowded.size() < gantt::analysis::kMaxTopologyBytes - 100)
    crowded += " a" + std::to_string(crowded.size()) + "=\"\"";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(refusal(crowded + "/></system>").find("line 2: a tag with more than 256 attributes"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);

  // More devices than the matrix holds; one NIC name listed in too many places.
  std::string nets = gpu0;
  for (size_t i = 0; i < gantt::analysis::kMaxTopologyDevices; ++i)
    nets += "<nic><net name=\"n" + std::to_string(i) + "\"/></nic>\n";
  EXPECT_NE(refusal(nccl_xml(nets)).find("more than 1024 devices"), std::string::npos);
  std::string everywhere = gpu0;
  for (int i = 0; i < 9; ++i)
    everywhere += "<pci busid=\"0000:0" + std::to_string(i) + ":00.0\"><pci><nic><net name=\"eth0\"/></nic></pci></pci>\n";
  EXPECT_NE(refusal(nccl_xml(everywhere)).find("listed in more than 8 places"), std::string::npos);
}

// A file cut anywhere is refused, or is the whole document (cut after "</system>").
TEST(Topology, NcclXmlCutAtEveryByteIsRefusedOrWhole) {
  for (const char* file : {"dgx_h100.xml", "pcie_4gpu.xml"}) {
    const std::string text = fixture(file);
    const std::string whole = matrix(gantt::analysis::parse_topology(text, file));
    for (size_t cut = 0; cut < text.size(); ++cut) {
      try {
        EXPECT_EQ(matrix(gantt::analysis::parse_topology(text.substr(0, cut), file)), whole) << file << " cut at " << cut;
      } catch (const std::invalid_argument&) {
      }
    }
  }
}

// A hostile file within kMaxTopologyBytes costs little: 1,000 NICs each listed under 8
// switches 60 deep, so that every pair of devices compares 64 pairs of places.
TEST(Topology, NcclXmlWorstCaseIsQuick) {
  std::string doc = gpu_at("0000:18:00.0", R"(dev="0")");
  for (int place = 0; place < 8; ++place) {
    for (int depth = 0; depth < 60; ++depth) doc += "<pci>";
    for (int i = 0; i < 1000; ++i) doc += "<nic><net name=\"" + std::to_string(i) + "\"/></nic>";
    for (int depth = 0; depth < 60; ++depth) doc += "</pci>";
  }
  const std::string text = nccl_xml(doc);
  ASSERT_LE(text.size(), gantt::analysis::kMaxTopologyBytes);
  const auto start = std::chrono::steady_clock::now();
  const gantt::analysis::Topology t = gantt::analysis::parse_topology(text, "t.xml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.devices.size(), 1001u);
  EXPECT_EQ(t.link(1, 2), "PIX");
  EXPECT_LT(seconds, 5.0);
}

// An NCCL dump lists only the job's GPUs: a job on GPU4 and GPU5 gets its traffic drawn on the
// edge between those two, not lost past the end of a GPU0-based index.
TEST(Topology, TrafficIsDrawnOnTheEdgeOfTheGpusNamedInTheTopology) {
  gantt::Model m;
  m.captures.emplace_back();
  send(m, 0x42, 2, 0, 1, 1'000'000, 100'000);
  m.nccl.device.back() = 4;
  send(m, 0x42, 2, 1, 0, 1'000'000, 100'000);
  m.nccl.device.back() = 5;
  std::vector<std::string> notes;
  const auto ms = gantt::analysis::comm_matrices(m, &notes);
  const gantt::analysis::Topology topo = gantt::analysis::parse_topology(
      nccl_xml(gpu_at("0000:40:00.0", R"(dev="4")", R"(<nvlink target="0000:0a:00.0" count="18" tclass="0x068000"/>)") +
               gpu_at("0000:50:00.0", R"(dev="5")", R"(<nvlink target="0000:0a:00.0" count="18" tclass="0x068000"/>)") +
               gpu_at("0000:60:00.0", R"(dev="6")")),
      "t.xml");
  const gantt::Scene s = gantt::comm_scene(m, ms, notes, gantt::RenderOptions{}, &topo);
  bool labelled = false;
  for (const gantt::Item& item : s.items)
    if (const auto* text = std::get_if<gantt::Text>(&item)) labelled |= text->text == "NV18 1.9 MiB";
  EXPECT_TRUE(labelled) << "no NV18 edge labelled with the pair's 2,000,000 bytes";
}
