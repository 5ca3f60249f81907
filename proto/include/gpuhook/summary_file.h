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

// The limits a capture's load has, for a summary: records a byte of file may decode to (a
// summary's records are its messages, repeated values and fields this build does not know),
// and the memory the parsed summary may take. A 22.6 KB summary of nothing but unknown fields
// once parsed into 2.36 GB, and 1.7 KB of empty groups into 8 GB (zstd makes a repeated
// pattern almost nothing).
struct SummaryLimits {
  // As gantt::kDefaultMaxRecordsPerByte, for messages; kSummaryValuesPerRecord times as many
  // repeated values and unknown fields. 0 = no limit.
  uint64_t max_records_per_byte = 8;
  uint64_t max_memory_bytes = 0;      // estimated (kSummaryBytesPer...); 0 = no limit
};
// What a parsed summary takes, at most, with gantt's own copy of it (analysis::from_proto): a
// message (measured: 850 bytes a group in 400,000 empty groups, the worst), a repeated value or
// an unknown field (8 to 24 bytes, and the vectors' growth).
inline constexpr uint64_t kSummaryBytesPerMessage = 1024;
inline constexpr uint64_t kSummaryBytesPerValue = 32;
// A value takes a 32nd of a message: a summary of 2,000 alike streams held 8.3 records a byte.
inline constexpr uint64_t kSummaryValuesPerRecord = 8;
// And a byte of the message may take a few in memory (the body, the message's strings and
// gantt's copies of them).
inline constexpr uint64_t kSummaryBytesPerBodyByte = 3;
// The message may decode to at most this many bytes a record of --max-records-per-byte a byte
// of file: real summaries compress 1 to 30 times; a string of one repeated byte, thousands.
inline constexpr uint64_t kSummaryBodyBytesPerRecord = 128;

// Throws CaptureError: kIo, kNotACapture (not a summary), kTooNew, kCorruptFrame, kChecksum,
// kOversizedLength (over kMaxSummaryBytes or `limits`, which it names), kBadRecord (the
// message does not parse). The limits are checked on the message's bytes before it is parsed.
v1::StatsSummary read_summary_file(const std::string& path, const SummaryLimits& limits = {});

}  // namespace gpuhook
