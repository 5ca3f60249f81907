#include "gantt/model/occupancy.h"

#include <algorithm>
#include <climits>

#include <gpuhook/v1/capture.pb.h>

#include "gantt/model/model.h"

namespace gantt {

const char* to_string(OccupancyLimit limit) {
  switch (limit) {
    case OccupancyLimit::kWarps: return "warps";
    case OccupancyLimit::kRegisters: return "registers";
    case OccupancyLimit::kSharedMemory: return "shared memory";
    case OccupancyLimit::kBlocks: return "blocks";
    case OccupancyLimit::kDoesNotFit: return "does not fit";
    case OccupancyLimit::kUnknown: break;
  }
  return "unknown";
}

SmLimits sm_limits(const gpuhook::v1::DeviceInfo& d) {
  SmLimits s;
  s.cc_major = d.cc_major();
  s.cc_minor = d.cc_minor();
  s.warp_size = d.warp_size() ? d.warp_size() : 32;
  s.max_warps_per_sm = d.max_warps_per_sm() ? d.max_warps_per_sm() : d.max_threads_per_sm() / s.warp_size;
  s.max_blocks_per_sm = d.max_blocks_per_sm();
  s.max_threads_per_block = d.max_threads_per_block();
  s.registers_per_sm = d.registers_per_sm();
  s.registers_per_block = d.registers_per_block();
  s.shared_memory_per_sm_bytes = d.shared_memory_per_sm_bytes();
  s.shared_memory_per_block_optin_bytes = std::max(d.shared_memory_per_block_optin_bytes(),
                                                   d.shared_memory_per_block_bytes());
  s.reserved_shared_memory_per_block_bytes = d.reserved_shared_memory_per_block_bytes();
  return s;
}

std::string sm_limits_problem(const SmLimits& sm) {
  struct Bound { const char* what; uint64_t value, lo, hi; };
  // Real GPUs: warp 32, <= 64 warps, 32 blocks, 1024 threads, 64 K registers and 228 KiB of
  // shared memory per SM. The upper bounds leave room for devices to come, and keep every
  // product in theoretical_occupancy far below 2^64.
  const Bound bounds[] = {
      {"warp size", sm.warp_size, 1, 1024},  // (sm_limits makes an absent one 32)
      {"max warps per SM", sm.max_warps_per_sm, 1, 1u << 16},
      {"max blocks per SM", sm.max_blocks_per_sm, 1, 1u << 16},
      {"max threads per block", sm.max_threads_per_block, 0, 1u << 20},
      {"registers per SM", sm.registers_per_sm, 1, 1u << 24},
      {"registers per block", sm.registers_per_block, 0, 1u << 24},
      {"shared memory per SM", sm.shared_memory_per_sm_bytes, 1, 1ull << 32},
      {"shared memory per block (opt-in)", sm.shared_memory_per_block_optin_bytes, 0, 1ull << 32},
      {"reserved shared memory per block", sm.reserved_shared_memory_per_block_bytes, 0, 1ull << 32},
      {"compute capability major", sm.cc_major, 1, 1000},
      {"compute capability minor", sm.cc_minor, 0, 1000},
  };
  // 0 is "not recorded" (older hooks, fabricated captures): unknown, but not a problem.
  for (const Bound& b : bounds)
    if (b.value != 0 && (b.value < b.lo || b.value > b.hi))
      return std::string(b.what) + " " + std::to_string(b.value) + " is outside " + std::to_string(b.lo) + ".." +
             std::to_string(b.hi);
  return {};
}

namespace {

uint64_t round_up(uint64_t x, uint64_t unit) { return (x + unit - 1) / unit * unit; }

// Granularities from cuda_occupancy.h: shared memory is allocated in 128-byte units from
// sm_80 on (256 before); registers in 256-register units per warp on every architecture
// since Kepler; 4 register sub-partitions per SM except sm_60.
uint64_t smem_granularity(uint32_t cc_major) { return cc_major >= 8 ? 128 : 256; }
uint32_t register_granularity() { return 256; }
uint32_t sub_partitions(uint32_t cc_major, uint32_t cc_minor) {
  return (cc_major == 6 && cc_minor == 0) ? 2 : 4;
}
uint32_t max_registers_per_thread(uint32_t cc_major) { return cc_major >= 7 ? 256 : 255; }

}  // namespace

Occupancy theoretical_occupancy(const LaunchShape& launch, const SmLimits& sm) {
  Occupancy o;
  // Every divisor below is bounded away from zero here, and every operand bounded so that no
  // product overflows: threads near 2^32 once wrapped warps_per_block to 0 (SIGFPE).
  if (launch.threads_per_block == 0 || sm.max_warps_per_sm == 0 || sm.warp_size == 0 || sm.max_blocks_per_sm == 0 ||
      sm.registers_per_sm == 0 || sm.shared_memory_per_sm_bytes == 0 || sm.cc_major == 0 ||
      !sm_limits_problem(sm).empty())
    return o;
  if (launch.shared_memory_bytes > (1ull << 40)) {
    o.limit = OccupancyLimit::kDoesNotFit;
    return o;
  }

  const uint32_t warps_per_block =
      static_cast<uint32_t>((uint64_t{launch.threads_per_block} + sm.warp_size - 1) / sm.warp_size);

  // Per-block limits: a block over any of them cannot launch at all.
  bool fits = true;
  if (sm.max_threads_per_block && launch.threads_per_block > sm.max_threads_per_block) fits = false;

  o.blocks_by_warps = sm.max_warps_per_sm / warps_per_block;
  o.blocks_by_block_limit = sm.max_blocks_per_sm;

  if (launch.registers_per_thread == 0) {
    o.blocks_by_registers = UINT32_MAX;
  } else {
    const uint32_t subs = sub_partitions(sm.cc_major, sm.cc_minor);
    const uint32_t regs_per_warp =
        static_cast<uint32_t>(round_up(uint64_t{launch.registers_per_thread} * sm.warp_size, register_granularity()));
    const uint64_t regs_per_block = uint64_t{regs_per_warp} * warps_per_block;
    // The hardware check assumes the block's warps are spread over all sub-partitions.
    const uint64_t regs_assumed = uint64_t{regs_per_warp} * round_up(warps_per_block, subs);
    if (launch.registers_per_thread > max_registers_per_thread(sm.cc_major) ||
        (sm.registers_per_block && (regs_assumed > sm.registers_per_block || regs_per_block > sm.registers_per_block))) {
      fits = false;
      o.blocks_by_registers = 0;
    } else {
      const uint32_t warps_per_sub = (sm.registers_per_sm / subs) / regs_per_warp;
      o.blocks_by_registers = warps_per_sub * subs / warps_per_block;
    }
  }

  const uint64_t smem_per_block =
      round_up(launch.shared_memory_bytes + sm.reserved_shared_memory_per_block_bytes, smem_granularity(sm.cc_major));
  const uint64_t smem_block_limit = sm.shared_memory_per_block_optin_bytes
                                        ? sm.shared_memory_per_block_optin_bytes + sm.reserved_shared_memory_per_block_bytes
                                        : sm.shared_memory_per_sm_bytes;
  if (smem_per_block > smem_block_limit || smem_per_block > sm.shared_memory_per_sm_bytes) {
    fits = false;
    o.blocks_by_shared_memory = 0;
  } else {
    // The carve-out is taken at its largest (the recorded per-SM capacity): the driver
    // grows it to fit the launch, so that is what bounds residency.
    o.blocks_by_shared_memory =
        smem_per_block ? static_cast<uint32_t>(std::min<uint64_t>(sm.shared_memory_per_sm_bytes / smem_per_block, UINT32_MAX))
                       : UINT32_MAX;
  }

  if (!fits) {
    o.limit = OccupancyLimit::kDoesNotFit;
    return o;
  }
  // Ties name the first in this order, the calculator's order of presentation.
  struct Cand { uint32_t blocks; OccupancyLimit limit; };
  const Cand cands[] = {{o.blocks_by_warps, OccupancyLimit::kWarps},
                        {o.blocks_by_registers, OccupancyLimit::kRegisters},
                        {o.blocks_by_shared_memory, OccupancyLimit::kSharedMemory},
                        {o.blocks_by_block_limit, OccupancyLimit::kBlocks}};
  Cand best = cands[0];
  for (const Cand& c : cands)
    if (c.blocks < best.blocks) best = c;
  o.active_blocks = best.blocks;
  o.limit = best.limit;
  o.active_warps = o.active_blocks * warps_per_block;
  o.fraction = static_cast<double>(o.active_warps) / sm.max_warps_per_sm;
  if (o.active_blocks == 0) o.limit = OccupancyLimit::kDoesNotFit;
  return o;
}

uint32_t max_potential_block_size(LaunchShape launch, const SmLimits& sm) {
  if (sm.warp_size == 0 || sm.max_threads_per_block == 0 || !sm_limits_problem(sm).empty()) return 0;
  const uint64_t full = uint64_t{sm.max_warps_per_sm} * sm.warp_size;  // the header's occupancyLimit
  uint32_t best = 0;
  uint64_t best_threads = 0;
  const uint32_t limit = sm.max_threads_per_block;
  const uint32_t aligned = (limit + sm.warp_size - 1) / sm.warp_size * sm.warp_size;
  for (uint32_t size = aligned; size > 0; size -= std::min(size, sm.warp_size)) {
    launch.threads_per_block = std::min(size, limit);
    const uint64_t threads = uint64_t{launch.threads_per_block} * theoretical_occupancy(launch, sm).active_blocks;
    if (threads > best_threads) {
      best = launch.threads_per_block;
      best_threads = threads;
    }
    if (best_threads == full) break;
  }
  return best;
}

KernelOccupancy::KernelOccupancy(const std::vector<gpuhook::v1::DeviceInfo>& devices, std::vector<std::string>* problems) {
  for (const auto& d : devices) {
    const SmLimits sm = sm_limits(d);
    const std::string problem = sm_limits_problem(sm);
    if (problem.empty()) {
      limits_[d.ordinal()] = sm;
      if (d.sm_count() != 0) sm_count_[d.ordinal()] = d.sm_count();
      else sm_count_.erase(d.ordinal());
    } else if (problems != nullptr && problems->size() < 16) {
      problems->push_back("device " + std::to_string(d.ordinal()) + ": " + problem);
    }
  }
}

uint64_t KernelOccupancy::blocks_at_once(uint32_t device, const Occupancy& o) const {
  const auto it = sm_count_.find(device);
  return it == sm_count_.end() ? 0 : uint64_t{it->second} * o.active_blocks;
}

const Occupancy& KernelOccupancy::of(uint32_t device, const std::array<int32_t, 3>& block, uint32_t registers_per_thread,
                                     uint64_t shared_memory_bytes) {
  const uint64_t threads = dim3_count(block);
  if (threads == 0 || threads > UINT32_MAX) return unknown_;
  const Key key{device, static_cast<uint32_t>(threads), registers_per_thread, shared_memory_bytes};
  // A program launches a few shapes over and over: most kernels hit the small cache.
  Hit& hit = cache_[(std::get<0>(key) * 31 + std::get<1>(key) * 17 + std::get<2>(key) * 7 + std::get<3>(key)) % kCache];
  if (hit.occupancy != nullptr && hit.key == key) return *hit.occupancy;
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    auto lim = limits_.find(device);
    if (lim == limits_.end()) return unknown_;
    if (memo_.size() >= kMaxShapes) {  // a hostile file's shapes: a cache, not a record
      memo_.clear();
      for (Hit& h : cache_) h = Hit{};
    }
    const LaunchShape shape{static_cast<uint32_t>(threads), registers_per_thread, shared_memory_bytes};
    it = memo_.emplace(key, theoretical_occupancy(shape, lim->second)).first;
  }
  hit = Hit{key, &it->second};
  return it->second;
}

}  // namespace gantt
