// Stats summary files (.gsum): one StatsSummary message behind a magic frame, in one zstd
// frame. Read as untrusted input, like a capture: every size checked before it is allocated,
// errors as CaptureError with the byte offset.
#pragma once

#include <string>

#include <gpuhook/capture.h>
#include <gpuhook/v1/summary.pb.h>

namespace gpuhook {

// 1: stats and diff; 2: with the aggregates diagnose reads (summary.proto). Both are read.
inline constexpr uint32_t kSummaryVersion = 2;
// A summary is aggregates: far smaller than this, whatever the capture's size.
inline constexpr uint64_t kMaxSummaryBytes = 256ull << 20;

// Writes `summary` to `path` (created 0644, an existing file is not overwritten). False and
// *error on failure.
bool write_summary_file(const std::string& path, const v1::StatsSummary& summary, std::string* error);

// True when the file starts with the summary magic (a cheap test before choosing a reader).
bool is_summary_file(const std::string& path);

// Throws CaptureError: kIo, kNotACapture (not a summary), kTooNew, kCorruptFrame, kChecksum,
// kOversizedLength, kBadRecord (the message does not parse).
v1::StatsSummary read_summary_file(const std::string& path);

}  // namespace gpuhook
