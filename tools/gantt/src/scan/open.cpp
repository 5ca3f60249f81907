// Opening a capture (gantt/scan/open.h).
#include "gantt/scan/open.h"

#include <mutex>

#include "gantt/scan/trace_import.h"

namespace gantt::scan {

std::unique_ptr<gpuhook::CaptureReader> open_capture(const std::string& path, const gpuhook::ReaderOptions& options) {
  static std::once_flag importers;
  std::call_once(importers, enable_trace_import);
  return std::make_unique<gpuhook::CaptureReader>(path, options);
}

}  // namespace gantt::scan
