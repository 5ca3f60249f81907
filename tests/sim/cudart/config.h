// Simulator settings, read once from GPUHOOK_SIM_* environment variables (README.md lists
// them), plus the per-kernel cost sidecar file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuhook::sim {

struct KernelCost {
  std::string name_substring;
  double ns_per_block = 0;
  int registers_per_thread = 0;  // 0: use the default
  // key=value words after the numbers, for the simulated PM sampling (device_activity.h):
  // sm_active=, tensor=, dram_read=, dram_write= (fractions 0..1).
  double sm_active = 1.0;
  double tensor = 0;
  double dram_read = 0;
  double dram_write = 0;
  // For the simulated SASS metrics (GPUHOOK_SECTORS): 32-byte sectors a warp's global loads and
  // stores touch (sectors=), and the fewest its loads and its stores need (ld_ideal=, st_ideal=).
  double sectors_per_warp = 0;
  double load_ideal_per_warp = 0;
  double store_ideal_per_warp = 0;
};

struct CostScale {
  std::string name_substring;
  double factor = 1.0;
};

struct SimConfig {
  uint64_t launch_ns = 3000;        // host time spent inside a launch call
  uint64_t submit_ns = 1000;        // queued -> submitted (push of the command buffer)
  uint64_t block_ns = 2000;         // default time one block occupies its slot
  uint64_t copy_fixed_ns = 1500;    // per-copy set-up time
  // Host<->device from pinned memory: 80% of the PCIe gen5 x16 link the simulated NVML reports
  // (63.0 GB/s after 128b/130b encoding), the share a large pinned copy reaches (packet headers,
  // flow control) and the figure whatif's pin-copies takes from that link when a capture holds
  // no pinned copy to measure. A gen5 x16 H100/H200 runs pinned copies at about 50 GB/s.
  double pinned_gbps = 50.4;
  double pageable_gbps = 10.0;      // host<->device from pageable memory
  double device_gbps = 1500.0;      // device<->device copies and memsets
  size_t queue_depth = 1024;        // pending operations per stream before the host blocks
  uint64_t seed = 1;
  double noise = 0.0;               // kernel durations * (1 + noise * u), u uniform in [-1, 1]
  int registers_per_thread = 32;
  int devices = 1;                  // GPUHOOK_SIM_DEVICES: cudaGetDeviceCount, 1..16
  double peer_gbps = 450.0;         // copies between two devices' memory (an NVLink figure)
  bool verbose = false;
  std::vector<KernelCost> costs;    // first matching substring wins
  std::vector<CostScale> scales;    // every matching substring multiplies
  std::string costs_path;

  static SimConfig from_environment();
  // ns per block and registers for a (mangled) kernel name.
  double block_ns_for(const std::string& name, int* registers) const;
  double scale_for(const std::string& name) const;
  // The first matching cost line, or nullptr.
  const KernelCost* cost_for(const std::string& name) const;
};

const SimConfig& config();
// Re-reads the environment (tests change GPUHOOK_SIM_* between cases).
void reload_config();

}  // namespace gpuhook::sim
