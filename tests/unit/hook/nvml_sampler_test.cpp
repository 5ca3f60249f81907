// The NVML sampler's parts without a thread: the reads of one device against a fabricated
// NVML, the CUDA-to-NVML device mapping, GPUHOOK_NVML_HZ, and the simulated libnvidia-ml.so.1
// loaded the way the hook loads the real one.
#include "nvml_sampler.h"
#include "pcie_link.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <gpuhook/v1/capture.pb.h>

namespace gpuhook::hook {
namespace {

// A fabricated NVML: fixed values, power NOT_SUPPORTED, and counts of the calls made.
int g_power_calls = 0;
int g_pcie_calls = 0;
nvml::Device const kHandle = reinterpret_cast<nvml::Device>(0x1000);
nvml::Device const kOtherHandle = reinterpret_cast<nvml::Device>(0x2000);

nvml::Api fake_api() {
  nvml::Api a;
  a.utilization = [](nvml::Device, nvml::Utilization* u) {
    u->gpu = 87;
    u->memory = 12;
    return nvml::kSuccess;
  };
  a.memory = [](nvml::Device, nvml::Memory* m) {
    m->total = 100;
    m->used = 64ull << 20;
    m->free = 1;
    return nvml::kSuccess;
  };
  a.clock = [](nvml::Device, int type, unsigned int* mhz) {
    *mhz = type == nvml::kClockSm ? 1410 : 2619;
    return nvml::kSuccess;
  };
  a.power = [](nvml::Device, unsigned int*) {
    ++g_power_calls;
    return nvml::kNotSupported;
  };
  a.temperature = [](nvml::Device, int, unsigned int* c) {
    *c = 61;
    return nvml::kSuccess;
  };
  a.reasons = [](nvml::Device, unsigned long long* mask) {
    *mask = 0x4;
    return nvml::kSuccess;
  };
  a.pcie = [](nvml::Device, int counter, unsigned int* kbps) {
    ++g_pcie_calls;
    *kbps = counter == nvml::kPcieTxBytes ? 1000 : 2000;
    return nvml::kSuccess;
  };
  a.by_pci_bus_id = [](const char* bus, nvml::Device* d) {
    if (std::string(bus) != "00000000:02:00.0") return 6;  // NVML_ERROR_NOT_FOUND
    *d = kHandle;
    return nvml::kSuccess;
  };
  a.by_uuid = [](const char* uuid, nvml::Device* d) {
    if (std::string(uuid) != "GPU-0") return 6;
    *d = kOtherHandle;
    return nvml::kSuccess;
  };
  return a;
}

uint64_t value(const GpuMetricsPayload& p, v1::GpuMetric m) { return p.value[static_cast<uint32_t>(m) - 1]; }
bool has(const GpuMetricsPayload& p, v1::GpuMetric m) { return (p.present & (1u << static_cast<uint32_t>(m))) != 0; }

TEST(NvmlSampler, OneReadFillsEveryCounterNvmlAnswersAndStopsAskingForUnsupportedOnes) {
  const nvml::Api api = fake_api();
  NvmlDevice d{3, kHandle, 0};
  g_power_calls = g_pcie_calls = 0;
  GpuMetricsPayload p;
  EXPECT_EQ(sample_device(api, d, /*pcie=*/true, &p), 9u);
  EXPECT_EQ(p.device, 3u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_GPU_UTIL_PERCENT), 87u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_MEMORY_UTIL_PERCENT), 12u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_MEMORY_USED_BYTES), 64ull << 20);
  EXPECT_EQ(value(p, v1::GPU_METRIC_SM_CLOCK_MHZ), 1410u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_MEMORY_CLOCK_MHZ), 2619u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_TEMPERATURE_C), 61u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_CLOCKS_EVENT_REASONS), 4u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_PCIE_TX_KBPS), 1000u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_PCIE_RX_KBPS), 2000u);
  EXPECT_FALSE(has(p, v1::GPU_METRIC_POWER_MW));
  EXPECT_EQ(g_pcie_calls, 2);
  // Power said NOT_SUPPORTED: not asked again. PCIe only when asked for.
  EXPECT_EQ(sample_device(api, d, /*pcie=*/false, &p), 7u);
  EXPECT_EQ(g_power_calls, 1);
  EXPECT_EQ(g_pcie_calls, 2);
  EXPECT_FALSE(has(p, v1::GPU_METRIC_PCIE_TX_KBPS));
}

TEST(NvmlSampler, DevicesMapByPciBusIdElseByUuidAndUnknownOnesAreLeftOut) {
  const nvml::Api api = fake_api();
  CudaDeviceIds ids;
  ids.count = [] { return 3; };
  ids.pci_bus_id = [](uint32_t i) { return i == 1 ? std::string("00000000:02:00.0") : std::string("00000000:09:00.0"); };
  ids.uuid = [](uint32_t i) { return i == 0 ? std::string("GPU-0") : std::string(); };
  std::string problem;
  const auto devices = map_devices(api, ids, &problem);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].cuda_ordinal, 0u);
  EXPECT_EQ(devices[0].handle, kOtherHandle);
  EXPECT_EQ(devices[1].cuda_ordinal, 1u);
  EXPECT_EQ(devices[1].handle, kHandle);
  EXPECT_TRUE(problem.empty());
  ids.count = [] { return 0; };
  EXPECT_TRUE(map_devices(api, ids, &problem).empty());
  EXPECT_EQ(problem, "the CUDA library reports no device");
}

