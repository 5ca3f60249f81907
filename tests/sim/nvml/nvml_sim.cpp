// The simulated libnvidia-ml.so.1: the entry points the hook samples, with the NVML API
// Reference's signatures and return codes (libhook/nvml_api.h cites them), and counters
// computed from what the simulated runtime planned (gpuhook_sim_device_activity,
// sim_bridge.h), so that a test can hold a counter against the trace.
//
// As the real library: utilisation is the share of the last sample period (nvmlUtilization_t:
// "between 1 second and 1/6 second, depending on the product"; 1/6 s here, the shortest,
// GPUHOOK_SIM_NVML_PERIOD_MS changes it) in which a kernel ran; PCIe throughput the bytes of
// the 20 ms before the call; an idle GPU drops its SM clock with the GpuIdle reason. The model's
// figures are an H200's published ones (1980 MHz boost SM clock, 2619 MHz HBM3e clock, 700 W
// power limit); power and temperature rise linearly with the SM share in use. Not a GPU figure.
//
// GPUHOOK_SIM_POWER_CAP=FROM_MS+DURATION_MS: from FROM_MS after nvmlInit_v2, for DURATION_MS,
// the SM clock is capped at 1410 MHz with nvmlClocksEventReasonSwPowerCap set and the power
// at its limit, as a GPU that hit its power cap reports it; kernels that start inside it run
// 1980/1410 times longer (the simulated runtime asks gpuhook_sim_nvml_capped_at).
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../sim_bridge.h"

namespace {

using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kUninitialized = 1;
constexpr Return kInvalidArgument = 2;
constexpr Return kNotSupported = 3;
constexpr Return kNotFound = 6;

constexpr unsigned kBoostSmMhz = 1980;
constexpr unsigned kIdleSmMhz = 345;
constexpr unsigned kCappedSmMhz = 1410;
constexpr unsigned kMemoryMhz = 2619;
constexpr unsigned kIdlePowerMw = 75'000;
constexpr unsigned kPowerLimitMw = 700'000;
constexpr unsigned long long kGlobalMemBytes = 141ull * 1024 * 1024 * 1024;
constexpr unsigned long long kReasonGpuIdle = 0x1;      // nvmlClocksEventReasonGpuIdle
constexpr unsigned long long kReasonSwPowerCap = 0x4;   // nvmlClocksEventReasonSwPowerCap
constexpr unsigned kPcieGeneration = 5;                 // an H200's host link: gen5 x16
constexpr unsigned kPcieWidth = 16;
constexpr uint64_t kPcieWindowNs = 20'000'000;          // "a byte counter over a 20ms interval"

struct SimDevice {
  int index;
};
SimDevice g_devices[16];

std::atomic<int> g_init_count{0};
uint64_t g_init_ns = 0;
int g_device_count = 1;
uint64_t g_period_ns = 1'000'000'000 / 6;
uint64_t g_cap_from_ns = 0, g_cap_to_ns = 0;  // after g_init_ns; both 0 = no cap

using NowFn = uint64_t (*)();
using ActivityFn = int (*)(int, uint64_t, uint64_t, GpuhookSimActivity*);

// The CUPTI clock of the simulated runtime (the hook's clock once it registered it), so the
// windows below are the trace's; CLOCK_MONOTONIC_RAW when no simulated CUPTI is loaded.
uint64_t now_ns() {
  static std::atomic<NowFn> cached{nullptr};
  NowFn fn = cached.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = reinterpret_cast<NowFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_now_ns"));
    cached.store(fn, std::memory_order_relaxed);
  }
  if (fn != nullptr) return fn();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One read of a device asks for the same window several times (utilisation, clock, power,
// reasons): within 100 us a thread reuses its answer, so the runtime's activity log, whose
// lock its stream workers take at every operation, is scanned once or twice per read.
GpuhookSimActivity activity(int device, uint64_t window_ns) {
  struct Cached {
    int device = -1;
    uint64_t window_ns = 0, at_ns = 0;
    GpuhookSimActivity a{};
  };
  thread_local Cached cache[3];
  const uint64_t now = now_ns();
  for (const Cached& c : cache)
    if (c.device == device && c.window_ns == window_ns && now >= c.at_ns && now - c.at_ns < 100'000) return c.a;
  GpuhookSimActivity a{};
  // Looked up at each call: the runtime may be loaded after NVML.
  auto fn = reinterpret_cast<ActivityFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_device_activity"));
  if (fn != nullptr && now > window_ns) fn(device, now - window_ns, now, &a);
  Cached& slot = cache[window_ns % 3];
  slot = Cached{device, window_ns, now, a};
  return a;
}

bool capped_at(uint64_t t_ns) {
  if (g_cap_to_ns == 0 || g_init_count.load() <= 0 || t_ns < g_init_ns) return false;
  const uint64_t t = t_ns - g_init_ns;
  return t >= g_cap_from_ns && t < g_cap_to_ns;
}

bool capped() { return capped_at(now_ns()); }

double sm_share(int device) {
  const GpuhookSimActivity a = activity(device, g_period_ns);
  return std::min(1.0, a.sm_share_ns / static_cast<double>(g_period_ns));
}

bool idle(int device) { return activity(device, g_period_ns).kernel_busy_ns == 0; }

void read_settings() {
  if (const char* v = std::getenv("GPUHOOK_SIM_DEVICES")) {
    const int n = std::atoi(v);
    if (n >= 1 && n <= 16) g_device_count = n;
  }
  if (const char* v = std::getenv("GPUHOOK_SIM_NVML_PERIOD_MS")) {
    const long ms = std::atol(v);
    if (ms >= 1 && ms <= 1000) g_period_ns = static_cast<uint64_t>(ms) * 1'000'000;
    else std::fprintf(stderr, "gpuhook-sim: GPUHOOK_SIM_NVML_PERIOD_MS='%s' ignored (want 1..1000)\n", v);
  }
  if (const char* v = std::getenv("GPUHOOK_SIM_POWER_CAP")) {
    unsigned long from = 0, duration = 0;
    char tail = 0;
    if (std::sscanf(v, "%lu+%lu%c", &from, &duration, &tail) == 2 && duration > 0) {
      g_cap_from_ns = from * 1'000'000;
      g_cap_to_ns = g_cap_from_ns + duration * 1'000'000;
    } else {
      std::fprintf(stderr, "gpuhook-sim: GPUHOOK_SIM_POWER_CAP='%s' ignored (want FROM_MS+DURATION_MS)\n", v);
    }
  }
}

int device_of(const void* handle) {
  for (int d = 0; d < g_device_count; ++d)
    if (handle == &g_devices[d]) return d;
  return -1;
}

#define SIM_DEVICE(handle, d)                               \
  if (g_init_count.load() <= 0) return kUninitialized;      \
  const int d = device_of(handle);                          \
  if (d < 0) return kInvalidArgument

}  // namespace

extern "C" {

// For the simulated runtime (device_activity.cpp): 1 when the SM clock is capped at t_ns, so
// that kernels starting then run longer, as on a GPU at its power limit.
__attribute__((visibility("default"))) int gpuhook_sim_nvml_capped_at(uint64_t t_ns) { return capped_at(t_ns) ? 1 : 0; }

Return nvmlInit_v2() {
  // The settings and the cap's origin are set once, before any caller can see the library
  // initialised (the runtime's workers read them through gpuhook_sim_nvml_capped_at).
  static std::once_flag once;
  std::call_once(once, [] {
    read_settings();
    for (int d = 0; d < 16; ++d) g_devices[d].index = d;
    g_init_ns = now_ns();
  });
  g_init_count.fetch_add(1);
  return kSuccess;
}

Return nvmlShutdown() {
  // Reference counted, as the real one: "nvmlShutdown ... only once all calls to nvmlInit".
  int n = g_init_count.load();
  while (n > 0 && !g_init_count.compare_exchange_weak(n, n - 1)) {
  }
  return n > 0 ? kSuccess : kUninitialized;
}

const char* nvmlErrorString(Return rc) {
  switch (rc) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    default: return "Unknown Error";
  }
}

Return nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_count.load() <= 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned>(g_device_count);
  return kSuccess;
}

Return nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (g_init_count.load() <= 0) return kUninitialized;
  if (device == nullptr || index >= static_cast<unsigned>(g_device_count)) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}

