#include "sass_sectors.h"

#include <cerrno>
#include <map>
#include <utility>

namespace gpuhook::hook {

namespace {
thread_local bool t_inside = false;  // this thread is in on_launch: CUPTI's own launches pass
}  // namespace

std::string SectorCounter::missing_entry_points(const CuptiApi& a) {
  std::string missing;
  auto need = [&missing](const void* fn, const char* name) {
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(reinterpret_cast<const void*>(a.cuptiGetDeviceId), "cuptiGetDeviceId");
  need(reinterpret_cast<const void*>(a.cuptiDeviceGetChipName), "cuptiDeviceGetChipName");
  need(reinterpret_cast<const void*>(a.cuptiProfilerInitialize), "cuptiProfilerInitialize");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsGetProperties), "cuptiSassMetricsGetProperties");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsSetConfig), "cuptiSassMetricsSetConfig");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsUnsetConfig), "cuptiSassMetricsUnsetConfig");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsEnable), "cuptiSassMetricsEnable");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsDisable), "cuptiSassMetricsDisable");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsGetDataProperties), "cuptiSassMetricsGetDataProperties");
  need(reinterpret_cast<const void*>(a.cuptiSassMetricsFlushData), "cuptiSassMetricsFlushData");
  return missing.empty() ? "" : "no " + missing + " (CUPTI 12.4 or later has the SASS metrics API)";
}

void SectorCounter::on_launch(CUcontext ctx) {
  const uint32_t n = seen_count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (seen_[i].load(std::memory_order_relaxed) == ctx) return;
  if (t_inside) return;
  t_inside = true;
  const int saved_errno = errno;  // the program's, around its launch
  try {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t now = seen_count_.load(std::memory_order_relaxed);
    bool known = false;
    for (uint32_t i = 0; i < now; ++i) known |= seen_[i].load(std::memory_order_relaxed) == ctx;
    uint32_t device = 0;
    const CUptiResult r = known ? CUPTI_SUCCESS : api_.cuptiGetDeviceId(ctx, &device);
    if (!known && r != CUPTI_SUCCESS && ctx == nullptr) {
      // A launch before its context exists (the runtime's first call): the next one asks again.
    } else if (!known && now < kMaxContexts) {
      // Seen before CUPTI is called again: a launch CUPTI makes on it passes.
      seen_[now].store(ctx, std::memory_order_relaxed);
      seen_count_.store(now + 1, std::memory_order_release);
      std::string why = r == CUPTI_SUCCESS ? start_on(ctx, device) : "cuptiGetDeviceId: " + cupti_result_text(api_, r);
      if (!why.empty() && problem_.empty()) problem_ = why;
    } else if (!known && problem_.empty()) {
      problem_ = "more than " + std::to_string(kMaxContexts) + " contexts: the later ones are not counted";
    }
  } catch (...) {
    // An allocation failed: this context is not counted, the launch goes on.
  }
  errno = saved_errno;
  t_inside = false;
}

