// A streaming reader of Chrome-trace JSON as torch.profiler/Kineto writes it (TRACE-FORMATS.md,
// part A): RapidJSON's SAX parser over a TextSource, numbers kept as their text, each event
// handed over as a flat value (its top-level fields and its scalar args) and then forgotten, so
// memory stays that of one event whatever the file's size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text_source.h"

namespace gantt::scan {

// A scalar as written: number text, string contents, or true/false/null.
struct JsonScalar {
  std::string text;
  bool is_string = false;
  bool present = false;
};

struct JsonArg {
  std::string key;
  JsonScalar value;
  std::vector<std::string> items;  // an array of scalars (grid, block): its first three
  bool is_array = false;
};

// One member of traceEvents.
struct JsonEvent {
  uint64_t offset = 0;  // byte offset of its '{' in the JSON text
  JsonScalar ph, cat, name, pid, tid, ts, dur, id;
  std::vector<JsonArg> args;  // [0, arg_count) valid; storage reused between events
  size_t arg_count = 0;

  const JsonArg* arg(std::string_view key) const;
  const JsonScalar* arg_scalar(std::string_view key) const;
};

// A flat object outside traceEvents (a deviceProperties entry, distributedInfo).
struct JsonObject {
  std::vector<std::pair<std::string, JsonScalar>> members;
  const JsonScalar* get(std::string_view key) const;
};

struct JsonTraceHandlers {
  std::function<void(const JsonEvent&)> event;
  std::function<void(const JsonObject&)> device;        // each deviceProperties entry
  std::function<void(const JsonObject&)> distributed;   // distributedInfo
  std::function<void(std::string_view key, const JsonScalar&)> metadata;  // top-level scalars
};

struct JsonTraceShape {
  bool has_trace_events = false;  // the object form's traceEvents, or the bare-array form
  uint64_t events = 0;
};

// Reads the whole text. Throws gpuhook::CaptureError (kBadRecord) with the byte offset where
// the JSON is malformed, nests deeper than 64, or is not a trace at all.
JsonTraceShape read_json_trace(const std::string& path, TextSource& text, const JsonTraceHandlers& handlers);

}  // namespace gantt::scan
