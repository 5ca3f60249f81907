// The SASS metrics API (cupti_sass_metrics.h) as the simulator offers it: the GH100's global
// sector metrics, counted from the cost file's per-warp figures (tests/sim/README.md) while
// collection is enabled. A GH100 (sm_90) has the ideal count only as its load and store parts,
// so a client takes the fallback path a real H100 or H200 asks for. One record per kernel and
// metric, at pc 0, with one instance (GPU granularity).
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../sim_bridge.h"

namespace {

struct SassMetric {
  uint64_t id;
  const char* name;
  const char* description;
};
const SassMetric kSassMetrics[] = {
    {0x5101, "smsp__sass_sectors_mem_global", "32-byte sectors accessed by global loads and stores"},
    {0x5102, "smsp__sass_sectors_mem_global_op_ld_ideal", "fewest sectors the global loads need"},
    {0x5103, "smsp__sass_sectors_mem_global_op_st_ideal", "fewest sectors the global stores need"},
};
constexpr size_t kSassMetricCount = sizeof(kSassMetrics) / sizeof(kSassMetrics[0]);

struct SassCounts {
  uint64_t value[kSassMetricCount] = {};
};

struct SassState {
  std::mutex mu;
  bool configured = false;
  bool enabled = false;
  bool wanted[kSassMetricCount] = {};
  std::map<std::string, SassCounts> by_function;  // since the last flush
};
SassState& sass() {
  static SassState* s = new SassState;  // never destroyed: a client may flush from an exit handler
  return *s;
}

bool sass_refused() {
  const char* v = std::getenv("GPUHOOK_SIM_PROFILING");
  return v != nullptr && (std::strcmp(v, "restricted") == 0 || std::strcmp(v, "unsupported") == 0);
}

bool sass_chip_ok(const char* chip) { return chip != nullptr && std::strcmp(chip, "GH100") == 0; }

// Records a flush returns: one per kernel and configured metric.
size_t sass_records_of(const SassState& s) {
  size_t wanted = 0;
  for (bool w : s.wanted) wanted += w;
  return s.by_function.size() * wanted;
}

}  // namespace

extern "C" {

void gpuhook_sim_sass_count(const char* function, uint64_t sectors, uint64_t load_ideal, uint64_t store_ideal) {
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.enabled || function == nullptr) return;
  SassCounts& c = s.by_function[function];
  c.value[0] += sectors;
  c.value[1] += load_ideal;
  c.value[2] += store_ideal;
}

CUptiResult CUPTIAPI cuptiSassMetricsGetNumOfMetrics(CUpti_SassMetrics_GetNumOfMetrics_Params* p) {
  if (p == nullptr || p->structSize == 0 || !sass_chip_ok(p->pChipName)) return CUPTI_ERROR_INVALID_PARAMETER;
  p->numOfMetrics = kSassMetricCount;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsGetMetrics(CUpti_SassMetrics_GetMetrics_Params* p) {
  if (p == nullptr || p->structSize == 0 || !sass_chip_ok(p->pChipName) || p->pMetricsList == nullptr)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < p->numOfMetrics && i < kSassMetricCount; ++i)
    p->pMetricsList[i] = {kSassMetrics[i].id, kSassMetrics[i].name, kSassMetrics[i].description};
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsGetProperties(CUpti_SassMetrics_GetProperties_Params* p) {
  if (p == nullptr || p->structSize == 0 || !sass_chip_ok(p->pChipName) || p->pMetricName == nullptr)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (const SassMetric& m : kSassMetrics) {
    if (std::strcmp(m.name, p->pMetricName) != 0) continue;
    p->metric = {m.id, m.name, m.description};
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_METRIC_NAME;
}

CUptiResult CUPTIAPI cuptiSassMetricsSetConfig(CUpti_SassMetricsSetConfig_Params* p) {
  if (p == nullptr || p->structSize == 0 || p->pConfigs == nullptr || p->numOfMetricConfig == 0)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (sass_refused()) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.configured) return CUPTI_ERROR_INVALID_OPERATION;
  bool wanted[kSassMetricCount] = {};
  for (size_t i = 0; i < p->numOfMetricConfig; ++i) {
    bool known = false;
    for (size_t m = 0; m < kSassMetricCount; ++m)
      if (kSassMetrics[m].id == p->pConfigs[i].metricId) wanted[m] = known = true;
    if (!known || p->pConfigs[i].outputGranularity != CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU)
      return CUPTI_ERROR_INVALID_PARAMETER;  // the simulator counts for the whole GPU only
  }
  std::memcpy(s.wanted, wanted, sizeof wanted);
  s.configured = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsUnsetConfig(CUpti_SassMetricsUnsetConfig_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.configured) return CUPTI_ERROR_INVALID_OPERATION;
  s.configured = s.enabled = false;
  for (bool& w : s.wanted) w = false;
  s.by_function.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsEnable(CUpti_SassMetricsEnable_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.configured || s.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  s.enabled = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsDisable(CUpti_SassMetricsDisable_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  p->numOfDroppedRecords = sass_records_of(s);  // what no flush took
  s.by_function.clear();
  s.enabled = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsGetDataProperties(CUpti_SassMetricsGetDataProperties_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  p->numOfPatchedInstructionRecords = sass_records_of(s);
  p->numOfInstances = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSassMetricsFlushData(CUpti_SassMetricsFlushData_Params* p) {
  if (p == nullptr || p->structSize == 0 || p->pMetricsData == nullptr || p->numOfInstances != 1)
    return CUPTI_ERROR_INVALID_PARAMETER;
  SassState& s = sass();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  if (p->numOfPatchedInstructionRecords < sass_records_of(s)) return CUPTI_ERROR_INVALID_PARAMETER;
  // The names live as long as the library: a client reads them after the flush.
  static std::map<std::string, std::string>* names = new std::map<std::string, std::string>;
  size_t at = 0;
  for (const auto& [function, counts] : s.by_function) {
    const char* name = (*names).try_emplace(function, function).first->second.c_str();
    for (size_t m = 0; m < kSassMetricCount; ++m) {
      if (!s.wanted[m]) continue;
      CUpti_SassMetrics_Data& d = p->pMetricsData[at++];
      if (d.pInstanceValues == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
      d.cubinCrc = 0;
      d.functionIndex = 0;
      d.functionName = name;
      d.pcOffset = 0;
      d.pInstanceValues[0] = {kSassMetrics[m].id, counts.value[m]};
    }
  }
  s.by_function.clear();
  return CUPTI_SUCCESS;
}

}  // extern "C"
