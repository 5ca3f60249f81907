// The machine's GPU topology as `nvidia-smi topo -m` prints it: devices (GPUs, NICs) and the
// link between each pair (X, NV#, PIX, PXB, PHB, NODE, SYS). Read from that matrix or from
// NCCL's topology XML (NCCL_TOPO_DUMP_FILE), which gives the same matrix (topology_xml.cpp).
// `render --view comm --topology FILE` draws the GPUs with their links, weighted by the
// traffic the capture measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

inline constexpr size_t kMaxTopologyDevices = 1024;
inline constexpr size_t kMaxTopologyBytes = 1u << 20;

struct Topology {
  std::vector<std::string> devices;  // "GPU0", "GPU1", "NIC0", ... in the matrix's order (XML: GPUs by dev, then NICs)
  std::vector<std::string> links;    // [i * n + j]
  const std::string& link(size_t i, size_t j) const { return links[i * devices.size() + j]; }
  // NVLink (NV#) = 3, same PCIe switch (PIX, PXB) = 2, through the host bridge (PHB, NODE) = 1,
  // across sockets (SYS) or unknown = 0: the order a faster link sorts in.
  static int rank_of(const std::string& link);
};

// Either format, told apart by content: XML starts with '<' (after whitespace or a UTF-8 BOM),
// the matrix never does. Throws std::invalid_argument("NAME: line N: what") on text that is
// neither, and on anything over kMaxTopologyBytes or kMaxTopologyDevices.
Topology parse_topology(const std::string& text, const std::string& name);

// The GPU index each rank of a communicator ran on: the capture's local rank when the header
// has one (one GPU per process, as launchers set it), else the device ordinal of its NCCL
// calls. -1 when the communicator has no call for the rank.
std::vector<int32_t> rank_gpus(const Model& model, uint64_t comm_id, int32_t nranks);

}  // namespace gantt::analysis
