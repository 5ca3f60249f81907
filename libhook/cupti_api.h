// libcupti loaded with dlopen, its entry points in one table. The hook never links CUPTI:
// a process without it (or with a CUPTI that refuses) runs on with GPU tracing off.
#pragma once

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <string>
#include <vector>

namespace gpuhook::hook {

// Each row: X(entry point, required). A CUPTI without a required one is not used; an optional
// one may be missing (an older or a stripped-down library) and its feature is then off.
#define GPUHOOK_CUPTI_FUNCTIONS(X)                    \
  X(cuptiGetVersion, true)                            \
  X(cuptiGetResultString, false)                      \
  X(cuptiActivityRegisterTimestampCallback, true)     \
  X(cuptiActivityEnableLatencyTimestamps, true)       \
  X(cuptiActivityRegisterCallbacks, true)             \
  X(cuptiActivityEnable, true)                        \
  X(cuptiActivityDisable, true)                       \
  X(cuptiActivityEnableRuntimeApi, false)             \
  X(cuptiActivityEnableDriverApi, false)              \
  X(cuptiActivityGetNextRecord, true)                 \
  X(cuptiActivityFlushAll, true)                      \
  X(cuptiActivityGetNumDroppedRecords, true)          \
  X(cuptiActivityPushExternalCorrelationId, false)    \
  X(cuptiActivityPopExternalCorrelationId, false)     \
  X(cuptiActivityEnableAllSyncRecords, false)         \
  X(cuptiActivityEnableDeviceGraph, false)            \
  X(cuptiSetThreadIdType, false)                      \
  X(cuptiGetCallbackName, false)                      \
  X(cuptiSubscribe, false)                            \
  X(cuptiSubscribe_v2, false)                         \
  X(cuptiUnsubscribe, false)                          \
  X(cuptiEnableCallback, false)                       \
  X(cuptiGetStreamIdEx, false)                       \
  X(cuptiGetTimestamp, false)                        \
  X(cuptiGetDeviceId, false)                         \
  GPUHOOK_CUPTI_PM_FUNCTIONS(X)                      \
  GPUHOOK_CUPTI_SASS_FUNCTIONS(X)

// PM sampling (GPUHOOK_METRICS, pm_sampler.cpp): CUPTI 12.6 and later. All optional: a CUPTI
// without them traces as before and PM sampling says it is off.
#define GPUHOOK_CUPTI_PM_FUNCTIONS(X)                 \
  X(cuptiDeviceGetChipName, false)                    \
  X(cuptiProfilerInitialize, false)                   \
  X(cuptiProfilerHostInitialize, false)               \
  X(cuptiProfilerHostDeinitialize, false)             \
  X(cuptiProfilerHostConfigAddMetrics, false)         \
  X(cuptiProfilerHostGetConfigImageSize, false)       \
  X(cuptiProfilerHostGetConfigImage, false)           \
  X(cuptiProfilerHostGetNumOfPasses, false)           \
  X(cuptiProfilerHostEvaluateToGpuValues, false)      \
  X(cuptiPmSamplingSetConfig, false)                  \
  X(cuptiPmSamplingEnable, false)                     \
  X(cuptiPmSamplingDisable, false)                    \
  X(cuptiPmSamplingStart, false)                      \
  X(cuptiPmSamplingStop, false)                       \
  X(cuptiPmSamplingDecodeData, false)                 \
  X(cuptiPmSamplingGetCounterAvailability, false)     \
  X(cuptiPmSamplingGetCounterDataSize, false)         \
  X(cuptiPmSamplingCounterDataImageInitialize, false) \
  X(cuptiPmSamplingGetCounterDataInfo, false)         \
  X(cuptiPmSamplingCounterDataGetSampleInfo, false)

// GPUHOOK_SECTORS (sass_sectors.cpp): CUPTI 12.4 and later, beside cuptiDeviceGetChipName and
// cuptiProfilerInitialize above. All optional: without them sectors are not counted, said once.
#define GPUHOOK_CUPTI_SASS_FUNCTIONS(X)               \
  X(cuptiSassMetricsGetProperties, false)             \
  X(cuptiSassMetricsSetConfig, false)                 \
  X(cuptiSassMetricsUnsetConfig, false)               \
  X(cuptiSassMetricsEnable, false)                    \
  X(cuptiSassMetricsDisable, false)                   \
  X(cuptiSassMetricsGetDataProperties, false)         \
  X(cuptiSassMetricsFlushData, false)

struct CuptiApi {
#define GPUHOOK_CUPTI_MEMBER(name, required) decltype(&::name) name = nullptr;
  GPUHOOK_CUPTI_FUNCTIONS(GPUHOOK_CUPTI_MEMBER)
#undef GPUHOOK_CUPTI_MEMBER
  void* handle = nullptr;
  std::string path;  // the file that was loaded
};

// A CUPTI profiler/PM sampling parameter struct: zeroed (pPriv NULL, outputs 0) with its
// structSize set, as every such call wants (cupti_pmsampling.h:107, "Size of the data structure").
template <class T>
T cupti_params(size_t struct_size) {
  T p{};
  p.structSize = struct_size;
  return p;
}
#define GPUHOOK_CUPTI_PARAMS(T) ::gpuhook::hook::cupti_params<T>(T##_STRUCT_SIZE)

// The places to look, in order: GPUHOOK_CUPTI alone when set; else the directory of the
// loaded libcudart (and its ../extras/CUPTI/lib64), the loader's own search (LD_LIBRARY_PATH),
// then the toolkit's usual locations.
std::vector<std::string> cupti_candidates(const std::string& override_path);

// Loads the first candidate that opens and has the required entry points. On failure returns
// false and says what was tried in *why.
bool load_cupti(const std::string& override_path, CuptiApi* api, std::string* why);

// "CUPTI_ERROR_UNKNOWN (999)"-style text, without calling into a CUPTI that may be absent.
std::string cupti_result_text(const CuptiApi& api, CUptiResult r);

}  // namespace gpuhook::hook
