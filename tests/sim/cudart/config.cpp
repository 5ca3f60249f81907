#include "config.h"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace gpuhook::sim {
namespace {

// A bad value says so once and keeps the default, like the hook's own settings.
template <class T>
void read_number(const char* name, T* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || d < 0) {
    std::fprintf(stderr, "gpuhook-sim: ignoring %s=%s (want a non-negative number)\n", name, v);
    return;
  }
  *out = static_cast<T>(d);
}

void read_costs(const std::string& path, std::vector<KernelCost>* costs) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gpuhook-sim: cannot read cost file %s\n", path.c_str());
    return;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    KernelCost c;
    if (!(fields >> c.name_substring)) continue;
    if (!(fields >> c.ns_per_block) || c.ns_per_block < 0) {
      std::fprintf(stderr, "gpuhook-sim: %s:%d: want \"name_substring ns_per_block [regs]\"\n",
                   path.c_str(), line_no);
      continue;
    }
    std::string word;
    bool ok = true;
    while (fields >> word) {
      const auto eq = word.find('=');
      if (eq == std::string::npos) {
        // The optional registers column, before any key=value word.
        char* end = nullptr;
        const long regs = std::strtol(word.c_str(), &end, 10);
        if (*end != '\0' || regs < 0 || regs > 255) ok = false;
        else c.registers_per_thread = static_cast<int>(regs);
        continue;
      }
      const std::string key = word.substr(0, eq);
      char* end = nullptr;
      const double v = std::strtod(word.c_str() + eq + 1, &end);
      const bool count = key == "sectors" || key == "ld_ideal" || key == "st_ideal";  // per warp, not a fraction
      if (end == word.c_str() + eq + 1 || *end != '\0' || !(v >= 0) || (!count && v > 1) || v > 1e6) ok = false;
      else if (key == "sectors") c.sectors_per_warp = v;
      else if (key == "ld_ideal") c.load_ideal_per_warp = v;
      else if (key == "st_ideal") c.store_ideal_per_warp = v;
      else if (key == "sm_active") c.sm_active = v;
      else if (key == "tensor") c.tensor = v;
      else if (key == "dram_read") c.dram_read = v;
      else if (key == "dram_write") c.dram_write = v;
      else ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "gpuhook-sim: %s:%d: want \"name_substring ns_per_block [regs] [sm_active=F] [tensor=F] "
                   "[dram_read=F] [dram_write=F] [sectors=N] [ld_ideal=N] [st_ideal=N]\" (F in 0..1, N per warp)\n",
                   path.c_str(), line_no);
      continue;
    }
    costs->push_back(c);
  }
}

// "name:factor,name:factor"
void read_scales(const char* spec, std::vector<CostScale>* scales) {
  std::istringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto colon = item.rfind(':');
    char* end = nullptr;
    const double f = colon == std::string::npos ? -1 : std::strtod(item.c_str() + colon + 1, &end);
    if (colon == std::string::npos || colon == 0 || f <= 0 || *end != '\0') {
      std::fprintf(stderr, "gpuhook-sim: ignoring GPUHOOK_SIM_SCALE item \"%s\" (want name:factor)\n",
                   item.c_str());
      continue;
    }
    scales->push_back({item.substr(0, colon), f});
  }
}

std::atomic<SimConfig*> g_config{nullptr};
std::once_flag g_once;

}  // namespace

SimConfig SimConfig::from_environment() {
  SimConfig c;
  read_number("GPUHOOK_SIM_LAUNCH_NS", &c.launch_ns);
  read_number("GPUHOOK_SIM_SUBMIT_NS", &c.submit_ns);
  read_number("GPUHOOK_SIM_BLOCK_NS", &c.block_ns);
  read_number("GPUHOOK_SIM_QUEUE_DEPTH", &c.queue_depth);
  if (c.queue_depth == 0) c.queue_depth = 1;
  read_number("GPUHOOK_SIM_SEED", &c.seed);
  read_number("GPUHOOK_SIM_NOISE", &c.noise);
  if (c.noise > 0.9) c.noise = 0.9;  // keeps every duration positive
  read_number("GPUHOOK_SIM_PINNED_GBPS", &c.pinned_gbps);
  read_number("GPUHOOK_SIM_PAGEABLE_GBPS", &c.pageable_gbps);
  if (c.pinned_gbps <= 0) c.pinned_gbps = SimConfig{}.pinned_gbps;
  if (c.pageable_gbps <= 0) c.pageable_gbps = 10.0;
  read_number("GPUHOOK_SIM_PEER_GBPS", &c.peer_gbps);
  if (c.peer_gbps <= 0) c.peer_gbps = 450.0;
  if (const char* v = std::getenv("GPUHOOK_SIM_DEVICES"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 1 || n > 16) {
      std::fprintf(stderr, "gpuhook-sim: ignoring GPUHOOK_SIM_DEVICES=%s (want a whole number from 1 to 16)\n", v);
    } else {
      c.devices = static_cast<int>(n);
    }
  }
  const char* verbose = std::getenv("GPUHOOK_SIM_VERBOSE");
  c.verbose = verbose != nullptr && verbose[0] == '1';
  if (const char* path = std::getenv("GPUHOOK_SIM_COSTS"); path != nullptr && *path != '\0') {
    c.costs_path = path;
  } else {
    // The sidecar next to the program: <exe>.simcost, read only by the simulator.
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      std::string sidecar = std::string(exe) + ".simcost";
      if (access(sidecar.c_str(), R_OK) == 0) c.costs_path = sidecar;
    }
  }
  if (!c.costs_path.empty()) read_costs(c.costs_path, &c.costs);
  if (const char* spec = std::getenv("GPUHOOK_SIM_SCALE")) read_scales(spec, &c.scales);
  return c;
}

double SimConfig::block_ns_for(const std::string& name, int* registers) const {
  for (const auto& c : costs) {
    if (name.find(c.name_substring) != std::string::npos) {
      if (registers != nullptr && c.registers_per_thread > 0) *registers = c.registers_per_thread;
      return c.ns_per_block;
    }
  }
  return static_cast<double>(block_ns);
}

const KernelCost* SimConfig::cost_for(const std::string& name) const {
  for (const auto& c : costs)
    if (name.find(c.name_substring) != std::string::npos) return &c;
  return nullptr;
}

double SimConfig::scale_for(const std::string& name) const {
  double f = 1.0;
  for (const auto& s : scales) {
    if (name.find(s.name_substring) != std::string::npos) f *= s.factor;
  }
  return f;
}

const SimConfig& config() {
  std::call_once(g_once, [] { g_config = new SimConfig(SimConfig::from_environment()); });
  return *g_config.load();
}

void reload_config() {
  config();
  // Old settings stay alive (and reachable): a worker may still be reading them.
  static std::mutex retired_mu;
  static auto* retired = new std::vector<SimConfig*>();
  std::lock_guard<std::mutex> lock(retired_mu);
  retired->push_back(g_config.exchange(new SimConfig(SimConfig::from_environment())));
}

}  // namespace gpuhook::sim
