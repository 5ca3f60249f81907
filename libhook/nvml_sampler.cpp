#include "nvml_sampler.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <gpuhook/v1/capture.pb.h>  // the GpuMetric numbers only: header-only, nothing linked
#include "clock.h"
#include "device_info.h"
#include "message_text.h"
#include "recorder.h"
#include "sampler_thread.h"

namespace gpuhook::hook {
namespace {

uint32_t bit(v1::GpuMetric m) { return 1u << static_cast<uint32_t>(m); }

// NOT_SUPPORTED and NO_PERMISSION do not change while the process runs: such a counter is not
// asked again. Other errors (GPU_IS_LOST, UNKNOWN) may pass; the next read tries again.
bool permanent(nvml::Return rc) {
  return rc == nvml::kNotSupported || rc == nvml::kNoPermission || rc == nvml::kFunctionNotFound;
}

}  // namespace

bool load_nvml(const std::string& path, nvml::Api* api, std::string* why) {
  const char* name = path.empty() ? "libnvidia-ml.so.1" : path.c_str();
  // RTLD_LOCAL: the program's own NVML users (if any) keep theirs; the library is refcounted.
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    // The default name missing means no NVIDIA driver on this machine (it ships NVML): the
    // CUDA side says what matters then, so this says nothing. A path the user named does.
    if (!path.empty()) *why = "NVML not loaded (" + shown(name) + ": no such library); no GPU metrics";
    return false;
  }
  nvml::Api a;
  a.library = lib;
  auto sym = [lib](const char* s) { return dlsym(lib, s); };
  a.init = reinterpret_cast<nvml::InitFn>(sym("nvmlInit_v2"));
  a.shutdown = reinterpret_cast<nvml::ShutdownFn>(sym("nvmlShutdown"));
  a.by_pci_bus_id = reinterpret_cast<nvml::HandleByTextFn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  a.by_uuid = reinterpret_cast<nvml::HandleByTextFn>(sym("nvmlDeviceGetHandleByUUID"));
  a.by_index = reinterpret_cast<nvml::HandleByIndexFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  a.utilization = reinterpret_cast<nvml::UtilizationFn>(sym("nvmlDeviceGetUtilizationRates"));
  a.memory = reinterpret_cast<nvml::MemoryFn>(sym("nvmlDeviceGetMemoryInfo"));
  a.clock = reinterpret_cast<nvml::ClockFn>(sym("nvmlDeviceGetClockInfo"));
  a.power = reinterpret_cast<nvml::PowerFn>(sym("nvmlDeviceGetPowerUsage"));
  a.temperature = reinterpret_cast<nvml::TemperatureFn>(sym("nvmlDeviceGetTemperature"));
  a.reasons = reinterpret_cast<nvml::ReasonsFn>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
  // Drivers before R535 have only the older name, with the same signature and bits.
  if (a.reasons == nullptr) a.reasons = reinterpret_cast<nvml::ReasonsFn>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
  a.pcie = reinterpret_cast<nvml::PcieFn>(sym("nvmlDeviceGetPcieThroughput"));
  a.link_generation = reinterpret_cast<nvml::LinkFn>(sym("nvmlDeviceGetCurrPcieLinkGeneration"));
  a.link_width = reinterpret_cast<nvml::LinkFn>(sym("nvmlDeviceGetCurrPcieLinkWidth"));
  a.link_max_generation = reinterpret_cast<nvml::LinkFn>(sym("nvmlDeviceGetMaxPcieLinkGeneration"));
  a.link_max_width = reinterpret_cast<nvml::LinkFn>(sym("nvmlDeviceGetMaxPcieLinkWidth"));
  a.error_string = reinterpret_cast<nvml::ErrorStringFn>(sym("nvmlErrorString"));
  if (a.init == nullptr || (a.by_pci_bus_id == nullptr && a.by_uuid == nullptr)) {
    dlclose(lib);
    *why = "NVML (" + shown(name) + ") lacks nvmlInit_v2 or the device lookups; no GPU metrics";
    return false;
  }
  *api = a;
  return true;
}

CudaDeviceIds cuda_device_ids() {
  return CudaDeviceIds{&cuda_device_count, &cuda_pci_bus_id, &cuda_uuid_text};
}

