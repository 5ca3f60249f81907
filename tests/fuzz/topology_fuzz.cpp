// libFuzzer target for parse_topology (`render --topology`): any bytes, as `nvidia-smi topo -m`
// text or NCCL's topology XML, must end in a square matrix or std::invalid_argument, never a
// crash, a hang or a huge allocation. With clang, from the repository root after a build (one
// command; vptr checks left out, they would need the whole capture format linked in):
//   clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize=vptr
//     -Itools/gantt/include -Itools/gantt/src/analysis -Iproto/include -Ibuild/proto -Iinclude
//     -isystem /usr/include/libxml2 tests/fuzz/topology_fuzz.cpp tools/gantt/src/analysis/topology{,_xml}.cpp
//     -lxml2 -lprotobuf -o /tmp/topology_fuzz
//   mkdir -p /tmp/topology_corpus && /tmp/topology_fuzz -max_len=100000 /tmp/topology_corpus tests/fixtures/topology
// (new inputs go to the first directory; the fixtures are only read).
// Built without libFuzzer, the same entry point replays tests/fixtures/topology as a test.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "gantt/analysis/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const gantt::analysis::Topology t =
        gantt::analysis::parse_topology(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (t.devices.size() > gantt::analysis::kMaxTopologyDevices || t.links.size() != t.devices.size() * t.devices.size())
      std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