TEST(NvmlSampler, TheLinkKeepsWhatNvmlAnswersAndLeavesTheRestUnknown) {
  nvml::Api api;
  api.link_max_generation = [](nvml::Device, unsigned int* v) { *v = 4; return nvml::kSuccess; };
  api.link_max_width = [](nvml::Device, unsigned int* v) { *v = 99; return nvml::kSuccess; };  // no PCIe width
  api.link_generation = [](nvml::Device, unsigned int* v) { *v = 4; return nvml::kNotSupported; };
  const PcieLink link = read_pcie_link(api, kHandle);  // link_width: not in this NVML
  EXPECT_EQ(link.max_generation, 4u);
  EXPECT_EQ(link.max_width, 0u);
  EXPECT_EQ(link.generation, 0u);
  EXPECT_EQ(link.width, 0u);
}

TEST(NvmlSampler, RateIsReadFromTheEnvironmentAndZeroTurnsItOff) {
  std::map<std::string, std::string> vars;
  auto lookup = [&vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> problems;
  EXPECT_EQ(parse_config(lookup, &problems).nvml_hz, 100u);
  vars["GPUHOOK_NVML_HZ"] = "0";
  EXPECT_EQ(parse_config(lookup, &problems).nvml_hz, 0u);
  vars["GPUHOOK_NVML_HZ"] = "5000";
  EXPECT_EQ(parse_config(lookup, &problems).nvml_hz, 100u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "GPUHOOK_NVML_HZ='5000' ignored (want an integer in 0..1000)");
  std::string why;
  Config off;
  off.nvml_hz = 0;
  EXPECT_EQ(NvmlSampler::start(off, &why), nullptr);
  EXPECT_TRUE(why.empty()) << "off is no failure";
}

TEST(NvmlSampler, AMissingLibraryIsOneReasonNotACrash) {
  nvml::Api api;
  std::string why;
  EXPECT_FALSE(load_nvml("/nonexistent/libnvidia-ml.so.1", &api, &why));
  EXPECT_EQ(why, "NVML not loaded (/nonexistent/libnvidia-ml.so.1: no such library); no GPU metrics");
}

TEST(NvmlSampler, NoDriverLibraryAtAllIsNoComplaint) {
  if (void* present = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(present);
    GTEST_SKIP() << "an NVML is loaded in this process";
  }
  if (void* found = dlopen("libnvidia-ml.so.1", RTLD_NOW)) {
    dlclose(found);
    GTEST_SKIP() << "this machine has an NVML on the library path";
  }
  nvml::Api api;
  std::string why = "unchanged";
  EXPECT_FALSE(load_nvml("", &api, &why));
  EXPECT_EQ(why, "unchanged");
}

#ifdef SIM_NVML
// The simulated NVML with no simulated runtime in the process: every counter answers, and an
// idle GPU reports the idle clock with the GpuIdle reason.
TEST(NvmlSampler, TheSimulatedLibraryAnswersThroughTheDeclaredEntryPoints) {
  nvml::Api api;
  std::string why;
  ASSERT_TRUE(load_nvml(SIM_NVML, &api, &why)) << why;
  ASSERT_EQ(api.init(), nvml::kSuccess);
  nvml::Device h = nullptr;
  ASSERT_EQ(api.by_pci_bus_id("00000000:01:00.0", &h), nvml::kSuccess);
  EXPECT_EQ(api.by_pci_bus_id("00000000:07:00.0", &h), 6);  // NVML_ERROR_NOT_FOUND: one device
  ASSERT_EQ(api.by_pci_bus_id("0000:01:00.0", &h), nvml::kSuccess);
  NvmlDevice d{0, h, 0};
  GpuMetricsPayload p;
  EXPECT_EQ(sample_device(api, d, true, &p), 10u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_GPU_UTIL_PERCENT), 0u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_SM_CLOCK_MHZ), 345u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_CLOCKS_EVENT_REASONS), 1u);
  EXPECT_EQ(value(p, v1::GPU_METRIC_POWER_MW), 75'000u);
  // The DeviceInfo's link: an H200's gen5 x16, its current generation gen1 while it idles.
  const PcieLink link = read_pcie_link(api, h);
  EXPECT_EQ(link.max_generation, 5u);
  EXPECT_EQ(link.max_width, 16u);
  EXPECT_EQ(link.generation, 1u);
  EXPECT_EQ(link.width, 16u);
  EXPECT_EQ(api.shutdown(), nvml::kSuccess);
  dlclose(api.library);
}
#endif

}  // namespace
}  // namespace gpuhook::hook