// "domain:bus:device.function" in hexadecimal, the domain in 4 or 8 digits; device d sits on
// bus d + 1 (tests/sim/cudart/device_model.h), so NVML and the runtime name the same GPUs.
Return nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (g_init_count.load() <= 0) return kUninitialized;
  if (bus_id == nullptr || device == nullptr) return kInvalidArgument;
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) return kInvalidArgument;
  if (domain != 0 || dev != 0 || function != 0 || bus < 1 || bus > static_cast<unsigned>(g_device_count))
    return kNotFound;
  *device = &g_devices[bus - 1];
  return kSuccess;
}

// The runtime's UUID bytes ("gpuhook-sim-dev" and the ordinal), in NVML's text form.
Return nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (g_init_count.load() <= 0) return kUninitialized;
  if (uuid == nullptr || device == nullptr) return kInvalidArgument;
  for (int d = 0; d < g_device_count; ++d) {
    unsigned char bytes[16];
    std::memcpy(bytes, "gpuhook-sim-dev", 15);
    bytes[15] = static_cast<unsigned char>(d);
    char text[48];
    int k = std::snprintf(text, sizeof text, "GPU-");
    for (int i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) text[k++] = '-';
      k += std::snprintf(text + k, sizeof text - static_cast<size_t>(k), "%02x", bytes[i]);
    }
    if (strcasecmp(text, uuid) == 0) {
      *device = &g_devices[d];
      return kSuccess;
    }
  }
  return kNotFound;
}

struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

