// What each simulated device did lately, for the simulated NVML (tests/sim/nvml): the planned
// intervals of its kernels, copies and memsets, and the device memory allocated on it. The
// runtime notes them as it plans them; libnvidia-ml reads them through
// gpuhook_sim_device_activity (sim_bridge.h), so its counters follow the trace.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuhook::sim {

enum class BusyKind : uint8_t { kKernel, kCopyToDevice, kCopyFromDevice, kCopyOnDevice, kMemset };

// What a kernel does with the SMs it holds, for the simulated PM sampling (cost file keys,
// README "Cost file"): each a fraction of the kernel's own SM share or of the device's peak.
struct KernelLoad {
  double active = 1.0;     // its SMs' cycles with a warp in flight (below 1: a stalled kernel)
  double warps = 1.0;      // warp slots in use on its SMs (the occupancy rules)
  double tensor = 0;       // tensor pipe cycles, of its SMs'
  double dram_read = 0;    // DRAM read throughput while it runs, of the device's peak
  double dram_write = 0;
};

// [start_ns, end_ns) on the CUPTI clock; `share` the fraction of the SMs a kernel fills.
void note_busy(int device, BusyKind kind, uint64_t start_ns, uint64_t end_ns, double share, uint64_t bytes,
               const KernelLoad& load = KernelLoad{});
// A kernel's duration when it starts at start_ns: longer by the boost clock over the capped
// one (1980 / 1410 MHz) while the simulated NVML reports a power cap (GPUHOOK_SIM_POWER_CAP),
// as a compute-bound kernel runs at a lower SM clock. Unchanged without the setting.
uint64_t clock_scaled_ns(uint64_t duration_ns, uint64_t start_ns);
// Device memory allocated (positive) or released (negative) on `device`.
void note_device_bytes(int device, int64_t delta);

}  // namespace gpuhook::sim
