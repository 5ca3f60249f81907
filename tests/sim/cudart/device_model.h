// The simulated device: an H200-like part (132 SMs, compute capability 9.0). The figures are
// the model's, used for occupancy and for the properties a program queries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gpuhook::sim::model {

constexpr int kSmCount = 132;
constexpr int kMaxThreadsPerSm = 2048;
constexpr int kMaxWarpsPerSm = 64;
constexpr int kMaxBlocksPerSm = 32;
constexpr int kRegistersPerSm = 64 * 1024;
constexpr size_t kSharedPerSmBytes = 228 * 1024;
constexpr size_t kSharedPerBlockBytes = 48 * 1024;
constexpr size_t kSharedPerBlockOptinBytes = 227 * 1024;
constexpr size_t kReservedSharedPerBlockBytes = 1024;
constexpr int kWarpSize = 32;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kGlobalMemBytes = 141ull * 1024 * 1024 * 1024;
// PCI location of device `d`: bus d+1, domain 0, device 0 ("0000:01:00.0" for device 0), so
// every simulated device has its own, as every real one does.
inline int pci_bus_id(int device) { return device + 1; }
constexpr int kStreamPriorityLeast = 0;
constexpr int kStreamPriorityGreatest = -5;

// Resident blocks per SM for a block shape, the way the occupancy calculator counts them.
inline int blocks_per_sm(int threads_per_block, int registers_per_thread, size_t shared_bytes) {
  if (threads_per_block <= 0 || threads_per_block > kMaxThreadsPerBlock) return 0;
  const int warps = (threads_per_block + kWarpSize - 1) / kWarpSize;
  int blocks = std::min(kMaxBlocksPerSm, kMaxWarpsPerSm / warps);
  blocks = std::min(blocks, kMaxThreadsPerSm / (warps * kWarpSize));
  if (registers_per_thread > 0) {
    // Registers are allocated per warp in units of 256.
    const int per_warp = ((registers_per_thread * kWarpSize + 255) / 256) * 256;
    blocks = std::min(blocks, kRegistersPerSm / (per_warp * warps));
  }
  const size_t smem = shared_bytes + kReservedSharedPerBlockBytes;
  blocks = std::min<int>(blocks, static_cast<int>(kSharedPerSmBytes / smem));
  return std::max(blocks, 0);
}

}  // namespace gpuhook::sim::model
