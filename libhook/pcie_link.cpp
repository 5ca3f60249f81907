#include "pcie_link.h"

#include <mutex>
#include <string>

#include "nvml_sampler.h"

namespace gpuhook::hook {

PcieLink read_pcie_link(const nvml::Api& api, nvml::Device device) {
  PcieLink link;
  auto ask = [device](nvml::LinkFn fn, uint32_t* out) {
    unsigned int v = 0;
    // A link wider than x32 or newer than gen 16 is no PCIe link: a broken answer, kept as unknown.
    if (fn != nullptr && fn(device, &v) == nvml::kSuccess && v <= 32) *out = v;
  };
  ask(api.link_generation, &link.generation);
  ask(api.link_width, &link.width);
  ask(api.link_max_generation, &link.max_generation);
  ask(api.link_max_width, &link.max_width);
  return link;
}

void add_pcie_link(const Config& config, wire::DeviceInfo& d) {
  if (config.nvml_hz == 0) return;
  static std::mutex mutex;
  static bool tried = false;
  static nvml::Api api;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) {
    tried = true;
    std::string why;  // the sampler says why NVML is missing; the link is said by its absence
    if (load_nvml(config.nvml_path, &api, &why) && api.init() != nvml::kSuccess) api = nvml::Api{};
  }
  if (api.init == nullptr) return;
  nvml::Device handle = find_device(api, cuda_device_ids(), d.ordinal());
  if (handle == nullptr) return;
  const PcieLink link = read_pcie_link(api, handle);
  d.set_pcie_link_generation(link.generation);
  d.set_pcie_link_width(link.width);
  d.set_pcie_link_max_generation(link.max_generation);
  d.set_pcie_link_max_width(link.max_width);
}

}  // namespace gpuhook::hook