nvml::Device find_device(const nvml::Api& api, const CudaDeviceIds& ids, uint32_t ordinal) {
  nvml::Device handle = nullptr;
  const std::string bus = ids.pci_bus_id ? ids.pci_bus_id(ordinal) : std::string();
  if (!bus.empty() && api.by_pci_bus_id != nullptr && api.by_pci_bus_id(bus.c_str(), &handle) == nvml::kSuccess &&
      handle != nullptr)
    return handle;
  const std::string uuid = ids.uuid ? ids.uuid(ordinal) : std::string();
  handle = nullptr;
  if (!uuid.empty() && api.by_uuid != nullptr && api.by_uuid(uuid.c_str(), &handle) == nvml::kSuccess) return handle;
  return nullptr;
}

std::vector<NvmlDevice> map_devices(const nvml::Api& api, const CudaDeviceIds& ids, std::string* problem) {
  std::vector<NvmlDevice> out;
  const int count = ids.count ? ids.count() : 0;
  if (count <= 0) {
    *problem = "the CUDA library reports no device";
    return out;
  }
  // A process sees at most a node's GPUs; a corrupt count must not make this loop long.
  for (int i = 0; i < count && i < 64; ++i) {
    const auto ordinal = static_cast<uint32_t>(i);
    if (nvml::Device handle = find_device(api, ids, ordinal)) out.push_back({ordinal, handle, 0});
  }
  if (out.empty()) *problem = "NVML knows none of the " + std::to_string(count) + " CUDA devices by PCI bus id or UUID";
  return out;
}

uint32_t sample_device(const nvml::Api& api, NvmlDevice& device, bool pcie, GpuMetricsPayload* out) {
  *out = GpuMetricsPayload{};
  out->device = static_cast<uint16_t>(device.cuda_ordinal);
  uint32_t read = 0;
  // One counter: asked unless it answered for good that it cannot be read.
  auto take = [&](v1::GpuMetric m, auto&& call) {
    if ((device.unsupported & bit(m)) != 0) return;
    uint64_t value = 0;
    const nvml::Return rc = call(&value);
    if (rc == nvml::kSuccess) {
      out->present |= bit(m);
      out->value[static_cast<uint32_t>(m) - 1] = value;
      ++read;
    } else if (permanent(rc)) {
      device.unsupported |= bit(m);
    }
  };
  nvml::Device h = device.handle;
  if (api.utilization != nullptr && (device.unsupported & bit(v1::GPU_METRIC_GPU_UTIL_PERCENT)) == 0) {
    nvml::Utilization u{};
    const nvml::Return rc = api.utilization(h, &u);
    take(v1::GPU_METRIC_GPU_UTIL_PERCENT, [&](uint64_t* v) { *v = u.gpu; return rc; });
    take(v1::GPU_METRIC_MEMORY_UTIL_PERCENT, [&](uint64_t* v) { *v = u.memory; return rc; });
  }
  if (api.memory != nullptr) {
    take(v1::GPU_METRIC_MEMORY_USED_BYTES, [&](uint64_t* v) {
      nvml::Memory m{};
      const nvml::Return rc = api.memory(h, &m);
      *v = m.used;
      return rc;
    });
  }
  if (api.clock != nullptr) {
    take(v1::GPU_METRIC_SM_CLOCK_MHZ, [&](uint64_t* v) {
      unsigned int mhz = 0;
      const nvml::Return rc = api.clock(h, nvml::kClockSm, &mhz);
      *v = mhz;
      return rc;
    });
    take(v1::GPU_METRIC_MEMORY_CLOCK_MHZ, [&](uint64_t* v) {
      unsigned int mhz = 0;
      const nvml::Return rc = api.clock(h, nvml::kClockMem, &mhz);
      *v = mhz;
      return rc;
    });
  }
  if (api.power != nullptr) {
    take(v1::GPU_METRIC_POWER_MW, [&](uint64_t* v) {
      unsigned int mw = 0;
      const nvml::Return rc = api.power(h, &mw);
      *v = mw;
      return rc;
    });
  }
  if (api.temperature != nullptr) {
    take(v1::GPU_METRIC_TEMPERATURE_C, [&](uint64_t* v) {
      unsigned int c = 0;
      const nvml::Return rc = api.temperature(h, nvml::kTemperatureGpu, &c);
      *v = c;
      return rc;
    });
  }
  if (api.reasons != nullptr) {
    take(v1::GPU_METRIC_CLOCKS_EVENT_REASONS, [&](uint64_t* v) {
      unsigned long long mask = 0;
      const nvml::Return rc = api.reasons(h, &mask);
      *v = mask;
      return rc;
    });
  }
  if (pcie && api.pcie != nullptr) {
    take(v1::GPU_METRIC_PCIE_TX_KBPS, [&](uint64_t* v) {
      unsigned int kbps = 0;
      const nvml::Return rc = api.pcie(h, nvml::kPcieTxBytes, &kbps);
      *v = kbps;
      return rc;
    });
    take(v1::GPU_METRIC_PCIE_RX_KBPS, [&](uint64_t* v) {
      unsigned int kbps = 0;
      const nvml::Return rc = api.pcie(h, nvml::kPcieRxBytes, &kbps);
      *v = kbps;
      return rc;
    });
  }
  return read;
}

