// The few NVML entry points the sampler calls, declared by hand: the toolkit ships no nvml.h,
// and libnvidia-ml.so.1 comes with the driver, so it is loaded with dlopen and never linked.
// Only stable C entry points, with the signatures and values of the NVML API Reference
// (https://docs.nvidia.com/deploy/nvml-api/, R550-R590):
//   nvmlInit_v2(void), nvmlShutdown(void)                                   (group__nvmlInitializationAndCleanup)
//   nvmlDeviceGetHandleByPciBusId_v2(const char*, nvmlDevice_t*)            (group__nvmlDeviceQueries)
//   nvmlDeviceGetHandleByUUID(const char*, nvmlDevice_t*)
//   nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*)
//   nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t*)        (structnvmlUtilization__t: gpu, memory in %)
//   nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*)                   (structnvmlMemory__t: total, free, used bytes)
//   nvmlDeviceGetClockInfo(nvmlDevice_t, nvmlClockType_t, unsigned int*)   (MHz; NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2)
//   nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int*)                   (milliwatts)
//   nvmlDeviceGetTemperature(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*)  (NVML_TEMPERATURE_GPU = 0, °C)
//   nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, unsigned long long*)  (R535+; the older name
//     nvmlDeviceGetCurrentClocksThrottleReasons has the same signature and bits, group__nvmlClocksEventReasons)
//   nvmlDeviceGetPcieThroughput(nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned int*)  (KB/s; "querying a byte
//     counter over a 20ms interval": each call takes 20 ms, so the sampler reads it at most once a second)
//   nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned int*), ...GetCurrPcieLinkWidth (lanes),
//   nvmlDeviceGetMaxPcieLinkGeneration, ...GetMaxPcieLinkWidth (the most "possible with this device
//     and system"), same signature: the link the DeviceInfo record carries (pcie_link.cpp)
//   nvmlErrorString(nvmlReturn_t)
#pragma once

#include <cstdint>

namespace gpuhook::hook::nvml {

struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t
using Return = int;            // nvmlReturn_t

inline constexpr Return kSuccess = 0;           // NVML_SUCCESS
inline constexpr Return kNotSupported = 3;      // NVML_ERROR_NOT_SUPPORTED
inline constexpr Return kNoPermission = 4;      // NVML_ERROR_NO_PERMISSION
inline constexpr Return kFunctionNotFound = 13; // NVML_ERROR_FUNCTION_NOT_FOUND
inline constexpr int kClockSm = 1;              // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;             // NVML_CLOCK_MEM
inline constexpr int kTemperatureGpu = 0;       // NVML_TEMPERATURE_GPU
inline constexpr int kPcieTxBytes = 0;          // NVML_PCIE_UTIL_TX_BYTES
inline constexpr int kPcieRxBytes = 1;          // NVML_PCIE_UTIL_RX_BYTES
// nvmlDeviceGetPciBusId fills at most NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE (32) bytes;
// cuDeviceGetPCIBusId writes the same "domain:bus:device.function" form.
inline constexpr int kPciBusIdBytes = 32;

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using HandleByTextFn = Return (*)(const char*, Device*);
using HandleByIndexFn = Return (*)(unsigned int, Device*);
using UtilizationFn = Return (*)(Device, Utilization*);
using MemoryFn = Return (*)(Device, Memory*);
using ClockFn = Return (*)(Device, int, unsigned int*);
using PowerFn = Return (*)(Device, unsigned int*);
using TemperatureFn = Return (*)(Device, int, unsigned int*);
using ReasonsFn = Return (*)(Device, unsigned long long*);
using PcieFn = Return (*)(Device, int, unsigned int*);
using LinkFn = Return (*)(Device, unsigned int*);
using ErrorStringFn = const char* (*)(Return);

// The entry points found in one loaded library; a missing one is nullptr.
struct Api {
  void* library = nullptr;
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  HandleByTextFn by_pci_bus_id = nullptr;
  HandleByTextFn by_uuid = nullptr;
  HandleByIndexFn by_index = nullptr;
  UtilizationFn utilization = nullptr;
  MemoryFn memory = nullptr;
  ClockFn clock = nullptr;
  PowerFn power = nullptr;
  TemperatureFn temperature = nullptr;
  ReasonsFn reasons = nullptr;
  PcieFn pcie = nullptr;
  LinkFn link_generation = nullptr;
  LinkFn link_width = nullptr;
  LinkFn link_max_generation = nullptr;
  LinkFn link_max_width = nullptr;
  ErrorStringFn error_string = nullptr;
};

}  // namespace gpuhook::hook::nvml
