// NCCL's topology XML (topology_xml.cpp), which parse_topology hands the text that starts with '<'.
#pragma once

#include <string>

#include "gantt/analysis/topology.h"

namespace gantt::analysis {

// `text` is at most kMaxTopologyBytes. Throws std::invalid_argument("NAME: line N: what").
Topology parse_nccl_topology_xml(const std::string& text, const std::string& name);

}  // namespace gantt::analysis
