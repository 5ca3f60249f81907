// Device properties for DeviceInfo records, read through whichever CUDA library the process
// already loaded (never loads one itself, never initialises CUDA from the hook).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <gpuhook/v1/capture.pb.h>  // the enums only: header-only, nothing linked
#include "wire_capture.h"

namespace gpuhook::hook {

// nullopt when no CUDA runtime is loaded or it refuses.
std::optional<wire::DeviceInfo> query_device(uint32_t ordinal);

// The loaded CUDA library's device count (0 when none answers), and device `ordinal`'s PCI bus
// id ("0000:01:00.0") and UUID ("GPU-" and 32 hex digits in NVML's grouping), "" when unknown.
// For NVML's handles of the same GPUs (nvml_sampler.cpp).
int cuda_device_count();
std::string cuda_pci_bus_id(uint32_t ordinal);
std::string cuda_uuid_text(uint32_t ordinal);

// True when the device name says it is the test simulator.
bool is_simulator_device_name(const std::string& name);

}  // namespace gpuhook::hook
