// The simulator's CUPTI PM sampling (cupti_pmsampling.h) and the profiler host calls it needs
// (cupti_profiler_host.h, cupti_target.h, cupti_profiler_target.h), behind the real entry points
// and parameter structs. The counters come from the simulated runtime's plan
// (gpuhook_sim_pm_windows, sim_bridge.h): SM active is the SM share kernels held in the window
// times each kernel's `sm_active` from the cost file, DRAM and PCIe throughput follow copies,
// memsets and the kernels' `dram_read`/`dram_write`; all near 0 while the device idles.
//
// The images are the simulator's own layout; a client only passes them back, as with CUPTI.
// Sample times are on the CUPTI clock ("CPU based time stamps", CUPTI User Guide, PM sampling).
//
// GPUHOOK_SIM_PROFILING=restricted: counter availability and enabling fail with
// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, as under NVreg_RestrictProfilingToAdminUsers=1;
// =unsupported: the host object refuses the chip (CUPTI_ERROR_NOT_SUPPORTED); =sysclk_only: the
// time-interval trigger is refused, as on Turing and GA100; =busy: another process holds the
// device's one session (enabling fails with CUPTI_ERROR_INVALID_OPERATION).
// GPUHOOK_SIM_PM_MISSING=SUB[,SUB]: metrics whose name contains SUB are unknown to the chip.
#include <dlfcn.h>

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../sim_bridge.h"

struct CUpti_Profiler_Host_Object {
  std::string chip;
  std::vector<uint32_t> ids;  // metrics added, in order
};

struct CUpti_PmSampling_Object {
  int device = 0;
  std::mutex mu;
  std::vector<uint32_t> ids;  // from the config image
  bool configured = false;
  bool started = false;
  uint64_t interval_ns = 0;
  size_t hardware_bytes = 0;
  uint64_t next_start_ns = 0;  // the first sample not yet decoded
  uint64_t stopped_ns = 0;     // 0 while running
  // As the real library, the config image is kept by pointer and read again at the start, so a
  // client that frees it early is caught (pytorch/kineto#1532 saw hangs and crashes).
  const uint8_t* config = nullptr;
  size_t config_size = 0;
};

