#include "device_activity.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "../pausing_mutex.h"
#include "../sim_bridge.h"

namespace gpuhook::sim {
namespace {

constexpr int kDevices = 16;
// The latest intervals of a device. NVML looks back one utilisation period (1/6 s by
// default) and PCIe 20 ms: 8192 intervals hold that for launches 20 us apart.
constexpr size_t kIntervals = 8192;

struct Interval {
  uint64_t start_ns;
  uint64_t end_ns;
  double share;
  uint64_t bytes;
  BusyKind kind;
  KernelLoad load;
};

struct DeviceLog {
  PausingMutex mu;  // a program thread noting its work waits for a sampler's read with the clock stopped
  std::vector<Interval> ring;  // grows to kIntervals, then wraps
  size_t next = 0;
  std::atomic<int64_t> device_bytes{0};
};

// Never destroyed: the NVML sampler of a tool may read it while exit() runs the static
// destructors (a crash seen under load), as a driver's NVML answers until the process ends.
DeviceLog& log_of(int device) {
  static DeviceLog* const logs = new DeviceLog[kDevices];
  return logs[static_cast<size_t>(device) % kDevices];
}

// Time inside [from, to) covered by at least one of `spans` (each already clipped to it).
uint64_t covered_ns(std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, open = 0, close = 0;
  bool any = false;
  for (const auto& [a, b] : spans) {
    if (!any || a > close) {
      if (any) total += close - open;
      open = a, close = b, any = true;
    } else {
      close = std::max(close, b);
    }
  }
  if (any) total += close - open;
  return total;
}

}  // namespace

void note_busy(int device, BusyKind kind, uint64_t start_ns, uint64_t end_ns, double share, uint64_t bytes,
               const KernelLoad& load) {
  if (device < 0 || device >= kDevices || end_ns <= start_ns) return;
  DeviceLog& log = log_of(device);
  std::lock_guard<PausingMutex> lock(log.mu);
  // Grown as intervals come: the whole ring at once is 160 pages whose faults (milliseconds
  // on a virtual machine) fell inside a program's first copy, on its timeline.
  const Interval interval{start_ns, end_ns, share, bytes, kind, load};
  if (log.ring.size() < kIntervals) {
    log.ring.push_back(interval);
  } else {
    log.ring[log.next % kIntervals] = interval;
  }
  ++log.next;
}

uint64_t clock_scaled_ns(uint64_t duration_ns, uint64_t start_ns) {
  // The cap's window is NVML's (it starts counting at nvmlInit_v2), so the runtime asks the
  // loaded simulated NVML; without the setting it never looks.
  static const bool wanted = std::getenv("GPUHOOK_SIM_POWER_CAP") != nullptr;
  if (!wanted) return duration_ns;
  using CappedAt = int (*)(uint64_t);
  static std::atomic<CappedAt> capped_at{nullptr};
  CappedAt fn = capped_at.load(std::memory_order_acquire);
  if (fn == nullptr) {
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (nvml == nullptr) return duration_ns;
    fn = reinterpret_cast<CappedAt>(dlsym(nvml, "gpuhook_sim_nvml_capped_at"));
    dlclose(nvml);  // NOLOAD took a reference; whoever loaded it keeps theirs
    if (fn == nullptr) return duration_ns;
    capped_at.store(fn, std::memory_order_release);
  }
  if (fn(start_ns) == 0) return duration_ns;
  return duration_ns * 1980 / 1410;
}

void note_device_bytes(int device, int64_t delta) {
  if (device < 0 || device >= kDevices) return;
  log_of(device).device_bytes.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace gpuhook::sim

using gpuhook::sim::BusyKind;

extern "C" __attribute__((visibility("default"))) int gpuhook_sim_device_activity(int device, uint64_t from_ns,
                                                                                  uint64_t to_ns,
                                                                                  GpuhookSimActivity* out) {
  *out = GpuhookSimActivity{};
  if (device < 0 || device >= 16 || to_ns <= from_ns) return -1;
  auto& log = gpuhook::sim::log_of(device);
  out->device_memory_bytes = static_cast<uint64_t>(std::max<int64_t>(0, log.device_bytes.load()));
  std::vector<std::pair<uint64_t, uint64_t>> kernels, memory;
  std::vector<std::pair<uint64_t, double>> steps;  // (time, +share / -share) of kernels
  {
    std::lock_guard<gpuhook::sim::PausingMutex> lock(log.mu);
    for (const auto& iv : log.ring) {
      if (iv.end_ns <= from_ns || iv.start_ns >= to_ns) continue;
      const uint64_t a = std::max(iv.start_ns, from_ns), b = std::min(iv.end_ns, to_ns);
      switch (iv.kind) {
        case BusyKind::kKernel:
          kernels.emplace_back(a, b);
          steps.emplace_back(a, iv.share);
          steps.emplace_back(b, -iv.share);
          break;
        case BusyKind::kCopyToDevice:
        case BusyKind::kCopyFromDevice: {
          memory.emplace_back(a, b);
          // The bytes that crossed the bus inside the window, in proportion to the overlap.
          const double part = static_cast<double>(b - a) / static_cast<double>(iv.end_ns - iv.start_ns);
          const auto moved = static_cast<uint64_t>(static_cast<double>(iv.bytes) * part);
          (iv.kind == BusyKind::kCopyToDevice ? out->pcie_rx_bytes : out->pcie_tx_bytes) += moved;
          break;
        }
        case BusyKind::kCopyOnDevice:
        case BusyKind::kMemset: memory.emplace_back(a, b); break;
      }
    }
  }
  out->kernel_busy_ns = gpuhook::sim::covered_ns(kernels);
  out->memory_busy_ns = gpuhook::sim::covered_ns(memory);
  // SM share integrated over the window: kernels side by side add up, to the whole device.
  std::sort(steps.begin(), steps.end());
  double level = 0, integral = 0;
  uint64_t t = from_ns;
  for (const auto& [when, delta] : steps) {
    integral += std::min(1.0, std::max(0.0, level)) * static_cast<double>(when - t);
    level += delta;
    t = when;
  }
  out->sm_share_ns = integral;
  return 0;
}

// The simulated PM sampling's windows (sim_bridge.h): the intervals that touch the batch are
// copied once, then each window is measured against them, so a decode of thousands of samples
// costs one pass over the log.
extern "C" __attribute__((visibility("default"))) int gpuhook_sim_pm_windows(int device, uint64_t from_ns,
                                                                             uint64_t window_ns, uint32_t count,
                                                                             GpuhookSimPmWindow* out) {
  if (device < 0 || device >= 16 || window_ns == 0 || count == 0) return -1;
  const uint64_t to_ns = from_ns + window_ns * count;
  std::vector<gpuhook::sim::Interval> near;
  {
    auto& log = gpuhook::sim::log_of(device);
    std::lock_guard<gpuhook::sim::PausingMutex> lock(log.mu);
    for (const auto& iv : log.ring)
      if (iv.end_ns > from_ns && iv.start_ns < to_ns) near.push_back(iv);
  }
  // The H200's peaks, as the model's: HBM3e 4.8 TB/s, PCIe Gen5 x16 64 GB/s each way.
  constexpr double kDramBytesPerNs = 4800.0, kPcieBytesPerNs = 64.0;
  for (uint32_t w = 0; w < count; ++w) {
    const uint64_t a0 = from_ns + window_ns * w, b0 = a0 + window_ns;
    const double span = static_cast<double>(window_ns);
    GpuhookSimPmWindow& o = out[w];
    o = GpuhookSimPmWindow{};
    std::vector<std::pair<uint64_t, uint64_t>> kernels;
    for (const auto& iv : near) {
      if (iv.end_ns <= a0 || iv.start_ns >= b0) continue;
      const uint64_t a = std::max(iv.start_ns, a0), b = std::min(iv.end_ns, b0);
      const double part = static_cast<double>(b - a) / span;  // of the window
      const double of_op = static_cast<double>(b - a) / static_cast<double>(iv.end_ns - iv.start_ns);
      const double bytes = static_cast<double>(iv.bytes) * of_op;
      switch (iv.kind) {
        case BusyKind::kKernel:
          kernels.emplace_back(a, b);
          o.sm_share += iv.share * part;
          o.sm_active += iv.share * iv.load.active * part;
          o.sm_occupancy += iv.share * iv.load.warps * part;
          o.tensor_active += iv.share * iv.load.tensor * part;
          o.dram_read += iv.load.dram_read * part;
          o.dram_write += iv.load.dram_write * part;
          break;
        case BusyKind::kCopyToDevice:
          o.pcie_rx += bytes / (kPcieBytesPerNs * span);
          o.dram_write += bytes / (kDramBytesPerNs * span);
          break;
        case BusyKind::kCopyFromDevice:
          o.pcie_tx += bytes / (kPcieBytesPerNs * span);
          o.dram_read += bytes / (kDramBytesPerNs * span);
          break;
        case BusyKind::kCopyOnDevice:
          o.dram_read += bytes / (kDramBytesPerNs * span);
          o.dram_write += bytes / (kDramBytesPerNs * span);
          break;
        case BusyKind::kMemset: o.dram_write += bytes / (kDramBytesPerNs * span); break;
      }
    }
    o.gr_active = static_cast<double>(gpuhook::sim::covered_ns(kernels)) / span;
    // Kernels side by side add up, to the whole device at most.
    for (double* v : {&o.sm_share, &o.sm_active, &o.sm_occupancy, &o.tensor_active, &o.dram_read, &o.dram_write,
                      &o.pcie_rx, &o.pcie_tx})
      *v = std::min(1.0, *v);
  }
  return 0;
}
