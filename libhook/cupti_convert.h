// CUPTI activity records -> capture records. Pure: no CUPTI calls, so tests feed it
// fabricated records. Every timestamp is validated: a 0 or a reversed pair is written as
// unknown (0) and counted through RecordSink::invalid_time(), never repaired.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>

#include "gpu_source.h"

namespace gpuhook::hook {

struct ConvertOptions {
  bool latency_timestamps = true;  // queued/submitted were requested: 0 there is invalid too
  // Name of an API callback id; nullptr when unknown.
  std::function<const char*(CUpti_CallbackDomain, uint32_t)> callback_name;
};

// Emits 0 or 1 records for `activity`. Returns false for kinds the hook does not record.
bool convert_activity(const CUpti_Activity* activity, const ConvertOptions& options, RecordSink& sink);

}  // namespace gpuhook::hook
