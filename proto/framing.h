// Byte-level constants and the correlation-id visitor shared by the writer and the reader
// (the time fields are listed in <gpuhook/record_times.h>, which readers outside use too).
// proto/README.md describes the same layout in prose; keep the two in step.
#pragma once

#include <cstddef>
#include <cstdint>

#include <gpuhook/record_times.h>
#include <gpuhook/v1/capture.pb.h>

namespace gpuhook::framing {

// A zstd skippable frame is magic (4 bytes LE) + payload size (4 bytes LE) + payload.
// zstd -dc and every zstd decoder skip them, so metadata never disturbs `zstd -dc | protoc`.
inline constexpr uint32_t kHeaderFrameMagic = 0x184D2A50;  // first frame: file magic + version
inline constexpr uint32_t kIndexFrameMagic = 0x184D2A51;   // last frame: ChunkIndex
inline constexpr uint32_t kZstdFrameMagic = 0xFD2FB528;
inline constexpr uint32_t kSkippableMask = 0xFFFFFFF0;     // 0x184D2A50..0x184D2A5F
inline constexpr uint32_t kSkippableBase = 0x184D2A50;

// Header frame payload: "GPUHOOK\0", u32 format version, u32 flags (0).
inline constexpr char kFileMagic[8] = {'G', 'P', 'U', 'H', 'O', 'O', 'K', '\0'};
inline constexpr size_t kHeaderPayloadBytes = 16;
inline constexpr size_t kHeaderFrameBytes = 8 + kHeaderPayloadBytes;

// Index frame payload: ChunkIndex bytes, u32 LE length of them, "GPUHIDX1". The trailer makes
// the index findable from the end of the file without scanning.
inline constexpr char kIndexTrailerMagic[8] = {'G', 'P', 'U', 'H', 'I', 'D', 'X', '1'};
inline constexpr size_t kIndexTrailerBytes = 12;

// Limits that keep the reader's memory bounded by one chunk whatever the file says. The
// writer keeps well inside them.
inline constexpr uint64_t kMaxChunkContentBytes = 64ull << 20;
inline constexpr uint64_t kMaxRecordBytes = 16ull << 20;
inline constexpr uint64_t kMaxSkippableBytes = 64ull << 20;
inline constexpr size_t kMaxWriterChunkBytes = 32u << 20;

// Tag of Capture.record (field 1, wire type 2): every record in a chunk starts with it.
inline constexpr uint8_t kRecordTag = 0x0A;

inline void put_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}
inline uint32_t get_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Calls f(value) for the record's correlation id field, if its kind has one; f may change it.
// Correlation ids are delta-coded like times (see proto/README.md).
template <class R, class F>
void visit_correlation(R& r, F&& f) {
#define GPUHOOK_C(kind, accessor)                 \
  case R::kind: {                        \
    auto* m = r.mutable_##accessor();             \
    uint32_t v = m->correlation_id();             \
    f(v);                                         \
    m->set_correlation_id(v);                     \
    break;                                        \
  }
  switch (r.kind_case()) {
    GPUHOOK_C(kApi, api)
    GPUHOOK_C(kKernel, kernel)
    GPUHOOK_C(kMemcpy, memcpy)
    GPUHOOK_C(kMemset, memset)
    GPUHOOK_C(kSync, sync)
    GPUHOOK_C(kMemory, memory)
    GPUHOOK_C(kOverhead, overhead)
    default:
      break;
  }
#undef GPUHOOK_C
}

// Record kinds whose records are returned by windowed reads whatever their time: the
// context every later record needs.
inline bool is_context_kind(v1::Record::KindCase k) {
  switch (k) {
    case v1::Record::kHeader:
    case v1::Record::kDevice:
    case v1::Record::kStringDef:
    case v1::Record::kThread:
    case v1::Record::kFooter:
    case v1::Record::kDrops:
    case v1::Record::kNotice:
    case v1::Record::kStream:
    case v1::Record::kExternalCorrelation:
    case v1::Record::kCudaEvent:
      return true;
    default:
      return false;
  }
}

}  // namespace gpuhook::framing
