// Theoretical occupancy, computed offline from the launch configuration and the recorded
// DeviceInfo, following the rules of the CUDA occupancy calculator (cuda_occupancy.h):
// warps per block rounded up; registers allocated per warp in units of 256 and split over
// 4 sub-partitions; shared memory rounded up to 128 bytes plus the driver's per-block
// reservation; the per-SM block and warp limits. The smallest limit wins and is named.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace gpuhook::v1 { class DeviceInfo; }

namespace gantt {

enum class OccupancyLimit : uint8_t {
  kUnknown = 0,        // not a kernel, or the device was not recorded
  kWarps = 1,
  kRegisters = 2,
  kSharedMemory = 3,
  kBlocks = 4,
  kDoesNotFit = 5,     // one block exceeds a per-block limit: the launch cannot run
};
const char* to_string(OccupancyLimit limit);

struct LaunchShape {
  uint32_t threads_per_block = 0;
  uint32_t registers_per_thread = 0;
  uint64_t shared_memory_bytes = 0;  // static + dynamic
};

struct SmLimits {
  uint32_t cc_major = 0;
  uint32_t cc_minor = 0;
  uint32_t warp_size = 32;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t registers_per_sm = 0;
  uint32_t registers_per_block = 0;
  uint64_t shared_memory_per_sm_bytes = 0;
  uint64_t shared_memory_per_block_optin_bytes = 0;
  uint64_t reserved_shared_memory_per_block_bytes = 0;
};
SmLimits sm_limits(const gpuhook::v1::DeviceInfo& device);

// Why a recorded device cannot be used for occupancy ("" when it can): a DeviceInfo is read
// from an untrusted file, and a warp size of 0 or 2^31 once divided by zero (SIGFPE) in
// every subcommand. The model checks each device once at load; an unusable one means
// occupancy unknown, never a failed load. The bounds are far outside any real GPU; a field
// of 0 (not recorded) is no problem, only unknown occupancy.
std::string sm_limits_problem(const SmLimits& sm);

struct Occupancy {
  double fraction = 0;        // active warps / max warps per SM
  uint32_t active_blocks = 0; // per SM
  uint32_t active_warps = 0;
  uint32_t blocks_by_warps = 0, blocks_by_registers = 0, blocks_by_shared_memory = 0,
           blocks_by_block_limit = 0;
  OccupancyLimit limit = OccupancyLimit::kUnknown;
};

// kUnknown when the limits are not usable (zeros in DeviceInfo, sm_limits_problem, an empty
// block).
Occupancy theoretical_occupancy(const LaunchShape& launch, const SmLimits& sm);

// The block size cudaOccupancyMaxPotentialBlockSize suggests for a kernel of these registers
// per thread and shared memory per block (`launch.threads_per_block` is ignored), as the CUDA
// runtime header computes it: from the device's largest block down in steps of a warp, the
// first block size at which the most threads are resident per SM; 0 when the limits are not
// usable or no block size fits.
uint32_t max_potential_block_size(LaunchShape launch, const SmLimits& sm);

// The occupancy of a capture's kernels on its recorded devices, worked out once per launch
// shape: what the loader stores per kernel (ModelBuilder) and the streamed chart's
// low-occupancy flag counts.
class KernelOccupancy {
 public:
  // A device recorded twice takes its last usable record; an unusable one is named in
  // `problems` (at most 16 in all), and its kernels' occupancy is unknown.
  explicit KernelOccupancy(const std::vector<gpuhook::v1::DeviceInfo>& devices,
                           std::vector<std::string>* problems = nullptr);
  bool any_device() const { return !limits_.empty(); }
  // limit kUnknown when it cannot be told (no usable device, an empty or huge block). The
  // reference holds until the next call.
  const Occupancy& of(uint32_t device, const std::array<int32_t, 3>& block, uint32_t registers_per_thread,
                      uint64_t shared_memory_bytes);
  // Blocks of that occupancy the device holds at once (its SMs x resident blocks per SM), 0
  // when the device's SM count is unknown.
  uint64_t blocks_at_once(uint32_t device, const Occupancy& o) const;
  // Theoretical occupancy sets a kernel's time only when its grid has more blocks than the
  // device holds at once, so that the cap makes later blocks wait for another wave. A grid
  // that fits at once (a <<<1,1>>> spin or flag kernel, any grid smaller than the device) runs
  // every block from the start: more occupancy would not shorten it, and a low-occupancy
  // finding or flag about it is noise (issue 44, item 9). False when it cannot be told (the
  // SM count or a grid dimension unknown).
  bool fits_at_once(uint32_t device, const Occupancy& o, uint64_t grid_blocks) const {
    const uint64_t at_once = blocks_at_once(device, o);
    return at_once != 0 && grid_blocks != 0 && grid_blocks <= at_once;
  }

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>;  // device, threads, registers, shared memory
  struct Hit {
    Key key{};
    const Occupancy* occupancy = nullptr;  // into memo_
  };
  static constexpr size_t kMaxShapes = size_t{1} << 16;
  static constexpr size_t kCache = 64;
  std::map<uint32_t, SmLimits> limits_;
  std::map<uint32_t, uint32_t> sm_count_;  // of the devices in limits_ that recorded it
  std::map<Key, Occupancy> memo_;
  std::array<Hit, kCache> cache_{};
  Occupancy unknown_;
};

}  // namespace gantt
