// libcupti loaded with dlopen, its entry points in one table. The hook never links CUPTI:
// a process without it (or with a CUPTI that refuses) runs on with GPU tracing off.
#pragma once

#include <cupti.h>

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
  X(cuptiGetStreamIdEx, false)

struct CuptiApi {
#define GPUHOOK_CUPTI_MEMBER(name, required) decltype(&::name) name = nullptr;
  GPUHOOK_CUPTI_FUNCTIONS(GPUHOOK_CUPTI_MEMBER)
#undef GPUHOOK_CUPTI_MEMBER
  void* handle = nullptr;
  std::string path;  // the file that was loaded
};

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