NvmlSampler* NvmlSampler::start(const Config& config, std::string* why) {
  if (config.nvml_hz == 0) return nullptr;
  nvml::Api api;
  if (!load_nvml(config.nvml_path, &api, why)) return nullptr;
  const nvml::Return rc = api.init();
  if (rc != nvml::kSuccess) {
    const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    *why = "nvmlInit_v2 failed (" + std::string(text != nullptr ? text : "error " + std::to_string(rc)) +
           "); no GPU metrics";
    dlclose(api.library);
    return nullptr;
  }
  auto* sampler = new NvmlSampler(config, api);
  const int err = start_sampler_thread(&NvmlSampler::thread_main, sampler);
  if (err != 0) {
    *why = std::string("cannot start the NVML sampler thread: ") + std::strerror(err) + "; no GPU metrics";
    if (api.shutdown != nullptr) api.shutdown();
    delete sampler;
    return nullptr;
  }
  return sampler;
}

void* NvmlSampler::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "gpuhook-nvml");
  // Nothing this thread calls (NVML, the CUDA device queries) is recorded as the program's.
  ReentryGuard guard;
  auto* s = static_cast<NvmlSampler*>(self);
  try {
    s->loop();
  } catch (...) {
    // An allocation failure in the mapping: no metrics, the program runs on.
  }
  s->finished_.store(true, std::memory_order_release);
  return nullptr;
}

void NvmlSampler::loop() {
  const uint64_t period_ns = 1'000'000'000u / config_.nvml_hz;
  // The devices are asked for once CUDA answers: this thread starts inside CUDA's own
  // initialisation (InitializeInjection), where the device queries are not ready yet. Given
  // up after 10 s with one line.
  const uint64_t give_up_ns = now_ns() + 10'000'000'000u;
  std::string problem;
  while (devices_.empty()) {
    if (stop_requested_.load(std::memory_order_acquire)) return;
    devices_ = map_devices(api_, cuda_device_ids(), &problem);
    if (!devices_.empty()) break;
    if (now_ns() > give_up_ns) {
      const std::string line = "gpuhook: " + problem + "; no GPU metrics\n";
      ssize_t ignored = write(2, line.data(), line.size());
      (void)ignored;
      return;
    }
    sampler_sleep_ns(20'000'000);
  }
  // PCIe throughput costs 20 ms of NVML's time per direction (nvml_api.h): once a second.
  constexpr uint64_t kPcieEveryNs = 1'000'000'000u;
  uint64_t next_pcie_ns = 0;
  uint64_t next_ns = now_ns();
  while (!stop_requested_.load(std::memory_order_acquire)) {
    const uint64_t now = now_ns();
    const bool pcie = now >= next_pcie_ns;
    if (pcie) next_pcie_ns = now + kPcieEveryNs;
    for (NvmlDevice& d : devices_) {
      GpuMetricsPayload payload;
      if (sample_device(api_, d, pcie, &payload) == 0) continue;
      HostRecord* r = begin_record();
      if (r == nullptr) continue;  // recording off, or the ring full (counted there)
      r->kind = HostKind::kGpuMetrics;
      r->thread_id = this_thread_id();
      r->start_ns = now_ns();
      r->end_ns = 0;
      r->metrics = payload;
      end_record();
      samples_.fetch_add(1, std::memory_order_relaxed);
    }
    // Fixed-rate ticks; a tick missed (NVML was slow, the machine busy) is skipped, not made
    // up in a burst.
    next_ns += period_ns;
    const uint64_t after = now_ns();
    if (next_ns <= after) next_ns = after + period_ns - (after - next_ns) % period_ns;
    // In slices, so that a stop is seen within 10 ms at any rate (GPUHOOK_NVML_HZ=1: a second).
    for (uint64_t t = after; t < next_ns && !stop_requested_.load(std::memory_order_acquire); t = now_ns())
      sampler_sleep_ns(std::min<uint64_t>(next_ns - t, 10'000'000));
  }
}

// nvmlShutdown is not called: the process is ending, the program may use NVML itself on
// another thread, and a sampler that did not stop in time may still be inside a call.
bool NvmlSampler::stop(uint32_t timeout_ms) {
  return stop_sampler_thread(stop_requested_, finished_, timeout_ms);
}

}  // namespace gpuhook::hook