std::string SectorCounter::configure(Device& d) {
  auto text = [this](CUptiResult r) { return cupti_result_text(api_, r); };
  if (!profiler_initialized_) {
    auto init = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    const CUptiResult r = api_.cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) return "cuptiProfilerInitialize: " + text(r);
    profiler_initialized_ = true;
  }
  auto chip = GPUHOOK_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = d.index;
  CUptiResult r = api_.cuptiDeviceGetChipName(&chip);
  if (r != CUPTI_SUCCESS || chip.pChipName == nullptr) return "cuptiDeviceGetChipName: " + text(r);
  const std::string name = chip.pChipName;
  auto id_of = [&](const char* metric, uint64_t* id) {
    auto p = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetrics_GetProperties_Params);
    p.pChipName = name.c_str();
    p.pMetricName = metric;
    if (api_.cuptiSassMetricsGetProperties(&p) != CUPTI_SUCCESS) return false;
    *id = p.metric.metricId;
    return true;
  };
  uint64_t id = 0;
  if (!id_of(kSectors, &d.sectors_id)) return "chip " + name + " has no SASS metric " + kSectors;
  if (id_of(kIdeal, &id)) {
    d.ideal_ids = {id};
  } else {
    uint64_t load = 0, store = 0;
    if (!id_of(kLoadIdeal, &load) || !id_of(kStoreIdeal, &store))
      return "chip " + name + " has neither " + kIdeal + " nor " + kLoadIdeal + " and " + kStoreIdeal;
    d.ideal_ids = {load, store};
  }
  std::vector<CUpti_SassMetrics_Config> configs;
  configs.push_back({d.sectors_id, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
  for (uint64_t ideal : d.ideal_ids) configs.push_back({ideal, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
  auto set = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsSetConfig_Params);
  set.numOfMetricConfig = configs.size();
  set.pConfigs = configs.data();
  set.deviceIndex = d.index;
  r = api_.cuptiSassMetricsSetConfig(&set);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    return "counting sectors is restricted to administrators on this machine (" + text(r) + ")";
  if (r != CUPTI_SUCCESS) return "cuptiSassMetricsSetConfig on device " + std::to_string(d.index) + ": " + text(r);
  d.configured = true;
  return "";
}

SectorCounter::Device* SectorCounter::device(uint32_t index) {
  for (Device& d : devices_)
    if (d.index == index) return &d;
  return nullptr;
}

std::string SectorCounter::start_on(CUcontext ctx, uint32_t index) {
  Device* d = device(index);
  if (d == nullptr) {
    devices_.push_back(Device{});
    d = &devices_.back();
    d->index = index;
    std::string why = configure(*d);
    if (!why.empty()) return why;
  }
  if (!d->configured) return "";  // said when the device was first seen
  auto enable = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsEnable_Params);
  enable.ctx = ctx;
  // Each kernel patched when it first runs, not every kernel of every module now.
  enable.enableLazyPatching = 1;
  const CUptiResult r = api_.cuptiSassMetricsEnable(&enable);
  if (r != CUPTI_SUCCESS) return "cuptiSassMetricsEnable on device " + std::to_string(index) + ": " + cupti_result_text(api_, r);
  counting_.push_back({ctx, index});
  return "";
}

// One context's counts so far, as KernelSectors records; "" or what went wrong. A record per
// patched instruction and metric, each with one value per instance (one: GPU granularity).
std::string SectorCounter::flush(const Context& c, const Device& d, RecordSink& sink) {
  auto props = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsGetDataProperties_Params);
  props.ctx = c.ctx;
  CUptiResult r = api_.cuptiSassMetricsGetDataProperties(&props);
  if (r != CUPTI_SUCCESS)
    return "cuptiSassMetricsGetDataProperties on device " + std::to_string(c.device) + ": " + cupti_result_text(api_, r);
  const size_t records = props.numOfPatchedInstructionRecords, instances = props.numOfInstances;
  if (records == 0 || instances == 0) return "";
  std::vector<CUpti_SassMetrics_InstanceValue> values(records * instances);
  std::vector<CUpti_SassMetrics_Data> data(records);
  for (size_t i = 0; i < records; ++i) {
    data[i].structSize = sizeof(CUpti_SassMetrics_Data);
    data[i].pInstanceValues = &values[i * instances];
  }
  auto flush = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsFlushData_Params);
  flush.ctx = c.ctx;
  flush.numOfPatchedInstructionRecords = records;
  flush.numOfInstances = instances;
  flush.pMetricsData = data.data();
  r = api_.cuptiSassMetricsFlushData(&flush);
  if (r != CUPTI_SUCCESS)
    return "cuptiSassMetricsFlushData on device " + std::to_string(c.device) + ": " + cupti_result_text(api_, r);
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_kernel;  // name -> (sectors, ideal)
  for (const CUpti_SassMetrics_Data& at : data) {
    auto& sums = by_kernel[at.functionName != nullptr ? at.functionName : ""];
    for (size_t k = 0; k < instances; ++k) {
      const CUpti_SassMetrics_InstanceValue& v = at.pInstanceValues[k];
      if (v.metricId == d.sectors_id) sums.first += v.value;
      for (uint64_t ideal : d.ideal_ids)
        if (v.metricId == ideal) sums.second += v.value;
    }
  }
  for (const auto& [name, sums] : by_kernel) {
    if (sums.first == 0 && sums.second == 0) continue;  // no global access
    wire::Record record;
    wire::KernelSectors* k = record.mutable_kernel_sectors();
    k->set_name_id(sink.intern(name));
    k->set_device(c.device);
    k->set_sectors(sums.first);
    k->set_ideal_sectors(sums.second);
    sink.emit(record);
  }
  return "";
}

std::string SectorCounter::finish(RecordSink& sink) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string problem = problem_;
  for (const Context& c : counting_) {
    // Counting starts only on a configured device's context.
    const std::string why = flush(c, *device(c.device), sink);
    if (problem.empty()) problem = why;
    auto disable = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsDisable_Params);
    disable.ctx = c.ctx;
    api_.cuptiSassMetricsDisable(&disable);
  }
  for (const Device& d : devices_) {
    if (!d.configured) continue;
    auto unset = GPUHOOK_CUPTI_PARAMS(CUpti_SassMetricsUnsetConfig_Params);
    unset.deviceIndex = d.index;
    api_.cuptiSassMetricsUnsetConfig(&unset);
  }
  counting_.clear();
  devices_.clear();
  return problem.empty() ? "" : "sector counts (GPUHOOK_SECTORS): " + problem;
}

}  // namespace gpuhook::hook
