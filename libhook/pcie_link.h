// Each device's PCIe link, from NVML, in its DeviceInfo record: what the link can carry is the
// one figure `gantt-cli whatif --change pin-copies` needs that a capture of pageable copies
// alone never shows (the bandwidth of a pinned copy).
#pragma once

#include <cstdint>

#include "config.h"
#include "nvml_api.h"
#include "wire_capture.h"

namespace gpuhook::hook {

struct PcieLink {
  uint32_t generation = 0, width = 0;          // now (falls while the link idles)
  uint32_t max_generation = 0, max_width = 0;  // the most this device and system can reach
};

// `device`'s link as NVML answers; a field it does not answer stays 0.
PcieLink read_pcie_link(const nvml::Api& api, nvml::Device device);

// Sets the link fields of CUDA device `d.ordinal()` from the process's NVML, loaded and
// initialised on the first call (the sampler's own copy is on its thread; NVML counts the
// inits). Leaves them 0 when GPUHOOK_NVML_HZ=0 (NVML off), when NVML is missing or refuses,
// or when it does not know the device. Called where the writer writes the record, once per
// device: a dlopen and nvmlInit_v2 once per process, never on the hot path.
void add_pcie_link(const Config& config, wire::DeviceInfo& d);

}  // namespace gpuhook::hook
