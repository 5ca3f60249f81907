// What the writer needs from the CUPTI side, behind an interface so the writer can be tested
// without CUPTI and the tracer without a file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <gpuhook/capture.h>

#include <gpuhook/v1/capture.pb.h>  // the enums only: header-only, nothing linked
#include "wire_capture.h"

namespace gpuhook::hook {

// Receives converted records; intern() gives string ids of the capture.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual uint32_t intern(std::string_view s) = 0;
  virtual void emit(wire::Record& record) = 0;
  // The two kinds of nearly every record, as plain values: no message is built for them.
  virtual void emit(const KernelFields& kernel) = 0;
  virtual void emit(const ApiFields& api) = 0;
  // A device seen for the first time in a GPU record: the sink writes its DeviceInfo.
  virtual void device_seen(uint32_t device) = 0;
  // A record kept with an unknown time because the one CUPTI gave was 0 or reversed.
  virtual void invalid_time() = 0;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Hands every completed buffer's records to the sink. `flush`: ask CUPTI for what it holds
  // first; `final`: also incomplete buffers (exit).
  virtual void poll(RecordSink& sink, bool flush, bool final) = 0;
  // Counts since the last call.
  virtual uint64_t take_cupti_dropped() = 0;
  virtual uint64_t take_no_buffer_dropped() = 0;
  // Buffers whose reading stopped at an incomplete record (each lost at least that record).
  virtual uint64_t take_incomplete() { return 0; }
  // After the final poll: what went wrong with the GPU side that the exit line must say.
  virtual std::string final_note() const { return {}; }
  // The oldest blocking synchronize still waiting (GPUHOOK_HANG): since when (0 = none) and
  // *what, in words.
  virtual uint64_t blocked_since_ns(std::string* what) const {
    (void)what;
    return 0;
  }
};

}  // namespace gpuhook::hook
