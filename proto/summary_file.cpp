// Stats summary files: the magic frame, then one zstd frame holding one StatsSummary.
#include <gpuhook/summary_file.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

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

v1::StatsSummary read_summary_file(const std::string& path) {
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
  std::string body(static_cast<size_t>(content), '\0');
  const size_t n = ZSTD_decompress(body.data(), body.size(), frame, frame_bytes);
  if (ZSTD_isError(n)) {
    const bool checksum = ZSTD_getErrorCode(n) == ZSTD_error_checksum_wrong;
    throw CaptureError(checksum ? K::kChecksum : K::kCorruptFrame, path, kSummaryHeaderBytes,
                       std::string("the summary frame does not decode: ") + ZSTD_getErrorName(n));
  }
  v1::StatsSummary summary;
  if (n != body.size() || !summary.ParseFromArray(body.data(), static_cast<int>(n)))
    throw CaptureError(K::kBadRecord, path, kSummaryHeaderBytes, "the summary message does not parse");
  return summary;
}

}  // namespace gpuhook
