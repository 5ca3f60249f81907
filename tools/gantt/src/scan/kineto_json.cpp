#include "kineto_json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <gpuhook/capture.h>

namespace gantt::scan {

const JsonArg* JsonEvent::arg(std::string_view key) const {
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].key == key) return &args[i];
  }
  return nullptr;
}

const JsonScalar* JsonEvent::arg_scalar(std::string_view key) const {
  const JsonArg* a = arg(key);
  return a != nullptr && !a->is_array && a->value.present ? &a->value : nullptr;
}

const JsonScalar* JsonObject::get(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

// Hostile nesting is refused before it costs anything: Kineto's deepest is 4
// (object, traceEvents, event, args, grid).
constexpr size_t kMaxDepth = 64;

enum class Where {
  kRoot,         // before the first value
  kTopObject,    // {"traceEvents": ..., "deviceProperties": ..., ...}
  kEvents,       // traceEvents, or the bare array
  kEvent,        // one event
  kEventArgs,    // its args
  kArgArray,     // an array inside args
  kDevices,      // deviceProperties
  kDevice,       // one of them
  kDistributed,  // distributedInfo
  kSkip,         // anything else, to its end
};

class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  Handler(TextSource& text, const JsonTraceHandlers& handlers) : text_(text), handlers_(handlers) {}

  bool Null() { return scalar("null", 4, false); }
  bool Bool(bool b) { return b ? scalar("true", 4, false) : scalar("false", 5, false); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, false); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, true); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }

  bool StartObject() {
    const Where here = top();
    Where next = Where::kSkip;
    switch (here) {
      case Where::kRoot: next = Where::kTopObject; break;
      case Where::kTopObject:
        if (key_ == "distributedInfo") {
          next = Where::kDistributed;
          object_.members.clear();
        }
        break;
      case Where::kEvents:
        next = Where::kEvent;
        begin_event();
        break;
      case Where::kEvent:
        if (key_ == "args") next = Where::kEventArgs;
        break;
      case Where::kDevices:
        next = Where::kDevice;
        object_.members.clear();
        break;
      default: break;
    }
    return push(next);
  }

  bool EndObject(rapidjson::SizeType) {
    const Where here = top();
    stack_.pop_back();
    if (here == Where::kEvent) {
      ++shape_.events;
      if (handlers_.event) handlers_.event(event_);
    } else if (here == Where::kDevice) {
      if (handlers_.device) handlers_.device(object_);
    } else if (here == Where::kDistributed) {
      if (handlers_.distributed) handlers_.distributed(object_);
    }
    return true;
  }

  bool StartArray() {
    const Where here = top();
    Where next = Where::kSkip;
    switch (here) {
      case Where::kRoot:
        next = Where::kEvents;  // Chrome's bare-array form
        shape_.has_trace_events = true;
        break;
      case Where::kTopObject:
        if (key_ == "traceEvents") {
          next = Where::kEvents;
          shape_.has_trace_events = true;
        } else if (key_ == "deviceProperties") {
          next = Where::kDevices;
        }
        break;
      case Where::kEventArgs: {
        JsonArg& a = new_arg();
        a.is_array = true;
        next = Where::kArgArray;
        break;
      }
      default: break;
    }
    return push(next);
  }

  bool EndArray(rapidjson::SizeType) {
    stack_.pop_back();
    return true;
  }

  const JsonTraceShape& shape() const { return shape_; }
  const std::string& refusal() const { return refusal_; }

 private:
  Where top() const { return stack_.empty() ? Where::kRoot : stack_.back(); }

  bool push(Where w) {
    if (stack_.size() >= kMaxDepth) {
      refusal_ = "nested deeper than " + std::to_string(kMaxDepth) + " levels";
      return false;
    }
    stack_.push_back(w);
    return true;
  }

  void begin_event() {
    // The iterative parser calls StartObject before it takes the '{'.
    event_.offset = text_.Peek() == '{' ? text_.Tell() : text_.Tell() - 1;
    for (JsonScalar* s : {&event_.ph, &event_.cat, &event_.name, &event_.pid, &event_.tid, &event_.ts,
                          &event_.dur, &event_.id}) {
      s->present = false;
      s->text.clear();
    }
    event_.arg_count = 0;
  }

  JsonArg& new_arg() {
    if (event_.arg_count == event_.args.size()) event_.args.emplace_back();
    JsonArg& a = event_.args[event_.arg_count++];
    a.key = key_;
    a.value.present = false;
    a.value.text.clear();
    a.items.clear();
    a.is_array = false;
    return a;
  }

  static void set(JsonScalar& s, const char* p, size_t n, bool is_string) {
    s.text.assign(p, n);
    s.is_string = is_string;
    s.present = true;
  }

  bool scalar(const char* p, size_t n, bool is_string) {
    switch (top()) {
      case Where::kRoot:
        refusal_ = "a JSON scalar, not a trace";
        return false;
      case Where::kTopObject:
        if (handlers_.metadata) {
          JsonScalar s;
          set(s, p, n, is_string);
          handlers_.metadata(key_, s);
        }
        return true;
      case Where::kEvent: {
        JsonScalar* slot = nullptr;
        if (key_ == "ph") slot = &event_.ph;
        else if (key_ == "cat") slot = &event_.cat;
        else if (key_ == "name") slot = &event_.name;
        else if (key_ == "pid") slot = &event_.pid;
        else if (key_ == "tid") slot = &event_.tid;
        else if (key_ == "ts") slot = &event_.ts;
        else if (key_ == "dur") slot = &event_.dur;
        else if (key_ == "id") slot = &event_.id;
        if (slot != nullptr) set(*slot, p, n, is_string);
        return true;
      }
      case Where::kEventArgs: set(new_arg().value, p, n, is_string); return true;
      case Where::kArgArray: {
        JsonArg& a = event_.args[event_.arg_count - 1];
        if (a.items.size() < 3) a.items.emplace_back(p, n);
        return true;
      }
      case Where::kDevice:
      case Where::kDistributed: {
        JsonScalar s;
        set(s, p, n, is_string);
        object_.members.emplace_back(key_, std::move(s));
        return true;
      }
      default: return true;  // a scalar in traceEvents, deviceProperties, or skipped
    }
  }

  TextSource& text_;
  const JsonTraceHandlers& handlers_;
  std::vector<Where> stack_;
  std::string key_;
  JsonEvent event_;
  JsonObject object_;
  JsonTraceShape shape_;
  std::string refusal_;
};

}  // namespace

JsonTraceShape read_json_trace(const std::string& path, TextSource& text, const JsonTraceHandlers& handlers) {
  Handler handler(text, handlers);
  rapidjson::Reader reader;
  // Iterative: no recursion, whatever the nesting. Numbers as text: times are read exactly.
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;
  const rapidjson::ParseResult result = reader.Parse<kFlags>(text, handler);
  if (result.IsError()) {
    const std::string what = !handler.refusal().empty() ? handler.refusal() : rapidjson::GetParseError_En(result.Code());
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kBadRecord, path, result.Offset(),
                                std::string("malformed JSON trace") +
                                    (text.gzip() ? " (the offset is in the decompressed text)" : "") + ": " + what);
  }
  if (!handler.shape().has_trace_events) {
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kNotACapture, path, 0,
                                "JSON without a traceEvents array: not a Chrome/Kineto trace");
  }
  return handler.shape();
}

}  // namespace gantt::scan