namespace {

// The metrics this chip knows: those of the CUPTI User Guide's PM sampling table the hook asks
// for, and the SYS clock.
const char* const kMetrics[] = {
    "gr__cycles_active.sum.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "tpc__warps_inactive_sm_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "tpc__warps_inactive_sm_idle_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
    "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
    "pcie__read_bytes.avg.pct_of_peak_sustained_elapsed",
    "pcie__write_bytes.avg.pct_of_peak_sustained_elapsed",
    "nvlrx__bytes.avg.pct_of_peak_sustained_elapsed",
    "nvltx__bytes.avg.pct_of_peak_sustained_elapsed",
    "sys__cycles_elapsed.avg.per_second",
};
constexpr uint32_t kMetricCount = sizeof(kMetrics) / sizeof(kMetrics[0]);

double value_of(uint32_t id, const GpuhookSimPmWindow& w) {
  switch (id) {
    case 0: return 100 * w.gr_active;
    case 1: return 100 * w.sm_active;
    case 2: return 100 * std::max(0.0, w.sm_share - w.sm_occupancy);  // unused slots on busy SMs
    case 3: return 100 * (1 - w.sm_share);                            // slots of idle SMs
    case 4: return 100 * w.tensor_active;
    case 5: return 100 * w.dram_read;
    case 6: return 100 * w.dram_write;
    case 7: return 100 * w.pcie_rx;
    case 8: return 100 * w.pcie_tx;
    case 9: return 100 * w.nvlink_rx;
    case 10: return 100 * w.nvlink_tx;
    default: return 1.755e9;  // the SYS clock, Hz
  }
}

bool missing_on_chip(const char* name) {
  const char* v = std::getenv("GPUHOOK_SIM_PM_MISSING");
  if (v == nullptr || *v == '\0') return false;
  std::string list = v;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string sub = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!sub.empty() && std::strstr(name, sub.c_str()) != nullptr) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

int metric_id(const char* name) {
  if (name == nullptr || missing_on_chip(name)) return -1;
  for (uint32_t i = 0; i < kMetricCount; ++i)
    if (std::strcmp(name, kMetrics[i]) == 0) return static_cast<int>(i);
  return -1;
}

bool profiling(const char* mode) {
  const char* v = std::getenv("GPUHOOK_SIM_PROFILING");
  return v != nullptr && std::strcmp(v, mode) == 0;
}

int device_count() {
  const char* v = std::getenv("GPUHOOK_SIM_DEVICES");
  const int n = v != nullptr ? std::atoi(v) : 1;
  return n >= 1 && n <= 16 ? n : 1;
}

constexpr uint32_t kConfigMagic = 0x43504847;  // "GHPC"
constexpr uint32_t kDataMagic = 0x44504847;    // "GHPD"

// Counter data image: this header, the metric ids, then max_samples samples.
struct DataHeader {
  uint32_t magic;
  uint32_t metrics;
  uint32_t max_samples;
  uint32_t completed;
};
size_t ids_bytes(uint32_t metrics) { return (sizeof(uint32_t) * metrics + 7) & ~size_t{7}; }
size_t sample_bytes(uint32_t metrics) { return 16 + 8 * size_t{metrics}; }
size_t data_bytes(uint32_t metrics, uint32_t samples) {
  return sizeof(DataHeader) + ids_bytes(metrics) + sample_bytes(metrics) * samples;
}

// The header of a counter data image, nullptr when it is not one or its size does not match.
DataHeader* data_header(const uint8_t* image, size_t size) {
  if (image == nullptr || size < sizeof(DataHeader)) return nullptr;
  auto* h = reinterpret_cast<DataHeader*>(const_cast<uint8_t*>(image));
  if (h->magic != kDataMagic || h->metrics > kMetricCount || size < data_bytes(h->metrics, h->max_samples)) return nullptr;
  if (h->completed > h->max_samples) return nullptr;
  return h;
}
const uint32_t* data_ids(const DataHeader* h) { return reinterpret_cast<const uint32_t*>(h + 1); }
uint8_t* data_sample(DataHeader* h, size_t i) {
  return reinterpret_cast<uint8_t*>(h + 1) + ids_bytes(h->metrics) + sample_bytes(h->metrics) * i;
}

using WindowsFn = int (*)(int, uint64_t, uint64_t, uint32_t, GpuhookSimPmWindow*);
WindowsFn windows_fn() {
  // The runtime may not be loaded (a CUPTI client without CUDA): then the device idles.
  static WindowsFn fn = reinterpret_cast<WindowsFn>(dlsym(RTLD_DEFAULT, "gpuhook_sim_pm_windows"));
  return fn;
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->deviceIndex >= static_cast<size_t>(device_count())) return CUPTI_ERROR_INVALID_DEVICE;
  p->pChipName = "GH100";  // the H200's chip
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params* p) {
  return p == nullptr || p->structSize == 0 ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params* p) {
  return p == nullptr || p->structSize == 0 ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->deviceIndex >= static_cast<size_t>(device_count())) return CUPTI_ERROR_INVALID_DEVICE;
  if (profiling("restricted")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  // pmsampling.h:297: with a null image, the size is returned.
  if (p->pCounterAvailabilityImage == nullptr) {
    p->counterAvailabilityImageSize = 64;
    return CUPTI_SUCCESS;
  }
  if (p->counterAvailabilityImageSize < 64) return CUPTI_ERROR_INVALID_PARAMETER;
  std::memset(p->pCounterAvailabilityImage, 0xff, 64);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  if (p == nullptr || p->structSize == 0 || p->pChipName == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->profilerType != CUPTI_PROFILER_TYPE_PM_SAMPLING && p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (profiling("unsupported") || std::strcmp(p->pChipName, "GH100") != 0) return CUPTI_ERROR_NOT_SUPPORTED;
  auto* h = new CUpti_Profiler_Host_Object();
  h->chip = p->pChipName;
  p->pHostObject = h;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) {
  if (p == nullptr || p->pHostObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  delete p->pHostObject;
  p->pHostObject = nullptr;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) {
  if (p == nullptr || p->pHostObject == nullptr || (p->numMetrics != 0 && p->ppMetricNames == nullptr))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::vector<uint32_t> add;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    const int id = metric_id(p->ppMetricNames[i]);
    if (id < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;  // none of them added
    add.push_back(static_cast<uint32_t>(id));
  }
  for (uint32_t id : add)
    if (std::find(p->pHostObject->ids.begin(), p->pHostObject->ids.end(), id) == p->pHostObject->ids.end())
      p->pHostObject->ids.push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
  if (p == nullptr || p->pHostObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  p->configImageSize = 8 + 4 * p->pHostObject->ids.size();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) {
  if (p == nullptr || p->pHostObject == nullptr || p->pConfigImage == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const auto& ids = p->pHostObject->ids;
  if (p->configImageSize < 8 + 4 * ids.size()) return CUPTI_ERROR_INVALID_PARAMETER;
  const uint32_t head[2] = {kConfigMagic, static_cast<uint32_t>(ids.size())};
  std::memcpy(p->pConfigImage, head, 8);
  if (!ids.empty()) std::memcpy(p->pConfigImage + 8, ids.data(), 4 * ids.size());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) {
  if (p == nullptr || p->pConfigImage == nullptr || p->configImageSize < 8) return CUPTI_ERROR_INVALID_PARAMETER;
  p->numOfPasses = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params* p) {
  if (p == nullptr || p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->deviceIndex >= static_cast<size_t>(device_count())) return CUPTI_ERROR_INVALID_DEVICE;
  if (profiling("restricted")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  if (profiling("busy")) return CUPTI_ERROR_INVALID_OPERATION;  // another process's session
  // One session per device (pmsampling.h:170).
  static std::mutex mu;
  static bool enabled[16] = {};
  std::lock_guard<std::mutex> lock(mu);
  if (enabled[p->deviceIndex]) return CUPTI_ERROR_INVALID_OPERATION;
  enabled[p->deviceIndex] = true;
  // Kept for the process's life (cuptiPmSamplingDisable says why), never freed, not even at
  // exit, where a client thread may still hold one; reachable from here, so not a leak.
  static auto* kept = new std::vector<CUpti_PmSampling_Object*>();
  auto* o = kept->emplace_back(new CUpti_PmSampling_Object());
  o->device = static_cast<int>(p->deviceIndex);
  p->pPmSamplingObject = o;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  // The object is kept (a client may still hold it in another thread); the device is not
  // enabled again in a simulated process.
  std::lock_guard<std::mutex> lock(p->pPmSamplingObject->mu);
  p->pPmSamplingObject->started = false;
  p->pPmSamplingObject->configured = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr || p->pConfig == nullptr || p->configSize < 8)
    return CUPTI_ERROR_INVALID_PARAMETER;
  uint32_t head[2];
  std::memcpy(head, p->pConfig, 8);
  if (head[0] != kConfigMagic || head[1] > kMetricCount || p->configSize < 8 + 4 * size_t{head[1]})
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->samplingInterval == 0 || p->hardwareBufferSize == 0 || p->triggerMode >= CUPTI_PM_SAMPLING_TRIGGER_MODE_COUNT)
    return CUPTI_ERROR_INVALID_PARAMETER;
  // A Turing or GA100 part: no time-interval trigger (cupti_pmsampling.h:78).
  if (profiling("sysclk_only") && p->triggerMode == CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL)
    return CUPTI_ERROR_NOT_SUPPORTED;
  CUpti_PmSampling_Object* o = p->pPmSamplingObject;
  std::lock_guard<std::mutex> lock(o->mu);
  o->ids.resize(head[1]);
  if (head[1] != 0) std::memcpy(o->ids.data(), p->pConfig + 8, 4 * size_t{head[1]});
  // SYSCLK mode counts cycles of the SYS clock (1.755 GHz here); time mode counts ns.
  o->interval_ns = p->triggerMode == CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL
                       ? p->samplingInterval
                       : std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(p->samplingInterval) / 1.755));
  o->interval_ns = std::max<uint64_t>(o->interval_ns, 1000);  // 1 MHz at most, as a GPU keeps up
  o->hardware_bytes = p->hardwareBufferSize;
  o->config = p->pConfig;
  o->config_size = p->configSize;
  o->configured = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingStart(CUpti_PmSampling_Start_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_PmSampling_Object* o = p->pPmSamplingObject;
  std::lock_guard<std::mutex> lock(o->mu);
  if (!o->configured || o->started) return CUPTI_ERROR_INVALID_OPERATION;
  uint32_t head[2];
  std::memcpy(head, o->config, 8);
  if (head[0] != kConfigMagic || head[1] != o->ids.size() || o->config_size < 8 + 4 * size_t{head[1]} ||
      std::memcmp(o->config + 8, o->ids.data(), 4 * size_t{head[1]}) != 0)
    return CUPTI_ERROR_INVALID_OPERATION;  // the client changed or freed the config image
  o->started = true;
  o->stopped_ns = 0;
  o->next_start_ns = gpuhook_sim_now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_PmSampling_Object* o = p->pPmSamplingObject;
  std::lock_guard<std::mutex> lock(o->mu);
  if (!o->started) return CUPTI_ERROR_INVALID_OPERATION;
  o->started = false;
  o->stopped_ns = gpuhook_sim_now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr || p->pMetricNames == nullptr || p->numMetrics == 0 ||
      p->numMetrics > kMetricCount || p->maxSamples == 0)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < p->numMetrics; ++i)
    if (metric_id(p->pMetricNames[i]) < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;
  // The names travel with the size: the image is initialised from the object's config below,
  // so a client must pass the same metrics (as CUPTI requires).
  p->counterDataSize = data_bytes(static_cast<uint32_t>(p->numMetrics), p->maxSamples);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr || p->pCounterData == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_PmSampling_Object* o = p->pPmSamplingObject;
  std::lock_guard<std::mutex> lock(o->mu);
  const auto metrics = static_cast<uint32_t>(o->ids.size());
  if (metrics == 0 || p->counterDataSize < data_bytes(metrics, 1)) return CUPTI_ERROR_INVALID_PARAMETER;
  const size_t per = sample_bytes(metrics);
  const auto samples = static_cast<uint32_t>((p->counterDataSize - sizeof(DataHeader) - ids_bytes(metrics)) / per);
  std::memset(p->pCounterData, 0, p->counterDataSize);
  DataHeader h{kDataMagic, metrics, samples, 0};
  std::memcpy(p->pCounterData, &h, sizeof h);
  std::memcpy(p->pCounterData + sizeof h, o->ids.data(), 4 * size_t{metrics});
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params* p) {
  if (p == nullptr || p->pPmSamplingObject == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (h == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_PmSampling_Object* o = p->pPmSamplingObject;
  std::lock_guard<std::mutex> lock(o->mu);
  p->overflow = 0;
  p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
  if (!o->configured || o->interval_ns == 0) return CUPTI_ERROR_INVALID_OPERATION;
  // While sampling runs, windows are decoded only once they are kDecodeLagNs old: a stream's
  // worker notes a kernel when it wakes to start it, which on a loaded machine is a few ms
  // after its planned start; an earlier decode would read that window idle for good. Stopped,
  // the program has synchronised: everything up to the stop is noted.
  constexpr uint64_t kDecodeLagNs = 50'000'000;
  const uint64_t now = gpuhook_sim_now_ns();
  const uint64_t until = o->started ? (now > kDecodeLagNs ? now - kDecodeLagNs : 0) : o->stopped_ns;
  if (o->next_start_ns == 0 || until <= o->next_start_ns) return CUPTI_SUCCESS;
  uint64_t pending = (until - o->next_start_ns) / o->interval_ns;
  CUptiResult result = CUPTI_SUCCESS;
  // KEEP_OLDEST (pmsampling.h:96): what the hardware buffer cannot hold is lost, and said.
  const uint64_t capacity = std::max<uint64_t>(1, o->hardware_bytes / (32 + 8 * o->ids.size()));
  uint64_t lost = 0;
  if (pending > capacity) {
    lost = pending - capacity;
    pending = capacity;
    p->overflow = 1;
    result = CUPTI_ERROR_OUT_OF_MEMORY;  // pmsampling.h:282
  }
  const uint64_t room = h->max_samples - h->completed;
  const auto n = static_cast<uint32_t>(std::min<uint64_t>(pending, room));
  if (n < pending) p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
  std::vector<GpuhookSimPmWindow> windows(n);
  if (n != 0 && (windows_fn() == nullptr || windows_fn()(o->device, o->next_start_ns, o->interval_ns, n, windows.data()) != 0))
    std::fill(windows.begin(), windows.end(), GpuhookSimPmWindow{});
  const uint32_t* ids = data_ids(h);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t* s = data_sample(h, h->completed + i);
    const uint64_t start = o->next_start_ns + o->interval_ns * i;
    const uint64_t times[2] = {start, start + o->interval_ns};
    std::memcpy(s, times, 16);
    for (uint32_t m = 0; m < h->metrics; ++m) {
      const double v = value_of(ids[m], windows[i]);
      std::memcpy(s + 16 + 8 * m, &v, 8);
    }
  }
  h->completed += n;
  o->next_start_ns += o->interval_ns * (n + (n == pending ? lost : 0));
  return result;
}

CUptiResult CUPTIAPI cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params* p) {
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (h == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  p->numTotalSamples = h->max_samples;
  p->numPopulatedSamples = h->completed;
  p->numCompletedSamples = h->completed;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params* p) {
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (h == nullptr || p->sampleIndex >= h->completed) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t times[2];
  std::memcpy(times, data_sample(h, p->sampleIndex), 16);
  p->startTimestamp = times[0];
  p->endTimestamp = times[1];
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  if (p == nullptr || p->pHostObject == nullptr || p->pMetricValues == nullptr ||
      (p->numMetrics != 0 && p->ppMetricNames == nullptr))
    return CUPTI_ERROR_INVALID_PARAMETER;
  DataHeader* h = data_header(p->pCounterDataImage, p->counterDataImageSize);
  if (h == nullptr || p->rangeIndex >= h->completed) return CUPTI_ERROR_INVALID_PARAMETER;
  const uint32_t* ids = data_ids(h);
  const uint8_t* s = data_sample(h, p->rangeIndex);
  for (size_t i = 0; i < p->numMetrics; ++i) {
    const int id = metric_id(p->ppMetricNames[i]);
    uint32_t m = 0;
    while (m < h->metrics && static_cast<int>(ids[m]) != id) ++m;
    if (id < 0 || m == h->metrics) return CUPTI_ERROR_INVALID_METRIC_NAME;
    std::memcpy(&p->pMetricValues[i], s + 16 + 8 * m, 8);
  }
  return CUPTI_SUCCESS;
}

}  // extern "C"
