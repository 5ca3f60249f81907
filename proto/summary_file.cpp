// Stats summary files: the magic frame, then one zstd frame holding one StatsSummary.
#include <gpuhook/summary_file.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "framing.h"

namespace gpuhook {
namespace {

// Skippable frame 0x184D2A52 (captures use ...50 and ...51): magic, size, "GPUHSUM\0",
// version, flags.
constexpr uint32_t kSummaryFrameMagic = 0x184D2A52;
constexpr char kSummaryMagic[8] = {'G', 'P', 'U', 'H', 'S', 'U', 'M', '\0'};
constexpr size_t kSummaryPayloadBytes = 16;
constexpr size_t kSummaryHeaderBytes = 8 + kSummaryPayloadBytes;

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A message's records, counted on its bytes without parsing them: every message, every
// element of a repeated field, and every field the descriptor does not know (which protobuf
// would keep, 16 bytes and more each); a message's own numbers and strings are not records.
// False when the bytes are not a proto3 message.
struct Shape {
  uint64_t messages = 0;
  uint64_t values = 0;   // repeated numbers and strings, and unknown fields
  uint64_t unknown = 0;  // fields this build does not know, among the values
  uint64_t records() const { return messages + values; }
};

bool count_records(google::protobuf::io::CodedInputStream& in, const google::protobuf::Descriptor& type, Shape& shape) {
  using google::protobuf::FieldDescriptor;
  using WFL = google::protobuf::internal::WireFormatLite;
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();
    const FieldDescriptor* field = type.FindFieldByNumber(static_cast<int>(WFL::GetTagFieldNumber(tag)));
    const auto wire = WFL::GetTagWireType(tag);
    // proto3 has no groups, and one would hide any number of fields from the count.
    if (wire == WFL::WIRETYPE_START_GROUP || wire == WFL::WIRETYPE_END_GROUP) return false;
    if (!field || wire != WFL::WIRETYPE_LENGTH_DELIMITED) {
      // A known singular number lives in its message; a repeated one or an unknown field is
      // stored apart (protobuf keeps the last of a repeated singular one).
      if (!field || field->is_repeated()) ++shape.values;
      if (!field) ++shape.unknown;
      if (!WFL::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(std::max(in.BytesUntilLimit(), 0))) return false;
    if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
      ++shape.messages;
      if (!in.IncrementRecursionDepth()) return false;
      const auto limit = in.PushLimit(static_cast<int>(length));
      if (!count_records(in, *field->message_type(), shape)) return false;
      in.PopLimit(limit);
      in.DecrementRecursionDepth();
    } else if (field->is_repeated() && field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      // Packed numbers: one record a value (a varint ends at each byte below 0x80).
      const auto t = field->type();
      const bool fixed64 = t == FieldDescriptor::TYPE_DOUBLE || t == FieldDescriptor::TYPE_FIXED64 ||
                           t == FieldDescriptor::TYPE_SFIXED64;
      const bool fixed32 = t == FieldDescriptor::TYPE_FLOAT || t == FieldDescriptor::TYPE_FIXED32 ||
                           t == FieldDescriptor::TYPE_SFIXED32;
      if (fixed64 || fixed32) {
        shape.values += length / (fixed64 ? 8 : 4);
        if (!in.Skip(static_cast<int>(length))) return false;
        continue;
      }
      const void* data = nullptr;
      int size = 0;
      uint64_t left = length;
      while (left > 0 && in.GetDirectBufferPointer(&data, &size)) {
        const int take = static_cast<int>(std::min<uint64_t>(left, static_cast<uint64_t>(size)));
        const auto* b = static_cast<const uint8_t*>(data);
        for (int i = 0; i < take; ++i) shape.values += b[i] < 0x80;
        in.Skip(take);
        left -= static_cast<uint64_t>(take);
      }
      if (left != 0) return false;
    } else {
      if (field->is_repeated()) ++shape.values;  // a string's bytes count with the body's
      if (!in.Skip(static_cast<int>(length))) return false;
    }
  }
}

std::string bytes_text(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (1ull << 30));
  else if (n >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1ull << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  return buf;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

}  // namespace

bool write_summary_file(const std::string& path, const v1::StatsSummary& summary, std::string* error) {
  std::string body;
  if (!summary.SerializeToString(&body)) {
    *error = "the summary does not serialise";
    return false;
  }
  std::string out(kSummaryHeaderBytes, '\0');
  auto* h = reinterpret_cast<uint8_t*>(out.data());
  framing::put_le32(h, kSummaryFrameMagic);
  framing::put_le32(h + 4, static_cast<uint32_t>(kSummaryPayloadBytes));
  std::memcpy(h + 8, kSummaryMagic, sizeof kSummaryMagic);
  framing::put_le32(h + 16, kSummaryVersion);
  framing::put_le32(h + 20, 0);
  const size_t bound = ZSTD_compressBound(body.size());
  out.resize(kSummaryHeaderBytes + bound);
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  const size_t n = ZSTD_compress2(cctx.get(), out.data() + kSummaryHeaderBytes, bound, body.data(), body.size());
  if (ZSTD_isError(n)) {
    *error = std::string("compression failed: ") + ZSTD_getErrorName(n);
    return false;
  }
  out.resize(kSummaryHeaderBytes + n);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno) + (errno == EEXIST ? " (a summary is never overwritten)" : "");
    return false;
  }
  const bool ok = write_all(fd, out.data(), out.size());
  const int saved = errno;
  if (::close(fd) != 0 || !ok) {
    *error = path + ": " + std::strerror(ok ? errno : saved);
    ::unlink(path.c_str());
    return false;
  }
  return true;
}

