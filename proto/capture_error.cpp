// CaptureError: one kind per way a file can be wrong, so the CLI and the tests can tell a
// too-new file from a corrupt one.
#include <gpuhook/capture.h>

namespace gpuhook {

const char* to_string(CaptureErrorKind kind) {
  switch (kind) {
    case CaptureErrorKind::kIo: return "io";
    case CaptureErrorKind::kNotACapture: return "not-a-capture";
    case CaptureErrorKind::kTooNew: return "too-new";
    case CaptureErrorKind::kCorruptFrame: return "corrupt-frame";
    case CaptureErrorKind::kChecksum: return "checksum";
    case CaptureErrorKind::kOversizedLength: return "oversized-length";
    case CaptureErrorKind::kBadRecord: return "bad-record";
    case CaptureErrorKind::kTruncated: return "truncated";
  }
  return "unknown";
}

CaptureError::CaptureError(CaptureErrorKind kind, std::string file, uint64_t offset, const std::string& what)
    : std::runtime_error(what), kind_(kind), file_(std::move(file)), offset_(offset) {}

}  // namespace gpuhook
