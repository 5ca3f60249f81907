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

// When the tracer enables a kind: always, only while the allocation API group is recorded, or
// never itself (RUNTIME and DRIVER are enabled per callback id; KERNEL and
// INTERNAL_LAUNCH_API come only from another client's choices, and are still converted).
enum class KindEnable : uint8_t { kAlways, kWithAllocApi, kNotByTracer };

// The activity kinds the hook knows, one row each, in the order the tracer enables them
// (DEVICE first: its records are written when a context is created, which may be at once).
// `convert` emits the capture record of one activity record of that kind.
struct ActivityKindRow {
  CUpti_ActivityKind kind;
  bool required;  // its refusal means GPU tracing is off
  KindEnable enable;
  void (*convert)(const CUpti_Activity* activity, const ConvertOptions& options, RecordSink& sink);
};
// The table (cupti_convert.cpp); `count` receives its length.
const ActivityKindRow* activity_kinds(size_t* count);

}  // namespace gpuhook::hook