bool is_summary_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint8_t head[16] = {};
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && framing::get_le32(head) == kSummaryFrameMagic &&
         std::memcmp(head + 8, kSummaryMagic, sizeof kSummaryMagic) == 0;
}

v1::StatsSummary read_summary_file(const std::string& path, const SummaryLimits& limits) {
  using K = CaptureErrorKind;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CaptureError(K::kIo, path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  std::string file;
  bool read_ok = ::fstat(fd, &st) == 0;
  const uint64_t size = read_ok ? static_cast<uint64_t>(st.st_size) : 0;
  if (read_ok && size <= kMaxSummaryBytes) {
    file.resize(size);
    size_t at = 0;
    while (at < size) {
      const ssize_t r = ::pread(fd, file.data() + at, size - at, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      at += static_cast<size_t>(r);
    }
    read_ok = at == size;
  }
  ::close(fd);
  if (!read_ok) throw CaptureError(K::kIo, path, 0, "cannot read");
  if (size > kMaxSummaryBytes)
    throw CaptureError(K::kOversizedLength, path, 0,
                       std::to_string(size) + " bytes: larger than any summary (" + std::to_string(kMaxSummaryBytes) +
                           "); not a summary");
  const auto* p = reinterpret_cast<const uint8_t*>(file.data());
  if (size < kSummaryHeaderBytes || framing::get_le32(p) != kSummaryFrameMagic ||
      framing::get_le32(p + 4) != kSummaryPayloadBytes || std::memcmp(p + 8, kSummaryMagic, sizeof kSummaryMagic) != 0)
    throw CaptureError(K::kNotACapture, path, 0, "not a stats summary (no GPUHSUM magic)");
  const uint32_t version = framing::get_le32(p + 16);
  if (version > kSummaryVersion)
    throw CaptureError(K::kTooNew, path, 16,
                       "summary version " + std::to_string(version) + " is newer than this build reads (" +
                           std::to_string(kSummaryVersion) + ")");
  const uint8_t* frame = p + kSummaryHeaderBytes;
  const size_t frame_bytes = size - kSummaryHeaderBytes;
  const unsigned long long content = ZSTD_getFrameContentSize(frame, frame_bytes);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN)
    throw CaptureError(K::kCorruptFrame, path, kSummaryHeaderBytes, "the summary frame is not a zstd frame with its size");
  if (content > kMaxSummaryBytes)
    throw CaptureError(K::kOversizedLength, path, kSummaryHeaderBytes,
                       "the summary frame declares " + std::to_string(content) + " bytes (over " +
                           std::to_string(kMaxSummaryBytes) + ")");
  // The same amplification limit a capture has (gantt::AmplificationGuard), checked on the
  // declared size before the frame is decompressed.
  const uint64_t per_byte = limits.max_records_per_byte;
  const uint64_t max_body = saturating_mul(saturating_mul(size, per_byte), kSummaryBodyBytesPerRecord);
  if (per_byte != 0 && content > max_body)
    throw CaptureError(K::kOversizedLength, path, kSummaryHeaderBytes,
                       "the summary frame declares " + std::to_string(content) + " bytes from a file of " +
                           std::to_string(size) + " (over " + std::to_string(per_byte * kSummaryBodyBytesPerRecord) +
                           " per byte of file): not a summary gantt-cli wrote; --max-records-per-byte 0 reads it anyway");
  std::string body(static_cast<size_t>(content), '\0');
  const size_t n = ZSTD_decompress(body.data(), body.size(), frame, frame_bytes);
  if (ZSTD_isError(n)) {
    const bool checksum = ZSTD_getErrorCode(n) == ZSTD_error_checksum_wrong;
    throw CaptureError(checksum ? K::kChecksum : K::kCorruptFrame, path, kSummaryHeaderBytes,
                       std::string("the summary frame does not decode: ") + ZSTD_getErrorName(n));
  }
  if (n != body.size()) throw CaptureError(K::kBadRecord, path, kSummaryHeaderBytes, "the summary message does not parse");
  Shape shape;
  {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(body.data()), static_cast<int>(n));
    in.PushLimit(static_cast<int>(n));  // every length is checked against what is left
    if (!count_records(in, *v1::StatsSummary::descriptor(), shape))
      throw CaptureError(K::kBadRecord, path, kSummaryHeaderBytes, "the summary message does not parse");
  }
  const std::string unknown =
      shape.unknown ? " (" + std::to_string(shape.unknown) + " of them fields this build does not know)" : "";
  const std::string records = std::to_string(shape.records()) + " records" + unknown;
  // A message (a group, a digest) takes as much as a capture's record; a repeated value a few
  // bytes, and a stream-heavy summary holds over 8 of them a byte (one sample per stream).
  const auto over = [&](uint64_t n, const std::string& what, uint64_t per) {
    throw CaptureError(K::kOversizedLength, path, kSummaryHeaderBytes,
                       "the summary holds " + std::to_string(n) + " " + what + " in " + std::to_string(size) +
                           " bytes (over " + std::to_string(per) +
                           " per byte of file): not a summary gantt-cli wrote; --max-records-per-byte 0 reads it anyway");
  };
  if (per_byte != 0 && shape.messages > saturating_mul(size, per_byte)) over(shape.messages, "messages", per_byte);
  const uint64_t values_per_byte = saturating_mul(per_byte, kSummaryValuesPerRecord);
  if (per_byte != 0 && shape.values > saturating_mul(size, values_per_byte))
    over(shape.values, "repeated values and unknown fields" + unknown, values_per_byte);
  const uint64_t estimate = saturating_mul(shape.messages, kSummaryBytesPerMessage) +
                            saturating_mul(shape.values, kSummaryBytesPerValue) +
                            saturating_mul(n, kSummaryBytesPerBodyByte);
  if (limits.max_memory_bytes != 0 && estimate > limits.max_memory_bytes)
    throw CaptureError(K::kOversizedLength, path, kSummaryHeaderBytes,
                       "the summary's " + records + " would take about " +
                           bytes_text(estimate) + " parsed, over --max-memory " + bytes_text(limits.max_memory_bytes) +
                           ". Not read: --max-memory SIZE reads it anyway");
  v1::StatsSummary summary;
  if (!summary.ParseFromArray(body.data(), static_cast<int>(n)))
    throw CaptureError(K::kBadRecord, path, kSummaryHeaderBytes, "the summary message does not parse");
  // A later version's fields are kept by protobuf for nothing: this build never reads them.
  summary.DiscardUnknownFields();
  return summary;
}

}  // namespace gpuhook