Return nvmlDeviceGetUtilizationRates(void* handle, NvmlUtilization* u) {
  SIM_DEVICE(handle, d);
  if (u == nullptr) return kInvalidArgument;
  const GpuhookSimActivity a = activity(d, g_period_ns);
  const double period = static_cast<double>(g_period_ns);
  u->gpu = static_cast<unsigned>(std::min(100.0, 100.0 * static_cast<double>(a.kernel_busy_ns) / period + 0.5));
  u->memory = static_cast<unsigned>(std::min(100.0, 100.0 * static_cast<double>(a.memory_busy_ns) / period + 0.5));
  return kSuccess;
}

Return nvmlDeviceGetMemoryInfo(void* handle, NvmlMemory* m) {
  SIM_DEVICE(handle, d);
  if (m == nullptr) return kInvalidArgument;
  const GpuhookSimActivity a = activity(d, 1);
  m->total = kGlobalMemBytes;
  m->used = std::min<unsigned long long>(a.device_memory_bytes, kGlobalMemBytes);
  m->free = m->total - m->used;
  return kSuccess;
}

Return nvmlDeviceGetClockInfo(void* handle, int type, unsigned int* mhz) {
  SIM_DEVICE(handle, d);
  if (mhz == nullptr) return kInvalidArgument;
  switch (type) {
    case 0:    // NVML_CLOCK_GRAPHICS: the SM clock's domain on this part
    case 1:    // NVML_CLOCK_SM
      *mhz = idle(d) ? kIdleSmMhz : capped() ? kCappedSmMhz : kBoostSmMhz;
      return kSuccess;
    case 2: *mhz = kMemoryMhz; return kSuccess;  // NVML_CLOCK_MEM
    default: return kInvalidArgument;
  }
}

Return nvmlDeviceGetPowerUsage(void* handle, unsigned int* mw) {
  SIM_DEVICE(handle, d);
  if (mw == nullptr) return kInvalidArgument;
  if (capped() && !idle(d)) *mw = kPowerLimitMw;
  else *mw = kIdlePowerMw + static_cast<unsigned>(sm_share(d) * (kPowerLimitMw - kIdlePowerMw) * 0.9);
  return kSuccess;
}

Return nvmlDeviceGetTemperature(void* handle, int sensor, unsigned int* celsius) {
  SIM_DEVICE(handle, d);
  if (celsius == nullptr || sensor != 0) return kInvalidArgument;  // NVML_TEMPERATURE_GPU only
  *celsius = 32 + static_cast<unsigned>(sm_share(d) * 40.0);
  return kSuccess;
}

Return nvmlDeviceGetCurrentClocksEventReasons(void* handle, unsigned long long* reasons) {
  SIM_DEVICE(handle, d);
  if (reasons == nullptr) return kInvalidArgument;
  *reasons = idle(d) ? kReasonGpuIdle : capped() ? kReasonSwPowerCap : 0;
  return kSuccess;
}

Return nvmlDeviceGetCurrentClocksThrottleReasons(void* handle, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(handle, reasons);
}

// Answers at once: the real call spends 20 ms counting; the simulator counts the 20 ms before.
Return nvmlDeviceGetPcieThroughput(void* handle, int counter, unsigned int* kbps) {
  SIM_DEVICE(handle, d);
  if (kbps == nullptr || (counter != 0 && counter != 1)) return kInvalidArgument;
  const GpuhookSimActivity a = activity(d, kPcieWindowNs);
  const uint64_t bytes = counter == 0 ? a.pcie_tx_bytes : a.pcie_rx_bytes;
  *kbps = static_cast<unsigned>(std::min<uint64_t>(UINT32_MAX, bytes * 1'000'000'000ull / kPcieWindowNs / 1000));
  return kSuccess;
}

// The link of an H200 SXM: PCIe gen5 x16 (its published host interface). As a real GPU's, the
// current generation falls to gen1 while the GPU idles (the driver's link power saving: an
// idle GPU commonly shows gen1 in nvidia-smi's pcie.link.gen.current); the max stays gen5.
Return nvmlDeviceGetCurrPcieLinkGeneration(void* handle, unsigned int* generation) {
  SIM_DEVICE(handle, d);
  if (generation == nullptr) return kInvalidArgument;
  *generation = idle(d) ? 1 : kPcieGeneration;
  return kSuccess;
}

Return nvmlDeviceGetCurrPcieLinkWidth(void* handle, unsigned int* width) {
  SIM_DEVICE(handle, d);
  if (width == nullptr) return kInvalidArgument;
  *width = kPcieWidth;
  return kSuccess;
}

Return nvmlDeviceGetMaxPcieLinkGeneration(void* handle, unsigned int* generation) {
  SIM_DEVICE(handle, d);
  if (generation == nullptr) return kInvalidArgument;
  *generation = kPcieGeneration;
  return kSuccess;
}

Return nvmlDeviceGetMaxPcieLinkWidth(void* handle, unsigned int* width) {
  SIM_DEVICE(handle, d);
  if (width == nullptr) return kInvalidArgument;
  *width = kPcieWidth;
  return kSuccess;
}

}  // extern "C"
