// `nvidia-smi topo -m` (analysis/topology.h); NCCL's XML is read in topology_xml.cpp.
#include "gantt/analysis/topology.h"

#include <sstream>
#include <stdexcept>

#include "topology_xml.h"

namespace gantt::analysis {

namespace {

bool is_device(const std::string& token) {
  auto numbered = [&](const char* prefix) {
    const size_t n = std::string(prefix).size();
    if (token.size() <= n || token.compare(0, n, prefix) != 0) return false;
    for (size_t i = n; i < token.size(); ++i)
      if (token[i] < '0' || token[i] > '9') return false;
    return true;
  };
  return numbered("GPU") || numbered("NIC") || numbered("mlx5_");
}

// NCCL writes its topology with no prolog, starting "<system"; a hand-edited NCCL_TOPO_FILE may
// have an <?xml?> prolog, a comment or a BOM first. The matrix starts with a tab or "GPU0".
bool is_xml(const std::string& text) {
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  return i < text.size() && text[i] == '<';
}

Topology parse_matrix(const std::string& text, const std::string& name) {
  Topology t;
  std::istringstream in(text);
  std::string line;
  size_t line_no = 0, rows = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream ls(line);
    std::vector<std::string> tokens;
    for (std::string tok; ls >> tok;) tokens.push_back(tok);
    if (tokens.empty()) continue;
    if (!header) {
      // The header: the device names, then columns such as "CPU Affinity".
      if (!is_device(tokens[0])) continue;
      for (const std::string& tok : tokens) {
        if (!is_device(tok)) break;
        t.devices.push_back(tok);
      }
      if (t.devices.size() > kMaxTopologyDevices)
        throw std::invalid_argument(name + ": line " + std::to_string(line_no) + ": more than " +
                                    std::to_string(kMaxTopologyDevices) + " devices");
      t.links.assign(t.devices.size() * t.devices.size(), "");
      header = true;
      continue;
    }
    if (tokens[0] == "Legend:" || rows == t.devices.size()) break;
    if (tokens[0] != t.devices[rows])
      throw std::invalid_argument(name + ": line " + std::to_string(line_no) + ": expected the row of " + t.devices[rows] +
                                  ", found '" + tokens[0].substr(0, 40) + "'");
    if (tokens.size() < t.devices.size() + 1)
      throw std::invalid_argument(name + ": line " + std::to_string(line_no) + ": " + std::to_string(tokens.size() - 1) +
                                  " links for " + std::to_string(t.devices.size()) + " devices");
    for (size_t j = 0; j < t.devices.size(); ++j) t.links[rows * t.devices.size() + j] = tokens[j + 1].substr(0, 16);
    ++rows;
  }
  if (!header) throw std::invalid_argument(name + ": no device header (GPU0 GPU1 ...): not `nvidia-smi topo -m` output");
  if (rows != t.devices.size())
    throw std::invalid_argument(name + ": " + std::to_string(rows) + " rows for " + std::to_string(t.devices.size()) +
                                " devices: the matrix is cut short");
  return t;
}

}  // namespace

int Topology::rank_of(const std::string& link) {
  if (link.rfind("NV", 0) == 0) return 3;
  if (link == "PIX" || link == "PXB") return 2;
  if (link == "PHB" || link == "NODE") return 1;
  return 0;
}

Topology parse_topology(const std::string& text, const std::string& name) {
  if (text.size() > kMaxTopologyBytes)
    throw std::invalid_argument(name + ": larger than " + std::to_string(kMaxTopologyBytes) + " bytes: not a topology");
  return is_xml(text) ? parse_nccl_topology_xml(text, name) : parse_matrix(text, name);
}

std::vector<int32_t> rank_gpus(const Model& m, uint64_t comm_id, int32_t nranks) {
  std::vector<int32_t> gpu(static_cast<size_t>(std::max(nranks, 0)), -1);
  for (size_t i = 0; i < m.nccl.size(); ++i) {
    if (m.nccl.comm_id[i] != comm_id || m.nccl.rank[i] < 0 || m.nccl.rank[i] >= nranks) continue;
    int32_t& g = gpu[static_cast<size_t>(m.nccl.rank[i])];
    if (g >= 0) continue;
    const uint16_t c = m.nccl.capture[i];
    const auto& h = m.captures[c].header;
    g = h.has_local_rank() && h.local_rank() >= 0 ? h.local_rank() : m.nccl.device[i];
  }
  return gpu;
}

}  // namespace gantt::analysis
