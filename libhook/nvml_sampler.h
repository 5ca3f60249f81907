// GPUHOOK_NVML_HZ: the hardware's own counters (utilisation, memory used, clocks, power,
// temperature, clock event reasons, PCIe throughput) read through NVML on a thread of the
// hook's own, beside the trace and on its clock. Each read of a device becomes one fixed-size
// record in that thread's ring, which the writer drains like any other (drops counted).
//
// NVML is optional: libnvidia-ml.so.1 comes with the driver, not the toolkit, so it is loaded
// with dlopen; missing, refusing, or mapping no CUDA device, it is one `gpuhook:` line and no
// samples. The thread never runs CUDA work: it asks the CUDA library the process already
// loaded for the PCI bus id of each device, once, to find the NVML handle of the same GPU
// (CUDA and NVML number devices differently: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config.h"
#include "host_record.h"
#include "nvml_api.h"

namespace gpuhook::hook {

// One CUDA device and its NVML handle; `unsupported` has bit m set once GpuMetric m answered
// NOT_SUPPORTED or NO_PERMISSION, so it is not asked again.
struct NvmlDevice {
  uint32_t cuda_ordinal = 0;
  nvml::Device handle = nullptr;
  uint32_t unsupported = 0;
};

// Loads the library and finds the entry points; false and *why when it cannot be loaded or
// lacks nvmlInit_v2. `path` "" = libnvidia-ml.so.1, whose absence (no driver) leaves *why empty.
bool load_nvml(const std::string& path, nvml::Api* api, std::string* why);

// The CUDA side of the mapping: the process's device count, and a device's PCI bus id
// ("0000:01:00.0") or UUID ("GPU-xxxxxxxx-..."), "" when unknown. Injected for tests.
struct CudaDeviceIds {
  std::function<int()> count;
  std::function<std::string(uint32_t)> pci_bus_id;
  std::function<std::string(uint32_t)> uuid;
};
CudaDeviceIds cuda_device_ids();

// The NVML handle of CUDA device `ordinal`, by PCI bus id, else by UUID; nullptr when NVML
// does not know it.
nvml::Device find_device(const nvml::Api& api, const CudaDeviceIds& ids, uint32_t ordinal);

// Finds the NVML handle of every CUDA device, by PCI bus id, else by UUID. Devices NVML does
// not know are left out; *problem says why when none maps.
std::vector<NvmlDevice> map_devices(const nvml::Api& api, const CudaDeviceIds& ids, std::string* problem);

// Reads one device's counters into `out` (device, present, value; not the time). PCIe only
// when `pcie` (each direction costs NVML 20 ms). Returns the number of counters read.
uint32_t sample_device(const nvml::Api& api, NvmlDevice& device, bool pcie, GpuMetricsPayload* out);

class NvmlSampler {
 public:
  // Loads NVML, initialises it and starts the thread; nullptr and *why when any step fails.
  static NvmlSampler* start(const Config& config, std::string* why);
  // Asks the thread to end and waits up to timeout_ms for it (it may be inside a 20 ms NVML
  // call). Async-signal-safe: an atomic store, then nanosleep. True when it ended.
  bool stop(uint32_t timeout_ms);
  // Samples written and lost (ring full), for the tests and the bench.
  uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }

 private:
  NvmlSampler(const Config& config, const nvml::Api& api) : config_(config), api_(api) {}
  static void* thread_main(void* self);
  void loop();

  const Config& config_;
  nvml::Api api_;
  std::vector<NvmlDevice> devices_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> samples_{0};
};

}  // namespace gpuhook::hook
