// Device properties for DeviceInfo records, read through whichever CUDA library the process
// already loaded (never loads one itself, never initialises CUDA from the hook).
#pragma once

#include <cstdint>
#include <optional>

#include <gpuhook/v1/capture.pb.h>  // the enums only: header-only, nothing linked
#include "wire_capture.h"

namespace gpuhook::hook {

// nullopt when no CUDA runtime is loaded or it refuses.
std::optional<wire::DeviceInfo> query_device(uint32_t ordinal);

// True when the device name says it is the test simulator.
bool is_simulator_device_name(const std::string& name);

}  // namespace gpuhook::hook
